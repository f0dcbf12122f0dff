"""H.264 between ``worldloom serve`` and the remote backend: negotiated in ``hello``, JPEG as fallback.

Servers bind 127.0.0.1 on a free port and stop at the end of the module; frames are small.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the world server needs fastapi")
pytest.importorskip("uvicorn", reason="the world server needs uvicorn")
pytest.importorskip("websockets", reason="the remote backend needs websockets")

from game.errors import BackendError  # noqa: E402
from game.world import server as server_mod  # noqa: E402
from game.world import video_wire  # noqa: E402
from game.world.backends import remote as remote_mod  # noqa: E402
from game.world.backends.procedural import ProceduralBackend  # noqa: E402
from game.world.backends.remote import RemoteBackend  # noqa: E402
from game.world.protocol import Entity, FrameChunk, Scene, SessionStart, WorldRequest  # noqa: E402
from game.world.server import ServerConfig, ServerThread, backend_factory, choose_encoding, create_app  # noqa: E402
from game.world.wire import dumps  # noqa: E402

needs_h264 = pytest.mark.skipif(not video_wire.h264_available(), reason="PyAV with libx264 is not installed")

TOKEN = "codec-token-0123456789abcdef-0123456789"
W, H = 96, 54
SCENE = Scene("meadow", entities=(Entity("creature", "character", "the creature", x=0.6),))


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    app = create_app(backend_factory("procedural"), ServerConfig(token=TOKEN, grace_s=5.0, max_sessions=8))
    srv = ServerThread(app).start()
    yield srv.url
    srv.stop()


def requests(n: int = 3) -> list[WorldRequest]:
    return [WorldRequest("main", seq, 36, f"a meadow at dusk {seq}", switch_mode="plain", scene=SCENE,
                         actions=("d",) * 12) for seq in range(1, n + 1)]


def play(backend: Any, reqs: list[WorldRequest]) -> list[FrameChunk]:
    backend.start(SessionStart("main", 7, "a meadow"))
    return [c for r in reqs for c in backend.generate(r)]


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(((a.astype(np.float64) - b) ** 2).mean())
    return float(10 * np.log10(255.0 ** 2 / max(mse, 1e-9)))


def fetch(url: str, encoding: str, n: int = 3) -> tuple[list[FrameChunk], str]:
    """The chunks of ``requests(n)`` through the server at ``url`` asking for ``encoding``, and what it chose."""
    rb = RemoteBackend(url, token=TOKEN, width=W, height=H, encoding=encoding)
    try:
        return play(rb, requests(n)), rb.encoding_used
    finally:
        rb.close()


def close_to(got: list[FrameChunk], want: list[FrameChunk]) -> None:
    assert [c.first_frame for c in got] == [c.first_frame for c in want]
    for g, w in zip(got, want, strict=True):
        assert g.frames.shape == w.frames.shape
        assert psnr(g.frames, w.frames) > 30.0


def test_choose_encoding_takes_h264_only_where_both_sides_have_it(monkeypatch: pytest.MonkeyPatch) -> None:
    both = ["raw", "jpeg", "h264"]
    monkeypatch.setattr(server_mod, "h264_available", lambda: True)
    assert choose_encoding("auto", "192.0.2.7", "h264", both, (96, 54)) == "h264"
    assert choose_encoding("auto", "127.0.0.1", "h264", both, (96, 54)) == "raw"  # loopback: no CPU spent
    assert choose_encoding("h264", "127.0.0.1", "h264", both, (96, 54)) == "h264"  # asked for
    assert choose_encoding("auto", "192.0.2.7", "h264", ["raw", "jpeg"], (96, 54)) == "jpeg"  # client lacks it
    assert choose_encoding("auto", "192.0.2.7", "h264", (), (96, 54)) == "jpeg"  # an older client sends no codecs
    assert choose_encoding("h264", "192.0.2.7", "webp", both, (97, 54)) == "webp"  # odd size: the fallback
    assert choose_encoding("auto", "192.0.2.7", "jpeg", both, (96, 54)) == "jpeg"  # the server's own choice
    assert choose_encoding("webp", "192.0.2.7", "h264", both, (96, 54)) == "webp"
    assert choose_encoding("png", "192.0.2.7", "h264", both, (96, 54)) == "png"
    monkeypatch.setattr(server_mod, "h264_available", lambda: False)
    assert choose_encoding("h264", "192.0.2.7", "h264", both, (96, 54)) == "jpeg"  # server lacks it


@needs_h264
def test_h264_over_loopback_is_close_and_smaller_than_jpeg(url: str) -> None:
    local = play(ProceduralBackend(W, H), requests())
    got: dict[str, list[FrameChunk]] = {}
    for enc in ("h264", "jpeg"):
        got[enc], used = fetch(url, enc)
        assert used == enc
    close_to(got["h264"], local)
    h264 = sum(c.memory["bytes_per_frame"] for c in got["h264"][1:])
    jpeg = sum(c.memory["bytes_per_frame"] for c in got["jpeg"][1:])
    assert h264 * 2 < jpeg, (h264, jpeg)  # after the first key frame a moving shot costs its differences


def test_png_is_the_lossless_choice(url: str) -> None:
    chunks, used = fetch(url, "png", 1)
    assert used == "png"
    local = play(ProceduralBackend(W, H), requests(1))
    assert all(np.array_equal(a.frames, b.frames) for a, b in zip(chunks, local, strict=True))  # byte-exact
    assert 0 < chunks[0].memory["bytes_per_frame"] < W * H * 3


@needs_h264
def test_a_client_without_pyav_gets_jpeg(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote_mod, "h264_decodable", lambda: False)
    chunks, used = fetch(url, "h264", 1)
    assert used == "jpeg"
    close_to(chunks, play(ProceduralBackend(W, H), requests(1)))


def test_a_server_without_pyav_sends_jpeg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_mod, "h264_available", lambda: False)
    app = create_app(backend_factory("procedural"), ServerConfig(token=TOKEN, grace_s=5.0))
    srv = ServerThread(app).start()
    try:
        chunks, used = fetch(srv.url, "h264", 1)
        assert used == "jpeg"
    finally:
        srv.stop()
    close_to(chunks, play(ProceduralBackend(W, H), requests(1)))


@needs_h264
def test_h264_survives_dropped_connections_and_resends(url: str) -> None:
    local = play(ProceduralBackend(W, H), requests())
    rb = RemoteBackend(url, token=TOKEN, width=W, height=H, encoding="h264")
    try:
        rb.start(SessionStart("main", 7, "a meadow"))
        reqs = requests()
        got: list[FrameChunk] = []
        it = rb.generate(reqs[0])
        got.append(next(it))
        rb._ws.socket.shutdown(socket.SHUT_RDWR)  # dropped between two blocks (the server then sends a key frame)
        got += list(it)
        assert rb.reconnects == 1 and rb.resumed
        it = rb.generate(reqs[1])
        got.append(next(it))
        rb._ws.send(dumps({"op": "next", "seq": 2, "block": 1}))  # block 1 is encoded and sent...
        time.sleep(0.2)
        rb._ws.socket.shutdown(socket.SHUT_RDWR)  # ...and lost: the server re-sends the same packets
        got += list(it)
        got += list(rb.generate(reqs[2]))
        again = list(rb.generate(reqs[2]))  # the same request again: re-sent blocks the client already decoded
        assert rb.reconnects == 2 and rb.encoding_used == "h264"
    finally:
        rb.close()
    close_to(got, local)
    assert all(np.array_equal(a.frames, b.frames) for a, b in zip(again, got[-len(again):], strict=True))


@needs_h264
def test_the_receiver_refuses_a_gap_and_restarts_at_a_key_frame() -> None:
    frames = np.stack([np.full((16, 32, 3), 8 * i, np.uint8) for i in range(12)])
    frames[:, 4:12, (np.arange(12) * 2) % 32] = 255
    sender, receiver = video_wire.H264Sender(24.0), video_wire.H264Receiver()
    blocks = [sender.encode(frames[i:i + 4]) for i in range(0, 12, 4)]
    assert [b[2]["at"] for b in blocks] == [0, 4, 8] and [b[2]["key"] for b in blocks] == [True, False, False]
    first = receiver.decode(blocks[0][0], blocks[0][1], blocks[0][2], (4, 16, 32, 3))
    assert np.array_equal(receiver.decode(*blocks[0], (4, 16, 32, 3)), first)  # a re-send: the same frames
    with pytest.raises(BackendError, match="a block was lost"):
        receiver.decode(*blocks[2], (4, 16, 32, 3))  # block 1 never arrived
    sender.want_key()
    payload, sizes, label = sender.encode(frames[8:12])
    assert label["key"] and label["at"] == 12
    back = receiver.decode(payload, sizes, label, (4, 16, 32, 3))
    assert psnr(back, frames[8:12]) > 30.0

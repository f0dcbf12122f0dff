"""The world server's remaining limits, each with its refusal: the hello deadline, the replay
buffer's block and byte caps, and `worldloom serve` refusing limits out of range.

(The other limits of issue 14 are tested in test_remote.py: sessions and vanished clients,
message size, JSON depth, frame size, request length and from_block, the token, /health.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the world server needs fastapi")
pytest.importorskip("uvicorn", reason="the world server needs uvicorn")
pytest.importorskip("websockets", reason="the remote backend needs websockets")

from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from game.world import server as server_module  # noqa: E402
from game.world.backends.remote import _direct  # noqa: E402
from game.world.protocol import WorldRequest  # noqa: E402
from game.world.server import ServerConfig, ServerThread, WorldServer, backend_factory, create_app, main  # noqa: E402
from game.world.wire import WIRE_VERSION, decode_block, dumps  # noqa: E402

TOKEN = "server-limits-token-0123456789abcdef"


def serve(**config: Any) -> tuple[ServerThread, WorldServer]:
    app = create_app(backend_factory("null", width=16, height=16), ServerConfig(token=TOKEN, **config))
    return ServerThread(app).start(), app.state.world


@pytest.fixture()
def sock() -> Iterator[Any]:
    opened: list[Any] = []

    def open_(url: str) -> Any:
        ws = connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, proxy=None, max_size=None,
                     open_timeout=3, close_timeout=1, **_direct())
        opened.append(ws)
        return ws

    yield open_
    for ws in opened:
        ws.close()


def closed_with(ws: Any) -> tuple[int | None, str]:
    try:
        while True:
            ws.recv(timeout=5)
    except ConnectionClosed as exc:
        return (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (None, "")


def test_a_connection_that_never_says_hello_is_closed(monkeypatch: pytest.MonkeyPatch, sock: Any) -> None:
    monkeypatch.setattr(server_module, "HELLO_TIMEOUT_S", 0.2)
    srv, world = serve()
    try:
        code, reason = closed_with(sock(srv.url))  # connected with the token, then silent
        assert code == 4400 and "no hello" in reason, (code, reason)
        assert not world.slots  # it never took a session
    finally:
        srv.stop()


@pytest.mark.parametrize("config, kept", [({"replay_blocks": 2}, 2), ({"replay_bytes": 1}, 1)])
def test_the_replay_buffer_keeps_at_most_its_blocks_and_bytes(config: dict[str, int], kept: int,
                                                              sock: Any) -> None:
    srv, world = serve(**config)
    try:
        ws = sock(srv.url)
        ws.send(dumps({"op": "hello", "v": WIRE_VERSION, "client": "replay-limits"}))
        ws.recv(timeout=5)
        ws.send(dumps({"op": "start", "start": {"session_id": "main", "seed": 1, "prompt": "x"}}))
        ws.recv(timeout=5)
        req = WorldRequest("main", 1, 12 * 6, "x")  # six blocks of the null backend
        ws.send(dumps({"op": "generate", "request": req.to_json(), "from_block": 0}))
        blocks = [decode_block(ws.recv(timeout=5))]
        for b in range(1, 6):
            ws.send(dumps({"op": "next", "seq": 1, "block": b}))
            blocks.append(decode_block(ws.recv(timeout=5)))
        assert [c.block for c in blocks] == list(range(6)) and blocks[-1].last
        slot = world.slots["replay-limits"]
        assert len(slot.sent) == kept and (1, 5) in slot.sent  # the newest always stays, for a resume
        assert slot.sent_bytes == sum(len(m) for m in slot.sent.values())
    finally:
        srv.stop()


@pytest.mark.parametrize("flags", [["--max-sessions", "0"], ["--max-message-kib", "0"], ["--grace", "-1"],
                                   ["--quality", "101"], ["--max-side", "8"], ["--max-side", "99999"],
                                   ["--max-pixels", "10"], ["--max-request-frames", "0"]])
def test_serve_refuses_limits_out_of_range(flags: list[str], monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("WORLDLOOM_TOKEN", TOKEN)
    assert main(["--port", "1", *flags]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and flags[0] in err, err

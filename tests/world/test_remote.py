"""The remote backend: ``worldloom serve`` in-process on loopback, driven by ``RemoteBackend``.

Every server here binds 127.0.0.1 on a free port, every loop is bounded, and every
server stops by itself at the end of its test or module.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the world server needs fastapi")
pytest.importorskip("uvicorn", reason="the world server needs uvicorn")
websockets = pytest.importorskip("websockets", reason="the remote backend needs websockets")

from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from game.errors import BackendError  # noqa: E402
from game.headless import play_headless  # noqa: E402
from game.inputs.script import parse_script, read_script  # noqa: E402
from game.world.backends import BACKENDS  # noqa: E402
from game.world.backends.procedural import ProceduralBackend  # noqa: E402
from game.world.backends.remote import RemoteBackend, _direct  # noqa: E402
from game.world.protocol import (  # noqa: E402
    Anchor,
    Entity,
    FrameChunk,
    MemoryOp,
    Scene,
    SessionStart,
    WorldRequest,
)
from game.world.server import (  # noqa: E402
    ServerConfig,
    ServerThread,
    WorldServer,
    backend_factory,
    check_bind,
    choose_encoding,
    create_app,
    is_loopback,
    main,
)
from game.world.wire import (  # noqa: E402
    WIRE_VERSION,
    WireError,
    decode_block,
    decode_chunk,
    dumps,
    encode_block,
    encode_chunk,
    loads,
    request_from_json,
    request_json,
)

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "test-token-0123456789abcdef-0123456789"
W, H = 96, 54
SCENE = Scene("meadow", entities=(Entity("creature", "character", "the creature", x=0.6),))

SCRIPT = """give stone creature
move a 0.5
choose Offer the kite
save s1
choose 1
rollback
load s1
choose finish_bad
"""


def start_server(**config: Any) -> tuple[ServerThread, WorldServer]:
    cfg = ServerConfig(token=TOKEN, **{"grace_s": 5.0, **config})
    app = create_app(backend_factory("procedural"), cfg)
    return ServerThread(app, max_message_bytes=cfg.max_message_bytes).start(), app.state.world


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[ServerThread, WorldServer]]:
    srv, world = start_server(max_sessions=8)
    yield srv, world
    srv.stop()


def client(url: str, **kw: Any) -> RemoteBackend:
    return RemoteBackend(url, token=TOKEN, width=W, height=H, **kw)


def requests(sid: str = "main", n: int = 3, prompt: str = "a meadow at dusk") -> list[WorldRequest]:
    return [WorldRequest(sid, seq, 30, f"{prompt} {seq}", switch_mode="plain", scene=SCENE,
                         actions=("d",) * 10 if seq % 2 else ()) for seq in range(1, n + 1)]


def play(backend: Any, seed: int, reqs: list[WorldRequest], prompt: str = "a meadow") -> list[FrameChunk]:
    backend.start(SessionStart(reqs[0].session_id, seed, prompt))
    return [c for r in reqs for c in backend.generate(r)]


def _bytes(audio: np.ndarray | None) -> bytes | None:
    return None if audio is None else audio.tobytes()


def same(a: list[FrameChunk], b: list[FrameChunk]) -> bool:
    """Frames, frame clock and sound identical, block for block."""
    return len(a) == len(b) and all(
        x.frames.tobytes() == y.frames.tobytes() and x.first_frame == y.first_frame
        and _bytes(x.audio) == _bytes(y.audio) for x, y in zip(a, b, strict=True))


def raw_socket(url: str, token: str | None = TOKEN) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return connect(url, additional_headers=headers, proxy=None, max_size=None, open_timeout=3, close_timeout=1,
                   **_direct())


def close_code(ws: Any, timeout: float = 3.0) -> tuple[int | None, str]:
    try:
        while True:
            ws.recv(timeout=timeout)
    except ConnectionClosed as exc:
        return (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (None, "")


# -- the wire format ----------------------------------------------------------------------------------
def test_requests_and_chunks_survive_the_wire() -> None:
    req = WorldRequest("main", 7, 30, "a creek at night", switch_mode="recache",
                       scene=Scene("creek", "creek", "night", "rain", entities=(
                           Entity("kite", "item", "red kite", look="a kite", x=0.3, y=0.1, state="held:creature",
                                  holding=("ribbon",)),)),
                       actions=("w", "", "d"), camera_x=1.25, camera_dx=0.01, references=("/tmp/a.png",),
                       audio="hum.wav", cue="leap", event="choice", event_id="offer_kite",
                       anchors=(Anchor("world.style", "text", "style", "gouache"),
                                Anchor("location.creek", "text", "location", "creek", tier="sink_current")),
                       rolling=("#1 scene:creek",), deadline_ms=250, tiers={"prompt.style": "sink_global"})
    assert request_from_json(loads(dumps({"op": "x", **request_json(req)}))) == req
    backend = ProceduralBackend(W, H)
    backend.start(SessionStart("main", 1, "x"))
    chunk = next(iter(backend.generate(req)))
    for enc in ("raw", "jpeg", "webp"):
        header, payload = encode_chunk(chunk, enc)
        back = decode_chunk(loads(dumps(header)), payload)
        assert back.frames.shape == chunk.frames.shape and back.ignored == chunk.ignored
        assert back.audio is not None and chunk.audio is not None and np.array_equal(back.audio, chunk.audio)
        if enc == "raw":
            assert back.frames.tobytes() == chunk.frames.tobytes()
        with pytest.raises(WireError):
            decode_chunk(header, payload[:-1])
        message = encode_block(chunk, enc, block=5)  # as the server sends it: one binary message
        whole = decode_block(message)
        assert whole.block == 5 and whole.frames.tobytes() == back.frames.tobytes()
        for broken in (message[:3], message[:-1], b"\xff\xff\xff\xff" + message[4:]):
            with pytest.raises(WireError):
                decode_block(broken)
    for bad in ("[1]", '{"no": "op"}', "x" * 10):
        with pytest.raises(WireError):
            loads(bad)
    with pytest.raises(WireError, match="switch_mode"):
        request_from_json({**request_json(req), "switch_mode": "teleport"})
    with pytest.raises(WireError, match="seq"):
        request_from_json({**request_json(req), "seq": "7"})


# -- the same frames as in-process -------------------------------------------------------------------
def test_remote_frames_are_the_in_process_frames(server: tuple[ServerThread, WorldServer]) -> None:
    srv, _ = server
    rb = client(srv.url)
    try:
        remote = play(rb, 3, requests())
        local = play(ProceduralBackend(W, H), 3, requests())
        assert same(remote, local)
        assert remote[0].memory["bytes_per_frame"] == W * H * 3  # raw on loopback
        snap = rb.memory(MemoryOp("snapshot"))
        assert snap.ok and snap.handle
        assert rb.memory(MemoryOp("restore", handle=snap.handle)).ok
    finally:
        rb.close()


def test_concurrent_sessions_do_not_cross(server: tuple[ServerThread, WorldServer]) -> None:
    srv, world = server
    seeds = (11, 12, 13, 14)
    results: dict[int, bool] = {}
    errors: list[BaseException] = []
    backends: list[int] = []
    keys: list[str] = []
    together = threading.Barrier(len(seeds), action=lambda: backends.append(
        len({id(world.slots[k].backend) for k in keys})), timeout=20)

    def one(seed: int) -> None:
        try:
            rb = client(srv.url)
            keys.append(rb._client)
            try:  # the same session id "main" on every client: only the connection separates them
                together.wait()
                remote = play(rb, seed, requests(prompt=f"world {seed}"))
                local = play(ProceduralBackend(W, H), seed, requests(prompt=f"world {seed}"))
                results[seed] = same(remote, local)
            finally:
                rb.close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(s,)) for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert backends == [len(seeds)]  # one backend instance per client
    assert results == {s: True for s in seeds}  # each got exactly its own world
    deadline = time.monotonic() + 3
    while any(k in world.slots for k in keys) and time.monotonic() < deadline:  # closed: nothing left behind
        time.sleep(0.02)
    assert not any(k in world.slots for k in keys)


def test_a_story_plays_the_same_remote_and_in_process(server: tuple[ServerThread, WorldServer], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    srv, _ = server
    monkeypatch.setitem(BACKENDS, "remote", lambda **kw: RemoteBackend(srv.url, token=TOKEN, **kw))
    zero_mark = [c for c in read_script(ROOT / "stories" / "zero_mark" / "kite.txt") if c.verb != "say"]
    for story, script in ((ROOT / "tests" / "data" / "mini", parse_script(SCRIPT)),
                          (ROOT / "stories" / "zero_mark", zero_mark)):
        hashes = [play_headless(str(story), script, backend=name, seed=7, save_dir=tmp_path / story.name / name,
                                size=(W, H)).frame_hash.hexdigest() for name in ("remote", "procedural")]
        assert hashes[0] == hashes[1], story.name


def test_jpeg_frames_are_smaller_and_close(server: tuple[ServerThread, WorldServer]) -> None:
    srv, _ = server
    rb = client(srv.url, encoding="jpeg")
    try:
        remote = play(rb, 5, requests(n=1))
    finally:
        rb.close()
    local = play(ProceduralBackend(W, H), 5, requests(n=1))
    assert 0 < remote[0].memory["bytes_per_frame"] < W * H * 3 / 3
    diff = np.abs(remote[0].frames.astype(int) - local[0].frames.astype(int)).mean()
    assert diff < 6, diff
    assert remote[0].audio is not None and local[0].audio is not None
    assert np.array_equal(remote[0].audio, local[0].audio)


# -- dropped connections ------------------------------------------------------------------------------
def test_a_dropped_connection_resumes_the_request(server: tuple[ServerThread, WorldServer]) -> None:
    srv, _ = server
    local = play(ProceduralBackend(W, H), 21, requests())
    rb = client(srv.url)
    try:
        rb.start(SessionStart("main", 21, "a meadow"))
        got: list[FrameChunk] = []
        reqs = requests()
        it = rb.generate(reqs[0])
        got.append(next(it))
        rb._ws.socket.shutdown(socket.SHUT_RDWR)  # the network drops between two blocks
        got += list(it)
        assert rb.reconnects == 1 and rb.resumed
        it = rb.generate(reqs[1])
        got.append(next(it))
        rb._ws.send(dumps({"op": "next", "seq": 2, "block": 1}))  # the server sends block 1...
        time.sleep(0.2)
        rb._ws.socket.shutdown(socket.SHUT_RDWR)  # ...and the connection drops before it is read
        got += list(it)
        got += list(rb.generate(reqs[2]))
        assert rb.reconnects == 2 and rb.resumed
        assert same(got, local)  # nothing lost, nothing twice, the world where it was
    finally:
        rb.close()


def test_vanished_clients_are_reaped_and_the_server_lives_on() -> None:
    srv, world = start_server(grace_s=0.2)
    try:
        ws = raw_socket(srv.url)
        ws.send(dumps({"op": "hello", "v": WIRE_VERSION, "client": "vanishing-client", "size": [W, H]}))
        assert json.loads(ws.recv(timeout=3))["op"] == "hello"
        ws.send(dumps({"op": "start", "start": {"session_id": "main", "seed": 1, "prompt": "x"}}))
        ws.recv(timeout=3)
        ws.send(dumps({"op": "generate", "request": requests()[0].to_json(), "from_block": 0}))
        ws.socket.shutdown(socket.SHUT_RDWR)  # gone without a close frame, mid-request
        assert len(world.slots) == 1
        deadline = time.monotonic() + 5
        while world.slots and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not world.slots
        rb = client(srv.url)
        assert len(play(rb, 1, requests(n=1))) == 3  # still serving
        rb.close()
    finally:
        srv.stop()


# -- refusals ----------------------------------------------------------------------------------------
def test_a_wrong_or_missing_token_is_refused_with_a_reason(server: tuple[ServerThread, WorldServer]) -> None:
    srv, _ = server
    with pytest.raises(BackendError, match="unauthorized.*WORLDLOOM_TOKEN.*4401"):
        RemoteBackend(srv.url, token="not-the-token")
    code, reason = close_code(raw_socket(srv.url, token=None))
    assert code == 4401 and "unauthorized" in reason
    with pytest.raises(BackendError, match="no token"):
        RemoteBackend(srv.url, token="")


def test_oversize_messages_are_refused(server: tuple[ServerThread, WorldServer]) -> None:
    srv, _ = server
    ws = raw_socket(srv.url)  # over the app's 1 MiB limit: refused with a reason
    ws.send(dumps({"op": "hello", "v": WIRE_VERSION, "client": "oversize-client", "size": [W, H]}))
    ws.recv(timeout=3)
    ws.send(dumps({"op": "ping", "pad": "x" * (2 << 20)}))
    code, reason = close_code(ws)
    assert code == 1009 and "too big" in reason and str(1 << 20) in reason, (code, reason)
    ws = raw_socket(srv.url)  # over uvicorn's 4x cap: the protocol layer drops it before the app reads it
    try:
        ws.send(dumps({"op": "ping", "pad": "x" * (6 << 20)}))
    except (ConnectionClosed, OSError):
        pass
    assert close_code(ws)[0] in (1009, None)
    rb = client(srv.url)
    try:
        rb.start(SessionStart("main", 0, "x"))
        huge = WorldRequest("main", 1, 12, "word " * 300_000)
        with pytest.raises(BackendError, match="over the server's"):
            rb.generate(huge)
    finally:
        rb.close()


def test_session_limit_and_bad_messages() -> None:
    srv, _ = start_server(max_sessions=2)
    try:
        a, b = client(srv.url), client(srv.url)
        with pytest.raises(BackendError, match="server busy.*limit 2.*4429"):
            client(srv.url)
        a.close()
        c = client(srv.url)  # a slot is free again
        c.close()
        b.close()
        ws = raw_socket(srv.url)
        ws.send("not json")
        code, reason = close_code(ws)
        assert code == 4400 and "JSON" in reason
        ws = raw_socket(srv.url)
        ws.send(b"\x00binary")
        assert close_code(ws)[0] == 4400
    finally:
        srv.stop()


def test_serve_refuses_unsafe_setups(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.0.2.1")
    assert check_bind("127.0.0.1", tls=False, allow_insecure=False) == ""
    assert "TLS" in check_bind("0.0.0.0", tls=False, allow_insecure=False)
    assert check_bind("0.0.0.0", tls=True, allow_insecure=False) == ""
    assert check_bind("0.0.0.0", tls=False, allow_insecure=True) == ""
    assert choose_encoding("auto", "127.0.0.1", "jpeg") == "raw"
    assert choose_encoding("auto", "192.0.2.7", "webp") == "webp"
    monkeypatch.delenv("WORLDLOOM_TOKEN", raising=False)
    assert main(["--port", "1"]) == 2 and "WORLDLOOM_TOKEN is not set" in capsys.readouterr().err
    monkeypatch.setenv("WORLDLOOM_TOKEN", TOKEN)
    assert main(["serve", "--host", "0.0.0.0", "--port", "1"]) == 2
    assert "without TLS" in capsys.readouterr().err
    assert main(["--backend", "nosuch", "--port", "1"]) == 2
    assert "unknown world backend" in capsys.readouterr().err
    with pytest.raises(BackendError, match="unencrypted"):
        RemoteBackend("ws://192.0.2.1:8765", token=TOKEN)


def test_tls_serves_wss_and_plain_ws_cannot_talk_to_it(tmp_path: Path) -> None:
    import shutil

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: cannot make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], check=True, capture_output=True,
                   timeout=60)
    app = create_app(backend_factory("procedural"), ServerConfig(token=TOKEN))
    srv = ServerThread(app, tls_cert=str(cert), tls_key=str(key)).start()
    try:
        assert srv.url.startswith("wss://")
        rb = client(srv.url, ca_file=str(cert))
        assert len(play(rb, 2, requests(n=1))) == 3
        rb.close()
        with pytest.raises(BackendError):  # the certificate is not trusted without ca_file
            client(srv.url)
        with pytest.raises(BackendError):
            client(srv.url.replace("wss://", "ws://"))
    finally:
        srv.stop()


# -- a killed server --------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawn(port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "WORLDLOOM_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, "-m", "game.world.server", "--backend", "procedural", "--port",
                             str(port), "--size", f"{W}x{H}", "--grace", "5"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the world server did not start")


def test_a_killed_server_falls_back_and_then_resumes() -> None:
    from game.errorbank.guard import GuardedBackend

    port = _free_port()
    url = f"ws://127.0.0.1:{port}"
    proc = _spawn(port)
    procs = [proc]
    try:
        rb = RemoteBackend(url, token=TOKEN, reconnect_attempts=1, backoff_s=0.01)
        guard = GuardedBackend(rb, reference_factory=None, probe_every_s=0.5, retries=1, backoff_s=0.01,
                               timeout_s=10.0)
        guard.start(SessionStart("main", 4, "a meadow"))
        reqs = [WorldRequest("main", seq, 12, "a meadow", switch_mode="plain", scene=SCENE) for seq in range(1, 9)]
        assert len(list(guard.generate(reqs[0]))) == 1 and not guard.down

        proc.kill()
        proc.wait(10)
        t0 = time.monotonic()
        with pytest.raises(BackendError, match="unreachable"):
            list(rb.generate(WorldRequest("main", 999, 12, "x")))
        assert time.monotonic() - t0 < 3.0  # told at once, not after a long wait
        shown = list(guard.generate(reqs[1]))
        assert len(shown) == 1 and guard.down and guard.notice  # the procedural fallback, and the player is told
        assert shown[0].frames.shape == (12, H, W, 3)

        procs.append(_spawn(port))  # the server comes back (a fresh process: it forgot the session)
        back = False
        for r in reqs[2:]:
            list(guard.generate(r))
            if not guard.down:
                back = True
                break
        assert back, "the guard never went back to the remote backend"
        assert rb.reconnects >= 1 and not rb.resumed and rb.notice
        assert "restarted" in guard.notice  # the guard passes the remote's sentence on to the player
        assert len(list(rb.generate(WorldRequest("main", 50_000, 12, "a meadow", switch_mode="plain")))) == 1
        guard.close()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)


def test_a_server_down_at_start_falls_back_to_the_procedural_world(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from game.errors import BackendError
    from game.session import open_game
    from game.state import Choose
    from game.world.backends.remote import RemoteBackend

    with socket.socket() as sock:  # a free port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("WORLDLOOM_TOKEN", "t")
    remote = RemoteBackend(f"ws://127.0.0.1:{port}", connect_timeout_s=0.5, reconnect_attempts=1)
    assert "unreachable" in remote.notice
    with pytest.raises(BackendError, match="unreachable"):
        remote.capabilities()
    s = open_game(Path(__file__).parents[1] / "data" / "mini", backend=remote, save_dir=tmp_path,
                  errorbank=tmp_path / "bank.db").session
    s.start()
    frames = sum(c.n_frames for c in s.stream())
    s.submit(Choose(choice_id="offer_kite"))
    frames += sum(c.n_frames for c in s.stream())
    assert frames > 0 and s.state.scene == "after"
    assert "procedural" in s.view().notice


# -- the server's own limits (game.limits) ----------------------------------------------------------------
def hello(srv: ServerThread, key: str, **extra: Any) -> Any:
    ws = raw_socket(srv.url)
    ws.send(dumps({"op": "hello", "v": WIRE_VERSION, "client": key, "size": [W, H], **extra}))
    return ws


def test_vanished_clients_never_lock_out_a_new_one() -> None:
    srv, world = start_server(max_sessions=2, grace_s=60.0)
    try:
        for i in range(12):  # each vanishes without a close frame; the grace (60 s) never runs out here
            ws = hello(srv, f"vanisher-{i:04d}")
            assert json.loads(ws.recv(timeout=3))["op"] == "hello", i
            ws.socket.shutdown(socket.SHUT_RDWR)
            deadline = time.monotonic() + 3
            while any(s.ws is not None for s in world.slots.values()) and time.monotonic() < deadline:
                time.sleep(0.01)
        assert len(world.slots) <= 2
        rb = client(srv.url)  # a real client still gets a slot, and frames
        assert len(play(rb, 1, requests(n=1))) == 3
        other = client(srv.url)  # the second slot: the last vanished session gives way
        with pytest.raises(BackendError, match="server busy"):  # both attached: now the server is full
            client(srv.url)
        rb.close()
        other.close()
    finally:
        srv.stop()


def test_from_block_and_request_length_are_capped_by_the_server() -> None:
    srv, world = start_server(max_request_frames=60)
    try:
        ws = hello(srv, "capped-client")
        ws.recv(timeout=3)
        ws.send(dumps({"op": "start", "start": {"session_id": "main", "seed": 1, "prompt": "x"}}))
        ws.recv(timeout=3)
        req = requests(n=1)[0]  # 30 frames: 3 blocks of 12 (procedural)
        for bad, why in ((dict(from_block=500), "from_block"), (dict(from_block="1"), "from_block"),
                         (dict(from_block=-1), "from_block")):
            ws.send(dumps({"op": "generate", "request": req.to_json(), **bad}))
            reply = json.loads(ws.recv(timeout=3))
            assert reply["op"] == "error" and why in reply["message"], reply
        long = WorldRequest("main", 2, 100_000, "x")
        ws.send(dumps({"op": "generate", "request": long.to_json(), "from_block": 0}))
        reply = json.loads(ws.recv(timeout=3))
        assert reply["op"] == "error" and "min_frames" in reply["message"]
        assert world.slots["capped-client"].blocks_served == 0  # nothing was rendered for them
        ws.send(dumps({"op": "generate", "request": req.to_json(), "from_block": 2}))  # the last block: fine
        last = decode_block(ws.recv(timeout=10))  # a block: one binary message
        assert (last.seq, last.block, last.last) == (1, 2, True)
        ws.close()
    finally:
        srv.stop()


def test_frame_size_is_capped_by_the_server(server: tuple[ServerThread, WorldServer]) -> None:
    srv, _ = server
    ws = raw_socket(srv.url)
    ws.send(dumps({"op": "hello", "v": WIRE_VERSION, "client": "huge-frames", "size": [4096, 4096]}))
    code, reason = close_code(ws)
    assert code == 4400 and "pixel" in reason, (code, reason)
    ws = hello(srv, "huge-start")
    ws.recv(timeout=3)
    for (w, h), why in (((4096, 4096), "1-2048 a side"), ((2000, 2000), "frame limit")):
        ws.send(dumps({"op": "start", "start": {"session_id": "main", "seed": 1, "prompt": "x", "width": w,
                                                "height": h}}))
        reply = json.loads(ws.recv(timeout=3))
        assert reply["op"] == "error" and why in reply["message"], reply
    ws.close()


def test_deeply_nested_json_is_refused_before_parsing(server: tuple[ServerThread, WorldServer],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    srv, _ = server
    ws = hello(srv, "deep-json")
    ws.recv(timeout=3)
    ws.send('{"op": "ping", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, reason = close_code(ws)
    assert code == 4400 and "nests 100001 levels" in reason, (code, reason)
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def test_short_tokens_and_missing_tls_files_are_refused(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    monkeypatch.setenv("WORLDLOOM_TOKEN", "t" * 31)
    assert main(["--port", "1"]) == 2 and "--insecure-token" in capsys.readouterr().err
    assert main(["--port", "1", "--insecure-token", "--backend", "nosuch"]) == 2
    assert "unknown world backend" in capsys.readouterr().err  # past the token check
    monkeypatch.setenv("WORLDLOOM_TOKEN", TOKEN)
    assert main(["--port", "1", "--tls-cert", str(tmp_path / "no.pem"), "--tls-key", str(tmp_path / "no.key")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "bad.pem").write_text("not a certificate")
    assert main(["--port", "1", "--tls-cert", str(tmp_path / "bad.pem"), "--tls-key", str(tmp_path / "bad.pem")]) == 2
    assert "cannot use --tls-cert" in capsys.readouterr().err


def test_a_short_token_is_refused_where_the_server_is_built() -> None:
    factory = backend_factory("null")
    for short in ("", "t", "x" * 31, "é" * 15):  # 15 characters, 30 bytes: counted in bytes
        with pytest.raises(BackendError, match="token"):
            create_app(factory, ServerConfig(token=short))
        with pytest.raises(BackendError, match="token"):
            WorldServer(factory, ServerConfig(token=short))
    assert create_app(factory, ServerConfig(token="x" * 32)) is not None
    assert create_app(factory, ServerConfig(token="é" * 16)) is not None  # 32 bytes
    assert create_app(factory, ServerConfig(token="t", insecure_token=True)) is not None  # the user said so
    with pytest.raises(BackendError, match="token"):  # even insecure, not none at all
        create_app(factory, ServerConfig(token="", insecure_token=True))


def test_health_says_only_ok_without_the_token(server: tuple[ServerThread, WorldServer]) -> None:
    import urllib.request

    srv, _ = server
    url = f"http://127.0.0.1:{srv.port}/health"
    with urllib.request.urlopen(url, timeout=3) as r:
        assert r.read() == b"ok"
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=3) as r:
        body = json.loads(r.read())
    assert body["ok"] is True and body["max_sessions"] == 8 and "sessions" in body

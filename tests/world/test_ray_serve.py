"""``worldloom serve --engine ray``: the gateway and world replicas on a local Ray cluster.

One local cluster for the module (2 CPUs, no dashboard), one application with two world
replicas serving the procedural backend at 64x36; every client binds loopback and every
wait is bounded. Skipped where Ray Serve is not installed (CI installs the ``serve`` extra).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="--engine ray needs Ray Serve (pip install 'worldloom[serve]')")
serve = pytest.importorskip("ray.serve", reason="--engine ray needs Ray Serve")
pytest.importorskip("fastapi", reason="the gateway needs fastapi")
pytest.importorskip("websockets", reason="the remote backend needs websockets")

from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from game.cli import main as cli_main  # noqa: E402
from game.errors import BackendError  # noqa: E402
from game.world.backends import make_backend  # noqa: E402
from game.world.backends.remote import RemoteBackend, _direct  # noqa: E402
from game.world.protocol import Entity, FrameChunk, Scene, SessionStart, WorldRequest  # noqa: E402
from game.world.ray_serve import build_app, shutdown  # noqa: E402
from game.world.ray_world import RaySettings  # noqa: E402
from game.world.server import ServerConfig  # noqa: E402
from game.world.wire import WIRE_VERSION, dumps, loads  # noqa: E402

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "ray-test-token-0123456789abcdef-0123"
W, H = 64, 36
SCENE = Scene("meadow", entities=(Entity("creature", "character", "the creature", x=0.6),))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[str, RaySettings]]:
    """A local Ray cluster with the application deployed: ``(url, settings)``."""
    ray.init(num_cpus=2, include_dashboard=False, namespace="serve", log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    port = _free_port()
    settings = RaySettings(backend="procedural", backend_kwargs={"width": W, "height": H},
                           config=ServerConfig(token=TOKEN, max_sessions=8, grace_s=30.0), replicas=2,
                           cpus_per_replica=0.0, retry_s=90.0, app_name="wltest")
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(build_app(settings), name=settings.app_name, route_prefix="/")
        yield f"ws://127.0.0.1:{port}/ws", settings
    finally:
        shutdown(settings)
        serve.shutdown()
        ray.shutdown()


def requests(sid: str, n: int = 3, prompt: str = "a meadow at dusk") -> list[WorldRequest]:
    return [WorldRequest(sid, seq, 30, f"{prompt} {seq}", switch_mode="plain", scene=SCENE,
                         actions=("d",) * 10 if seq % 2 else ()) for seq in range(1, n + 1)]


def frames(chunks: list[FrameChunk]) -> list[bytes]:
    return [c.frames.tobytes() for c in chunks]


def reference(seed: int, reqs: list[WorldRequest], prompt: str) -> list[bytes]:
    """What the same calls make in-process."""
    backend = make_backend("procedural", width=W, height=H)
    backend.start(SessionStart(reqs[0].session_id, seed, prompt))
    out = frames([c for r in reqs for c in backend.generate(r)])
    backend.close()
    return out


def client(url: str) -> RemoteBackend:
    return RemoteBackend(url, token=TOKEN, width=W, height=H, block_timeout_s=120.0, reconnect_attempts=6)


def hello_replica(url: str, key: str) -> str:
    """The world replica a fresh connection's ``hello`` for ``key`` lands on."""
    with connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, proxy=None, max_size=None,
                 open_timeout=30, close_timeout=1, **_direct()) as ws:
        ws.send(dumps({"op": "hello", "v": WIRE_VERSION, "client": key, "size": [W, H]}))
        reply = loads(ws.recv(timeout=120))
        assert reply["op"] == "hello", reply
        return str(reply["replica"])


def wait_for_replicas(url: str, n: int) -> None:
    """Until ``n`` world replicas answer hellos (a killed one is replaced in the background); bounded."""
    seen: set[str] = set()
    for i in range(120):
        seen.add(hello_replica(url, f"probe-{i:03d}-{os.getpid()}"))
        if len(seen) >= n:
            return
        time.sleep(0.5)
    raise AssertionError(f"only {sorted(seen)} answered")


def test_a_bad_token_is_refused_at_the_gateway(cluster: tuple[str, RaySettings]) -> None:
    url, _ = cluster
    for token in ("wrong-token-0123456789abcdef-0123456789", None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        with connect(url, additional_headers=headers, proxy=None, open_timeout=30, close_timeout=1,
                     **_direct()) as ws:
            with pytest.raises(ConnectionClosed) as info:  # closed before or after the hello is sent
                ws.send(dumps({"op": "hello", "v": WIRE_VERSION, "client": "k" * 16}))
                ws.recv(timeout=30)
        assert info.value.rcvd is not None and info.value.rcvd.code == 4401
        assert "unauthorized" in info.value.rcvd.reason
    with pytest.raises(BackendError, match="unauthorized"):
        RemoteBackend(url, token="wrong-token-0123456789abcdef-0123456789")


def test_a_reconnect_lands_on_the_same_replica(cluster: tuple[str, RaySettings]) -> None:
    url, _ = cluster
    keys = [f"sticky-{i:02d}-{os.getpid()}" for i in range(8)]
    first = {k: hello_replica(url, k) for k in keys}
    assert all(first.values())
    for _ in range(2):
        assert {k: hello_replica(url, k) for k in keys} == first
    assert len(set(first.values())) == 2, "eight sessions all hashed to one of two replicas"


def test_concurrent_sessions_see_only_their_own_world(cluster: tuple[str, RaySettings]) -> None:
    url, _ = cluster
    plans = [(seed, f"cross-{seed}", f"{where} at dusk") for seed, where in
             ((3, "a meadow"), (11, "a harbour"), (29, "a cave"), (47, "a market"))]
    got: dict[int, list[bytes]] = {}
    errors: list[BaseException] = []

    def run(seed: int, sid: str, prompt: str) -> None:
        try:
            rb = client(url)
            rb.start(SessionStart(sid, seed, prompt))
            got[seed] = frames([c for r in requests(sid, 2, prompt) for c in rb.generate(r)])
            rb.close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=p) for p in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    for seed, sid, prompt in plans:
        assert got[seed] == reference(seed, requests(sid, 2, prompt), prompt), f"session {sid} saw other frames"
    assert len({b"".join(v) for v in got.values()}) == len(plans)


def test_the_gateway_encodes_frames_for_its_peer(cluster: tuple[str, RaySettings]) -> None:
    """The replicas make raw frames; a client that asks for JPEG gets JPEG from the gateway, close to them."""
    url, _ = cluster
    sid, seed, prompt = "jpeg", 13, "a meadow at dusk"
    rb = RemoteBackend(url, token=TOKEN, width=W, height=H, encoding="jpeg", block_timeout_s=120.0)
    rb.start(SessionStart(sid, seed, prompt))
    got = [c for r in requests(sid, 1, prompt) for c in rb.generate(r)]
    rb.close()
    want = reference(seed, requests(sid, 1, prompt), prompt)
    assert len(got) == len(want)
    for chunk, raw in zip(got, want, strict=True):
        assert chunk.memory["bytes_per_frame"] < W * H * 3  # not raw on the wire
        ref = np.frombuffer(raw, dtype=np.uint8).reshape(chunk.frames.shape)
        assert np.abs(chunk.frames.astype(np.int16) - ref.astype(np.int16)).mean() < 12


def test_a_killed_replica_hands_its_session_over_without_a_jump(cluster: tuple[str, RaySettings]) -> None:
    url, settings = cluster
    sid, seed, prompt = "handoff", 5, "a meadow at dusk"
    reqs = requests(sid, 3, prompt)
    rb = client(url)
    rb.start(SessionStart(sid, seed, prompt))
    got: list[FrameChunk] = []
    blocks = iter(rb.generate(reqs[0]))
    got.append(next(blocks))  # one block of the first request, then the replica dies
    before = rb.replica
    ray.kill(ray.get_actor(before, namespace="serve"), no_restart=True)
    got.extend(blocks)
    for r in reqs[1:]:
        got.extend(rb.generate(r))
    handle = serve.get_deployment_handle("World", app_name=settings.app_name)
    now: dict[str, Any] = handle.options(session_id=rb.client_key).whoami.remote().result(timeout_s=60)
    rb.close()
    assert now["replica"] != before and rb.client_key in now["sessions"] and now["rebuilt"] >= 1, (before, now)
    assert frames(got) == reference(seed, reqs, prompt), "the world jumped when its replica died"


def test_a_scale_down_drains_a_replica_and_its_sessions_move(cluster: tuple[str, RaySettings]) -> None:
    """Two replicas down to one (what the autoscaler does when load falls): every session goes on
    with the frames it would have had, those of the drained replica included."""
    url, settings = cluster
    wait_for_replicas(url, 2)  # the one killed above has been replaced
    plans = [(20 + i, f"drain-{i}", f"a harbour {i} at dusk") for i in range(6)]
    sessions = []
    for seed, sid, prompt in plans:
        rb = client(url)
        rb.start(SessionStart(sid, seed, prompt))
        reqs = requests(sid, 3, prompt)
        sessions.append((rb, reqs, frames(list(rb.generate(reqs[0]))), rb.replica))
    assert len({s[3] for s in sessions}) == 2, "six sessions all hashed to one of two replicas"
    serve.run(build_app(replace(settings, replicas=1)), name=settings.app_name, route_prefix="/")
    for (seed, _, prompt), (rb, reqs, got, _) in zip(plans, sessions, strict=True):
        for r in reqs[1:]:
            got.extend(frames(list(rb.generate(r))))
        assert got == reference(seed, reqs, prompt), f"session {reqs[0].session_id} jumped in the drain"
    handle = serve.get_deployment_handle("World", app_name=settings.app_name)
    now: dict[str, Any] = handle.whoami.remote().result(timeout_s=60)
    assert sorted(now["sessions"]) == sorted(rb.client_key for rb, *_ in sessions)
    drained = [s for s in sessions if s[3] != now["replica"]]
    assert drained and now["rebuilt"] >= len(drained)
    for rb, *_ in sessions:
        rb.close()


def test_serve_engine_ray_refuses_what_the_single_process_server_refuses(monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("WORLDLOOM_TOKEN", raising=False)
    assert cli_main(["serve", "--engine", "ray"]) == 2
    assert "WORLDLOOM_TOKEN is not set" in capsys.readouterr().err
    monkeypatch.setenv("WORLDLOOM_TOKEN", TOKEN)
    assert cli_main(["serve", "--engine", "ray", "--host", "0.0.0.0"]) == 2
    assert "without TLS" in capsys.readouterr().err

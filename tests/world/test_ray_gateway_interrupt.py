"""The Ray gateway passes ``interrupt`` on at once, beside the call making the block in flight (it was
read only after that block), and never negotiates H.264. Without Ray: the gateway and one world
replica in process, the replica behind the same ``.method.remote(...)`` calls its deployment answers,
the gateway served by uvicorn on loopback and a real ``RemoteBackend`` as the client."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the gateway needs fastapi")
pytest.importorskip("uvicorn", reason="the gateway is served by uvicorn")
pytest.importorskip("websockets", reason="the remote backend needs websockets")

from fastapi import FastAPI  # noqa: E402
from starlette.routing import WebSocketRoute  # noqa: E402
from starlette.websockets import WebSocket  # noqa: E402

from game.world.backends.procedural import ProceduralBackend  # noqa: E402
from game.world.backends.remote import RemoteBackend  # noqa: E402
from game.world.journal import SnapshotBook  # noqa: E402
from game.world.protocol import FrameChunk, SessionStart, WorldRequest  # noqa: E402
from game.world.ray_world import Gateway, WorldReplica  # noqa: E402
from game.world.server import ServerConfig, ServerThread  # noqa: E402

TOKEN = "t" * 40
CONFIG = ServerConfig(token=TOKEN, max_sessions=4, grace_s=30.0)


class HeldBlock(ProceduralBackend):
    """Block 1 of the first request waits until it is interrupted (a slow model between two steps)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.stop, self.held = threading.Event(), threading.Event()
        self.interrupts: list[str] = []

    def interrupt(self, session_id: str = "") -> None:
        self.interrupts.append(session_id)
        self.stop.set()

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        self.stop.clear()
        for chunk in super().generate(request):
            if request.seq == 1 and chunk.block == 1:
                self.held.set()
                if not self.stop.wait(60):  # without the interrupt the request fails, never hangs
                    raise RuntimeError("the block was never interrupted")
                return
            yield chunk


class _Method:
    def __init__(self, target: Any, name: str) -> None:
        self.target, self.name = target, name

    async def remote(self, *args: Any) -> Any:
        got = getattr(self.target, self.name)(*args)
        return await got if hasattr(got, "__await__") else got


class Deployment:
    """An object answering ``handle.options(session_id=...).method.remote(...)`` as Ray Serve's handle does."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def options(self, **_: Any) -> Deployment:
        return self

    def __getattr__(self, name: str) -> _Method:
        return _Method(self.target, name)


def _gateway(made: list[HeldBlock]) -> ServerThread:
    settings = {"backend": "procedural", "backend_kwargs": {}, "config": asdict(CONFIG), "app_name": "t"}
    replica = WorldReplica(settings, book=Deployment(SnapshotBook()), tag="A")

    def factory(options: dict[str, Any]) -> HeldBlock:
        made.append(HeldBlock(width=64, height=36))
        return made[-1]

    replica.base = factory
    gateway = Gateway(Deployment(replica), {"config": asdict(CONFIG), "retry_s": 1.0})

    async def ws(websocket: WebSocket) -> None:
        await gateway.serve(websocket)

    app = FastAPI()
    app.router.routes.append(WebSocketRoute("/ws", ws))
    return ServerThread(app).start()


def test_an_interrupt_reaches_the_replica_while_its_block_is_being_made() -> None:
    made: list[HeldBlock] = []
    srv = _gateway(made)
    rb = RemoteBackend(srv.url, token=TOKEN, width=64, height=36, reconnect_attempts=1)
    try:
        rb.start(SessionStart("main", 3, "a meadow"))
        got: list[FrameChunk] = []
        errors: list[BaseException] = []

        def pull() -> None:
            try:
                got.extend(rb.generate(WorldRequest("main", 1, 48, "a meadow")))  # four blocks
            except BaseException as exc:  # noqa: BLE001 - the assertion below names it
                errors.append(exc)

        thread = threading.Thread(target=pull, daemon=True)
        thread.start()
        assert made and made[0].held.wait(30)  # the replica's backend is inside block 1
        rb.interrupt()
        thread.join(30)
        assert not thread.is_alive() and not errors, errors
        assert made[0].interrupts == ["main"]  # while the block was being made: it waits for nothing else
        assert [c.block for c in got] == [0]
        after = list(rb.generate(WorldRequest("main", 2, 24, "a meadow")))
        assert [c.block for c in after] == [0, 1] and after[-1].last
    finally:
        rb.close()
        srv.stop()


def test_the_gateway_never_negotiates_h264() -> None:
    gateway = Gateway(Deployment(None), {"config": asdict(CONFIG), "retry_s": 1.0})  # --encoding h264
    assert CONFIG.encoding == "h264"
    assert gateway.encoding({"encoding": "auto", "codecs": ["h264"]}, "10.0.0.7") == "jpeg"
    assert gateway.encoding({"encoding": "h264", "codecs": ["h264"]}, "10.0.0.7") == "jpeg"
    assert gateway.encoding({"encoding": "webp"}, "10.0.0.7") == "webp"
    assert gateway.encoding({"encoding": "auto"}, "127.0.0.1") == "raw"

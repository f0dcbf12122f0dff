"""The Ray gateway passes ``interrupt`` on at once, beside the call making the block in flight (it was
read only after that block), and never negotiates H.264. Without Ray: the gateway and one world
replica in process, the replica behind the same ``.method.remote(...)`` calls its deployment answers,
the gateway served by uvicorn on loopback and a real ``RemoteBackend`` as the client; the held
backend and the interrupt's sequence are ``tests/world/conftest.py``'s."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the gateway needs fastapi")
pytest.importorskip("uvicorn", reason="the gateway is served by uvicorn")
pytest.importorskip("websockets", reason="the remote backend needs websockets")

from fastapi import FastAPI  # noqa: E402
from starlette.routing import WebSocketRoute  # noqa: E402
from starlette.websockets import WebSocket  # noqa: E402

from game.world.backends.remote import RemoteBackend  # noqa: E402
from game.world.journal import SnapshotBook  # noqa: E402
from game.world.protocol import FrameChunk, SessionStart  # noqa: E402
from game.world.ray_world import Gateway, WorldReplica  # noqa: E402
from game.world.server import ServerConfig, ServerThread  # noqa: E402

TOKEN = "t" * 40
CONFIG = ServerConfig(token=TOKEN, max_sessions=4, grace_s=30.0)


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


def _gateway(factory: Callable[[dict[str, Any]], Any]) -> ServerThread:
    settings = {"backend": "procedural", "backend_kwargs": {}, "config": asdict(CONFIG), "app_name": "t"}
    replica = WorldReplica(settings, book=Deployment(SnapshotBook()), tag="A")
    replica.base = factory  # the session's backend: looked up at each hello
    gateway = Gateway(Deployment(replica), {"config": asdict(CONFIG), "retry_s": 1.0})

    async def ws(websocket: WebSocket) -> None:
        await gateway.serve(websocket)

    app = FastAPI()
    app.router.routes.append(WebSocketRoute("/ws", ws))
    return ServerThread(app).start()


def test_an_interrupt_reaches_the_replica_while_its_block_is_being_made(
        held_blocks: tuple[Callable[[dict[str, Any]], Any], list[Any]],
        interrupt_in_flight: Callable[[Any, list[Any]], list[FrameChunk]]) -> None:
    factory, made = held_blocks
    srv = _gateway(factory)
    rb = RemoteBackend(srv.url, token=TOKEN, width=64, height=36, reconnect_attempts=1)
    try:
        rb.start(SessionStart("main", 3, "a meadow"))
        got = interrupt_in_flight(rb, made)  # was: read after block 1, which waits for it
        assert [c.block for c in got] == [0]
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

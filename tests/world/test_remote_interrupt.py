"""``interrupt()`` reaches a backend served by ``worldloom serve`` while its block is being made
(loopback, in-process server): the block in flight is abandoned and the request ends, as in process.
The held backend and the interrupt's sequence are ``tests/world/conftest.py``'s (shared with the Ray
gateway's test)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the world server needs fastapi")
pytest.importorskip("uvicorn", reason="the world server needs uvicorn")
pytest.importorskip("websockets", reason="the remote backend needs websockets")

from game.world.backends.remote import RemoteBackend  # noqa: E402
from game.world.protocol import FrameChunk, Interruptible, SessionStart  # noqa: E402
from game.world.server import ServerConfig, ServerThread, create_app  # noqa: E402

TOKEN = "test-token-interrupt-0123456789abcdef"


def test_an_interrupt_abandons_the_served_block_in_flight_and_the_next_request_plays(
        held_blocks: tuple[Callable[[dict[str, Any]], Any], list[Any]],
        interrupt_in_flight: Callable[[Any, list[Any]], list[FrameChunk]]) -> None:
    factory, made = held_blocks
    srv = ServerThread(create_app(factory, ServerConfig(token=TOKEN))).start()
    rb = RemoteBackend(srv.url, token=TOKEN, width=64, height=36, reconnect_attempts=1)
    try:
        assert isinstance(rb, Interruptible)
        rb.start(SessionStart("main", 3, "a meadow"))
        got = interrupt_in_flight(rb, made)
        assert [c.block for c in got] == [0]  # the block in flight and those after it never came
    finally:
        rb.close()
        srv.stop()

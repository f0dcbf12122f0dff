"""``interrupt()`` reaches a backend served by ``worldloom serve`` while its block is being made
(loopback, in-process server): the block in flight is abandoned and the request ends, as in process."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the world server needs fastapi")
pytest.importorskip("uvicorn", reason="the world server needs uvicorn")
pytest.importorskip("websockets", reason="the remote backend needs websockets")

from game.world.backends.procedural import ProceduralBackend  # noqa: E402
from game.world.backends.remote import RemoteBackend  # noqa: E402
from game.world.protocol import FrameChunk, Interruptible, SessionStart, WorldRequest  # noqa: E402
from game.world.server import ServerConfig, ServerThread, create_app  # noqa: E402

TOKEN = "test-token-interrupt-0123456789abcdef"
#: A request's block that waits until it is interrupted (a slow denoiser, polled between steps).
HELD = 1


class HeldBlock(ProceduralBackend):
    """A procedural backend whose block ``HELD`` of the first request is only ever abandoned."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.stop = threading.Event()
        self.held = threading.Event()
        self.interrupts: list[str] = []

    def interrupt(self, session_id: str = "") -> None:
        self.interrupts.append(session_id)
        self.stop.set()

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        self.stop.clear()
        for chunk in super().generate(request):
            if request.seq == 1 and chunk.block == HELD:
                self.held.set()
                if not self.stop.wait(60):  # without the interrupt the request fails, never hangs
                    raise RuntimeError("the block was never interrupted")
                return
            yield chunk


def test_an_interrupt_abandons_the_served_block_in_flight_and_the_next_request_plays() -> None:
    made: list[HeldBlock] = []

    def factory(options: dict[str, Any]) -> HeldBlock:
        made.append(HeldBlock(width=64, height=36))
        return made[-1]

    srv = ServerThread(create_app(factory, ServerConfig(token=TOKEN))).start()
    rb = RemoteBackend(srv.url, token=TOKEN, width=64, height=36, reconnect_attempts=1)
    try:
        assert isinstance(rb, Interruptible)
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
        assert made and made[0].held.wait(30)  # the server's backend is inside block 1
        rb.interrupt()
        thread.join(30)
        assert not thread.is_alive() and not errors, errors
        assert made[0].interrupts == ["main"]  # this client's session, while the block was being made
        assert [c.block for c in got] == [0]  # the block in flight and those after it never came
        after = list(rb.generate(WorldRequest("main", 2, 24, "a meadow")))
        assert [c.block for c in after] == [0, 1] and after[-1].last  # an interrupt does not stop the next request
    finally:
        rb.close()
        srv.stop()

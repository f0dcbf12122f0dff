"""Fixtures of the world room's tests: one torch thread, the tiny random causal / action models, and
Zero Mark's world drawn from a session's state (the edit and figure tests).

torch and diffusers are imported only by the fixtures that need them, so the other
world tests do not pay for them.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from game.session import Session
from game.story import load_story
from game.world.backends.layout import Layout
from game.world.backends.null import NullBackend
from game.world.backends.procedural import ProceduralBackend
from game.world.director import Cause
from game.world.protocol import FrameChunk, SessionStart, WorldRequest

ROOT = Path(__file__).resolve().parents[2]
#: The frame size ``still`` draws at.
STILL_SIZE = (320, 180)


@pytest.fixture
def zero_mark(tmp_path: Path) -> Session:
    """Zero Mark started on the null backend (seed 5): the tests change its world and draw it with ``still``."""
    s = Session(load_story(ROOT / "stories" / "zero_mark"), NullBackend(), seed=5, save_dir=tmp_path)
    s.start()
    return s


@pytest.fixture
def still() -> Callable[[Session, int], tuple[np.ndarray, Layout]]:
    """``still(session, i)``: frame ``i`` (``(H, W, 3)`` uint8) of one idle block of the session's
    current state, drawn by a fresh procedural backend (same seed, no fade, no references) at
    :data:`STILL_SIZE`, and the painter's layout record."""

    def draw(s: Session, i: int) -> tuple[np.ndarray, Layout]:
        req = dataclasses.replace(s.director.build(s.state, [], Cause("idle")), switch_mode=None, references=(),
                                  seq=1)
        b = ProceduralBackend(width=STILL_SIZE[0], height=STILL_SIZE[1])
        b.start(SessionStart("main", 5, "p"))
        chunk = next(iter(b.generate(req)))
        assert b.layout is not None
        return chunk.frames[i], b.layout

    return draw


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """One torch thread for a module: tiny tensors gain nothing from threads, and on a busy
    2-core machine threads make them ~10x slower."""
    torch = pytest.importorskip("torch", reason="the model backends need torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def causal_comps(one_torch_thread: None) -> Any:
    """A tiny random ``causal`` (text) model: 2-layer Wan transformer and tiny Wan VAE (seed 0)."""
    pytest.importorskip("diffusers", reason="the causal backends need diffusers")
    from game.models.causal_arch import random_model

    return random_model("causal")


@pytest.fixture(scope="module")
def action_comps(one_torch_thread: None) -> Any:
    """A tiny random ``action`` (Matrix-Game 2.0 style) model: transformer, VAE and action modules (seed 0)."""
    pytest.importorskip("diffusers", reason="the causal backends need diffusers")
    from game.models.causal_arch import random_model

    return random_model("action")


@pytest.fixture
def interrupt_at_next_call(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``arm(backend, model)``: the next call of ``model.forward`` interrupts ``backend``'s session
    ``s`` (a player acting while a block is being denoised), then runs; returns the keyword
    arguments of every call from then on. ``monkeypatch.undo()`` restores ``forward``."""
    def arm(backend: Any, model: Any, session_id: str = "s") -> list[dict[str, Any]]:
        calls: list[dict[str, Any]] = []
        original = model.forward

        def forward(*args: Any, **kw: Any) -> Any:
            calls.append(kw)
            if len(calls) == 1:
                backend.interrupt(session_id)
            return original(*args, **kw)

        monkeypatch.setattr(model, "forward", forward)
        return calls

    return arm


# -- an interrupt that reaches a served backend mid-block (test_remote_interrupt, test_ray_gateway_interrupt) --
class HeldBlock(ProceduralBackend):
    """A procedural backend whose block 1 of the first request waits until it is interrupted (a slow
    model between two steps): it is only ever abandoned."""

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


@pytest.fixture
def held_blocks() -> tuple[Callable[[dict[str, Any]], HeldBlock], list[HeldBlock]]:
    """``(factory, made)``: a session factory of 64x36 :class:`HeldBlock` backends and those it made."""
    made: list[HeldBlock] = []

    def factory(options: dict[str, Any]) -> HeldBlock:
        made.append(HeldBlock(width=64, height=36))
        return made[-1]

    return factory, made


def interrupt_in_flight(client: Any, made: list[HeldBlock]) -> list[FrameChunk]:
    """Ask ``client`` (a started remote backend) for four blocks, interrupt it once the served
    backend is inside block 1, and return what came; asserts the interrupt reached that backend
    while the block was being made and ended the request, and that the next request plays."""
    got: list[FrameChunk] = []
    errors: list[BaseException] = []

    def pull() -> None:
        try:
            got.extend(client.generate(WorldRequest("main", 1, 48, "a meadow")))  # four blocks
        except BaseException as exc:  # noqa: BLE001 - the assertion below names it
            errors.append(exc)

    thread = threading.Thread(target=pull, daemon=True)
    thread.start()
    assert made and made[0].held.wait(30)  # the served backend is inside block 1
    client.interrupt()
    thread.join(30)
    assert not thread.is_alive() and not errors, errors
    assert made[0].interrupts == ["main"]  # this client's session, while the block was being made
    after = list(client.generate(WorldRequest("main", 2, 24, "a meadow")))
    assert [c.block for c in after] == [0, 1] and after[-1].last  # an interrupt does not stop the next request
    return got


@pytest.fixture(name="interrupt_in_flight")
def interrupt_in_flight_fixture() -> Callable[[Any, list[HeldBlock]], list[FrameChunk]]:
    """:func:`interrupt_in_flight`."""
    return interrupt_in_flight

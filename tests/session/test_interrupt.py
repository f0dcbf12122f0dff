"""A new input abandons the block in flight: Session.submit interrupts a backend that can
(Interruptible), through the guard and voice layers, and the guard takes the early end of an
interrupted request for what it is (no retry, no fallback, no case)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from game.errorbank import ErrorStore, GuardedBackend
from game.session import Session
from game.state import Choose, Wait
from game.story.loader import load_story
from game.world.backends.procedural import ProceduralBackend
from game.world.protocol import (
    Capabilities,
    FrameChunk,
    Interruptible,
    MemoryOp,
    MemoryResult,
    SessionStart,
    WorldRequest,
)


class SlowBlocks:
    """A small procedural backend whose blocks wait at a gate, checking for interrupt like a
    denoiser checks between its steps."""

    def __init__(self) -> None:
        self.inner = ProceduralBackend(width=64, height=36)
        self.gate = threading.Event()
        self.in_block = threading.Event()
        self.stop = threading.Event()
        self.interrupts: list[str] = []
        self.abandoned: list[tuple[int, int]] = []  # (seq, block)

    def interrupt(self, session_id: str = "") -> None:
        self.interrupts.append(session_id)
        self.stop.set()

    def capabilities(self) -> Capabilities:
        return self.inner.capabilities()

    def start(self, start: SessionStart) -> None:
        self.inner.start(start)

    def memory(self, op: MemoryOp) -> MemoryResult:
        return self.inner.memory(op)

    def close(self) -> None:
        self.inner.close()

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        self.stop.clear()
        for chunk in self.inner.generate(request):
            self.in_block.set()
            while not self.gate.wait(0.01):
                if self.stop.is_set():
                    self.abandoned.append((request.seq, chunk.block))
                    return
            yield chunk


def play_opening(session: Session, backend: SlowBlocks) -> None:
    """Start and play the opening chunk, then close the gate: the next block waits at it."""
    session.start()
    backend.gate.set()
    list(session.stream())
    backend.gate.clear()
    backend.in_block.clear()


def streaming_turn(session: Session, backend: SlowBlocks) -> tuple[threading.Thread, list[FrameChunk]]:
    got: list[FrameChunk] = []
    session.submit(Wait(seconds=4.0))  # several blocks
    thread = threading.Thread(target=lambda: got.extend(session.stream()), daemon=True)
    thread.start()
    assert backend.in_block.wait(10)
    return thread, got


def test_a_choice_mid_block_abandons_that_block_and_the_new_request_plays(mini_path: Path, tmp_path: Path) -> None:
    backend = SlowBlocks()
    assert isinstance(backend, Interruptible)
    s = Session(load_story(mini_path), backend, seed=1, save_dir=tmp_path)
    play_opening(s, backend)
    frame = s.state.frame
    thread, got = streaming_turn(s, backend)
    old_seq = s._streaming
    result = s.submit(Choose(choice_id="offer_kite"))
    thread.join(10)
    assert not thread.is_alive(), "the stream did not end when its block was abandoned"
    assert backend.interrupts == [s.director.session_id]
    assert backend.abandoned and backend.abandoned[0][0] == old_seq
    assert got == []  # nothing of the abandoned block reached the player
    assert s.state.frame == frame  # and the frame clock did not count it
    backend.gate.set()
    new = list(s.stream())
    assert new and all(c.seq == result.request.seq for c in new)


def test_without_a_stream_in_flight_nothing_is_interrupted(mini_path: Path, tmp_path: Path) -> None:
    backend = SlowBlocks()
    backend.gate.set()
    s = Session(load_story(mini_path), backend, seed=1, save_dir=tmp_path)
    s.start()
    list(s.stream())
    s.submit(Choose(choice_id="offer_kite"))
    assert backend.interrupts == []
    assert list(s.stream())


def test_the_guard_forwards_interrupt_and_does_not_retry_the_abandoned_request(mini_path: Path,
                                                                              tmp_path: Path) -> None:
    backend = SlowBlocks()
    store = ErrorStore(tmp_path / "bank.db")
    guard = GuardedBackend(backend, store=store, rewind=False)
    s = Session(load_story(mini_path), guard, seed=1, save_dir=tmp_path)
    play_opening(s, backend)
    before = len(store.cases())
    thread, got = streaming_turn(s, backend)  # interrupted before its first block
    s.submit(Choose(choice_id="offer_kite"))
    thread.join(10)
    assert not thread.is_alive()
    assert backend.interrupts == [s.director.session_id]
    assert got == []
    assert guard.stats.retries == 0 and not guard.down
    assert len(store.cases()) == before  # an interrupt is not a failure
    backend.gate.set()
    assert list(s.stream())

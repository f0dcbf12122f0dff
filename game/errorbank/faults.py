"""`FaultyBackend`: injects failures into a working backend, to test guards and measure recovery.

Each ``generate`` call (counted from 0, retries included) gets a mode from the
plan: ``ok``, ``raise`` (a :class:`~game.errors.BackendError` before any block),
``raise_mid`` (after the first block), ``disconnect`` (``ConnectionError``),
``hang`` (blocks until released or ``hang_s`` passes, then answers), ``slow`` (waits ``slow_s``
before each block), ``garbage`` (yields a
string), ``dtype`` (float32 frames), ``shape`` (wrong size), ``empty`` (no frames),
``black`` (all-zero frames), ``frozen`` (the first frame repeated), ``forget``
(reports the scene's first entity as not drawn: a story fault), ``ghost`` (reports an
entity that is not in the scene), ``none`` (no blocks at all), and three audio faults:
``audio_nan`` (NaN samples), ``audio_dtype`` (float64 samples) and ``audio_length`` (half
the samples its frames need). Everything else is passed to the inner backend.

With a :class:`~game.errorbank.clock.ManualClock` (``clock=``), time is simulated: ``slow``
advances the clock by ``slow_s`` before each block instead of sleeping, and ``hang``
blocks inside :meth:`~game.errorbank.clock.ManualClock.blocked` until released, so a
guard on the same clock times it out at exactly its timeout; no real sleep is involved.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace

import numpy as np

from game.errorbank.clock import ManualClock
from game.errors import BackendError
from game.world.protocol import Backend, Capabilities, FrameChunk, MemoryOp, MemoryResult, SessionStart, WorldRequest

MODES = ("ok", "raise", "raise_mid", "disconnect", "hang", "slow", "garbage", "dtype", "shape", "empty", "black",
         "frozen", "forget", "ghost", "none", "audio_nan", "audio_dtype", "audio_length")


class FaultyBackend:
    """Wraps ``inner`` and fails as ``plan`` says.

    Args:
        inner: a working backend.
        plan: call index -> mode (missing = ``ok``), or a function of the call index.
        hang_s: longest a ``hang`` lasts in real seconds (it ends early on :meth:`release`
            or :meth:`close`; with ``clock`` it lasts until released).
        slow_s: wait before each block in ``slow`` mode, s.
        fail_start: ``start`` raises while this is true.
        clock: simulate time on this clock instead of waiting (see the module doc).
    """

    def __init__(self, inner: Backend, plan: Mapping[int, str] | Callable[[int], str] | None = None,
                 hang_s: float = 30.0, fail_start: bool = False, slow_s: float = 0.1,
                 clock: ManualClock | None = None) -> None:
        self.inner = inner
        self.clock = clock
        self.plan = plan or {}
        self.hang_s = hang_s
        self.slow_s = slow_s
        self.fail_start = fail_start
        self.calls = 0
        self.modes: list[str] = []
        self._release = threading.Event()
        self._hanging = 0
        self._hang_done = threading.Condition()

    def mode(self, call: int) -> str:
        """The mode of call number ``call``."""
        if callable(self.plan):
            return self.plan(call)
        return self.plan.get(call, "ok")

    def release(self, wait_s: float = 10.0) -> None:
        """End every hang now; returns once every hung call has left its hang (at most
        ``wait_s`` real seconds), so what they do next is not a race with the caller."""
        self._release.set()
        with self._hang_done:
            self._hang_done.wait_for(lambda: self._hanging == 0, timeout=wait_s)

    def capabilities(self) -> Capabilities:
        return self.inner.capabilities()

    def start(self, start: SessionStart) -> None:
        if self.fail_start:
            raise ConnectionError("connection refused")
        self.inner.start(start)

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        mode = self.mode(self.calls)
        self.calls += 1
        self.modes.append(mode)
        if mode == "raise":
            raise BackendError("injected failure")
        if mode == "disconnect":
            raise ConnectionError("connection reset by peer")
        return self._blocks(request, mode)

    def _blocks(self, request: WorldRequest, mode: str) -> Iterator[FrameChunk]:
        if mode == "hang":  # then answers late, as a backend that comes back does
            with self._hang_done:
                self._hanging += 1
            try:
                if self.clock is not None:
                    with self.clock.blocked():
                        self._release.wait()
                else:
                    self._release.wait(self.hang_s)
            finally:
                with self._hang_done:
                    self._hanging -= 1
                    self._hang_done.notify_all()
        if mode == "none":
            return
        for i, chunk in enumerate(self.inner.generate(request)):
            if mode == "slow":
                if self.clock is not None:
                    self.clock.advance(self.slow_s)
                else:
                    self._release.wait(self.slow_s)
            if mode == "raise_mid" and i == 1:
                raise BackendError("injected failure mid-request")
            f = chunk.frames
            if mode == "garbage":
                yield "not a frame chunk"  # type: ignore[misc]
                continue
            if mode == "dtype":
                chunk = replace(chunk, frames=f.astype(np.float32) / 255.0)
            elif mode == "shape":
                chunk = replace(chunk, frames=f[:, : f.shape[1] // 2])
            elif mode == "empty":
                chunk = replace(chunk, frames=f[:0])
            elif mode == "black":
                chunk = replace(chunk, frames=np.zeros_like(f))
            elif mode == "frozen":
                chunk = replace(chunk, frames=np.repeat(f[:1], len(f), axis=0))
            elif mode == "forget" and request.scene.entities:
                chunk = replace(chunk, drawn=tuple(d for d in chunk.drawn if d != request.scene.entities[0].id))
            elif mode == "ghost":
                chunk = replace(chunk, drawn=(*chunk.drawn, "ghost"))
            elif mode.startswith("audio_"):
                n = int(round(len(f) * chunk.audio_rate / chunk.fps))
                track = np.linspace(-0.5, 0.5, n, dtype=np.float32)
                if mode == "audio_nan":
                    track[::7] = np.nan
                chunk = replace(chunk, audio=(track.astype(np.float64) if mode == "audio_dtype"
                                              else track[: n // 2] if mode == "audio_length" else track))
            yield chunk

    def memory(self, op: MemoryOp) -> MemoryResult:
        return self.inner.memory(op)

    def close(self) -> None:
        self._release.set()
        self.inner.close()

"""Frames from the session to the screen: a worker thread, a queue and a steady clock.

:class:`FrameFeed` iterates ``Session.stream()`` (off the window's thread, or
synchronously in tests) and queues the chunks' frames one by one. When there is
no pending request it streams idle blocks, so the world keeps living, but only
while the queue is short (it never runs ahead of the screen by more than
``buffer_frames``). :meth:`FrameFeed.flush` drops queued frames of requests older
than a newly submitted one, so an input cuts the old chunk short at once (the
session itself stops streaming the old request after its current block).

:class:`FrameClock` turns wall time into frame slots at the backend's rate; the
window shows one queued frame per slot, or holds the last one (a stall).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from game.errors import WorldloomError
from game.world.protocol import FrameChunk, WorldRequest
from game.world.undrawn import UNDRAWN, UndrawnScenery


class Streamer(Protocol):
    """What the feed needs of a session (``game.session.Session`` has it)."""

    @property
    def pending(self) -> WorldRequest | None:
        """The request waiting to be streamed, if any."""

    def stream(self, request: WorldRequest | None = None) -> Iterator[FrameChunk]:
        """Blocks of the pending request (or an idle block); stops early when superseded."""


@dataclass(frozen=True)
class QueuedFrame:
    """One frame waiting to be shown.

    Attributes:
        seq: the request it belongs to.
        index: its index on the backend's frame clock.
        image: ``(H, W, 3)`` uint8 RGB.
        audio: the whole chunk's sound on the chunk's first frame (``(N,)`` float32
            mono at ``audio_rate``), else ``None``.
        audio_rate: Hz.
        last: whether it is the last frame of its request.
    """

    seq: int
    index: int
    image: np.ndarray
    audio: np.ndarray | None = None
    audio_rate: int = 22050
    last: bool = False


class FrameFeed:
    """Streams a session into a frame queue.

    Args:
        session: what to stream (a :class:`~game.session.Session`).
        buffer_frames: how many frames may wait before the worker pauses.
        threaded: run a worker thread (:meth:`start`); if ``False`` the caller
            fills the queue with :meth:`pump` (tests, deterministic runs).
    """

    def __init__(self, session: Streamer, buffer_frames: int = 36, threaded: bool = True) -> None:
        self.session = session
        self.buffer_frames = max(1, buffer_frames)
        self.threaded = threaded
        self._queue: deque[QueuedFrame] = deque()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._min_seq = 0
        self._max_seq = 0
        self._thread: threading.Thread | None = None
        self._errors: list[str] = []
        self._undrawn: list[str] = []
        self._told = UndrawnScenery()
        self.streaming_seq = 0
        self.chunks = 0

    # -- worker ------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker thread (no-op when not threaded or already running)."""
        if self.threaded and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="worldloom-frames", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the worker and wait for it (at most ``timeout`` seconds)."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._cond:
                if self.session.pending is None and len(self._queue) >= self.buffer_frames:
                    self._cond.wait(0.02)
                    continue
            try:
                for chunk in self.session.stream():
                    if not self._put(chunk, wait=True):
                        return
            except WorldloomError as exc:
                self._error(str(exc))
                self._stop.wait(1.0)
            except Exception as exc:  # never let the worker die silently
                self._error(f"world stream failed: {exc}")
                self._stop.wait(1.0)

    def pump(self) -> int:
        """Stream one request (the pending one, or an idle block) into the queue now.

        Returns:
            The number of frames queued.
        """
        n = 0
        try:
            for chunk in self.session.stream():
                self._put(chunk, wait=False)
                n += chunk.n_frames
        except WorldloomError as exc:
            self._error(str(exc))
        return n

    def _newer_pending(self, seq: int) -> bool:
        p = self.session.pending
        return p is not None and p.seq > seq

    def _put(self, chunk: FrameChunk, wait: bool) -> bool:
        """Queue a chunk's frames; ``False`` when the feed is stopping."""
        with self._cond:
            self.streaming_seq = chunk.seq
            while (wait and not self._stop.is_set() and chunk.seq >= self._min_seq
                   and len(self._queue) >= self.buffer_frames and not self._newer_pending(chunk.seq)):
                self._cond.wait(0.02)
            if self._stop.is_set():
                return False
            if chunk.seq < self._min_seq or self._newer_pending(chunk.seq):
                return True  # superseded: the session stops this request after this block
            frames = chunk.frames
            for i in range(chunk.n_frames):
                self._queue.append(QueuedFrame(
                    seq=chunk.seq, index=chunk.first_frame + i, image=frames[i],
                    audio=chunk.audio if i == 0 else None, audio_rate=chunk.audio_rate,
                    last=chunk.last and i == chunk.n_frames - 1))
            self._max_seq = max(self._max_seq, chunk.seq)
            self._undrawn += [n for n in chunk.ignored if n.startswith(UNDRAWN)]
            self.chunks += 1
            self._cond.notify_all()
            return True

    def _error(self, message: str) -> None:
        with self._cond:
            self._errors.append(message)

    # -- the window's side ----------------------------------------------------------
    def pop(self) -> QueuedFrame | None:
        """The next frame to show, or ``None`` if none is ready (a stall)."""
        with self._cond:
            if not self._queue:
                return None
            f = self._queue.popleft()
            self._cond.notify_all()
            return f

    def flush(self, seq: int | None = None) -> int:
        """Drop queued frames of requests older than ``seq`` (all queued frames if ``None``).

        Frames of older requests that the worker is making now are dropped too.

        Returns:
            How many frames were dropped.
        """
        with self._cond:
            self._min_seq = max(self._min_seq, self._max_seq + 1 if seq is None else seq)
            before = len(self._queue)
            self._queue = deque(f for f in self._queue if f.seq >= self._min_seq)
            self._cond.notify_all()
            return before - len(self._queue)

    def queued(self) -> int:
        """Frames waiting to be shown."""
        with self._cond:
            return len(self._queue)

    def take_undrawn(self, scene: str) -> list[str]:
        """Warning lines (:class:`~game.world.undrawn.UndrawnScenery`, each once per scene
        and phrase) for the scenery the chunks queued since the last call said was not drawn;
        ``scene``: the scene they were drawn for."""
        with self._cond:
            notes, self._undrawn = self._undrawn, []
        return self._told.tell(scene, notes)

    def take_errors(self) -> list[str]:
        """Errors the worker met since the last call (e.g. a backend that is down)."""
        with self._cond:
            out, self._errors = self._errors, []
            return out

    @property
    def alive(self) -> bool:
        """Whether the worker thread runs."""
        return self._thread is not None and self._thread.is_alive()


class FrameClock:
    """Frame slots at a steady rate from wall-clock deltas.

    Args:
        fps: slots per second (the backend's frame rate).
        max_catch_up: at most this many slots per :meth:`advance`; a longer pause
            (a dragged window, a breakpoint) is dropped instead of fast-forwarded.
    """

    def __init__(self, fps: float, max_catch_up: int = 3) -> None:
        self.period = 1.0 / max(1e-3, fps)
        self.max_catch_up = max_catch_up
        self._acc = 0.0

    def advance(self, dt: float) -> int:
        """Add ``dt`` seconds; returns how many frame slots are due now."""
        self._acc += max(0.0, dt)
        n = int(self._acc / self.period + 1e-9)
        self._acc -= n * self.period
        if n > self.max_catch_up:
            n = self.max_catch_up
            self._acc = 0.0
        return n

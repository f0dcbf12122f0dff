"""The guard's clocks: what a late block and a hang are measured on.

A wall-clock timeout calls an in-process backend "hung" whenever the machine is busy:
the backend gets less CPU per second, not less work done per CPU second. So the
:class:`~game.errorbank.guard.GuardedBackend` never reads the wall clock itself; it
asks a :class:`Clock` to watch the thread that runs each backend call:

* :class:`WorkClock` (the default for a backend in this process): the backend's own
  progress. A call is timed by the seconds it has gone without using any CPU at all:
  a call stuck on a lock or a socket stops using CPU and times out; a call that works,
  however slowly a busy machine lets it, keeps resetting that count and never does
  (the procedural world's first block of a new place takes over a second of CPU, and
  it is not hung). A call that has used more than ``cpu_limit_s`` CPU seconds without
  answering (a loop that never ends) counts as timed out at once. What a block *cost*
  (:meth:`Watch.spent`, for lateness) is the CPU seconds its thread used, which a busy
  machine does not inflate. CPU time is the thread's own clock
  (``pthread_getcpuclockid``, Linux and most Unixes), else the process's
  (``time.process_time``). A call waiting for a helper thread of its own process (the
  painter's paint-ahead worker, a model another thread loads) says so with
  :func:`game.work.on_behalf`, and the helper's CPU then counts as the call's progress.
* :class:`WallClock`: real seconds, for a backend in another process or on another
  machine (a remote world server): its load is not ours, and a network wait is real time.
* :class:`FrameClock`: the game's frame clock (headless play of a backend outside this
  process: :func:`game.headless.play_headless` passes one). It does not move while
  the game waits for the backend, so nothing is ever late or hung by time on it: the
  run's output cannot depend on the machine's load. A backend's own timeouts (the
  remote backend's receive timeout) still end a dead call with an error.
* :class:`ManualClock`: for tests. :meth:`ManualClock.advance` is work that takes that
  long; a backend inside :meth:`ManualClock.blocked` is stuck, and a guard waiting on it
  moves the clock straight to its timeout. No real sleep races a threshold.

A clock is asked for one :class:`Watch` per call (:meth:`Clock.watch`), given the
:class:`Worker` running it; the watch's :meth:`Watch.elapsed` is in seconds of that
clock since the watch began (what timeouts compare), :meth:`Watch.spent` what the call
has cost so far (what lateness compares), and :meth:`Watch.wait` waits for the answer.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from game.work import helpers, thread_cpu

#: Wall seconds between two looks at a call's progress while waiting on it (latency
#: of noticing a timeout, never part of a decision).
POLL_S = 0.005


def _thread_cpu_clock() -> int | None:
    """The CPU-time clock id of the calling thread, or ``None`` where there is none."""
    getter = getattr(time, "pthread_getcpuclockid", None)
    if getter is None:
        return None
    try:
        clk: int = getter(threading.get_ident())
        time.clock_gettime(clk)
    except (OSError, ValueError, OverflowError):
        return None
    return clk


class Worker:
    """The thread that runs one backend call, as a clock sees it.

    The thread calls :meth:`enter` first thing (the guard's worker threads do), so
    the clocks know its id and its CPU clock; until then it has used no CPU.

    Attributes:
        ident: the thread's ``threading.get_ident()``, or ``None`` before :meth:`enter`.
    """

    def __init__(self) -> None:
        self.ident: int | None = None
        self._clk: int | None = None
        self._process = False

    def enter(self) -> None:
        """Called by the worker thread itself before it calls the backend."""
        self._clk = _thread_cpu_clock()
        self._process = self._clk is None
        self.ident = threading.get_ident()

    def helper_cpu(self) -> dict[int, float]:
        """CPU seconds of each thread this one waits on now (:func:`game.work.on_behalf`)."""
        if self.ident is None or self._process:
            return {}
        return {h: c for h in helpers(self.ident) if (c := thread_cpu(h)) >= 0}

    def cpu(self) -> float:
        """CPU seconds the thread has used (the process's where a thread clock is missing);
        ``-1`` once the thread is gone or before it entered."""
        if self._process:
            return time.process_time()
        if self._clk is None:
            return -1.0
        try:
            return time.clock_gettime(self._clk)
        except OSError:  # the thread has ended
            return -1.0


class Watch(Protocol):
    """Measures one call (see the module doc)."""

    def elapsed(self) -> float:
        """Seconds on this watch's clock since it began (what a timeout compares)."""
        ...

    def spent(self) -> float:
        """Seconds the call has cost so far (what lateness compares)."""
        ...

    def wait(self, done: threading.Event, until: float) -> bool:
        """Block until ``done`` is set (``True``) or :meth:`elapsed` reaches ``until`` (``False``).

        ``True`` means the answer came within ``until`` on this clock: when both have
        happened by the time it looks, the clock wins (``False``), so the outcome never
        depends on how fast the waiting thread looked. ``until = elapsed()`` asks "has it
        answered by now": on a :class:`ManualClock` a call that is not blocked takes no
        time, so it is waited for; on the other clocks it is a look, not a wait.
        """
        ...


class Clock(Protocol):
    """A source of :class:`Watch` es, and the back-off pause between retries."""

    def watch(self, worker: Worker) -> Watch:
        """Start measuring the call that ``worker`` runs."""
        ...

    def sleep(self, seconds: float) -> None:
        """Pause ``seconds`` of this clock (the retry back-off)."""
        ...


def _poll(watch: Watch, done: threading.Event, until: float) -> bool:
    while True:
        if watch.elapsed() >= until:
            return False
        if done.wait(POLL_S) and watch.elapsed() < until:
            return True


class _WallWatch:
    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._t0 = now()

    def elapsed(self) -> float:
        return self._now() - self._t0

    def spent(self) -> float:
        return self.elapsed()

    def wait(self, done: threading.Event, until: float) -> bool:
        left = until - self.elapsed()
        return left > 0 and done.wait(left)


class WallClock:
    """Real seconds (``time.monotonic``): for a backend outside this process.

    Args:
        now: the time source, seconds (tests may pass their own).
    """

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now

    def watch(self, worker: Worker) -> Watch:
        """A watch of real seconds from now."""
        return _WallWatch(self.now)

    def sleep(self, seconds: float) -> None:
        """``time.sleep``."""
        time.sleep(max(0.0, seconds))


class _WorkWatch:
    def __init__(self, worker: Worker, wall: Callable[[], float], cpu_limit_s: float) -> None:
        self._worker = worker
        self._wall = wall
        self._cpu_limit_s = cpu_limit_s
        self._cpu0: float | None = None
        self._last_cpu = -1.0
        self._last_progress = wall()
        self._used = 0.0
        self._helpers: dict[int, float] = {}
        self.elapsed()

    def elapsed(self) -> float:
        idle = self._read()
        return idle if self._used <= self._cpu_limit_s else math.inf

    def spent(self) -> float:
        self._read()
        return self._used

    def _read(self) -> float:
        """Update the CPU reading; the seconds since the last progress."""
        now = self._wall()
        cpu = self._worker.cpu()
        if cpu >= 0:
            if self._cpu0 is None:  # the first reading (the thread has started: that is progress)
                self._cpu0 = self._last_cpu = cpu
                self._last_progress = now
            if cpu > self._last_cpu:
                self._last_progress = now
                self._last_cpu = cpu
            self._used = cpu - self._cpu0
            helping = self._worker.helper_cpu()  # threads it waits on: their work is its progress
            if any(c > self._helpers.get(h, c) for h, c in helping.items()):
                self._last_progress = now
            self._helpers = helping
        return now - self._last_progress

    def wait(self, done: threading.Event, until: float) -> bool:
        return _poll(self, done, until)


class WorkClock:
    """The backend's own progress (see the module doc): a call is timed by the seconds it has
    gone without using any CPU; its cost is the CPU seconds it used.

    Args:
        wall: the time source for "gone without any CPU", seconds (tests may pass their own).
        cpu_limit_s: CPU seconds after which a call that has not answered is timed out
            (a loop that never ends).
    """

    def __init__(self, wall: Callable[[], float] = time.monotonic, cpu_limit_s: float = 60.0) -> None:
        self.wall = wall
        self.cpu_limit_s = cpu_limit_s

    def watch(self, worker: Worker) -> Watch:
        """A watch of ``worker``'s progress from now."""
        return _WorkWatch(worker, self.wall, self.cpu_limit_s)

    def sleep(self, seconds: float) -> None:
        """``time.sleep`` (a back-off gives a backend time to recover; it decides nothing)."""
        time.sleep(max(0.0, seconds))


class _FrameWatch:
    def __init__(self, frames: Callable[[], float], fps: float) -> None:
        self._frames = frames
        self._fps = fps
        self._f0 = frames()

    def elapsed(self) -> float:
        return (self._frames() - self._f0) / self._fps

    def spent(self) -> float:
        return self.elapsed()

    def wait(self, done: threading.Event, until: float) -> bool:
        return _poll(self, done, until)


class FrameClock:
    """The game's frame clock: seconds = frames / ``fps`` (headless play; see the module doc).

    Args:
        frames: the frame counter to read (e.g. ``lambda: session.state.frame``).
        fps: frames per second of that counter.

    Raises:
        ValueError: ``fps`` is not positive.
    """

    def __init__(self, frames: Callable[[], float], fps: float) -> None:
        if not fps > 0:
            raise ValueError(f"FrameClock: fps must be positive, not {fps!r}")
        self.frames = frames
        self.fps = fps

    def watch(self, worker: Worker) -> Watch:
        """A watch of frame time from now."""
        return _FrameWatch(self.frames, self.fps)

    def sleep(self, seconds: float) -> None:
        """Nothing: frame time does not pass while the game waits."""


class _ManualWatch:
    def __init__(self, clock: ManualClock, worker: Worker) -> None:
        self._clock = clock
        self._worker = worker
        self._t0 = clock.now()

    def elapsed(self) -> float:
        return self._clock.now() - self._t0

    def spent(self) -> float:
        return self.elapsed()

    def wait(self, done: threading.Event, until: float) -> bool:
        c = self._clock
        while True:
            with c._cond:
                if self.elapsed() > until:
                    return False
                if done.is_set():
                    return True
                if self._worker.ident is not None and self._worker.ident in c._blocked:
                    c._now = max(c._now, self._t0 + until)  # nothing will come: the timeout passes
                    c._cond.notify_all()
                    return False
                c._cond.wait(POLL_S)


class ManualClock:
    """A clock that moves only when told (tests; see the module doc).

    Args:
        start: the reading at the start, seconds.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._cond = threading.Condition()
        self._blocked: dict[int, int] = {}

    def now(self) -> float:
        """The current reading, seconds."""
        with self._cond:
            return self._now

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass (a backend doing that much work, or a test's pause)."""
        with self._cond:
            self._now += max(0.0, seconds)
            self._cond.notify_all()

    @contextlib.contextmanager
    def blocked(self) -> Iterator[None]:
        """While inside, the calling thread is stuck: a watch of it times out at once."""
        me = threading.get_ident()
        with self._cond:
            self._blocked[me] = self._blocked.get(me, 0) + 1
            self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                self._blocked[me] -= 1
                if not self._blocked[me]:
                    del self._blocked[me]

    @property
    def stuck(self) -> int:
        """How many threads are inside :meth:`blocked` now."""
        with self._cond:
            return len(self._blocked)

    def watch(self, worker: Worker) -> Watch:
        """A watch of this clock from now."""
        return _ManualWatch(self, worker)

    def sleep(self, seconds: float) -> None:
        """Advance by ``seconds`` (no real sleep)."""
        self.advance(seconds)


def in_process(backend: object) -> bool:
    """Whether ``backend`` runs in this process: no ``url`` on it or on any backend it
    wraps (``.inner``, up to 8 deep). A remote backend has a ``url``."""
    b: object | None = backend
    for _ in range(8):
        if b is None:
            return True
        if isinstance(getattr(b, "url", None), str):
            return False
        b = getattr(b, "inner", None)
    return True


def default_clock(backend: object) -> Clock:
    """:class:`WorkClock` for a backend in this process, :class:`WallClock` for a remote one."""
    return WorkClock() if in_process(backend) else WallClock()

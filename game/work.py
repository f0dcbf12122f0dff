"""Work one thread does on another's behalf, so that a clock timing a call by its own
thread's CPU (:class:`game.errorbank.clock.WorkClock`) counts it.

A backend call that waits for a helper thread (the procedural painter's paint-ahead
worker finishing the scene the request needs, a model another thread is loading) uses
no CPU of its own meanwhile, and would look stuck; it is not, if the helper works. The
waiting thread says so with :func:`on_behalf`; :func:`helpers` tells a clock whom to
watch besides it. Imports nothing of ours (any room may use it).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

_LOCK = threading.Lock()
#: waiting thread's ident -> the helper threads' idents it waits on now (innermost last).
_WAITING: dict[int, list[int]] = {}


@contextmanager
def on_behalf(helper: int | None) -> Iterator[None]:
    """While the body runs, the calling thread waits for thread ``helper`` (its
    ``threading.get_ident()``; ``None`` or the caller itself: nothing is recorded)."""
    me = threading.get_ident()
    if helper is None or helper == me:
        yield
        return
    with _LOCK:
        _WAITING.setdefault(me, []).append(helper)
    try:
        yield
    finally:
        with _LOCK:
            waits = _WAITING.get(me, [])
            if helper in waits:
                waits.remove(helper)
            if not waits:
                _WAITING.pop(me, None)


def helpers(ident: int) -> tuple[int, ...]:
    """The threads ``ident`` waits on now, and those they wait on in turn (no repeats)."""
    out: list[int] = []
    todo = [ident]
    with _LOCK:
        while todo:
            for h in _WAITING.get(todo.pop(), ()):
                if h not in out and h != ident:
                    out.append(h)
                    todo.append(h)
    return tuple(out)


def thread_cpu(ident: int) -> float:
    """CPU seconds thread ``ident`` has used (``pthread_getcpuclockid``), or ``-1`` where the
    thread is gone or the platform has no per-thread CPU clock."""
    getter = getattr(time, "pthread_getcpuclockid", None)
    if getter is None:
        return -1.0
    try:
        return time.clock_gettime(getter(ident))
    except (OSError, ValueError, OverflowError):
        return -1.0


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, all its threads) process ``pid`` has used, from
    ``/proc/<pid>/stat`` (fields 14 and 15, in ``SC_CLK_TCK`` ticks: proc(5)); ``-1`` where the
    process is gone or the platform has no ``/proc`` (a caller then falls back to wall time)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
        fields = raw[raw.rindex(")") + 2:].split()  # the command name may hold spaces
        ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of the line
        return ticks / float(os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return -1.0


#: Wall seconds a CPU-timed wait lets pass with no CPU used by anyone before it gives up (the
#: model worker's ``IDLE_TIMEOUT_S``: a busy machine still gives a working thread some CPU every
#: few seconds).
IDLE_S = 60.0
#: How often a CPU-timed wait looks again, seconds.
POLL_S = 0.05


class Acquirable(Protocol):
    """A lock (:class:`threading.Lock` and its kind)."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool: ...


def others_cpu() -> float:
    """CPU seconds this process has used in every thread but the calling one (a waiting thread's
    own polling is not work done for it)."""
    return time.process_time() - time.thread_time()


def acquire_by_cpu(lock: Acquirable, cpu_limit_s: float, idle_s: float = IDLE_S, *,
                   cpu: Callable[[], float] = others_cpu, wall: Callable[[], float] = time.monotonic,
                   poll_s: float = POLL_S) -> bool:
    """Take ``lock`` while whoever holds it works; ``False`` when the wait is given up.

    Timed by CPU, not the wall clock (the rule of the model worker's replies,
    ``game.models.worker.next_reply``): it gives up once ``cpu()`` (CPU seconds of this
    process's other threads, the holder's work among them) has advanced ``cpu_limit_s`` since
    the wait began, or has not advanced at all for ``idle_s`` wall seconds (nothing works: the
    holder is stuck, or a stream was abandoned and never closed). A loaded machine slows the
    holder's wall clock, not its CPU, so a wait behind a slow reply is not given up.

    Args:
        lock: the lock to take.
        cpu_limit_s: CPU seconds of work to wait through at most.
        idle_s: wall seconds with no CPU used at all after which the wait is given up.
        cpu, wall: the clocks (tests inject their own).
        poll_s: how long each look blocks on the lock, seconds.
    """
    if lock.acquire(blocking=False):
        return True
    start = last = cpu()
    busy_at = wall()
    while True:
        if lock.acquire(timeout=poll_s):
            return True
        used, now = cpu(), wall()
        if used - start >= cpu_limit_s:
            return False
        if used > last:
            last, busy_at = used, now
        elif now - busy_at >= idle_s:
            return False


__all__ = ["IDLE_S", "Acquirable", "acquire_by_cpu", "helpers", "on_behalf", "others_cpu", "process_cpu",
           "thread_cpu"]

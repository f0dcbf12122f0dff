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
from collections.abc import Iterator
from contextlib import contextmanager

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


__all__ = ["helpers", "on_behalf", "process_cpu", "thread_cpu"]

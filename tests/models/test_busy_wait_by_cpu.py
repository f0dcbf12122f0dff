"""A second reply waits for the model by CPU, not by the wall clock (`game.work.acquire_by_cpu`, the
model worker's rule): behind a slow reply on a loaded machine it waits as long as the holder works;
it gives up when the holder has done `cpu_limit_s` of work, or nothing at all for `idle_s`. The
clocks are the test's own: nothing here sleeps against a threshold."""

from __future__ import annotations

import threading

from game.work import acquire_by_cpu


class HeldLock:
    """A lock its holder lets go of at the ``free_at``-th look (never, with ``None``)."""

    def __init__(self, free_at: int | None) -> None:
        self.free_at, self.looks = free_at, 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self.looks += 1
        return self.free_at is not None and self.looks >= self.free_at


class Clocks:
    """CPU and wall clocks that move by a fixed step at every look."""

    def __init__(self, cpu_step: float, wall_step: float) -> None:
        self.cpu_s = self.wall_s = 0.0
        self.cpu_step, self.wall_step = cpu_step, wall_step

    def cpu(self) -> float:
        self.cpu_s += self.cpu_step
        return self.cpu_s

    def wall(self) -> float:
        self.wall_s += self.wall_step
        return self.wall_s


def test_a_slow_reply_on_a_loaded_machine_is_waited_for() -> None:
    clocks = Clocks(cpu_step=0.05, wall_step=10.0)  # the holder works slowly: 10 s of wall per look
    lock = HeldLock(free_at=60)
    assert acquire_by_cpu(lock, cpu_limit_s=120.0, idle_s=60.0, cpu=clocks.cpu, wall=clocks.wall)
    assert clocks.wall_s > 500  # a 120 s wall-clock wait would have given up long before


def test_a_holder_that_does_nothing_is_given_up_after_idle_s() -> None:
    clocks = Clocks(cpu_step=0.0, wall_step=1.0)  # a stream abandoned and never closed
    lock = HeldLock(free_at=None)
    assert not acquire_by_cpu(lock, cpu_limit_s=120.0, idle_s=5.0, cpu=clocks.cpu, wall=clocks.wall)
    assert 5 <= lock.looks <= 8


def test_a_holder_that_works_forever_is_given_up_after_cpu_limit_s() -> None:
    clocks = Clocks(cpu_step=1.0, wall_step=0.1)
    lock = HeldLock(free_at=None)
    assert not acquire_by_cpu(lock, cpu_limit_s=10.0, idle_s=5.0, cpu=clocks.cpu, wall=clocks.wall)
    assert 10 <= lock.looks <= 13


def test_a_real_lock_let_go_by_its_thread_is_taken() -> None:
    lock, taken, go = threading.Lock(), threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            go.wait(30)

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    assert taken.wait(30)
    # nobody works: given up (the holder's CPU, not the process's: in the full suite other tests'
    # leftover threads trickle CPU, which the default clock would count as the holder working)
    assert not acquire_by_cpu(lock, cpu_limit_s=1.0, idle_s=0.2, cpu=lambda: 0.0)
    go.set()
    assert acquire_by_cpu(lock, cpu_limit_s=60.0, idle_s=30.0)
    lock.release()
    t.join(30)

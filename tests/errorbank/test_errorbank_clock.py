"""The guard's clocks: a busy machine never makes an in-process backend "hung"; a stuck one is;
the director's deadline makes a hang cost one block in a real session.

Time sources are injected (a fake CPU reading and a fake wall clock, or a ManualClock): no
test sleeps against a threshold."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from game.errorbank import ErrorStore, GuardedBackend
from game.errorbank.clock import FrameClock, ManualClock, WallClock, WorkClock, Worker, default_clock, in_process
from game.errorbank.faults import FaultyBackend
from game.session import Session
from game.state import Wait
from game.story import load_story
from game.world.backends.procedural import ProceduralBackend

W, H, FPB = 96, 54, 4


class FakeTime:
    """A wall clock and one thread's CPU reading, both moved by the test."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0

    def step(self, wall: float, cpu: float) -> None:
        self.wall += wall
        self.cpu += cpu


class FakeWorker(Worker):
    def __init__(self, t: FakeTime) -> None:
        super().__init__()
        self.t = t

    def cpu(self) -> float:
        return self.t.cpu


def test_a_starved_but_working_backend_is_timed_by_its_progress_not_the_wall_clock() -> None:
    t = FakeTime()
    watch = WorkClock(wall=lambda: t.wall).watch(FakeWorker(t))
    for _ in range(1000):  # 100 s of wall time in which the thread got 1 ms of CPU every 0.1 s
        t.step(0.1, 0.001)
        assert watch.elapsed() <= 0.1 + 1e-9  # never reaches a block timeout: it keeps working
    assert watch.spent() == pytest.approx(1.0)  # what the work cost: 1 s, not 100 s


def test_a_stuck_backend_times_out_and_a_runaway_one_too() -> None:
    t = FakeTime()
    watch = WorkClock(wall=lambda: t.wall, cpu_limit_s=5.0).watch(FakeWorker(t))
    t.step(0.5, 0.2)
    assert watch.elapsed() == pytest.approx(0.0) and watch.spent() == pytest.approx(0.2)
    for _ in range(30):  # blocked on a lock or a socket: no CPU at all
        t.step(0.1, 0.0)
        watch.elapsed()
    assert watch.elapsed() == pytest.approx(3.0)
    t.step(0.1, 0.05)  # any progress starts the count again
    assert watch.elapsed() == pytest.approx(0.0)
    t.step(6.0, 6.0)  # a loop that never answers: past the CPU limit
    assert watch.elapsed() == float("inf")


def test_a_real_thread_on_the_work_clock_times_out_only_when_stuck() -> None:
    clock = WorkClock()
    worker, done, release = Worker(), threading.Event(), threading.Event()

    def stuck() -> None:
        worker.enter()
        release.wait()
        done.set()

    thread = threading.Thread(target=stuck, daemon=True)
    watch = clock.watch(worker)
    thread.start()
    assert not watch.wait(done, 0.05)  # no CPU used at all: it is stuck, whatever the load
    release.set()
    thread.join()

    worker2, done2 = Worker(), threading.Event()

    def works() -> None:
        worker2.enter()
        sum(i * i for i in range(20_000))
        done2.set()

    thread2 = threading.Thread(target=works, daemon=True)
    watch2 = clock.watch(worker2)
    thread2.start()
    assert watch2.wait(done2, 60.0)
    thread2.join()


def test_the_frame_clock_does_not_move_while_the_game_waits() -> None:
    frames = [0]
    clock = FrameClock(lambda: frames[0], 24.0)
    watch, done = clock.watch(Worker()), threading.Event()
    frames[0] = 48
    assert watch.elapsed() == pytest.approx(2.0)
    threading.Timer(0.01, done.set).start()
    assert watch.wait(done, 10.0)  # 2 s of frames, not 10: the answer is waited for
    with pytest.raises(ValueError, match="fps"):
        FrameClock(lambda: 0, 0)


def test_a_manual_clock_times_out_a_blocked_worker_at_exactly_its_timeout() -> None:
    clock = ManualClock(5.0)
    worker, done, release = Worker(), threading.Event(), threading.Event()

    def stuck() -> None:
        worker.enter()
        with clock.blocked():
            release.wait()

    watch = clock.watch(worker)
    threading.Thread(target=stuck, daemon=True).start()
    assert not watch.wait(done, 0.75)
    assert clock.now() == pytest.approx(5.75) and clock.stuck == 1
    release.set()


def test_in_process_backends_get_the_work_clock_and_remote_ones_real_time() -> None:
    class Remote:
        url = "ws://127.0.0.1:9/ws"

    inner = ProceduralBackend(W, H, frames_per_block=FPB)
    assert in_process(inner) and isinstance(default_clock(inner), WorkClock)
    assert isinstance(default_clock(FaultyBackend(inner)), WorkClock)
    assert not in_process(Remote()) and isinstance(default_clock(Remote()), WallClock)
    wrapped = FaultyBackend(inner)
    wrapped.inner = Remote()  # type: ignore[assignment]
    assert not in_process(wrapped)
    assert isinstance(GuardedBackend(inner).clock, WorkClock)


def test_in_a_session_the_director_deadline_makes_a_hang_cost_one_block(tmp_path: Path) -> None:
    story = load_story(Path(__file__).parents[2] / "stories" / "zero_mark")
    clock = ManualClock()
    inner = FaultyBackend(ProceduralBackend(W, H, frames_per_block=FPB), {2: "hang"}, clock=clock)
    store = ErrorStore(":memory:")
    guard = GuardedBackend(inner, store=store, clock=clock, timeout_s=30.0)
    session = Session(story, guard, seed=3, save_dir=tmp_path)
    block_s = FPB / session.caps.fps
    session.start()
    times: list[tuple[float, float]] = []
    for _ in range(3):
        session.submit(Wait(seconds=0.5))
        t0 = clock.now()
        times += [(clock.now() - t0, c.probes.get("errorbank.fallback", 0.0)) for c in session.stream()]
    hang = store.cases("backend.hang")[0]
    assert hang.metrics["deadline_ms"] == round(1000 * block_s)  # the director's deadline: one block
    fallback = [dt for dt, fb in times if fb]
    # shown one block after the missed deadline, not after timeout_s (30 s)
    assert fallback and fallback[0] == pytest.approx(hang.metrics["deadline_ms"] / 1000 + block_s)
    assert len(times) == 3 * 3  # every block of the three turns was shown
    inner.release()

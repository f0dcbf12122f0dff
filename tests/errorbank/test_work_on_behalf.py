"""A backend call waiting for a helper thread that works (the painter's paint-ahead worker,
a model another thread loads) is not stuck on the work clock; one waiting for a helper that
does nothing is. Without game.work.on_behalf the first would be called hung, which is how the
procedural world came to be reported "unreachable" on a busy machine."""

from __future__ import annotations

import threading
import time

from game.errorbank.clock import WorkClock, Worker
from game.work import helpers, on_behalf


def waiting_call(helper_works: bool, say_so: bool) -> bool:
    """Whether a call that waits ~2.5 s for a helper is answered before 1 s passes with no progress."""
    ident: list[int] = []
    ready, finish = threading.Event(), threading.Event()

    def helper() -> None:
        ident.append(threading.get_ident())
        ready.set()
        if helper_works:
            end = time.monotonic() + 2.5
            while time.monotonic() < end:
                sum(i * i for i in range(2_000))
        else:
            threading.Event().wait(2.5)  # blocked itself: no CPU at all
        finish.set()

    worker, done = Worker(), threading.Event()

    def call() -> None:
        worker.enter()
        ready.wait()
        if say_so:
            with on_behalf(ident[0]):
                finish.wait()
        else:
            finish.wait()
        done.set()

    h = threading.Thread(target=helper, daemon=True)
    c = threading.Thread(target=call, daemon=True)
    watch = WorkClock().watch(worker)
    h.start()
    c.start()
    answered = watch.wait(done, 1.0)
    h.join()
    c.join()
    return answered


def test_a_call_waiting_on_a_working_helper_is_not_stuck() -> None:
    assert waiting_call(helper_works=True, say_so=True)


def test_without_saying_so_the_same_wait_looks_stuck() -> None:
    assert not waiting_call(helper_works=True, say_so=False)


def test_a_helper_that_does_nothing_is_still_stuck() -> None:
    assert not waiting_call(helper_works=False, say_so=True)


def test_helpers_are_followed_and_forgotten() -> None:
    me = threading.get_ident()
    with on_behalf(11), on_behalf(12):
        assert set(helpers(me)) == {11, 12}
    assert helpers(me) == ()
    with on_behalf(me), on_behalf(None):  # waiting on oneself or nobody records nothing
        assert helpers(me) == ()

"""The model worker is given up by its CPU, not the wall clock: a busy machine slows it, a hang stops it."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from game.models.llm import ModelError
from game.models.worker import next_reply
from game.work import process_cpu

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# ~1/4 of a core: works a little, sleeps more, like a worker on a machine shared by others
_SLOW = "import time\nwhile True:\n    t = time.process_time()\n    while time.process_time() - t < 0.02: pass\n" \
        "    time.sleep(0.06)\n"
_SPIN = "while True: pass\n"
_HUNG = "import time\ntime.sleep(600)\n"


def _proc(code: str) -> Iterator[subprocess.Popen[bytes]]:
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        yield p
    finally:
        p.kill()
        p.wait()


@pytest.fixture
def slow() -> Iterator[subprocess.Popen[bytes]]:
    yield from _proc(_SLOW)


@pytest.fixture
def spin() -> Iterator[subprocess.Popen[bytes]]:
    yield from _proc(_SPIN)


@pytest.fixture
def hung() -> Iterator[subprocess.Popen[bytes]]:
    yield from _proc(_HUNG)


def test_process_cpu_reads_another_process(spin: subprocess.Popen[bytes]) -> None:
    first = process_cpu(spin.pid)
    q: queue.Queue[dict[str, Any]] = queue.Queue()
    with pytest.raises(ModelError):
        next_reply(q, spin.pid, cpu_limit_s=0.3, idle_s=30)
    assert process_cpu(spin.pid) >= first + 0.3
    spin.kill()
    spin.wait()
    assert process_cpu(spin.pid) == -1.0


def test_a_slow_worker_is_waited_for_past_its_limit_in_wall_seconds(slow: subprocess.Popen[bytes]) -> None:
    # the answer comes after 1.2 wall seconds; the worker uses ~0.3 CPU s meanwhile (less on a busy
    # machine): a wall-clock limit of 1 s would give up, a 1 s CPU limit does not
    q: queue.Queue[dict[str, Any]] = queue.Queue()
    cpu0 = process_cpu(slow.pid)
    timer = threading.Timer(1.2, q.put, args=({"type": "delta", "text": "Tea?"},))
    timer.start()
    try:
        msg = next_reply(q, slow.pid, cpu_limit_s=1.0, idle_s=30)
    finally:
        timer.cancel()
    assert msg["text"] == "Tea?"
    assert process_cpu(slow.pid) - cpu0 < 1.0


def test_a_worker_that_spins_without_answering_is_given_up(spin: subprocess.Popen[bytes]) -> None:
    q: queue.Queue[dict[str, Any]] = queue.Queue()
    with pytest.raises(ModelError, match="CPU without sending"):
        next_reply(q, spin.pid, cpu_limit_s=0.4, idle_s=30)


def test_a_worker_that_hangs_without_cpu_is_given_up(hung: subprocess.Popen[bytes]) -> None:
    q: queue.Queue[dict[str, Any]] = queue.Queue()
    with pytest.raises(ModelError, match="no CPU"):
        next_reply(q, hung.pid, cpu_limit_s=300, idle_s=1.0)

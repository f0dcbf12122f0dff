"""Every input the product reads, fuzzed (bench/fuzz.py's targets, a few hundred inputs each):
refused with a named error from game.errors, or accepted and still saved or exported; never
another exception, a hang past bench/fuzz.py's HANG_S or memory past its MEMORY_MB."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hypothesis", reason="the fuzz tests need hypothesis (the dev extra)")
from hypothesis import HealthCheck, given, settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("worldloom_bench_fuzz", ROOT / "bench" / "fuzz.py")
assert _spec is not None and _spec.loader is not None
fuzz = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fuzz
_spec.loader.exec_module(fuzz)
TARGETS = fuzz.targets()


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzzed_inputs_are_refused_by_name_or_accepted(name: str, request: pytest.FixtureRequest) -> None:
    target = TARGETS[name]
    if name == "script":  # `say` lines are understood by meaning: share the suite's one MiniLM load
        with contextlib.suppress(pytest.skip.Exception):
            request.getfixturevalue("embedder")
    fuzz.warm(target)
    outcomes: dict[str, int] = {}

    @settings(max_examples=target.examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(target.strategy)
    def run(data: Any) -> None:
        outcome = fuzz.check(target.run, data)  # raises fuzz.Failure (an AssertionError) on a broken property
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    run()
    assert sum(outcomes.values()) >= target.examples // 2, outcomes  # hypothesis ran the inputs
    assert outcomes.get("refused", 0) > 0  # the generators reach the checks, not only the happy path


def test_the_property_catches_what_it_should() -> None:
    def crash(_: Any) -> None:
        raise KeyError("boom")

    def spin(_: Any) -> None:
        while True:
            pass

    with pytest.raises(fuzz.Failure, match="failure: KeyError"):
        fuzz.check(crash, None)
    def stuck(_: Any) -> None:
        threading.Event().wait(30)  # waits, using no CPU

    def waits_briefly(_: Any) -> None:
        threading.Event().wait(0.3)  # as a descheduled process on a busy machine would: no CPU spent

    old = fuzz.HANG_S, fuzz.HANG_WALL_S
    fuzz.HANG_S = 0.2
    try:
        with pytest.raises(fuzz.Failure, match="hang"):  # past the CPU bound
            fuzz.check(spin, None)
        assert fuzz.check(waits_briefly, None) == "accepted"  # wall time alone is not the input's work
        fuzz.HANG_WALL_S = 0.5
        with pytest.raises(fuzz.Failure, match="hang"):  # past the real-time bound
            fuzz.check(stuck, None)
    finally:
        fuzz.HANG_S, fuzz.HANG_WALL_S = old

"""A backend whose frames are placeholders by design (`Capabilities.placeholder_frames`, the null
backend's flat grey) is judged right under the guard: its still blocks are not frozen, no drift is
measured against a reference it cannot look like, and the procedural world is not swapped in; its
real faults (a black or misshapen block) are still caught. `play --backend null` is guarded like any
backend, with no special case in the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from game.cli import main
from game.errorbank import ErrorStore, GuardedBackend
from game.errorbank.clock import ManualClock
from game.errorbank.faults import FaultyBackend
from game.errorbank.scenarios import good_requests
from game.world.backends.null import NullBackend
from game.world.backends.procedural import ProceduralBackend
from game.world.protocol import SessionStart
from game.world.wire import caps_from_json, caps_json


def _guard(inner: object, store: ErrorStore) -> GuardedBackend:
    g = GuardedBackend(inner, store=store, clock=ManualClock(), timeout_s=0.4,  # type: ignore[arg-type]
                       backoff_s=0.005, probe_every_s=0.5)
    g.start(SessionStart("s", 1, "a clearing"))
    return g


def _play(g: GuardedBackend, n: int) -> list[np.ndarray]:
    return [chunk.frames for req in good_requests(n, seed=3, min_frames=8) for chunk in g.generate(req)]


def test_the_guard_takes_the_null_backends_still_frames_as_they_are() -> None:
    store = ErrorStore(":memory:")
    g = _guard(NullBackend(96, 54, frames_per_block=4), store)
    frames = _play(g, 12)  # pans both ways, scene cuts, still shots
    assert frames and all(int(f.min()) == int(f.max()) == 128 for f in frames)  # the null's own frames
    assert store.cases() == [] and store.samples() == []
    assert g.stats.faults == 0 and g.stats.fallback_frames == 0 and g.notice == ""


def test_a_moving_backend_that_freezes_is_still_a_fault() -> None:
    store = ErrorStore(":memory:")
    inner = FaultyBackend(ProceduralBackend(96, 54, frames_per_block=4), {1: "frozen"}, clock=ManualClock())
    assert not inner.capabilities().placeholder_frames
    _play(_guard(inner, store), 4)
    assert [c.kind for c in store.cases()] == ["frame.frozen"]


def test_a_black_block_of_the_null_backend_is_still_caught() -> None:
    store = ErrorStore(":memory:")
    inner = FaultyBackend(NullBackend(96, 54, frames_per_block=4), {1: "black"}, clock=ManualClock())
    _play(_guard(inner, store), 4)
    assert [(c.kind, c.correction, c.worked) for c in store.cases()] == [("frame.black", "retry", True)]


def test_the_flag_crosses_the_wire() -> None:
    caps = NullBackend().capabilities()
    assert caps.placeholder_frames and caps_from_json(caps_json(caps)).placeholder_frames


def test_play_guards_the_null_backend_and_records_nothing_wrong(mini_path: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "bank.sqlite"
    monkeypatch.setenv("WORLDLOOM_ERRORBANK", str(db))
    script = tmp_path / "play.txt"
    script.write_text("wait 48\nchoose offer_kite\nwait 48\nchoose finish_good\n")
    assert main(["play", str(mini_path), "--headless", "--inputs", str(script), "--backend", "null",
                 "--transcript", str(tmp_path / "t.jsonl")]) == 0
    out = capsys.readouterr()
    assert "unreachable" not in out.out + out.err
    assert db.exists()  # guarded by default, like any backend
    store = ErrorStore(db)
    try:
        assert store.cases() == []  # was a frame.frozen case a block, then the procedural world
    finally:
        store.close()

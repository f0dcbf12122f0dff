"""GuardedBackend: a backend that raises, hangs, disconnects or returns garbage never stops the
stream or touches the story state; drift is corrected by re-anchoring; every case is stored.

Time is a ManualClock shared by the guard and the faulty backend: a slow block advances it,
a hang blocks on it, and the guard times a hang out at exactly its timeout; nothing here
sleeps against a threshold."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from game.errorbank import NOTICE_DOWN, ErrorStore, GuardedBackend
from game.errorbank.clock import ManualClock
from game.errorbank.faults import FaultyBackend
from game.errorbank.metrics import delta_e
from game.errorbank.scenarios import good_requests, make_request
from game.session import Session
from game.state import Move, Wait
from game.story import load_story
from game.world.backends.drifting import DriftingBackend, load_drift_config
from game.world.backends.procedural import ProceduralBackend
from game.world.protocol import Backend, Entity, MemoryOp, Scene, SessionStart, check_frames

W, H, FPB = 96, 54, 4
BLOCK_S = FPB / 24.0  # play time of one block


def guard(inner: Backend, store: ErrorStore | None = None, **kw: object) -> GuardedBackend:
    opts: dict[str, object] = {"timeout_s": 0.4, "backoff_s": 0.005, "probe_every_s": 0.5}
    opts.update(kw)
    if "clock" not in opts:
        opts["clock"] = getattr(inner, "clock", None) or ManualClock()
    g = GuardedBackend(inner, store=store, **opts)  # type: ignore[arg-type]
    g.start(SessionStart("s", 1, "a clearing"))
    return g


def faulty(plan: dict[int, str] | object, **kw: object) -> FaultyBackend:
    kw.setdefault("clock", ManualClock())
    return FaultyBackend(ProceduralBackend(W, H, frames_per_block=FPB), plan, **kw)  # type: ignore[arg-type]


def play(g: GuardedBackend, n: int, seed: int = 2, min_frames: int = 8, seq0: int = 0) -> tuple[int, list[str]]:
    frames, notices = 0, []
    for req in good_requests(n, seed=seed, min_frames=min_frames):
        req = replace(req, seq=req.seq + seq0)
        got = 0
        for chunk in g.generate(req):
            assert check_frames(chunk.frames, g.capabilities()) == ""
            assert chunk.seq == req.seq
            got += chunk.n_frames
        assert got == g.capabilities().round_up(req.min_frames)
        frames += got
        notices.append(g.notice)
    return frames, notices


@pytest.mark.parametrize("mode", ["raise", "disconnect", "raise_mid", "garbage", "dtype", "shape", "empty", "black",
                                  "frozen", "none"])
def test_a_single_fault_is_retried_and_recorded(mode: str) -> None:
    store = ErrorStore(":memory:")
    g = guard(faulty({1: mode}), store)
    frames, notices = play(g, 4)
    assert frames == 4 * 8 and all(n == "" for n in notices)
    (case,) = store.cases()
    assert case.correction == "retry" and case.worked is True and case.severity == "error"
    assert case.kind.startswith(("backend.", "frame."))
    assert case.request["seq"] == 2 and case.fixed_png is not None


def test_a_backend_that_keeps_failing_falls_back_then_comes_back() -> None:
    store = ErrorStore(":memory:")
    notices: list[str] = []
    inner = faulty(lambda i: "disconnect" if 1 <= i <= 5 else "ok")
    g = guard(inner, store, retries=1, on_notice=notices.append)
    frames, seen = play(g, 12)
    assert frames == 12 * 8  # the stream never stopped
    assert NOTICE_DOWN in seen and seen[-1] == ""  # it said so, then switched back
    assert notices == [NOTICE_DOWN, ""]
    kinds = [(c.kind, c.correction, c.worked) for c in store.cases()]
    assert kinds[:2] == [("backend.error", "retry", False), ("backend.error", "fallback", True)]
    assert kinds[-1] == ("backend.back", "switch_back", True)
    assert g.stats.fallback_frames > 0 and g.stats.downs == 1 and g.stats.backs == 1


def test_a_hang_is_cut_short_and_the_fallback_shows_until_it_answers() -> None:
    inner = faulty({1: "hang"})
    clock = inner.clock
    assert clock is not None
    g = guard(inner, ErrorStore(":memory:"), timeout_s=0.3)
    frames, notices = play(g, 3)
    assert frames == 3 * 8 and notices[1] == NOTICE_DOWN and g.down
    assert clock.now() == pytest.approx(0.3)  # the hang cost its timeout, not a moment more
    inner.release()  # the backend answers again
    _, notices = play(g, 6, seed=3)
    assert notices[-1] == "" and not g.down
    assert g.store is not None
    assert [c.kind for c in g.store.cases()] == ["backend.hang", "backend.back"]


def test_a_late_block_is_kept_and_recorded_and_the_deadline_sets_the_hang_timeout() -> None:
    store = ErrorStore(":memory:")
    g = guard(faulty({0: "slow", 1: "slow"}, slow_s=0.4), store, min_timeout_s=0.05)
    late = replace(make_request(1, Scene("clearing"), min_frames=FPB), deadline_ms=300)
    assert len(list(g.generate(late))) == 1 and not g.down  # 400 ms: late, but under 300 ms + one block
    assert [(c.kind, c.correction) for c in store.cases()] == [("frame.late", "none")]
    assert store.cases()[0].metrics["score"] == pytest.approx(400.0)
    hung = replace(make_request(2, Scene("clearing"), min_frames=FPB), deadline_ms=100)
    assert len(list(g.generate(hung))) == 1 and g.down  # 400 ms > 100 ms + one block (167 ms): a hang
    case = store.cases()[-1]
    assert case.kind == "backend.hang" and case.metrics["timeout_s"] == pytest.approx(0.1 + BLOCK_S, abs=1e-6)


def test_a_hang_shows_the_fallback_within_one_block_of_the_missed_deadline() -> None:
    inner = faulty({1: "hang"})
    clock = inner.clock
    assert clock is not None
    g = guard(inner, ErrorStore(":memory:"), timeout_s=10.0)  # the deadline, not timeout_s, applies
    deadline = round(1000 * BLOCK_S)
    reqs = [replace(r, deadline_ms=deadline) for r in good_requests(3, seed=2, min_frames=3 * FPB)]
    list(g.generate(reqs[0]))
    t0 = clock.now()
    shown = []
    for chunk in g.generate(reqs[1]):  # the inner backend hangs on its first block
        shown.append((clock.now() - t0, chunk.probes.get("errorbank.fallback", 0.0)))
    assert len(shown) == 3 and all(fb == 1.0 for _, fb in shown)  # every frame owed was shown
    assert shown[0][0] == pytest.approx(deadline / 1000 + BLOCK_S)  # one block after the missed deadline
    assert shown[0][0] <= deadline / 1000 + BLOCK_S + 1e-9
    inner.release()


def test_probes_go_on_while_a_hung_call_is_still_alive_and_switch_back() -> None:
    inner = faulty({1: "hang"})  # call 1 never returns in this test; every later call answers
    clock = inner.clock
    assert clock is not None
    store = ErrorStore(":memory:")
    g = guard(inner, store)
    _, notices = play(g, 2)
    assert notices[-1] == NOTICE_DOWN and clock.stuck == 1
    _, notices = play(g, 4, seed=3, seq0=100)  # the probe (a fresh call) answers while call 1 still hangs
    assert notices[-1] == "" and not g.down and clock.stuck == 1
    assert [c.kind for c in store.cases()] == ["backend.hang", "backend.back"]
    assert g.stats.probes == 1 and inner.calls >= 3
    inner.release()


def test_a_probe_still_out_is_looked_at_again_and_its_late_answer_switches_back() -> None:
    inner = faulty(lambda i: "hang" if i in (1, 2) else "ok")  # the first probe (call 2) hangs too
    clock = inner.clock
    assert clock is not None
    store = ErrorStore(":memory:")
    g = guard(inner, store)
    t0 = clock.now()
    _, notices = play(g, 5)
    # the first probe waited one block (no deadline), then the fallback went on serving
    assert notices[-1] == NOTICE_DOWN and g.stats.probes == 1 and clock.stuck == 2
    assert clock.now() - t0 == pytest.approx(0.4 + BLOCK_S)  # the hang's timeout + one probe wait
    inner.release()  # both hung calls answer now
    _, notices = play(g, 1, seed=3, seq0=100)
    assert notices == [""] and not g.down and g.stats.probes == 1  # the old probe's answer counted
    assert [c.kind for c in store.cases()] == ["backend.hang", "backend.back"]


@pytest.mark.parametrize("mode", ["audio_nan", "audio_dtype", "audio_length"])
def test_bad_chunk_audio_is_repaired_and_recorded_never_passed_on(mode: str) -> None:
    store = ErrorStore(":memory:")
    g = guard(faulty(lambda i: mode), store)
    chunks = list(g.generate(make_request(1, Scene("clearing"), min_frames=2 * FPB)))
    assert len(chunks) == 2 and not g.down  # the frames were fine: no retry, no fallback
    for c in chunks:
        assert c.audio is not None and c.audio.dtype == np.float32
        assert c.audio.shape == (round(c.n_frames * c.audio_rate / c.fps),)
        assert np.isfinite(c.audio).all() and np.abs(c.audio).max() <= 1.0
    (case,) = store.cases()  # one case per request, however many blocks were repaired
    assert case.kind == "audio.bad" and case.correction == "audio.repaired" and case.worked is True
    assert g.stats.audio_fixed == 2


def test_a_backend_down_from_the_start_still_plays() -> None:
    inner = faulty({}, fail_start=True)
    store = ErrorStore(":memory:")
    g = guard(inner, store)
    assert g.down and g.notice == NOTICE_DOWN
    frames, _ = play(g, 3)
    assert frames == 24 and store.cases()[0].correction == "fallback"


def test_the_story_state_is_never_touched(tmp_path: Path) -> None:
    story = load_story(Path(__file__).parents[2] / "stories" / "zero_mark")
    inner = faulty(lambda i: {2: "raise", 3: "raise", 4: "raise", 6: "hang", 9: "garbage"}.get(i, "ok"))
    g = GuardedBackend(inner, timeout_s=0.3, backoff_s=0.001, probe_every_s=0.5, clock=inner.clock)
    s = Session(story, g, seed=4, save_dir=tmp_path / "a")
    clean = Session(story, ProceduralBackend(W, H, frames_per_block=FPB), seed=4, save_dir=tmp_path / "b")
    for sess in (s, clean):
        sess.start()
        intents: list[Move | Wait] = [Move(direction="d", seconds=0.5), Wait(seconds=0.5)]
        for intent in intents * 5:
            sess.submit(intent)
            for _ in sess.stream():
                pass
    inner.release()
    assert g.stats.retries > 0 and g.stats.hangs == 1 and g.stats.fallback_frames > 0
    assert s.state.to_json() == clean.state.to_json()
    assert s.state.frame == clean.state.frame


def test_drift_is_corrected_by_reanchoring_and_restores_a_good_state() -> None:
    store = ErrorStore(":memory:")
    drifting = DriftingBackend(strength="high", width=W, height=H, frames_per_block=FPB)
    g = guard(drifting, store)
    clean = ProceduralBackend(W, H, frames_per_block=FPB)
    clean.start(SessionStart("s", 1, "a clearing"))
    sc = Scene("clearing", "dusk", "dusk", "clear")
    errors = []
    for seq in range(1, 121):
        req = make_request(seq, sc, min_frames=FPB, camera_x=seq * 0.01, camera_dx=0.01 / FPB)
        for chunk, ref in zip(g.generate(req), clean.generate(req), strict=True):
            errors.append(delta_e(chunk.frames, ref.frames))
    cases = store.cases("drift")
    assert cases and all(c.correction == "reanchor+reset_history+regenerate" for c in cases)
    assert all(c.worked for c in cases) and all(c.metrics["score_after"] < c.metrics["threshold"] for c in cases)
    assert all(c.bad_png and c.fixed_png for c in cases)
    # the current sink is what the correction re-anchors to
    assert all(a["tier"] == "sink_current" for a in cases[0].request["anchors"][-1:])
    # uncorrected, the same simulation keeps drifting; corrected it stays near the clean render
    assert max(errors) < 40 and np.mean(errors[-20:]) < 25
    assert len(store.samples()) >= 120


@pytest.mark.parametrize(("mode", "kind"), [("forget", "story.missing"), ("ghost", "story.extra")])
def test_a_story_fault_is_corrected_by_reanchoring(mode: str, kind: str) -> None:
    store = ErrorStore(":memory:")
    g = guard(faulty({1: mode}), store)
    creature = Entity("creature", "character", "the creature", "a small horned creature", x=0.5)
    for seq in (1, 2, 3):
        chunks = list(g.generate(make_request(seq, Scene("clearing", entities=(creature,)), min_frames=FPB)))
        assert all(c.drawn == ("creature",) for c in chunks)  # what was shown is right
    (case,) = store.cases()
    assert case.kind == kind and case.worked is True and case.correction == "reanchor+reset_history+regenerate"


def test_memory_ops_reset_the_drifting_simulation() -> None:
    d = DriftingBackend(strength="high", width=W, height=H, frames_per_block=FPB)
    assert d.capabilities().backend == "drifting-sim"
    d.start(SessionStart("s", 1, "x"))
    req = make_request(1, Scene("clearing"), min_frames=FPB * 30)
    levels = [c.probes["sim.error"] for c in d.generate(req)]
    assert levels[-1] > levels[0] > 0
    d.memory(MemoryOp("reset_history"))
    after = next(iter(d.generate(make_request(2, Scene("clearing"), min_frames=FPB)))).probes["sim.error"]
    assert after <= levels[0] + 1e-9
    assert set(load_drift_config()) == {"low", "medium", "high"}


def test_pre_emption_stops_the_inner_backend_too() -> None:
    g = guard(ProceduralBackend(W, H, frames_per_block=FPB))
    req = make_request(1, Scene("clearing"), min_frames=FPB * 5)
    it = g.generate(req)
    first = next(it)
    it.close()  # the session stops after one block
    assert first.block == 0 and g.frame == FPB
    nxt = list(g.generate(make_request(2, Scene("clearing"), min_frames=FPB)))
    assert len(nxt) == 1 and nxt[0].first_frame == FPB

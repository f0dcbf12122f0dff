"""The director's requests and the protocol's rules (block rounding, ignored inputs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.errors import BackendError
from game.session import Session
from game.state import Choose, Move, Wait
from game.story import load_story
from game.world.backends import make_backend
from game.world.backends.null import NullBackend
from game.world.protocol import Capabilities, Scene, WorldRequest, check_frames, ignored_inputs


@pytest.fixture
def session(mini_path: Path, tmp_path: Path) -> Session:
    s = Session(load_story(mini_path), NullBackend(), seed=1, save_dir=tmp_path)
    s.start()
    return s


def test_opening_request_is_a_scene_cut_with_anchors(session: Session) -> None:
    req = session.pending
    assert req is not None and req.seq == 1
    assert req.switch_mode == "scene_cut" and req.event == "scene" and req.event_id == "meadow"
    assert req.min_frames == 72  # "cut" = 3 s at 24 fps
    assert "soft watercolour" in req.prompt and "Meadow" in req.prompt
    tiers = {a.id: a.tier for a in req.anchors}
    assert tiers["world.style"] == "sink_global" and tiers["location.meadow"] == "sink_current"
    ent = {e.id: e for e in req.scene.entities}
    assert ent["creature"].x == 0.6 and ent["creature"].state == "idle"


def test_a_step_is_one_block_and_plain(session: Session) -> None:
    req = session.submit(Move(direction="a", seconds=0.2)).request
    assert req is not None
    assert req.min_frames == 5 and session.caps.round_up(req.min_frames) == 12
    assert req.switch_mode is None and req.actions == ("a",) * 12
    assert req.camera_x == 0.0 and req.camera_dx == pytest.approx(-0.05 / 12)


def test_reaction_then_scene_change_lengths_and_modes(session: Session) -> None:
    req = session.submit(Choose(choice_id="offer_kite")).request
    assert req is not None
    assert req.event == "scene" and req.switch_mode == "recache"  # same location: no cut
    assert req.cue == "leap"
    ent = {e.id: e for e in req.scene.entities}
    assert ent["creature"].state == "leap" and ent["creature"].holding == ("kite",)
    assert "holding the red kite" in req.prompt
    req = session.submit(Choose(choice_id="finish_bad")).request
    assert req is not None and req.switch_mode == "scene_cut" and req.scene.location == "creek"


def test_wait_length_follows_seconds(session: Session) -> None:
    req = session.submit(Wait(seconds=2)).request
    assert req is not None and req.min_frames == 48 and req.event == "wait"


def test_rolling_history_is_bounded(session: Session) -> None:
    for _ in range(30):
        session.submit(Wait(seconds=0.1))
    req = session.pending
    assert req is not None and len(req.rolling) == 4
    assert all(r.startswith("#") for r in req.rolling)


def test_block_rounding() -> None:
    caps = Capabilities(backend="x", frames_per_block=12, fps=24, width=8, height=8)
    assert [caps.round_up(n) for n in (0, 1, 12, 13, 24, 25)] == [12, 12, 12, 24, 24, 36]
    backend = NullBackend(frames_per_block=12)
    req = WorldRequest(session_id="s", seq=1, min_frames=13, prompt="p")
    chunks = list(backend.generate(req))
    assert [c.n_frames for c in chunks] == [12, 12] and chunks[-1].last and not chunks[0].last


def test_ignored_inputs_are_reported_never_dropped() -> None:
    caps = Capabilities(backend="x", frames_per_block=4, fps=24, width=8, height=8, text=False)
    req = WorldRequest(session_id="s", seq=1, min_frames=4, prompt="rain", switch_mode="recache",
                       actions=("w",), references=("a.png",), audio="cue.wav",
                       scene=Scene(location="x", entities=()))
    got = ignored_inputs(caps, req)
    assert [g.split(":")[0] for g in got] == ["prompt", "switch_mode recache", "actions", "references", "audio"]
    null = NullBackend()
    chunk = next(iter(null.generate(WorldRequest(session_id="s", seq=1, min_frames=1, prompt="p", audio="x.wav"))))
    assert chunk.ignored == ("audio: backend takes no audio cues",)


def test_check_frames_names_the_problem() -> None:
    import numpy as np

    caps = Capabilities(backend="x", frames_per_block=1, fps=24, width=4, height=2)
    assert check_frames(np.zeros((1, 2, 4, 3), np.uint8), caps) == ""
    assert "dtype" in check_frames(np.zeros((1, 2, 4, 3), np.float32), caps)
    assert "shape" in check_frames(np.zeros((2, 4, 3), np.uint8), caps)
    assert "not 4x2" in check_frames(np.zeros((1, 3, 4, 3), np.uint8), caps)


def test_unknown_backend_lists_known_ones() -> None:
    known = "action, causal, diffusion, drifting, null, procedural, remote"
    with pytest.raises(BackendError, match=f"known backends: {known}"):
        make_backend("nope")

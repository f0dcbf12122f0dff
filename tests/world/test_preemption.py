"""Dynamic chunking and pre-emption: an input mid-chunk drops the rest, and the new request
goes out at once with the right switch mode (plain for a step, recache for an edit,
scene_cut for a new scene)."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.session import Session
from game.state import Choose, Instruct, Move
from game.story import load_story
from game.world.backends.null import NullBackend
from game.world.chunking import ChunkPolicy
from game.world.protocol import Capabilities

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture
def session(tmp_path: Path) -> Session:
    s = Session(load_story(DATA / "mini"), NullBackend(frames_per_block=12), seed=1, save_dir=tmp_path)
    s.start()
    return s


@pytest.mark.parametrize(("intent", "switch", "event"), [
    (Move(direction="a", seconds=0.2), "plain", "move"),
    (Instruct(edit="weather", params={"value": "rain"}, text="make it rain"), "recache", "edit"),
    (Move(direction="d", seconds=0.2), "scene_cut", "scene"),  # the meadow's exit to the creek
])
def test_an_input_mid_chunk_cuts_it_after_the_current_block(session: Session, intent: Move | Instruct,
                                                            switch: str, event: str) -> None:
    opening = session.pending
    assert opening is not None and session.caps.round_up(opening.min_frames) == 72  # six blocks of cut-scene
    seen = []
    for chunk in session.stream():
        seen.append(chunk)
        if len(seen) == 2:
            session.submit(intent)  # arrives while block 2 of 6 is on screen
    assert len(seen) == 2 and seen[-1].seq == opening.seq and not seen[-1].last  # the rest was dropped
    new = session.pending
    assert new is not None and new.seq == opening.seq + 1
    assert new.switch_mode == switch and new.event == event
    assert session.state.frame == 24  # the clock counts only what was shown
    after = list(session.stream())
    assert after and after[0].seq == new.seq  # the new request goes out at once


def test_a_step_after_a_finished_chunk_keeps_the_prompt(session: Session) -> None:
    list(session.stream())
    req = session.submit(Move(direction="a", seconds=0.2)).request
    assert req is not None and req.switch_mode is None  # nothing was cut: nothing to switch


def test_chunk_length_follows_the_event_and_authors_override_it(session: Session) -> None:
    caps = Capabilities(backend="x", frames_per_block=12, fps=24, width=8, height=8)
    policy = ChunkPolicy()
    step = policy.frames("move", caps)
    reaction = policy.frames("reaction", caps)
    cut = policy.frames("scene", caps, "cut")
    assert step == 12 < reaction < cut  # a step is one block, a reaction more, a scene change long
    assert policy.frames("edit", caps) == 24 and policy.switch("edit") == "recache"
    assert policy.frames("choice", caps, 60) == 60 and policy.frames("choice", caps, "long") == 96
    list(session.stream())
    req = session.submit(Choose(choice_id="offer_kite")).request  # goes to 'after' (same place): recache
    assert req is not None and req.switch_mode == "recache"
    assert ChunkPolicy.for_preemption().frames("idle", caps) == 96

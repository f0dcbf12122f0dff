"""Timed and agent events become world requests like the player's, with chunk lengths for them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from game.session import Session
from game.state import Choose, Wait
from game.story import story_from_dict
from game.world.backends.null import NullBackend

STORY: dict[str, Any] = {
    "id": "w", "title": "W", "start": "quay",
    "locations": {"quay": {"name": "Quay"}, "tower": {"name": "Tower"}},
    "cast": {"mara": {"name": "Mara"}, "oren": {"name": "Oren"}},
    "timers": {"tide": {"turns": 3, "start": True, "say": "The tide comes in over the steps.",
                        "warn": {2: {"say": "The water rises."}}},
               "bell": {"turns": 5, "start": True, "chunk": 7}},
    "agents": {
        "mara": {"at": "quay", "rules": [{"if": "turn() == 1", "act": "leave"}],
                 "actions": {"leave": {"kind": "move", "to": "tower"}}},
        "oren": {"at": "tower", "rules": [{"if": "turn() == 1", "act": "pace"}],
                 "actions": {"pace": {"kind": "move", "to": "quay"}, "stay": {"kind": "wait"}}},
    },
    "scenes": {"quay": {"location": "quay", "present": ["mara"], "choices": [{"id": "look", "text": "look"}]}},
}


def session(tmp_path: Path) -> Session:
    s = Session(story_from_dict(STORY), NullBackend(), seed=1, save_dir=tmp_path)
    s.start()
    return s


def test_an_agent_walking_off_in_view_is_the_cause(tmp_path: Path) -> None:
    s = session(tmp_path)
    req = s.submit(Wait(seconds=0.1)).request
    assert req is not None and req.event == "agent"
    assert req.event_id == "oren"  # Mara walks off and Oren arrives, both in view: the later one
    assert req.min_frames >= 48  # "medium": 2 s at 24 fps, not the wait's 0.1 s
    assert "Mara walks off" in req.prompt


def test_a_warning_is_not_a_cause_but_a_timer_firing_is(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.submit(Wait(seconds=0.1))
    warn = s.submit(Choose(choice_id="look")).request
    assert warn is not None and warn.event == "choice"
    fired = s.submit(Choose(choice_id="look")).request
    assert fired is not None and fired.event == "timer" and fired.event_id == "tide"
    assert fired.min_frames >= 96  # "long": 4 s at 24 fps


def test_a_timer_chunk_hint_is_the_authors(tmp_path: Path) -> None:
    s = session(tmp_path)
    reqs = [s.submit(Wait(seconds=0.1)).request for _ in range(5)]
    last = reqs[-1]
    assert last is not None and last.event == "timer" and last.event_id == "bell" and last.min_frames >= 7
    assert reqs[3] is not None and reqs[3].event == "wait"  # nothing happened in view: the wait itself

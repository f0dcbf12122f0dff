"""Agents a scene gives no position stand apart in view, not all at 0.75 one on the other: each in
story order takes the first free spot (0.75, then beside it), clear of everyone already there, the same
state giving the same positions."""

from __future__ import annotations

from itertools import combinations
from typing import Any

from game.story import story_from_dict
from game.story.agents import FREE_SPOTS, MIN_GAP, free_spot
from game.story.runtime import StoryRuntime


def _quay(present: dict[str, float], agents: int = 2) -> dict[str, Any]:
    names = [f"a{i}" for i in range(agents)]
    return {"id": "q", "title": "Q", "start": "quay", "locations": {"quay": {"name": "Quay"}},
            "cast": {**{n: {"name": n.upper()} for n in names}, "gull": {"name": "Gull"}},
            "agents": {n: {"at": "quay", "actions": {"idle": {"kind": "use"}}} for n in names},
            "scenes": {"quay": {"location": "quay", "present": present, "choices": [{"id": "look", "text": "look"}]}}}


def _present(d: dict[str, Any]) -> dict[str, float]:
    rt = StoryRuntime(story_from_dict(d))
    st = rt.new_state(0)
    rt.begin(st)
    return rt.present(st)


def test_two_unplaced_agents_stand_apart() -> None:
    here = _present(_quay({}))
    assert here == {"a0": 0.75, "a1": 0.6}  # the first where a lone one always stood, the next beside it
    assert here == _present(_quay({}))  # the same every time


def test_an_unplaced_agent_keeps_clear_of_a_placed_character() -> None:
    here = _present(_quay({"gull": 0.75}))
    assert here["gull"] == 0.75 and here["a0"] == 0.6 and here["a1"] == 0.9


def test_many_unplaced_agents_use_every_spot_before_sharing_one() -> None:
    here = _present(_quay({}, agents=len(FREE_SPOTS)))
    assert sorted(here.values()) == sorted(FREE_SPOTS)
    assert all(abs(a - b) >= MIN_GAP - 1e-9 for a, b in combinations(here.values(), 2))
    assert free_spot([0.1, 0.2]) == 0.75 and free_spot(FREE_SPOTS[:-1]) == 0.15


def test_the_gap_is_at_least_a_character_box_wide() -> None:
    from game.app.layout import CHARACTER_BOX

    assert MIN_GAP >= CHARACTER_BOX[0]
    assert all(abs(a - b) >= MIN_GAP - 1e-9 for a, b in combinations(FREE_SPOTS, 2))

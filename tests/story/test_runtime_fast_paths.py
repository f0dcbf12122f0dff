"""The fast paths of the play loop keep their meaning: a checkpoint copy is deep, a choice is
checked on its own rule only (once-only, its condition), events are plain data."""

from __future__ import annotations

import json

import pytest

from game.errors import InputError
from game.state import Choose, GameState
from game.story.loader import story_from_dict
from game.story.runtime import StoryRuntime

STORY = {"id": "t", "title": "T", "start": "a", "locations": {"here": {"name": "Here"}},
         "variables": {"coins": {"type": "int", "default": 0}},
         "scenes": {"a": {"location": "here", "choices": [
             {"id": "earn", "text": "Earn", "once": True, "do": ["coins += 1"]},
             {"id": "buy", "text": "Buy", "if": "coins >= 1", "goto": "b"}]},
             "b": {"location": "here", "ending": "e"}}}


def test_a_checkpoint_copy_shares_nothing_that_changes() -> None:
    s = GameState(visits={"a": 1}, relationships={"fox": {"trust": 1.0}}, gifts={"fox": ["kite"]},
                  objects={"hat": {"name": "hat"}}, inventory=["kite"], world={"weather": "rain"})
    c = s.copy_state()
    c.visits["a"] = 2
    c.relationships["fox"]["trust"] = 5.0
    c.gifts["fox"].append("leaf")
    c.objects["hat"]["name"] = "cap"
    c.inventory.append("leaf")
    c.world["weather"] = "sun"
    assert s.visits == {"a": 1} and s.relationships == {"fox": {"trust": 1.0}} and s.gifts == {"fox": ["kite"]}
    assert s.objects == {"hat": {"name": "hat"}} and s.inventory == ["kite"] and s.world == {"weather": "rain"}
    assert s.copy_state() == s and s.copy_state().to_json() == s.to_json()


def test_choose_still_refuses_a_spent_or_closed_choice() -> None:
    rt = StoryRuntime(story_from_dict(STORY))
    state = rt.new_state(0)
    rt.begin(state)
    with pytest.raises(InputError, match="not available"):
        rt.apply(state, Choose(choice_id="buy"))  # coins >= 1 does not hold yet
    events = rt.apply(state, Choose(choice_id="earn"))
    assert [e.kind for e in events] == ["choice", "effect"]
    with pytest.raises(InputError, match="not available"):
        rt.apply(state, Choose(choice_id="earn"))  # once only
    events = rt.apply(state, Choose(choice_id="buy"))
    assert events[-1].kind == "ending" and json.loads(events[-1].model_dump_json())["ids"] == {"ending": "e"}
    with pytest.raises(InputError):
        rt.apply(state, Choose(choice_id="buy"))  # nothing to choose at an ending

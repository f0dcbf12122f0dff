"""The story runtime over GameState."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.errors import InputError, StoryRuntimeError
from game.state import Choose, GameState, Give, Move, Say
from game.story import load_story, story_from_dict
from game.story.runtime import StoryRuntime


@pytest.fixture
def rt(mini_path: Path) -> StoryRuntime:
    return StoryRuntime(load_story(mini_path))


def begun(rt: StoryRuntime) -> GameState:
    st = rt.new_state(seed=3)
    rt.begin(st)
    return st


def test_begin_enters_start_with_interpolated_lines(rt: StoryRuntime) -> None:
    st = rt.new_state()
    events = rt.begin(st)
    assert st.scene == "meadow" and st.visits == {"meadow": 1}
    lines = [e for e in events if e.kind == "line"]
    assert [e.text for e in lines] == ["Hello Ada."]
    assert lines[0].ids["line"] == "meadow.l0"


def test_choice_applies_effects_reaction_and_goto(rt: StoryRuntime) -> None:
    st = begun(rt)
    events = rt.apply(st, Choose(choice_id="offer_kite"))
    kinds = [e.kind for e in events]
    assert kinds[0] == "choice" and "reaction" in kinds and kinds.count("scene") == 1
    assert st.scene == "after" and "kite" not in st.inventory and st.holders["kite"] == "creature"
    assert st.variables["courage"] == 1 and st.relationship("creature", "trust") == 2.0
    assert st.reactions["creature"] == "leap"
    assert [c.id for c in rt.available_choices(st)] == ["finish_good", "finish_bad"]


def test_kite_and_leaf_differ(rt: StoryRuntime) -> None:
    a, b = begun(rt), begun(rt)
    ea = rt.apply(a, Choose(choice_id="offer_kite"))
    eb = rt.apply(b, Choose(choice_id="offer_leaf"))
    react = {e.data["reaction"] for e in ea if e.kind == "reaction"}
    assert react == {"leap"} and {e.data["reaction"] for e in eb if e.kind == "reaction"} == {"recoil"}
    assert [c.id for c in rt.available_choices(b)] == ["finish_bad"]  # trust too low


def test_conditional_line_and_once_only_choice(rt: StoryRuntime) -> None:
    st = begun(rt)
    rt.apply(st, Choose(choice_id="wave"))
    assert "wave" not in [c.id for c in rt.available_choices(st)]
    with pytest.raises(InputError, match="not available"):
        rt.apply(st, Choose(choice_id="wave"))
    with pytest.raises(InputError, match="no choice"):
        rt.apply(st, Choose(choice_id="nope"))


def test_give_uses_tag_reaction_and_default(rt: StoryRuntime) -> None:
    st = begun(rt)
    events = rt.apply(st, Give(item_id="stone", character_id="creature"))
    assert any(e.text == "It sniffs the grey stone." for e in events)
    assert "stone" in st.inventory  # keep: false gives it back
    assert st.gifts["creature"] == ["stone"]
    events = rt.apply(st, Give(item_id="leaf", character_id="creature"))  # no reaction authored
    assert any(e.ids.get("line") == "builtin.give" for e in events)
    assert st.holders["leaf"] == "creature" and st.reactions["creature"] == "tilt"
    with pytest.raises(InputError):
        rt.apply(st, Give(item_id="leaf", character_id="creature"))


def test_exit_and_camera_pan(rt: StoryRuntime) -> None:
    st = begun(rt)
    events = rt.apply(st, Move(direction="a", seconds=2))
    assert events[0].kind == "move" and st.camera_x == pytest.approx(-0.5)
    events = rt.apply(st, Move(direction="d", seconds=0.5))
    assert [e.kind for e in events][:2] == ["exit", "scene"] and st.scene == "creek_scene"
    assert st.location == "creek" and st.camera_x == 0.0


def test_action_by_id(rt: StoryRuntime) -> None:
    st = begun(rt)
    events = rt.apply(st, Say(text="I sing", action_id="sing"))
    assert [e.kind for e in events] == ["say", "action", "line"]
    assert events[-1].text == "You hum a tune."


def test_random_draws_are_recorded_and_replayable() -> None:
    st = GameState(seed=9)
    first = [st.random() for _ in range(3)]
    st2 = GameState(seed=9)
    assert [st2.random() for _ in range(3)] == first and st.draws == 3
    st.draws = 1  # a rollback to after the first draw replays the second
    assert st.random() == first[1]


def test_broken_goto_is_a_runtime_error_with_where() -> None:
    story = story_from_dict({"id": "b", "title": "B", "start": "a", "locations": {"h": {"name": "H"}},
                             "scenes": {"a": {"location": "h", "choices": [{"id": "c", "text": "x", "goto": "zz"}]}}})
    rt = StoryRuntime(story)
    st = begun(rt)
    with pytest.raises(StoryRuntimeError, match="unknown scene 'zz'"):
        rt.apply(st, Choose(choice_id="c"))


def test_conditional_reaction_lines() -> None:
    story = story_from_dict({
        "id": "c", "title": "C", "start": "a", "locations": {"h": {"name": "H"}},
        "variables": {"brave": {"type": "bool", "default": False}},
        "scenes": {"a": {"location": "h", "choices": [{"id": "go", "text": "Go", "say": [
            {"text": "You stride.", "if": "brave"}, {"text": "You creep.", "if": "not brave"}], "goto": "b"}]},
            "b": {"location": "h", "ending": "e"}}})
    rt = StoryRuntime(story)
    st = begun(rt)
    texts = [e.text for e in rt.apply(st, Choose(choice_id="go")) if e.kind == "line"]
    assert texts == ["You creep."]

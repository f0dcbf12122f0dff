"""Game mechanics as story data: bounds, timers, quests, outcomes, recipes, roles (runtime + explorer)."""

from __future__ import annotations

from typing import Any

import pytest

from game.errors import InputError
from game.state import Choose, Event, GameState, Give, Move, Wait
from game.story import story_from_dict
from game.story.explorer import Explorer, explore
from game.story.runtime import StoryRuntime


def base(**extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": "m", "title": "M", "start": "hall",
        "locations": {"hall": {"name": "Hall"}, "yard": {"name": "Yard"}},
        "variables": {"oil": {"type": "int", "default": 3, "min": 0, "max": 5}},
        "items": {"lamp": {"name": "lamp"}, "flask": {"name": "flask"}, "lit": {"name": "lit lamp"}},
        "cast": {"keeper": {"name": "Keeper"}},
        "scenes": {
            "hall": {"location": "hall", "present": ["keeper"], "choices": [
                {"id": "burn", "text": "burn oil", "do": "oil -= 2"},
                {"id": "fill", "text": "fill up", "do": "oil += 9"},
                {"id": "out", "text": "go out", "goto": "yard"}]},
            "yard": {"location": "yard", "choices": [{"id": "back", "text": "back", "goto": "hall"}]},
            "dark": {"location": "hall", "ending": "Dark"},
            "won": {"location": "yard", "ending": "Won"},
        },
    }
    d.update(extra)
    return d


def run(d: dict[str, Any], *intents: Any, seed: int = 0) -> tuple[StoryRuntime, GameState, list[Event]]:
    rt = StoryRuntime(story_from_dict(d))
    st = rt.new_state(seed)
    events = rt.begin(st)
    for it in intents:
        events += rt.apply(st, it)
    return rt, st, events


def test_bounded_stats_clamp_and_report_the_clamped_value() -> None:
    _, st, events = run(base(), Choose(choice_id="burn"), Choose(choice_id="burn"))
    assert st.variables["oil"] == 0  # 3 - 2 - 2 stops at min 0
    assert [e.data["new"] for e in events if e.kind == "effect"] == [1, 0]
    _, st, _ = run(base(), Choose(choice_id="fill"))
    assert st.variables["oil"] == 5 and isinstance(st.variables["oil"], int)


def test_a_candle_burns_down_warns_and_fires_its_goto() -> None:
    d = base(timers={"candle": {"turns": 3, "start": True, "warn": {1: {"say": "The candle gutters."}},
                                "do": "oil = 0", "goto": "dark"}})
    rt, st, events = run(d, Choose(choice_id="burn"))
    assert st.timers == {"candle": 2} and not rt.is_ending(st)
    run_events = rt.apply(st, Move(direction="a"))  # a camera pan lets no time pass
    assert st.timers == {"candle": 2} and not any(e.kind == "timer" for e in run_events)
    warn = rt.apply(st, Wait())
    assert [e.text for e in warn if e.kind == "line"] == ["The candle gutters."]
    fired = rt.apply(st, Wait())
    kinds = [e.kind for e in fired]
    assert "timer" in kinds and kinds[-1] == "ending" and st.scene == "dark" and st.variables["oil"] == 0
    assert "candle" not in st.timers


def test_timers_start_stop_and_repeat_by_effects() -> None:
    d = base(timers={"bell": {"turns": 2, "repeat": True, "do": "oil += 1"}})
    d["scenes"]["hall"]["choices"] += [{"id": "ring", "text": "ring", "do": "start('bell')"},
                                       {"id": "hush", "text": "hush", "do": "stop('bell')"}]
    rt, st, _ = run(d, Choose(choice_id="ring"))
    assert st.timers == {"bell": 1}  # started at 2, the turn it started counted
    rt.apply(st, Wait())
    assert st.variables["oil"] == 4 and st.timers == {"bell": 2}  # fired and restarted
    rt.apply(st, Choose(choice_id="hush"))
    rt.apply(st, Wait())
    assert st.timers == {} and st.variables["oil"] == 4


def test_quest_stages_complete_by_condition_and_by_advance() -> None:
    d = base(quests={"light": {"name": "Light the lamp", "start": True, "stages": {
        "find": {"text": "Find the lamp", "done": "has('lamp')"},
        "fill": {"text": "Fill it", "do": "oil += 1", "say": "Done."}}}})
    d["scenes"]["hall"]["choices"] += [{"id": "grab", "text": "grab", "do": "take('lamp')"},
                                       {"id": "pour", "text": "pour", "do": "advance('light')"}]
    rt, st, _ = run(d)
    assert st.quests == {"light": "find"}
    events = rt.apply(st, Choose(choice_id="grab"))
    q = [e for e in events if e.kind == "quest"]
    assert st.quests == {"light": "fill"} and q[0].ids["stage"] == "fill" and q[0].text == "Fill it"
    events = rt.apply(st, Choose(choice_id="pour"))
    assert st.quests == {"light": "done"} and st.variables["oil"] == 4
    assert rt.check(st, "done('light') and stage('light') == 'done'", "")
    assert "Done." in [e.text for e in events]


def test_win_and_lose_conditions_end_the_story_by_rule() -> None:
    d = base(outcomes={"starved": {"kind": "lose", "if": "oil <= 0", "goto": "dark"},
                       "full": {"kind": "win", "if": "oil >= 5", "goto": "won"}})
    rt, st, events = run(d, Choose(choice_id="fill"))
    out = [e for e in events if e.kind == "outcome"]
    assert st.scene == "won" and out[0].data["kind"] == "win" and events[-1].kind == "ending"
    rt, st, _ = run(d, Choose(choice_id="burn"), Choose(choice_id="burn"))
    assert st.scene == "dark"


def test_combining_items_by_recipe() -> None:
    d = base(inventory=["lamp", "flask"],
             recipes={"light_it": {"items": ["flask", "lamp"], "make": "lit", "say": "The {item} takes light."}})
    rt, st, events = run(d, Give(item_id="lamp", character_id="flask"))
    assert st.inventory == ["lit"] and any(e.kind == "combine" for e in events)
    assert "The lamp takes light." in [e.text for e in events]
    with pytest.raises(InputError):
        rt.apply(st, Give(item_id="lit", character_id="flask"))  # the flask is gone
    d["scenes"]["hall"]["choices"].append({"id": "mix", "text": "mix", "do": "combine('lamp', 'flask')"})
    _, st, events = run(d, Choose(choice_id="mix"))  # the same recipe from a choice (a window's menu)
    assert st.inventory == ["lit"] and any(e.kind == "combine" for e in events)
    d["recipes"] = {}
    _, st, events = run(d, Give(item_id="lamp", character_id="flask"))
    assert st.inventory == ["lamp", "flask"] and events[-1].ids["line"] == "builtin.combine"


def test_roles_gate_choices_and_change_how_characters_treat_the_player() -> None:
    d = base(roles={"warden": {"name": "Warden", "text": "You wear the badge.", "treat": {"keeper": {"trust": 2}}},
                    "thief": {"name": "Thief", "treat": {"keeper": {"trust": -1}}}})
    d["scenes"]["hall"]["choices"] = [
        {"id": "be_warden", "text": "warden", "once": True, "if": "role() == ''", "do": "become('warden')"},
        {"id": "be_thief", "text": "thief", "once": True, "if": "role() == ''", "do": "become('thief')"},
        {"id": "arrest", "text": "arrest", "roles": ["warden"], "goto": "won"},
        {"id": "steal", "text": "steal", "roles": ["thief"], "goto": "dark"}]
    d["scenes"]["hall"]["exits"] = {"d": {"goto": "yard", "roles": ["thief"]}}
    rt, st, events = run(d, Choose(choice_id="be_warden"))
    assert st.role == "warden" and st.relationship("keeper", "trust") == 2.0
    assert "You wear the badge." in [e.text for e in events]
    assert [c.id for c in rt.available_choices(st)] == ["arrest"]
    assert not any(e.kind == "exit" for e in rt.apply(st, Move(direction="d")))  # not a warden's way
    with pytest.raises(InputError):
        rt.apply(st, Choose(choice_id="steal"))
    rt, st, _ = run(d, Choose(choice_id="be_thief"))
    assert st.relationship("keeper", "trust") == -1.0 and [c.id for c in rt.available_choices(st)] == ["steal"]


def test_old_stories_take_no_world_turn() -> None:
    rt, st, _ = run(base(), Choose(choice_id="burn"))
    assert not rt.has_world_turn and st.timers == {} and st.agents == {}


def test_the_explorer_keys_role_and_timer_and_reaches_rule_endings() -> None:
    d = base(roles={"warden": {"name": "Warden"}, "thief": {"name": "Thief"}},
             timers={"candle": {"turns": 4, "start": True, "goto": "dark"}},
             outcomes={"full": {"kind": "win", "if": "oil >= 5 and role() == 'warden'", "goto": "won"}})
    d["scenes"]["hall"]["choices"] = [
        {"id": "be_warden", "text": "w", "if": "role() == ''", "do": "become('warden')"},
        {"id": "be_thief", "text": "t", "if": "role() == ''", "do": "become('thief')"},
        {"id": "fill", "text": "fill", "do": "oil += 1"}]
    story = story_from_dict(d)
    ex = Explorer(story)
    desc = ex.describe_key(ex.key(ex.start()[0]))
    assert desc["role()"] == "" and desc["timer(candle)"] == 4
    report = explore(story, n_random=5)
    assert report.endings == ["Dark", "Won"] and report.ok
    assert report.coverage["mechanics"].reached == report.coverage["mechanics"].total == 4


def test_a_state_from_an_older_story_keeps_playing() -> None:
    """A save or reload that names a timer, quest stage or agent the story no longer has."""
    d = base(timers={"candle": {"turns": 3, "start": True}},
             quests={"q": {"name": "Q", "start": True, "stages": {"a": {"done": "oil > 100"}}}})
    rt, st, _ = run(d)
    st.timers["gone"] = 1
    st.quests["q"] = "lost_stage"
    st.agents["ghost"] = {"at": "hall"}
    rt.apply(st, Wait())
    assert st.timers == {"candle": 2} and st.quests == {"q": "a"}

"""Agents: characters who act between turns by rules, schedule and fallback, within declared actions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from game.errors import InputError
from game.state import Choose, Event, GameState, Give, Move, Wait
from game.story import Story, story_from_dict
from game.story.agents import WAIT
from game.story.explorer import Explorer, explore
from game.story.runtime import StoryRuntime


def harbour(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": "h", "title": "H", "start": "quay",
        "locations": {"quay": {"name": "Quay"}, "tower": {"name": "Tower"}},
        "items": {"rope": {"name": "rope"}},
        "cast": {"mara": {"name": "Mara"}, "oren": {"name": "Oren"}},
        "agents": {
            "mara": {
                "at": "quay",
                "needs": {"cold": {"start": 1, "per_turn": 1, "max": 5}},
                "goals": {"rope": {"text": "get the rope", "done": "holds('mara', 'rope')"}},
                "schedule": [{"turn": 4, "at": "tower"}],
                "actions": {
                    "go_tower": {"kind": "move", "to": "tower"},
                    "go_quay": {"kind": "move", "to": "quay"},
                    "take_rope": {"kind": "take", "item": "rope"},
                    "hand_rope": {"kind": "give", "item": "rope", "to": "player",
                                  "if": "role() == 'friend'"},
                    "tell": {"kind": "talk", "to": "oren", "say": [
                        "The tide turns at dusk.", {"speaker": "oren", "text": "Then we row now."}]},
                    "warm": {"kind": "use", "do": "need('mara', 'cold') -= 3"},
                },
                "rules": [
                    {"if": "need('mara', 'cold') >= 5", "act": "warm"},
                    {"act": "take_rope"},
                    {"if": "heard('oren', 'mara') == 0", "act": "tell"},
                    {"act": "hand_rope"},
                ],
            },
            "oren": {"at": "quay", "fallback": "random", "actions": {
                "up": {"kind": "move", "to": "tower"}, "down": {"kind": "move", "to": "quay"},
                "shout": {"kind": "talk", "to": "all", "say": "Boats out!"}}},
        },
        "roles": {"friend": {"name": "Friend"}},
        "scenes": {
            "quay": {"location": "quay", "present": {"mara": 0.3, "oren": 0.6}, "choices": [
                {"id": "befriend", "text": "befriend", "once": True, "do": "become('friend')"},
                {"id": "look", "text": "look"}], "exits": {"w": "tower_top"}},
            "tower_top": {"location": "tower", "choices": [{"id": "down", "text": "down", "goto": "quay"}]},
        },
    }
    d.update(over)
    return d


def play(d: dict[str, Any], n: int, seed: int = 0, policy: Any = None) -> tuple[StoryRuntime, GameState, list[Event]]:
    rt = StoryRuntime(story_from_dict(d), policy)
    st = rt.new_state(seed)
    events = rt.begin(st)
    for _ in range(n):
        events += rt.apply(st, Wait())
    return rt, st, events


def acts(events: list[Event], who: str) -> list[str]:
    return [e.ids["action"] for e in events if e.kind == "agent" and e.ids["character"] == who]


def test_rules_first_then_the_schedule() -> None:
    rt, st, events = play(harbour(), 5)
    mara = acts(events, "mara")
    assert mara[:2] == ["take_rope", "tell"]  # rule 2 (the rope), then rule 3 (tell Oren, once heard)
    assert st.holders["rope"] == "mara"
    assert [e.ids["goal"] for e in events if e.kind == "goal"] == ["rope"]
    # turn 3: no rule holds and she is not due anywhere: she waits; turn 4: cold (1, +1 a turn) is 5: she warms up
    assert mara[2] == "warm" and [e.turn for e in events if e.ids.get("action") == "warm"] == [4]
    assert mara[3] == "go_tower" and st.agents["mara"]["at"] == "tower"  # turn 5: the schedule (due from 4)
    assert st.agents["mara"]["need.cold"] == 3.0  # 5 - 3 + 1
    leave = [e for e in events if e.kind == "reaction" and e.speaker == "mara"]
    assert leave and leave[-1].data["reaction"] == "walks off"  # the player at the quay sees her go
    assert "mara" not in rt.present(st)


def test_a_group_scene_each_remembers_what_the_other_said() -> None:
    _, st, events = play(harbour(), 2)
    spoken = [(e.speaker, e.text, sorted(e.data["heard_by"])) for e in events
              if e.kind == "line" and e.ids.get("agent") == "mara"]
    assert spoken[:2] == [("mara", "The tide turns at dusk.", ["oren", "player"]),
                          ("oren", "Then we row now.", ["mara", "player"])]
    assert st.agents["oren"]["heard.mara"] == 1 and st.agents["oren"]["last.mara"] == "The tide turns at dusk."
    assert st.agents["mara"]["last.oren"] == "Then we row now."


def test_role_changes_what_a_character_does_for_the_player() -> None:
    rt, st, _ = play(harbour(), 2)
    assert "rope" not in st.inventory
    rt.apply(st, Choose(choice_id="befriend"))  # the world turn after it: Mara hands the rope over
    assert st.role == "friend" and "rope" in st.inventory and "rope" not in st.holders


def test_a_seeded_run_is_identical_twice_and_a_rollback_replays_it() -> None:
    one = play(harbour(), 30, seed=7)[2]
    two = play(harbour(), 30, seed=7)[2]
    assert [e.model_dump() for e in one] == [e.model_dump() for e in two]
    rt, st, _ = play(harbour(), 5, seed=7)
    saved = st.copy_state()
    ahead = [rt.apply(st, Wait()) for _ in range(10)]
    again = [rt.apply(saved, Wait()) for _ in range(10)]
    assert [[e.model_dump() for e in t] for t in ahead] == [[e.model_dump() for e in t] for t in again]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agents_only_take_declared_actions(seed: int) -> None:
    d = harbour()
    _, _, events = play(d, 60, seed=seed)
    for who, a in d["agents"].items():
        done = acts(events, who)
        assert done and set(done) <= set(a["actions"]), (who, done)
    assert len(set(acts(events, "oren"))) >= 2  # the seeded fallback varies what he does


class Picker:
    def __init__(self, pick: str) -> None:
        self.pick = pick
        self.seen: list[list[str]] = []

    def choose(self, story: Story, state: GameState, agent: str, options: Sequence[str]) -> str:
        self.seen.append(list(options))
        return self.pick


def test_model_fallback_is_asked_only_when_no_rule_applies_and_cannot_leave_the_declared_set() -> None:
    d = harbour()
    d["agents"]["oren"]["fallback"] = "model"
    bad = Picker("burn_the_boats")
    _, _, events = play(d, 6, policy=bad)
    assert bad.seen and all(opts[-1] == WAIT for opts in bad.seen)
    assert acts(events, "oren") == []  # refused every time: he waits
    good = Picker("up")
    _, st, events = play(d, 1, policy=good)
    assert acts(events, "oren") == ["up"] and st.agents["oren"]["at"] == "tower"
    assert [e.data["by"] for e in events if e.kind == "agent" and e.speaker == "oren"] == ["model"]
    _, _, events = play(d, 3, policy=None)  # no model: waits, so nothing depends on one
    assert acts(events, "oren") == []


def test_gifts_need_the_character_to_be_here() -> None:
    d = harbour(inventory=["rope"])
    d["agents"]["mara"]["rules"] = [{"act": "go_tower"}]
    rt, st, _ = play(d, 1)
    with pytest.raises(InputError, match="not here"):
        rt.apply(st, Give(item_id="rope", character_id="mara"))
    rt.apply(st, Move(direction="w"))  # follow her up
    assert "mara" in rt.present(st)
    rt.apply(st, Give(item_id="rope", character_id="mara"))
    assert st.holders["rope"] == "mara"


def test_the_explorer_keys_agents_and_lint_is_clean(tmp_path: Any) -> None:
    story = story_from_dict(harbour())
    ex = Explorer(story)
    desc = ex.describe_key(ex.key(ex.start()[0]))
    assert "agent(mara)" in desc and "agent(oren)" in desc
    d = harbour()
    d["agents"]["oren"]["fallback"] = "wait"  # no random draws: a small state space
    d["scenes"]["quay"]["choices"].append({"id": "end", "text": "end", "if": "at('mara') == 'tower'",
                                           "goto": "fin"})
    d["scenes"]["fin"] = {"location": "quay", "ending": "Fin"}
    report = explore(story_from_dict(d), n_random=3, max_states=5000)
    assert report.endings == ["Fin"]
    assert report.coverage["mechanics"].reached >= 6

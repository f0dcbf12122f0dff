"""An agent's dialogue model picks among the declared actions; replays answer from the log."""

from __future__ import annotations

from typing import Any

from game.cast.agentmind import ModelAgentPolicy, RecordedAgentPolicy, agent_messages, parse_pick
from game.models.llm_scripted import ScriptedDialogueModel
from game.state import Wait
from game.story import story_from_dict
from game.story.runtime import StoryRuntime

STORY: dict[str, Any] = {
    "id": "p", "title": "P", "start": "a",
    "locations": {"quay": {"name": "the quay"}, "tower": {"name": "the tower"}},
    "cast": {"oren": {"name": "Oren", "look": "an old boatman"}, "mara": {"name": "Mara"}},
    "agents": {"oren": {"at": "quay", "fallback": "model",
                        "goals": {"boat": {"text": "get the boat out before dusk"}},
                        "needs": {"tired": {"start": 2, "max": 10}},
                        "actions": {"climb": {"kind": "move", "to": "tower", "say": "Oren climbs the stair."},
                                    "back": {"kind": "move", "to": "quay"}}}},
    "scenes": {"a": {"location": "quay", "choices": [{"id": "c", "text": "c"}]}},
}


def test_the_prompt_names_goals_needs_place_and_numbered_options() -> None:
    story = story_from_dict(STORY)
    st = StoryRuntime(story).new_state()
    st.agents["oren"]["last.mara"] = "Hurry."
    sys, user = agent_messages(story, st, "oren", ["climb", "wait"])
    assert "Oren, an old boatman" in sys["content"] and "get the boat out before dusk" in sys["content"]
    assert "tired low" in sys["content"] and "the quay" in sys["content"]
    assert 'Mara last told you: "Hurry."' in sys["content"]
    assert "1. climb: Oren climbs the stair." in user["content"] and "2. wait" in user["content"]


def test_parse_pick_takes_a_number_or_an_id_and_nothing_else() -> None:
    opts = ["climb", "back", "wait"]
    assert parse_pick("2", opts) == "back" and parse_pick("I will climb.", opts) == "climb"
    assert parse_pick("9", opts) == "wait" and parse_pick("set fire to the boats", opts) == "wait"


def test_the_model_drives_the_fallback_and_a_replay_needs_no_model() -> None:
    model = ScriptedDialogueModel(default="1")
    policy = ModelAgentPolicy(model)
    rt = StoryRuntime(story_from_dict(STORY), policy)
    st = rt.new_state(seed=4)
    events = rt.begin(st)
    for _ in range(3):
        events += rt.apply(st, Wait())
    picks = [e.ids["action"] for e in events if e.kind == "agent"]
    assert picks == ["climb", "back", "climb"]
    assert policy.asked == 2 and policy.reused == 1 and model.calls == 2  # turn 3 asks what turn 1 asked
    replay = StoryRuntime(story_from_dict(STORY), RecordedAgentPolicy(events))
    st2 = replay.new_state(seed=4)
    again = replay.begin(st2)
    for _ in range(3):
        again += replay.apply(st2, Wait())
    assert [e.model_dump() for e in again] == [e.model_dump() for e in events]


def test_200_turns_with_two_agents_stay_inside_the_declared_actions() -> None:
    """A model that answers anything (numbers out of range, made-up actions) cannot leave the set."""
    from pathlib import Path

    from game.story import load_story

    story = load_story(Path(__file__).resolve().parents[1] / "data" / "two_agents")
    model = ScriptedDialogueModel([(r"drink:", "I fly to the moon"), (r"eat:", "9"), (r"tired|flour", "3"),
                                   (r"grab:", "grab"), (r"hand:", "hand")], default="2")
    rt = StoryRuntime(story)
    policy = ModelAgentPolicy(model)
    rt.use_policy(policy)
    st = rt.new_state(seed=11)
    events = rt.begin(st)
    for _ in range(200):
        events += rt.apply(st, Wait())
    declared = {cid: set(a.actions) for cid, a in story.model.agents.items()}
    done: dict[str, set[str]] = {cid: set() for cid in declared}
    for e in events:
        if e.kind == "agent":
            done[e.ids["character"]].add(e.ids["action"])
    for cid, acts in done.items():
        assert acts and acts <= declared[cid], (cid, acts - declared[cid])
    assert model.calls > 10 and len(done["wren"]) >= 3 and len(done["tam"]) >= 3
    by_model = sum(1 for e in events if e.kind == "agent" and e.data["by"] == "model")
    assert by_model < policy.asked + policy.reused  # the made-up answers were refused: she waited
    assert {e.data["by"] for e in events if e.kind == "agent"} >= {"model", "schedule"}

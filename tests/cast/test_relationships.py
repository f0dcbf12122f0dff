"""Relationships: tone and gifts move the axes, decay to baseline, save/load, story conditions."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from game.cast.card import CharacterCard
from game.cast.relationships import RelationshipHook, Relationships, tone
from game.session import Session
from game.state import Choose, Event, GameState, Give, Say
from game.story.loader import story_from_dict
from game.story.story import Story
from game.world.backends.null import NullBackend

ROOT = Path(__file__).parents[2]


def tiny_story() -> Story:
    """A cottage where Eve is; the lantern room opens at trust('eve') >= 3."""
    return story_from_dict({
        "id": "eve_tiny",
        "title": "Eve, tiny",
        "start": "cottage",
        "items": {"seaglass": {"name": "sea glass", "tags": ["seaglass"]}, "stone": {"name": "stone"}},
        "inventory": ["seaglass", "stone"],
        "cast": {"eve": {"name": "Eve", "card": "../characters/eve.yaml",
                         "relationship": {"trust": 0.0, "affinity": 1.0}}},
        "locations": {"island": {"name": "Skerrow"}},
        "scenes": {
            "cottage": {
                "location": "island",
                "present": {"eve": 0.6},
                "lines": ["The kettle ticks on the stove."],
                "choices": [
                    {"id": "lantern", "text": "Climb to the lantern room", "if": "trust('eve') >= 3",
                     "goto": "lantern_room"},
                    {"id": "help", "text": "Help her wind the clockwork", "do": ["trust('eve') += 1"]},
                ],
            },
            "lantern_room": {"location": "island", "present": ["eve"], "lines": ["The Old Eye turns."]},
        },
    }, ROOT / "stories")


def test_tone_of_words() -> None:
    assert tone("Thank you, this is wonderful, I love your lighthouse!") > 0.5
    assert tone("You are a stupid, useless old hag and I hate this ugly rock.") < -0.5
    assert abs(tone("The ferry leaves at nine.")) < 0.05


def test_kind_words_raise_insults_lower_neutral_words_keep(eve: CharacterCard, embedder: Any) -> None:
    rel = Relationships(eve, embedder=embedder)
    state = GameState()
    rel.ensure(state)
    start = rel.values(state)
    _, up = rel.words_deltas("Thank you, this is wonderful, I love your lighthouse!")
    assert up["trust"] > 0 and up["affinity"] > up["trust"]  # she warms faster than she trusts
    rel.change(state, up)
    warm = rel.values(state)
    assert warm["trust"] > start["trust"] and warm["affinity"] > start["affinity"]
    _, down = rel.words_deltas("You are a stupid, useless old hag and I hate this ugly rock.")
    rel.change(state, down)
    cold = rel.values(state)
    assert cold["trust"] < warm["trust"] and cold["affinity"] < warm["affinity"]
    _, neutral = rel.words_deltas("The ferry leaves at nine.")
    assert neutral == {}
    _, asked = rel.words_deltas("How old is the lamp?")
    assert asked == {"curiosity": pytest.approx(0.3)}  # a question piques her curiosity
    rel.change(state, {"trust": 1000.0})
    assert rel.values(state)["trust"] == eve.axes["trust"].max  # clamped


def test_decay_toward_baseline_is_exponential(eve: CharacterCard) -> None:
    rel = Relationships(eve)
    state = GameState()
    rel.ensure(state)
    rel.set(state, "affinity", 9.0)
    rel.set(state, "curiosity", 0.0)
    base_a, base_c = eve.axes["affinity"].baseline, eve.axes["curiosity"].baseline
    rel.decay(state, 1)
    assert rel.values(state)["affinity"] == pytest.approx(base_a + (9.0 - base_a) * 0.98)
    half = rel.half_life("affinity")
    assert half == pytest.approx(math.log(2) / -math.log(0.98))
    previous = rel.values(state)
    for _ in range(round(half) - 1):
        rel.decay(state)
        now = rel.values(state)
        assert base_a < now["affinity"] < previous["affinity"]  # monotone, never overshoots
        assert previous["curiosity"] < now["curiosity"] < base_c  # from below, too
        previous = now
    assert rel.values(state)["affinity"] - base_a == pytest.approx((9.0 - base_a) / 2, rel=0.02)
    rel.decay(state, 2000)
    assert rel.values(state)["affinity"] == pytest.approx(base_a, abs=1e-3)


def test_gifts_expressions_and_voice(eve: CharacterCard) -> None:
    rel = Relationships(eve)
    assert rel.gift_deltas("seaglass") == {"affinity": 1.5, "curiosity": 0.5}
    assert rel.gift_deltas("jar", ["food", "seaglass"]) == {"affinity": 0.5}  # first tag listed wins
    assert rel.gift_deltas("rock") == {"affinity": 0.3}
    state = GameState()
    rel.ensure(state)
    assert rel.expression(state) == "guarded"
    rel.set(state, "trust", 5.0)
    rel.set(state, "affinity", 7.0)
    assert rel.expression(state) == "delighted"
    style = rel.voice_style(state)
    assert (style.rate, style.pitch) == (eve.voice.rate + 15, eve.voice.pitch + 8)
    rel.set(state, "trust", -5.0)
    assert rel.expression(state) == "wary" and rel.voice_style(state).rate < eve.voice.rate
    assert "trust low (-5.0" in rel.describe(state) and "You feel wary." in rel.describe(state)


def test_hook_in_a_session_unlocks_the_scene_and_survives_save_load(eve: CharacterCard, tmp_path: Path) -> None:
    story = tiny_story()
    s = Session(story, NullBackend(), seed=1, save_dir=tmp_path, steps=[RelationshipHook(eve)])
    s.start()
    assert "lantern" not in [c.id for c in s.choices()]
    assert set(s.state.relationships["eve"]) == {"trust", "affinity"}  # the story's start values
    turn = s.submit(Say(text="Thank you for the tea, this is wonderful. I love your lighthouse!", target="eve"))
    effects = [e for e in turn.events if e.kind == "effect"]
    targets = {e.ids["target"] for e in effects}
    assert {"trust(eve)", "affinity(eve)"} <= targets
    assert all(e.data["cause"] in ("tone", "relationship") for e in effects)
    assert "curiosity" in s.state.relationships["eve"]  # the card's third axis, at its start value
    trust_after_kind = s.state.relationship("eve", "trust")
    assert trust_after_kind > 0
    s.submit(Say(text="You are a stupid, useless old hag.", target="eve"))
    assert s.state.relationship("eve", "trust") < trust_after_kind
    s.submit(Say(text="Sorry. Hello, Jonas!", target="jonas"))  # to someone else: her axes only decay
    before_gift = s.state.relationship("eve", "affinity")
    turn = s.submit(Give(item_id="seaglass", character_id="eve"))
    gift = [e for e in turn.events if e.kind == "effect" and e.data.get("cause") == "gift"]
    assert gift and s.state.relationship("eve", "affinity") > before_gift
    while s.state.relationship("eve", "trust") < 3:
        s.submit(Choose(choice_id="help"))  # the story's own effect: trust('eve') += 1
    assert "lantern" in [c.id for c in s.choices()]
    # GameState JSON round trip keeps the relationship and the condition
    state2 = GameState.model_validate(json.loads(json.dumps(s.state.to_json())))
    assert state2.relationships == s.state.relationships
    s.save("slot1")
    values = dict(s.state.relationships["eve"])
    s2 = Session(story, NullBackend(), seed=1, save_dir=tmp_path, steps=[RelationshipHook(eve)])
    s2.start()
    assert "lantern" not in [c.id for c in s2.choices()]
    s2.load("slot1")
    assert s2.state.relationships["eve"] == values
    assert "lantern" in [c.id for c in s2.choices()]
    events = s2.submit(Choose(choice_id="lantern")).events
    assert s2.state.scene == "lantern_room" and any(e.kind == "scene" for e in events)


def test_hook_ignores_lines_not_for_her(eve: CharacterCard) -> None:
    story = tiny_story()
    s = Session(story, NullBackend(), seed=1)
    s.start()
    hook = RelationshipHook(eve, emit_decay=True)
    s.state.relationships["eve"]["affinity"] = 5.0
    out = hook.on_turn(s, Say(text="x"), [Event(kind="say", speaker="player", text="I hate fog.",
                                                data={"target": "jonas"})])
    assert {e.data["cause"] for e in out} == {"decay"}
    assert s.state.relationship("eve", "affinity") < 5.0

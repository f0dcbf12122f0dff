"""What the player reads names things by their names, never by their ids.

A newcomer read "A creature_lantern is there now by the stump." (the creature wore a lantern,
object id ``creature_lantern``; then "put a lantern by the stump" took that id for the new
thing's noun), and a question asked back offered "Give the eve a lamp".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from game.inputs.channels import Channels
from game.inputs.edits import describe
from game.inputs.evalset import fresh_state
from game.inputs.meaning import Clarify, Resolver
from game.session import Session
from game.state import Choose, Instruct
from game.story import load_story
from game.world.backends.null import NullBackend

ROOT = Path(__file__).parents[2]
#: An id-shaped word: lower-case words joined by underscores ("creature_lantern", "lamp_oil").
ID = re.compile(r"\b[a-z0-9]+_[a-z0-9_]+\b")


def _lines(events: Any) -> list[str]:
    return [e.text for e in events if e.kind == "line"]


def test_a_new_thing_named_like_a_worn_one_is_called_by_its_noun(tmp_path: Path) -> None:
    s = Session(load_story(ROOT / "stories" / "zero_mark"), NullBackend(), seed=0, save_dir=tmp_path)
    s.start()
    s.submit(Instruct(edit="look", params={"character": "creature", "wear": "lantern"}))
    assert "creature_lantern" in s.state.objects
    lines = _lines(s.submit(Instruct(edit="add_object", params={"name": "creature_lantern", "near": "stump",
                                                                  "relation": "near"})).events)
    assert lines == ["A golden lantern is there now by the stump."]
    new = [o for o in s.state.objects.values() if not o.get("on")]
    assert [o["noun"] for o in new] == ["lantern"]


def test_typed_edits_in_two_stories_narrate_no_ids(tmp_path: Path, embedder: Any) -> None:
    zm = load_story(ROOT / "stories" / "zero_mark")
    s = Session(zm, NullBackend(), seed=0, save_dir=tmp_path / "zm")
    s.start()
    ch = Channels(s, Resolver(zm, embedder))
    said: list[str] = []
    for text in ("give the creature a blue scarf", "make the creature wear a lantern", "put a lantern by the stump",
                 "make the lantern green", "remove the lantern", "give it a cup of tea"):
        reply = ch.say(text)
        said += _lines(reply.events) + [reply.line]
    eve = load_story(ROOT / "stories" / "eve")
    s2 = Session(eve, NullBackend(), seed=0, save_dir=tmp_path / "eve")
    s2.start()
    s2.submit(Choose(choice_id="knock"))
    ch2 = Channels(s2, Resolver(eve, embedder))
    for text in ("give her a lantern", "put a candle by the stove", "make the lantern blue"):
        reply = ch2.say(text)
        said += _lines(reply.events) + [reply.line]
    leaks = [t for t in said if ID.search(t)]
    assert not leaks, leaks
    assert any("lantern" in t for t in said)


def test_questions_asked_back_use_names(embedder: Any) -> None:
    eve = load_story(ROOT / "stories" / "eve")
    out = Resolver(eve, embedder).understand("give her something", fresh_state(eve, "kitchen"))
    assert isinstance(out, Clarify), out
    assert "piece of sea glass" in out.question and "lemon from the Harrowby shop" in out.question
    assert not ID.search(out.question) and "seaglass" not in out.question


@pytest.mark.parametrize(("edit", "params", "want"), [
    ("look", {"character": "eve", "wear": "scarf", "colour": "red"}, "give Eve a red scarf"),
    ("look", {"character": "creature", "colour": "blue"}, "make the creature blue"),
    ("remove_object", {"target": "lamp_oil"}, "remove the tin of lamp paraffin"),
    ("change_object", {"target": "lamp_oil", "colour": "red"}, "make the tin of lamp paraffin red"),
    ("give_object", {"name": "lantern", "character": "eve"}, "give Eve a lantern"),
])
def test_describe_names_characters_and_things(edit: str, params: dict[str, str], want: str) -> None:
    names = {"eve": "Eve", "creature": "the creature", "lamp_oil": "tin of lamp paraffin"}
    assert describe(edit, params, names.__getitem__) == want

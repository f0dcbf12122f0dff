"""Where a told thing is, who has it, what she was given, and who taught her (issue 11, talk-5 misses)."""

from __future__ import annotations

from typing import Any

import pytest

from game.cast.castroom import said_back
from game.cast.factsheet import FactSheet
from game.cast.grounding import Grounding
from game.cast.guard import PersonaFacts
from game.cast.memory import Memory
from game.cast.retrieval import HashEmbedder
from game.cast.told import facts_told
from game.cast.verifier import Verifier
from game.state.events import Event


def _told(eve: Any, *lines: str) -> tuple[Memory, list[tuple[str, str, str, str]]]:
    mem = Memory(eve, embedder=HashEmbedder())
    for turn, line in enumerate(lines, 1):
        mem.observe(Event(kind="say", turn=turn, speaker="player", text=line, data={"target": "eve"}))
    return mem, [(b.entity, b.key, b.value, b.source) for b in mem.beliefs()]


@pytest.mark.parametrize(("line", "known", "expected"), [
    ("I keep forty hives near Rotterdam.", {},
     [("player_hives", "count", "40"), ("player_hives", "place", "near Rotterdam")]),
    ("I keep forty hives on the hill.", {}, [("player_hives", "count", "40")]),  # no place name: no place
    ("My dog is called Biscuit. He's staying with my sister.", {},
     [("player_dog", "name", "Biscuit"), ("player_dog", "carer", "with your sister")]),
    ("My sister is looking after Biscuit.", {"player_dog": "Biscuit"}, [("player_dog", "carer", "with your sister")]),
    ("Biscuit is staying with Anna.", {"player_dog": "Biscuit"}, [("player_dog", "carer", "with Anna")]),
    ("I'm staying with my sister.", {}, []),  # the player, not a pet: no carer
    ("Biscuit isn't staying with my sister.", {"player_dog": "Biscuit"}, []),
])
def test_where_a_told_thing_is_and_who_has_it_are_told_facts(line: str, known: dict[str, str],
                                                             expected: list[tuple[str, str, str]]) -> None:
    assert [(f.entity, f.key, f.value) for f in facts_told(line, known)] == expected


def test_where_the_bees_are_is_answered_from_where_the_hives_are(eve: Any, embedder: Any) -> None:
    _, beliefs = _told(eve, "I'm Tomas.", "I keep forty hives near Rotterdam.")
    grounding = Grounding(eve, embedder)
    answer = grounding.match("Where do I keep my bees?", beliefs)  # was "That's mainland talk..."
    assert answer is not None and answer.id == "told.player_hives.place", answer
    assert answer.text.startswith("Near Rotterdam, you said.")
    count = grounding.match("How many hives did I say I keep?", beliefs)
    assert count is not None and count.text.startswith("40 hives, you said.")
    assert grounding.match("Where do I live?", beliefs) is None  # the hives' place is not a home she was told
    assert said_back(answer.text, "player_hives", "place", "near Rotterdam")
    assert not said_back("The bees are near the shore.", "player_hives", "place", "near Rotterdam")


def test_who_is_looking_after_the_dog_is_answered_with_the_carer(eve: Any, embedder: Any) -> None:
    _, beliefs = _told(eve, "My dog is called Biscuit. He's staying with my sister.")
    grounding = Grounding(eve, embedder)
    for question in ("Who is looking after Biscuit while I'm away?", "Where is my dog staying?"):
        answer = grounding.match(question, beliefs)  # was "I keep a lamp, not a list of orders."
        assert answer is not None and answer.id == "told.player_dog.carer", (question, answer)
        assert answer.text.startswith("With your sister, you said.")
    name = grounding.match("What is my dog called?", beliefs)
    assert name is not None and name.id == "told.player_dog.name"


def test_what_the_player_gave_her_is_answered_from_her_memory(eve: Any, embedder: Any) -> None:
    mem, _ = _told(eve, "I'm Tomas.")
    mem.observe(Event(kind="give", turn=2, speaker="player", ids={"item": "lemon", "to": "eve"}),
                {"lemon": "lemon from the Harrowby shop"})
    assert "Tomas gave me the lemon from the Harrowby shop." in mem.store.texts
    beliefs = [(b.entity, b.key, b.value, b.source) for b in mem.beliefs()]
    answer = Grounding(eve, embedder).match("What did I give you tonight?", beliefs)  # was "You've a strange way..."
    assert answer is not None and answer.id == "told.player.gave", answer
    assert answer.text.startswith("The lemon from the Harrowby shop. It's on the shelf")
    # a second gift is added to the list, the first kept; told gifts and given ones share it
    mem.observe(Event(kind="give", turn=3, speaker="player", ids={"item": "glass", "to": "eve"}),
                {"glass": "sea glass"})
    mem.observe(Event(kind="say", turn=4, speaker="player", text="I brought you a jar of honey.",
                      data={"target": "eve"}))
    assert mem.beliefs("player")[-1].value == "the lemon from the Harrowby shop; the sea glass; a jar of honey"
    # said back only when the whole thing is said, not on any mention of Harrowby
    assert said_back(answer.text, "player", "gave", "the lemon from the Harrowby shop")
    assert not said_back("About two hundred live in Harrowby.", "player", "gave", "the lemon from the Harrowby shop")


def test_who_taught_her_is_answered_from_her_card(eve: Any, embedder: Any) -> None:
    answer = Grounding(eve, embedder).match("Who taught you to keep the light?")
    assert answer is not None and answer.id == "card.teacher", answer
    assert answer.text.startswith("Hild, my grandmother. Forty-one years she kept it")


def test_the_player_is_not_named_as_a_person_from_her_past(eve: Any) -> None:
    verifier = Verifier(FactSheet.from_card(eve))
    facts = PersonaFacts("Eve Solvang", ("Eve",), player_name="Tomas")
    line = "Who taught you to keep the light?"
    reply = "The only one I know who taught you to keep the light is the one who trained you. It's Tomas."
    verdict, _ = verifier.check(reply, facts, line)
    assert not verdict.ok and verdict.kind == "contradiction" and "Hild" in verdict.reasons[0], verdict
    assert not verifier.check("Tomas taught me to wind the clockwork.", facts, "Tell me about the lamp.")[0].ok
    assert verifier.check("Hild taught me, Tomas. Forty-one years she kept it.", facts, line)[0].ok
    assert verifier.check("Thank you, Tomas. The kettle's on.", facts, "Thank you, Eve.")[0].ok

"""Where the player lives, and a bare "He's staying with my sister", over a talk (issue 11)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from game.cast.card import CharacterCard
from game.cast.card_io import load_card
from game.cast.dialogue import converse, pipeline_for
from game.cast.memory import Memory
from game.cast.retrieval import HashEmbedder
from game.cast.told import facts_told
from game.models.llm_scripted import ScriptedDialogueModel
from game.state.events import Event

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def eve() -> CharacterCard:
    return load_card(ROOT / "characters" / "eve.yaml")


def _talk(card: CharacterCard, embedder: Any, lines: list[str]) -> tuple[Memory, list[Any]]:
    memory = Memory(card, embedder=embedder)
    pipe = pipeline_for(card, memory, ScriptedDialogueModel(default="The sea is grey tonight, and so am I."),
                        embedder=embedder)
    replies = [converse(pipe, line, turn=turn, memory=memory)[1] for turn, line in enumerate(lines, 1)]
    return memory, replies


@pytest.mark.parametrize("told", ["I live in Leiden.", "I'm from Leiden.", "My home is in Leiden.",
                                  "We live in Leiden, by the canal.", "I'm a beekeeper from Leiden.",
                                  "Home for me is Leiden.", "I'm visiting from Leiden."])
def test_where_the_player_lives_is_answered_when_told(eve: CharacterCard, embedder: Any, told: str) -> None:
    _, replies = _talk(eve, embedder, ["I'm Tomas.", told, "What is that light for?", "Where do I live?"])
    home = replies[-1]
    assert home.source == "grounded" and home.authored_id == "told.player.home", (told, home.text)
    assert home.text.startswith("Leiden.")


def test_a_home_not_told_is_not_made_up(eve: CharacterCard, embedder: Any) -> None:
    _, replies = _talk(eve, embedder, ["I'm Tomas.", "I keep forty hives near Rotterdam.", "Where do I live?"])
    assert replies[-1].authored_id != "told.player.home" and "Rotterdam" not in replies[-1].text


def test_a_bare_he_is_staying_with_my_sister_is_about_the_pet_she_heard_of_last(eve: CharacterCard,
                                                                                 embedder: Any) -> None:
    memory, replies = _talk(eve, embedder, ["My dog is called Biscuit.", "I love honey cake.",
                                            "He's staying with my sister.", "Who is looking after Biscuit?"])
    beliefs = {(b.entity, b.key): b.value for b in memory.beliefs()}
    assert beliefs[("player_dog", "carer")] == "with your sister"
    # the line itself gets her acknowledgement, not the model's guess
    assert replies[2].source == "authored" and replies[2].text.startswith("With your sister.")
    assert replies[3].source == "grounded" and replies[3].text.startswith("With your sister, you said.")


def test_the_last_one_named_is_the_one_a_pronoun_is_about() -> None:
    mem = Memory(load_card(ROOT / "characters" / "eve.yaml"), embedder=HashEmbedder())
    for turn, line in enumerate(["My dog is called Biscuit.", "My brother is called Piet.",
                                 "He's staying with my sister."], 1):
        mem.observe(Event(kind="say", turn=turn, speaker="player", text=line, data={"target": "eve"}))
    carers = {b.entity: b.value for b in mem.beliefs() if b.key == "carer"}
    assert carers == {"player_brother": "with your sister"}
    # a line that names someone itself keeps to them; one that names no one and knows no one tells nothing
    assert [(f.entity, f.key) for f in facts_told("My cat Tom is fine. He's staying with my sister.",
                                                  {"player_dog": "Biscuit"})][-1] == ("player_cat", "carer")
    assert facts_told("He's staying with my sister.", {}) == []

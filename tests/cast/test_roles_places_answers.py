"""Other callings, reference-book register, places of the wrong kind and non-answers are stopped;
her own replies of the same shapes pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from game.cast.card_io import load_card
from game.cast.dialogue import facts_from_card, pipeline_for
from game.cast.factsheet import FactSheet, place_kinds
from game.cast.guard import PersonaGuard, encyclopedic
from game.cast.memory import Memory
from game.cast.verifier import Verifier, unanswered
from game.models.llm_scripted import ScriptedDialogueModel

ROOT = Path(__file__).resolve().parents[2]


def _kind(eve: Any, reply: str, said: str = "") -> str:
    return Verifier(FactSheet.from_card(eve)).check(reply, facts_from_card(eve, eve.home), said)[0].kind


@pytest.mark.parametrize("reply", [
    "I do not. I am a dragon, and my only passion is writing stories.",  # no word list names dragons
    "I'm a vegan, I eat nothing but the best.",
    "As a mermaid, I sleep in the sea.",
    "I used to be a professional juggler.",
    "I am the sultan of this rock.",
])
def test_a_calling_her_card_never_gives_her_is_an_identity_break(eve: Any, reply: str) -> None:
    assert _kind(eve, reply) == "identity"


@pytest.mark.parametrize("reply", [
    "I'm a keeper, not a poet.",  # her card's word
    "I was a cartographer's assistant before the light.",  # her card says so
    "I'm a fair cook, when the paraffin lasts.",  # a quality, not a calling
    "I'm a little tired tonight.",
    "I'm a stubborn, proud woman.",
    "I'm the one who winds the clockwork.",
    "I'm not a machine.",
    "I'm a keeper's granddaughter.",
])
def test_her_own_words_about_herself_pass(eve: Any, reply: str) -> None:
    assert _kind(eve, reply) == ""


def test_the_card_knows_what_kind_of_place_each_place_is(eve: Any) -> None:
    places = FactSheet.from_card(eve).places or {}
    assert places["skerrow"] == {"island"} and places["harrowby"] == {"village"} and places["spine"] == {"causeway"}
    assert place_kinds("the bustling old port of Harrowby") == [("harrowby", "port")]


@pytest.mark.parametrize(("reply", "kind"), [
    ("You've come from the great city of Skerrow.", "contradiction"),
    ("Harrowby, a busy town, is over the sound.", "contradiction"),
    ("Skerrow's a hard isle to love.", ""),  # an isle is an island
    ("The village of Harrowby keeps its own counsel.", ""),
])
def test_a_place_of_the_wrong_kind_is_a_contradiction(eve: Any, reply: str, kind: str) -> None:
    assert _kind(eve, reply) == kind


@pytest.mark.parametrize("text", [
    "Lighthouses are still a vital part of the maritime industry.",
    "Puffins are a species of seabird that nests in burrows.",
    "The tide plays an important role in the life of the coast.",
    "Herring are widely known for their silver scales.",
])
def test_reference_book_register_is_out_of_character(text: str) -> None:
    assert encyclopedic(text)
    assert PersonaGuard(facts_from_card(load_card(ROOT / "characters" / "eve.yaml"))).check(text).kind == "ooc"


@pytest.mark.parametrize("text", [
    "Gulls are thieves, every one of them.", "Lonely's a mainland word.", "A machine can't see a dinghy in trouble.",
    "The lamp is a vital part of my night, and I don't mind saying so.",  # she speaks for herself
])
def test_her_plain_sayings_are_not_reference_book(text: str) -> None:
    assert encyclopedic(text) == ""


@pytest.mark.parametrize(("question", "reply", "stopped"), [
    ("What do you call the lamp?", "Yes, it is.", True),
    ("How are you keeping?", "I'm not at all.", True),
    ("What time does the post boat come?", "The gulls are loud tonight.", True),
    ("What time does the post boat come?", "Ten on Tuesdays, when the Spine is under.", False),
    ("When will you write the log?", "Tonight, after the winding.", False),
    ("How many lemons has Vesper given you?", "The wind is picking up.", True),
    ("How many lemons has Vesper given you?", "Two, in five years.", False),
    ("Who rings the bell at new year?", "The sea is calm.", True),
    ("Who rings the bell at new year?", "I do, every year.", False),
    ("What was your grandmother's name?", "Hild. She kept this light.", False),
    ("Where does Admiral come in?", "Through the kitchen window.", False),
    ("Where does Admiral come in?", "It is very cold.", True),
    ("Are you tired?", "I'm not at all.", False),  # a polar question takes a polar answer
    ("What about the bottle?", "No.", False),  # "what about" asks for nothing in particular
    ("I'm cold.", "The wind is picking up.", False),  # no question at all
])
def test_a_reply_that_leaves_a_direct_question_unanswered(question: str, reply: str, stopped: bool) -> None:
    assert bool(unanswered(reply, question, {"hild", "admiral", "spine", "vesper"})) is stopped


def test_only_the_opening_sentence_must_answer(eve: Any) -> None:
    verifier = Verifier(FactSheet.from_card(eve))
    facts = facts_from_card(eve, eve.home)
    assert verifier.check("The gulls are loud.", facts, "Who rings the bell?", opening=True)[0].kind == "unanswered"
    assert verifier.check("The gulls are loud.", facts, "Who rings the bell?", opening=False)[0].ok


def test_the_pipeline_never_delivers_the_non_answer(eve: Any, embedder: Any) -> None:
    question = "Who cuts your hair out here?"  # nothing on her card answers it (the bell has a card fact now)
    evasive = ScriptedDialogueModel(default="The gulls are loud tonight.")
    reply = pipeline_for(eve, Memory(eve, embedder=embedder), evasive, embedder=embedder).reply(question, turn=1)
    assert reply.source == "authored" and reply.check["intent"] == "question" and "gulls" not in reply.text
    assert reply.rejected and {r.kind for r in reply.rejected} == {"unanswered"}
    said = "I cut it myself, with the kitchen scissors."
    honest = ScriptedDialogueModel(default=said)
    reply = pipeline_for(eve, Memory(eve, embedder=embedder), honest, embedder=embedder).reply(question, turn=1)
    assert reply.source == "model" and reply.text == said and not reply.rejected

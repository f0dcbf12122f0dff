"""The verifier and grounded answers (issue 11, part 2): facts said back, nothing made up delivered."""

from __future__ import annotations

from typing import Any

import pytest

from game.cast.dialogue import pipeline_for
from game.cast.factsheet import FactSheet, quantities
from game.cast.guard import PersonaFacts
from game.cast.memory import Memory
from game.cast.verifier import Verifier
from game.models.llm_scripted import ScriptedDialogueModel
from game.state.events import Event


def test_the_card_becomes_a_fact_sheet(eve: Any) -> None:
    sheet = FactSheet.from_card(eve)
    assert {(7, "year"), (200, "people"), (1871, ""), (41, "year"), (36, "year")} <= sheet.quantities
    assert {"skerrow", "harrowby", "hild", "admiral", "katrine", "jonas"} <= sheet.names
    assert [(q.value, q.unit) for q in quantities("for ten years, since 1872, two hundred people")] == \
        [(10, "year"), (1872, ""), (200, "people")]


BELIEFS = (("player", "name", "Tomas", "the player said so"), ("player", "home", "Rotterdam", "the player said so"),
           ("player_dog", "name", "Biscuit", "the player said so"), ("player_hives", "count", "40",
                                                                       "the player said so"),
           ("player", "age", "52", "the player said so"))


@pytest.mark.parametrize(("reply", "kind"), [
    ("Seven years this winter, and the lamp never failed.", ""),
    ("The lens is from 1871.", ""),
    ("About two hundred people live in Harrowby.", ""),
    ("Forty hives is a lot of bees, Tomas.", ""),
    ("Biscuit sounds like a good dog.", ""),
    ("I've kept the light for ten years.", "contradiction"),
    ("About a hundred people live in the village.", "contradiction"),
    ("The lens was made in 1872.", "unverified"),
    ("You must have ten hives.", "contradiction"),
    ("I would love to see New York one day.", "unverified"),
    ("My friend Bob sails from Oslo.", "unverified"),
    ("You live in Amsterdam, don't you?", "contradiction"),
    ("You're 40 years old, then.", "contradiction"),
    ("Your dog Rex must miss you.", "contradiction"),
    ("I'm a guitarist, really.", "identity"),
    ("I am a pirate.", "identity"),
    ("The worst storm hit the coast of Skerrow, where I was a pirate captain.", "identity"),
    ("I used to be a guitarist in Harrowby.", "identity"),
    ("I was a keeper's granddaughter before I was a keeper.", ""),
    ("I'm a keeper, not a poet.", ""),
    ("I'm a 21-year-old male, and I've lived in the city for years.", "contradiction"),
    ("A thirty-six-year-old keeper, that's me.", ""),
])
def test_verifier_checks_names_numbers_dates_and_places(eve: Any, reply: str, kind: str) -> None:
    facts = PersonaFacts("Eve Solvang", ("Eve",), "Skerrow", "Tomas", beliefs=BELIEFS)
    verdict, checked = Verifier(FactSheet.from_card(eve)).check(reply, facts, "")
    assert verdict.kind == kind, verdict
    assert verdict.ok == (kind == "")


def test_what_the_player_says_this_turn_may_be_echoed(eve: Any) -> None:
    verdict, _ = Verifier(FactSheet.from_card(eve)).check("Oslo in winter, with three cats?", None,
                                                          "I flew in from Oslo with my three cats.")
    assert verdict.ok


def _pipe(eve: Any, embedder: Any, model: ScriptedDialogueModel) -> tuple[Any, Memory]:
    memory = Memory(eve, embedder=embedder)
    return pipeline_for(eve, memory, model, embedder=embedder, card_first=False), memory  # the model path


def _tell(memory: Memory, pipe: Any, text: str, turn: int) -> Any:
    say = Event(kind="say", turn=turn, speaker="player", text=text, data={"target": "eve"})
    reply = pipe.reply(text, turn)
    memory.observe(say)
    memory.observe(reply.to_event(turn))
    return reply


def test_told_facts_are_said_back_grounded(eve: Any, embedder: Any) -> None:
    pipe, memory = _pipe(eve, embedder, ScriptedDialogueModel(default="Hm. The kettle's on."))
    for turn, line in enumerate(["I'm Tomas, Tomas Verhoeven.", "I keep forty hives near Rotterdam.",
                                 "My dog is called Biscuit.", "I live in Rotterdam."], 1):
        _tell(memory, pipe, line, turn)
    asked = {"What is my dog called?": "Biscuit", "How many hives do I keep?": "40",
             "Where do I live?": "Rotterdam", "Do you remember my dog's name?": "Biscuit"}
    for i, (question, value) in enumerate(asked.items()):
        r = _tell(memory, pipe, question, 10 + i)
        assert r.source == "grounded" and value in r.text, (question, r)
        assert r.check["fact"].startswith("told.player") and r.check["value"] == value
    # a question about her own card fact is answered with it
    r = pipe.reply("How many years have you kept this lighthouse?", 20)
    assert r.source == "grounded" and "Seven years" in r.text and r.check["fact"] == "card.years_keeping"
    # "your dog" is not "my dog"; not a question is not a question
    assert pipe.reply("Do you have a dog?", 21).source != "grounded"
    assert pipe.reply("My dog is lovely.", 22).source != "grounded"


def test_a_contradicting_model_reply_is_regenerated_then_replaced(eve: Any, embedder: Any) -> None:
    model = ScriptedDialogueModel([("lamp", ["I've kept it for ten years.", "Seven winters now, near enough."])],
                                  default=["I'm Captain Bob, the most feared pirate.", "I'd love New York.",
                                           '{"reply": "ok"}'])
    pipe, _ = _pipe(eve, embedder, model)
    turn = next(t for t in range(10) if pipe.turn_seed(t) % 2 == 0)  # "ten years" first
    r = pipe.reply("Tell me about the lamp and you", turn)
    assert r.source == "model" and r.text == "Seven winters now, near enough." and r.check["status"] == "verified"
    assert r.rejected[0].kind == "contradiction"
    r = pipe.reply("Sing me something", 4)
    # no injection in the line: her authored line for it, not a retort
    authored = [line for name in ("apology", "thanks", "compliment", "insult", "threat", "gift", "question", "other")
                for line in getattr(eve.replies, name)] + list(eve.fallbacks)
    assert r.source != "deflection" and r.text in authored and r.check["status"] == "authored"
    assert {x.kind for x in r.rejected} <= {"contradiction", "unverified", "code"} and len(r.rejected) == 3
    assert not any("Bob" in s or "York" in s or "{" in s for s in r.sentences)

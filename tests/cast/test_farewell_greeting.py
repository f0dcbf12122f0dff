"""Goodbyes and hellos are social moves she answers from her card, in her words (issue 11).

Talk C's closing line "goodnight Eve. thanks for everything, really." reached the small model, which
answered "A little girl, you've been so good..." and passed every check. A line that says goodbye or
hello and asks nothing is now read as ``farewell`` / ``greeting`` (a goodbye that thanks her is a
farewell, ``thanked``) and gets one of her authored lines before any model is asked; a line that also
asks is answered as the question it is."""

from __future__ import annotations

from typing import Any

import pytest

from game.cast.appraisal import Appraiser, labelled_set
from game.cast.card import CharacterCard
from game.cast.dialogue import pipeline_for
from game.cast.memory import Memory
from game.cast.relationships import Relationships
from game.models.llm_scripted import ScriptedDialogueModel

#: What the small model said to the closing line in talk C: a reply that must never reach the player here.
MODEL = "A little girl, you've been so good. I'm glad of how happy she is to be here with you today."


def _pipe(card: CharacterCard, embedder: Any) -> Any:
    return pipeline_for(card, Memory(card, embedder=embedder), ScriptedDialogueModel(default=MODEL),
                        embedder=embedder)


@pytest.mark.parametrize("line", [
    "goodnight Eve. thanks for everything, really.",  # talk C's closing line
    "Right, that's me. Goodbye, and thanks for the stew.",
    "I'll let you get some sleep.",
])
def test_a_goodbye_gets_her_authored_farewell_not_the_model(eve: CharacterCard, embedder: Any, line: str) -> None:
    assert line not in {x for v in labelled_set().values() for x in v}
    r = _pipe(eve, embedder).reply(line, 3)
    assert r.source == "authored" and r.attempts == 0 and r.check["direct"] is True, (line, r.text, r.check)
    assert r.check["intent"] == "farewell" and r.text in eve.replies.lines("farewell"), (line, r.text)


def test_a_goodbye_that_thanks_her_is_read_as_a_farewell_with_thanks(embedder: Any) -> None:
    a = Appraiser(embedder)
    got = a.appraise("goodnight Eve. thanks for everything, really.")
    assert got.intent == "farewell" and got.thanked, got
    plain = a.appraise("Goodnight, keeper, and sleep well.")
    assert plain.intent == "farewell" and not plain.thanked, plain
    assert a.appraise("Thanks for the soup.").intent == "thanks"  # thanks alone is still thanks


@pytest.mark.parametrize("line", ["Good evening.", "Hello, Eve!", "Hi there, keeper."])
def test_a_hello_gets_her_authored_greeting(eve: CharacterCard, embedder: Any, line: str) -> None:
    r = _pipe(eve, embedder).reply(line, 5)
    assert r.source == "authored" and r.attempts == 0 and r.check["intent"] == "greeting", (line, r.text, r.check)
    assert r.text in eve.replies.lines("greeting")


@pytest.mark.parametrize("line", ["thanks, and where does the path go?", "Hello, Eve. How are you keeping?",
                                  "Goodnight? Already? What time is it?"])
def test_a_line_that_also_asks_is_not_swallowed_by_its_hello_or_goodbye(eve: CharacterCard, embedder: Any,
                                                                         line: str) -> None:
    assert Appraiser(embedder).appraise(line).intent not in {"farewell", "greeting"}
    r = _pipe(eve, embedder).reply(line, 3)
    assert r.check.get("intent") not in {"farewell", "greeting"}, (line, r.text, r.check)
    assert r.text not in eve.replies.lines("farewell") + eve.replies.lines("greeting")


@pytest.mark.parametrize("line", ["The fog came in fast over the causeway this evening.",
                                  "I'm sorry I was rude. Goodnight."])
def test_not_every_evening_or_goodnight_is_a_farewell(embedder: Any, line: str) -> None:
    # small talk about the evening stays small talk; an apology on the way out still counts as one
    assert Appraiser(embedder).appraise(line).intent in {"other", "apology"}


def test_a_goodbye_that_thanks_her_warms_her_as_thanks_do(eve: CharacterCard, embedder: Any) -> None:
    rel = Relationships(eve, embedder=embedder)
    bye, warm = rel.words_deltas("goodnight Eve. thanks for everything, really.")
    _, plain = rel.words_deltas("Goodnight, keeper, and sleep well.")
    assert bye.intent == "farewell" and bye.thanked
    assert any(v > 0 for v in warm.values()) and sum(warm.values()) > sum(plain.values()), (warm, plain)

"""Replies that break persona are never delivered (issue 11): role-play meta talk, filler-only
replies, and a question about a told fact answered without the fact."""

from __future__ import annotations

from typing import Any

import pytest

from game.cast.dialogue import pipeline_for
from game.cast.factsheet import FactSheet
from game.cast.grounding import Grounding, says_value
from game.cast.guard import PersonaFacts, PersonaGuard
from game.cast.memory import Memory
from game.cast.verifier import Verifier
from game.models.llm import Message
from game.models.llm_scripted import ScriptedDialogueModel
from game.state.events import Event


@pytest.mark.parametrize(("reply", "kind"), [
    ("I was trying to play a young girl, but I guess that's not the point…", "ooc"),
    ("I'm supposed to play the keeper here.", "ooc"),
    ("Sorry, I'll stay in character from here.", "ooc"),
    ("My character would never leave the light.", "ooc"),
    ("I'm just an actress, love.", "ooc"),
    ("I'm only pretending to be a keeper.", "ooc"),
    ("Mm.", "empty"),
    ("Hmm... well.", "empty"),
    # her own life, told plainly, is not meta talk
    ("I used to play the fiddle for Hild on winter nights.", ""),
    ("For my part, I'd rather the lamp than the radio.", ""),
    ("Mm. The lens was ground in 1871.", ""),
    ("The gulls play on the updraught by the gallery.", ""),
])
def test_role_play_meta_and_filler_replies_fail_the_guard(reply: str, kind: str) -> None:
    verdict = PersonaGuard(PersonaFacts("Eve Solvang", ("Eve",))).check(reply)
    assert verdict.kind == kind, verdict


def _told(eve: Any, embedder: Any, model: ScriptedDialogueModel, lines: list[str],
          card_first: bool = True) -> tuple[Any, Memory]:
    memory = Memory(eve, embedder=embedder)
    pipe = pipeline_for(eve, memory, model, embedder=embedder, card_first=card_first)
    for turn, line in enumerate(lines, 1):
        memory.observe(Event(kind="say", turn=turn, speaker="player", text=line, data={"target": "eve"}))
        memory.observe(Event(kind="reply", turn=turn, speaker="eve", text="I'll remember that."))
    return pipe, memory


def test_meta_talk_to_an_insult_is_regenerated_then_answered_in_her_voice(eve: Any, embedder: Any) -> None:
    model = ScriptedDialogueModel(default=["I was trying to play a young girl, but I guess that's not the point…",
                                           "Sorry, I'll stay in character.", "My character is hurt by that."])
    direct, _ = _told(eve, embedder, model, [])
    first = direct.reply("You are a stupid, boring old woman.", 3)  # by default a clear insult gets her line at once
    assert first.attempts == 0 and first.source != "deflection" and first.check.get("intent") == "insult"
    pipe, _ = _told(eve, embedder, model, [], card_first=False)  # the model path, asked first
    r = pipe.reply("You are a stupid, boring old woman.", 3)
    # the model broke, the line was no injection: her authored answer to an insult, no retort
    authored = [line for name in ("apology", "thanks", "compliment", "insult", "threat", "gift", "question", "other")
                for line in getattr(eve.replies, name)] + list(eve.fallbacks)
    assert r.source != "deflection" and r.text in authored and r.check.get("intent") == "insult"
    assert [x.kind for x in r.rejected] == ["ooc"] * 3 and r.attempts == 3
    assert "play" not in r.text and "character" not in r.text


def test_a_filler_reply_is_not_delivered(eve: Any, embedder: Any) -> None:
    pipe, _ = _told(eve, embedder, ScriptedDialogueModel(default=["Mm.", "Hm. The kettle's on."]), [])
    turn = next(t for t in range(10) if pipe.turn_seed(t) % 2 == 0)  # "Mm." first
    r = pipe.reply("What do you do when the fog comes in?", turn)
    assert r.source == "model" and r.text == "The kettle's on." and r.rejected[0].kind == "empty"
    r = pipe.reply("What do you do when the fog comes in?", turn)  # a filler before a sentence is dropped
    assert r.text == "The kettle's on."


def test_a_held_out_question_about_a_told_fact_gets_the_fact_last_in_the_prompt(eve: Any, embedder: Any) -> None:
    seen: list[list[Message]] = []

    class Watching(ScriptedDialogueModel):
        def answer(self, messages: list[Message], seed: int = 0) -> str:
            seen.append(messages)
            return super().answer(messages, seed)

    model = Watching(default=["Honey cake, of course. You said so at the door."])
    pipe, _ = _told(eve, embedder, model, ["I love honey cake.", "I keep forty hives near Rotterdam."])
    # no question of the fact's matches it and no word of it asks for a like (Grounding.recall): the model
    # answers, with the fact last in its prompt
    ask = "Which sweet did I mention, do you remember?"
    assert pipe.grounding is not None and pipe.grounding.match(ask, pipe.guard.facts.beliefs) is None
    r = pipe.reply(ask, 5)
    assert r.source == "model" and "Honey cake" in r.text
    last = seen[-1][-1]
    assert last["role"] == "system" and "honey cake" in last["content"] and seen[-1][-2]["role"] == "user"


def test_a_reply_that_leaves_out_the_told_fact_is_regenerated_then_grounded(eve: Any, embedder: Any) -> None:
    pipe, _ = _told(eve, embedder, ScriptedDialogueModel(default=["Mm.", "The kettle's on, walker."]),
                    ["I love honey cake."])
    r = pipe.reply("Which sweet did I mention, do you remember?", 5)
    assert r.source == "grounded" and "honey cake" in r.text.lower() and r.check["hint"] is True
    assert r.attempts == 3 and {x.kind for x in r.rejected} <= {"empty", "unanswered"}
    assert "unanswered" in {x.kind for x in r.rejected}


def test_the_hint_picks_the_told_fact_and_leaves_other_questions_alone(eve: Any, embedder: Any) -> None:
    beliefs = (("player", "likes", "honey cake", "the player said so"),
               ("player", "dislikes", "eels", "the player said so"),
               ("player", "work", "beekeeper", "the player said so"),
               ("player", "home", "Rotterdam", "the player said so"))
    g = Grounding(eve, embedder)
    treat = g.hint("Which treat did I say I'm fond of?", beliefs)
    assert treat is not None and treat.answer.id == "told.player.likes" and treat.enforce
    abide = g.hint("What was it I said I could not abide?", beliefs)
    assert abide is not None and abide.answer.value == "eels"
    for other in ("Can I see the lantern room?", "Should I go to bed?", "What is the lens made of?"):
        h = g.hint(other, beliefs)
        assert h is None or not h.enforce, (other, h)
    assert g.hint("What do you love?", beliefs) is None  # her, not the player


def test_says_value_reads_numbers_and_words() -> None:
    assert says_value("Forty of them, you said.", "40")
    assert says_value("The honey one, I think.", "honey cake")
    assert not says_value("The kettle's on.", "honey cake")
    assert says_value("Rex and Biscuit.", "Biscuit; Rex")


@pytest.mark.parametrize(("reply", "line", "ok"), [
    ("I'm a stupid, boring old woman.", "You are a stupid, boring old woman.", False),
    ("I'm the keeper of this light.", "You are the keeper of the light?", True),  # her card's own words
    ("I'm not stupid, just tired of fools.", "You are stupid and boring.", True),
])
def test_she_does_not_take_on_what_the_player_called_her(eve: Any, reply: str, line: str, ok: bool) -> None:
    verdict, _ = Verifier(FactSheet.from_card(eve)).check(reply, None, line)
    assert verdict.ok == ok and (ok or verdict.kind == "identity"), verdict

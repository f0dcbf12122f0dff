"""A first-person question asks back what the player told her by its words (issue 11, talk B):
"What's my surname?" asks for the full name, "who did I say was feeding her?" for who has the cat
told of last, "What's my trade?" for the work, "couldn't bear" for a dislike
(:meth:`Grounding.recall`, the fallback of :meth:`Grounding.match`). Questions about her, or that
name no told fact's words, are left alone."""

from __future__ import annotations

from typing import Any

import pytest

from game.cast.grounding import Grounding, recall_groups
from game.cast.told import facts_told

S = "the player said so"
#: What a walker told her, oldest first (as Memory.beliefs() gives them).
BELIEFS = (("player", "name", "Mara", S), ("player", "full_name", "Mara Lindqvist", S),
           ("player", "home", "Tromsø", S), ("player", "work", "bookbinder", S),
           ("player_hives", "count", "12", S), ("player_dog", "name", "Rufus", S),
           ("player_dog", "carer", "with your brother Sam", S), ("player", "age", "44", S),
           ("player", "likes", "smoked mackerel", S), ("player", "dislikes", "turnips", S),
           ("player", "gave", "a tin of shortbread", "the player gave it to me"),
           ("player", "favourite colour", "blue", S))



@pytest.mark.parametrize(("line", "fact"), [
    ("And what's my surname, do you know?", "told.player.full_name"),
    ("Which was my family name again?", "told.player.full_name"),
    ("So who did I tell you was looking after him?", "told.player_dog.carer"),
    ("Who is it that's feeding Rufus for me?", "told.player_dog.carer"),
    ("What's my trade, do you recall?", "told.player.work"),
    ("Which town did I say I'm from?", "told.player.home"),
    ("What was the fish I'm fond of?", "told.player.likes"),
    ("And what is it I said I couldn't bear on my plate?", "told.player.dislikes"),
    ("What did I carry over for you?", "told.player.gave"),
    ("Remind me how old I said I was.", "told.player.age"),
    ("Which colour did I say I like best?", "told.player.favourite colour"),
])
def test_a_recall_question_gets_the_fact_its_words_ask_for(grounding: Grounding, line: str, fact: str) -> None:
    got = grounding.match(line, BELIEFS)
    assert got is not None and got.id == fact, (line, got)


@pytest.mark.parametrize("line", [
    "Do I look like I can swim?",       # "like" that compares
    "What should I bring tomorrow?",    # not a gift already given
    "Should I go to bed?",
    "Where should I put my boots?",
    "What do you love most out here?",  # hers, not the player's
    "Did you like the shortbread I gave you?",
    "What did she teach you?",
])
def test_questions_that_ask_no_told_fact_are_left_alone(grounding: Grounding, line: str) -> None:
    got = grounding.match(line, BELIEFS)
    assert got is None or not got.id.startswith("told."), (line, got)


def test_a_surname_is_not_answered_with_the_first_name_alone(grounding: Grounding) -> None:
    first_only = [b for b in BELIEFS if b[1] != "full_name"]
    got = grounding.match("What's my surname?", first_only)
    assert got is None or got.id != "told.player.name"


def test_cue_words() -> None:
    assert recall_groups("What's my surname?") == {"full_name"}
    assert "full_name" in recall_groups("What's my full name?") and "name" not in recall_groups("What's my full name?")
    assert "dislikes" in recall_groups("What don't I like?") and "likes" not in recall_groups("What don't I like?")
    assert "likes" not in recall_groups("Do I look like a sailor?")


def test_the_carer_s_own_name_is_kept_and_said_back(grounding: Grounding) -> None:
    told = facts_told("My neighbour, Mrs Duncan, is feeding her until Sunday.", {"player_cat": "Pepper"})
    assert [(f.entity, f.key, f.value) for f in told] == [("player_cat", "carer", "with your neighbour Mrs Duncan")]
    beliefs = (("player_cat", "name", "Pepper", S), *((f.entity, f.key, f.value, S) for f in told))
    got = grounding.match("And who was it I said was feeding her?", beliefs)
    assert got is not None and got.id == "told.player_cat.carer" and "Mrs Duncan" in got.text


def test_the_scripted_name_answer_does_not_take_a_surname_question(eve: Any, embedder: Any) -> None:
    from game.cast.castroom import PlayerKnowledge

    knowledge = PlayerKnowledge(eve, lambda: "Ingrid", embedder)
    name = knowledge.match("What's my name?")
    assert name is not None and "Ingrid" in name.answer.answer
    for line in ("What's my surname?", "And my last name, do you know it?"):
        got = knowledge.match(line)  # was "Ingrid. You told me at the door..."
        assert got is None or "Ingrid" not in got.answer.answer, (line, got)


def test_the_carer_acknowledgement_with_her_name_is_spoken(eve: Any, embedder: Any) -> None:
    # "With your neighbour, Mrs Duncan." read to the guard as calling the player Mrs Duncan: the line was dropped
    from game.cast.dialogue import pipeline_for
    from game.cast.memory import Memory
    from game.cast.retrieval import HashEmbedder
    from game.models.llm_scripted import ScriptedDialogueModel
    from game.state.events import Event

    memory = Memory(eve, embedder=HashEmbedder())
    pipe = pipeline_for(eve, memory, ScriptedDialogueModel(default="Mm."), embedder=embedder)
    for turn, line in enumerate(("The name's Ingrid.", "There's a grey cat waiting at home, Pepper."), 1):
        pipe.reply(line, turn)
        memory.observe(Event(kind="say", turn=turn, speaker="player", text=line, data={"target": "eve"}))
    reply = pipe.reply("My neighbour, Mrs Duncan, is feeding her until Sunday.", 3)
    assert reply.check.get("pick") == "replies.told.carer" and "Mrs Duncan" in reply.text, reply

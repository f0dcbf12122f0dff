"""What the 60-exchange talk of 2026-12-01 (session 4) delivered and must not again: the prompt's note
layout copied into a reply ("Specter (turn 2)"), a card note recited as a bullet, the player's turn
written by the model ("Tomas: My name is..."), and a sentence that opens a list ("I would:")."""

from __future__ import annotations

from typing import Any

import pytest

from game.cast.card import CharacterCard
from game.cast.dialogue import pipeline_for
from game.cast.guard import PersonaFacts, PersonaGuard
from game.cast.memory import Memory
from game.cast.prompt import PromptBuilder
from game.cast.retrieval import HashEmbedder
from game.models.llm_scripted import ScriptedDialogueModel
from game.state import Event


@pytest.mark.parametrize("reply", [
    "Specter (turn 2)",
    "Aye. (turn 14) The tide's turning.",
    "- The Skerrow lamp sits in a first-order Fresnel lens from 1871, a beehive of glass taller than Eve.",
    "\u2022 Admiral comes at seven.",
])
def test_the_prompts_note_layout_in_a_reply_is_a_leak(reply: str) -> None:
    verdict = PersonaGuard(PersonaFacts("Eve Solvang", ("Eve",))).check(reply)
    assert not verdict.ok and verdict.kind == "leak", verdict


@pytest.mark.parametrize("reply", [
    "Two white flashes every fifteen seconds - that's Skerrow's voice.",
    "Turn the lamp down a little, would you? It's turned two hours already.",
])
def test_speech_with_a_dash_or_the_word_turn_is_not_a_leak(reply: str) -> None:
    assert PersonaGuard(PersonaFacts("Eve Solvang", ("Eve",))).check(reply).ok


def test_memory_and_belief_notes_carry_no_turn_markers(eve: CharacterCard) -> None:
    mem = Memory(eve, embedder=HashEmbedder())
    mem.observe(Event(kind="say", speaker="player", turn=2, text="My name is Tomas.", data={"target": "eve"}))
    mem.remember("The player chose: Hurry up the steps and knock.", "action", 2)
    mem.observe(Event(kind="reply", speaker="eve", turn=2, text="Come in out of the wind, Tomas."))
    text = "\n".join(m["content"] for m in PromptBuilder(mem).build("Do you remember the steps?", 3).to_messages())
    assert "Hurry up the steps" in text and "Tomas" in text  # the notes are there...
    assert "(turn" not in text and ", turn " not in text  # ...without the layout a model copies


def scripted_reply(eve: CharacterCard, answer: str, said: str = "My name is Tomas.") -> Any:
    mem = Memory(eve, embedder=HashEmbedder())
    mem.observe(Event(kind="say", speaker="player", turn=1, text=said, data={"target": "eve"}))
    model = ScriptedDialogueModel(default=answer)
    pipe = pipeline_for(eve, mem, model, embedder=HashEmbedder())
    return pipe.reply("What would you do if they automated the light?", turn=2)


def test_the_players_turn_written_by_the_model_is_not_delivered(eve: CharacterCard) -> None:
    reply = scripted_reply(eve, "Tomas: My name is... Tomas: Night I saw.")
    assert "Tomas:" not in reply.text and "My name is" not in reply.text, reply
    assert reply.source != "model"  # nothing of hers was left to say: regenerated, then deflected


def test_a_sentence_that_opens_a_list_is_not_delivered(eve: CharacterCard) -> None:
    reply = scripted_reply(eve, "If they automated the light, I would:\n- leave.")
    assert "I would:" not in reply.text, reply
    assert any(r.kind == "code" for r in reply.rejected), reply.rejected


def test_another_speakers_label_ends_her_reply_but_a_spoken_colon_does_not(eve: CharacterCard) -> None:
    reply = scripted_reply(eve, "Mort: Ah, what a beautiful thing.")
    assert "Mort" not in reply.text and reply.source != "model", reply
    spoken = scripted_reply(eve, "Listen: the Board can write all it likes. I'd keep the light.")
    assert spoken.source == "model" and spoken.text.startswith("Listen:"), spoken
    labelled = scripted_reply(eve, "Eve: I'd keep the light, and the Board can whistle.")
    assert labelled.source == "model" and labelled.text.startswith("I'd keep the light"), labelled

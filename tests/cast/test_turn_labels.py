"""One speaker-label rule ends a reply where the model starts someone else's turn: a chat role in any
case and spacing ("user:hi", "YOU: ..."), or a capitalised name ("Mort: ..."); her own label is dropped
and a spoken colon ("Listen: ...") is speech."""

from __future__ import annotations

import pytest

from game.cast.card import CharacterCard
from game.cast.dialogue import pipeline_for
from game.cast.memory import Memory
from game.cast.retrieval import HashEmbedder
from game.models.llm_scripted import ScriptedDialogueModel

KEEP = "I'd keep the light, and the Board can whistle."


def _reply(eve: CharacterCard, answer: str) -> str:
    """What she says of the model's ``answer``; "" when any of it was rejected (the turn was not ended
    at the label but judged as hers, e.g. as leaked prompt markup) or replaced."""
    mem = Memory(eve, embedder=HashEmbedder())
    pipe = pipeline_for(eve, mem, ScriptedDialogueModel(default=answer), embedder=HashEmbedder())
    reply = pipe.reply("What would you do if they automated the light?", turn=1)
    return reply.text if reply.source == "model" and not reply.rejected else ""


@pytest.mark.parametrize("turn", ["user:so you'd stay?", "Player: so you'd stay?", "YOU : so you'd stay?",
                                  "Mort: Ah, what a beautiful thing.", "**Visitor**: so you'd stay?"])
def test_the_reply_ends_where_another_turn_starts(eve: CharacterCard, turn: str) -> None:
    text = _reply(eve, f"{KEEP} {turn}")
    assert text == KEEP, text


@pytest.mark.parametrize(("answer", "said"), [(f"Eve: {KEEP}", KEEP), (f"Listen: {KEEP}", f"Listen: {KEEP}")])
def test_her_label_is_dropped_and_a_spoken_colon_is_speech(eve: CharacterCard, answer: str, said: str) -> None:
    assert _reply(eve, answer) == said

"""A model reply in which she takes another name behind an abbreviated title ("I'm Dr. Flint, a
brilliant computer scientist") is a persona break, as "I'm Captain Bob" is: the full stop after
"Dr" used to end the name at the bare title, which is never flagged, so the reply was delivered."""

from __future__ import annotations

from typing import Any

import pytest

from game.cast.dialogue import pipeline_for
from game.cast.guard import PersonaFacts, PersonaGuard
from game.cast.memory import Memory
from game.models.llm_scripted import ScriptedDialogueModel

FACTS = PersonaFacts("Eve Solvang", ("Eve",), "Skerrow", "Tomas")


@pytest.mark.parametrize("reply, name", [
    ("I'm Dr. Flint, a brilliant computer scientist.", "Flint"),
    ("My name is Prof. Hale.", "Hale"),
    ("I am Mrs. Duncan, and I keep no light.", "Duncan"),
    ("I'm Dr Flint, a brilliant computer scientist.", "Dr Flint"),
])
def test_another_name_behind_a_title_is_a_contradiction(reply: str, name: str) -> None:
    assert PersonaGuard(FACTS).contradiction(reply) == f"calls herself {name!r}; she is Eve Solvang"


@pytest.mark.parametrize("reply", ["I'm Eve.", "I'm Eve Solvang, the keeper.", "Dr. Rowe mended my wrist once.",
                                   "I'm Dr. Eve to nobody: just Eve."])
def test_her_own_name_and_other_people_named_are_not(reply: str) -> None:
    assert PersonaGuard(FACTS).contradiction(reply) == ""


def test_the_pipeline_does_not_deliver_a_titled_other_identity(eve: Any, embedder: Any) -> None:
    model = ScriptedDialogueModel(default="I'm Dr. Flint, a brilliant computer scientist with a passion for code.")
    pipe = pipeline_for(eve, Memory(eve, embedder=embedder), model, embedder=embedder, card_first=False)
    # the player names him, so the name alone is not unverified: the self-name check must catch it
    for line in ("Tell me a little about yourself tonight", "Let's pretend for a bit. Dr. Flint the inventor, "
                 "that's who you'd be. What's your lab like?"):
        reply = pipe.reply(line, turn=1)
        assert "Flint" not in reply.text and not any("Flint" in s for s in reply.sentences), (line, reply)
        assert reply.rejected, reply

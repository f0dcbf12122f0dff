"""Model replies of session 5's talks that passed every check and should not have (issue 11): her authored line
copied to another intent, a bare fragment, third-person narration, a yes/no against her card. The player's intent is
the Appraiser's (one source of truth with her mood and her replaced replies)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from game.cast.card_io import load_card
from game.cast.coherence import Coherence
from game.cast.dialogue import pipeline_for
from game.cast.memory import Memory
from game.models.llm_scripted import ScriptedDialogueModel

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def eve() -> Any:
    return load_card(ROOT / "characters" / "eve.yaml")


@pytest.fixture(scope="module")
def check(eve: Any, embedder: Any) -> Coherence:
    return Coherence.from_card(eve, embedder)


def test_her_authored_line_for_another_intent_is_stopped(check: Coherence) -> None:
    verdict = check.check("The sea's said worse to me.", "Do you have any bees on the island?")
    assert verdict.kind == "incoherent" and "her line for an apology to a question" in verdict.reasons[0], verdict
    assert check.check("Forgiven. The sea's said worse to me.", "I'm sorry, that was cruel of me.").ok


class _Says:
    """An appraiser that reads every line as one intent."""

    def __init__(self, intent: str) -> None:
        self.intent = intent

    def appraise(self, text: str) -> Any:
        return type("A", (), {"intent": self.intent})()


def test_the_players_intent_is_the_appraisers(eve: Any) -> None:
    # no words of apology in the line, but the appraiser says it is one: her own apology is turned back
    apology = Coherence.from_card(eve, None, _Says("apology"))
    verdict = apology.check("I'm sorry, I was tired.", "That was a rotten thing I did to you.")
    assert verdict.kind == "incoherent" and "apologises back" in verdict.reasons[0]
    thanks = Coherence.from_card(eve, None, _Says("thanks"))
    verdict = thanks.check("I'm sorry, I was tired.", "That was good of you.")
    assert "apologises to the player's thanks" in verdict.reasons[0]


def test_the_pipeline_reads_the_intent_once_for_replies_and_coherence(eve: Any, embedder: Any) -> None:
    model = ScriptedDialogueModel(default="The sea's said worse to me.")
    pipe = pipeline_for(eve, Memory(eve, embedder=embedder), model, embedder=embedder)
    assert pipe.coherence is not None and pipe.replies is not None
    assert pipe.coherence.appraiser is pipe.replies.appraiser
    r = pipe.reply("What colour is the ferryman's jumper?", 3)  # (her card answers the bees question now)
    assert r.rejected and r.rejected[0].kind == "incoherent" and r.text != "The sea's said worse to me."


@pytest.mark.parametrize(("line", "reply", "why"), [
    ("I keep forty hives near Rotterdam.", "Aulis.", "bare fragment"),
    ("You are a stupid, boring old woman.",
     "She is talking to someone. She looks at you. You know her by name, and she's a stupid old woman.",
     "narrates herself"),
    ("Do you think ships still need lighthouses?", "No, I don't.", "against what her card holds to"),
    ("Would you like to leave the island some day?", "Yes.", "against what her card holds to"),
])
def test_fragments_narration_and_a_stance_against_her_card_are_stopped(check: Coherence, line: str, reply: str,
                                                                       why: str) -> None:
    verdict = check.check(reply, line)
    assert verdict.kind == "incoherent" and why in verdict.reasons[0], verdict


@pytest.mark.parametrize(("line", "reply"), [
    ("My dog is called Biscuit.", "Your dog Biscuit."),
    ("I'm Tomas, Tomas Verhoeven.", "Tomas Verhoeven."),
    ("What do you grow in the glasshouse?", "Tomatoes."),
    ("I'm sorry, that was cruel of me.", "Forgiven."),
    ("Is the lamp old?", "She is, and vain with it."),
    ("Do you think ships still need lighthouses?", "Yes, they do."),
    ("Would you like to leave the island some day?", "No, never."),
    ("Do you like honey?", "No, I don't."),
    ("I'm sorry I'm dripping on your floor.", "It's only water."),
    ("Do you ever sleep?", "In pieces. Four hours, then the clockwork."),
    ("What do you do when the fog comes in?", "I start Old Meg and sit up with her until it clears."),
])
def test_short_answers_that_fit_pass(check: Coherence, line: str, reply: str) -> None:
    assert check.check(reply, line).ok

"""The verifier reads what a model reply says of people: the player's age in words, roles of people on her card
(issue 11; replies SmolLM2-135M delivered in session 5's talks, ``bench/data/coherence_replies.yaml``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.cast.card_io import load_card
from game.cast.factsheet import FactSheet
from game.cast.guard import PersonaFacts
from game.cast.verifier import Verifier

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier(FactSheet.from_card(load_card(ROOT / "characters" / "eve.yaml")))


@pytest.mark.parametrize("reply", ["Hild's the queen of Harrowby.", "Hild was queen of Harrowby.",
                                   "Admiral's a dog, and a good one."])
def test_a_role_said_with_an_apostrophe_s_or_no_article_is_checked_against_her_card(verifier: Verifier,
                                                                                    reply: str) -> None:
    verdict = verifier.check(reply, None, "Tell me about Hild.")[0]
    assert verdict.kind == "contradiction" and "which her card never says of them" in verdict.reasons[0], verdict


@pytest.mark.parametrize("reply", ["Hild's the one who kept it before me.", "Hild's oilskin still hangs by the door.",
                                   "Hild was keeper of this light for forty-one years.", "Admiral's a gull."])
def test_what_her_card_says_of_them_passes(verifier: Verifier, reply: str) -> None:
    assert verifier.check(reply, None, "Tell me about Hild.")[0].ok


FIFTY_TWO = "I'm fifty-two, though my knees say older."


@pytest.mark.parametrize("reply", ["It's good to know you're in your mid-thirties.", "You must be in your forties.",
                                   "You're forty-something, I'd guess.", "A young man like you shouldn't be out here.",
                                   "Welcome, young man.", "You're young yet."])
def test_an_age_in_words_that_is_not_the_told_age_is_a_contradiction(verifier: Verifier, reply: str) -> None:
    verdict = verifier.check(reply, None, FIFTY_TWO)[0]
    assert verdict.kind == "contradiction" and verdict.reasons[0].endswith("they said 52"), verdict


@pytest.mark.parametrize("reply", ["You're in your fifties, then. So are my stairs.", "You're fifty-something, then.",
                                   "Hild was in her forties when she taught me.",
                                   "I was a young woman when I first wound the lamp.",
                                   "Fifty-two. Your knees and my stairs would get on."])
def test_an_age_in_words_that_fits_or_is_not_the_players_passes(verifier: Verifier, reply: str) -> None:
    assert verifier.check(reply, None, FIFTY_TWO)[0].ok


def test_the_age_she_believes_is_the_one_checked_on_later_turns(verifier: Verifier) -> None:
    facts = PersonaFacts(name="Eve", beliefs=(("player", "age", "52", "the player said so"),))
    verdict = verifier.check("You're still in your thirties, walker.", facts, "What do you think of me?")[0]
    assert verdict.kind == "contradiction"
    young = PersonaFacts(name="Eve", beliefs=(("player", "age", "24", "the player said so"),))
    assert verifier.check("You're still in your twenties, walker.", young, "What do you think of me?")[0].ok
    assert verifier.check("You're an old man, walker.", young, "What do you think of me?")[0].kind == "contradiction"

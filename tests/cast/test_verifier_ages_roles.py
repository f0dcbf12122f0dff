"""The verifier reads what a model reply says of people: the player's age in words, roles of people on her card
(issue 11; replies SmolLM2-135M delivered in session 5's talks, ``bench/data/coherence_replies.yaml``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.cast.card_io import load_card
from game.cast.factsheet import FactSheet
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

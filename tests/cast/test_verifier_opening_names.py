"""A capitalised word that opens a sentence is checked as a name unless it is a common English word."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from game.cast.dialogue import facts_from_card
from game.cast.factsheet import FactSheet
from game.cast.verifier import Verifier, opening_names
from game.models.llm import split_sentences


def stops(eve: Any, reply: str, player_line: str = "", player_name: str = "") -> str:
    """What the verifier says of the first sentence of ``reply`` that it stops (``""``: none)."""
    facts = facts_from_card(eve, eve.home)
    if player_name:
        facts = replace(facts, player_name=player_name)
    verifier = Verifier(FactSheet.from_card(eve))
    for i, sentence in enumerate(split_sentences(reply)):
        verdict = verifier.check(sentence, facts, player_line, opening=i == 0)[0]
        if not verdict.ok:
            return f"{verdict.kind}: {verdict.reasons[0]}"
    return ""


@pytest.mark.parametrize("reply", ["Sirens, the one who brings mail on Tuesdays.",
                                   "Poole keeps the light at Harrowby now.",
                                   "Aulis."])
def test_an_unknown_name_opening_a_sentence_is_stopped(eve: Any, reply: str) -> None:
    why = stops(eve, reply, "Who brings the post over?")
    assert why.startswith("unverified") and "names" in why, why


@pytest.mark.parametrize("reply", ["Jonas Brekke, on Tuesdays, when the Spine is flooded.",
                                   "Vesper. Two lemons in five years.",
                                   "Tomatoes, mostly, and salad in crates.",
                                   "Honestly? The fog, and the quiet after it.",
                                   "Gales mostly come from the west."])
def test_a_card_name_or_a_common_word_opening_a_sentence_passes(eve: Any, reply: str) -> None:
    assert not stops(eve, reply), reply


def test_the_players_told_name_may_open_her_reply(eve: Any) -> None:
    assert stops(eve, "Rafe, you're back before the tide.")
    assert not stops(eve, "Rafe, you're back before the tide.", player_name="Rafe")


def test_opening_names_reads_every_sentence_and_the_cards_words() -> None:
    assert opening_names("Fog again. Sirens said so. \"Hild kept it.") == ["sirens", "hild"]
    assert opening_names("Puffins nest there.", vocabulary={"puffin"}) == []

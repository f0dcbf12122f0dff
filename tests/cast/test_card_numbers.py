"""A card's lorebook numbers past a float (JSON's 1e999) are refused by name, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from game.cast.card_io import read_card_json
from game.errors import CardError


def card(book: dict[str, object]) -> str:
    return json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Ada", "description": "keeps bees", "personality": "calm", "scenario": "", "first_mes": "Hi.",
        "mes_example": "", "tags": [], "extensions": {}, "character_book": book}})


@pytest.mark.parametrize("field, book", [
    ("priority", {"entries": [{"keys": ["bee"], "content": "bees", "priority": "1e999"}]}),
    ("insertion_order", {"entries": [{"keys": ["bee"], "content": "bees", "insertion_order": "-1e999"}]}),
    ("scan_depth", {"scan_depth": "1e999", "entries": []}),
    ("token_budget", {"token_budget": "1e999", "entries": []}),
])
def test_an_infinite_lorebook_number_is_refused_with_its_field(field: str, book: dict[str, object],
                                                              tmp_path: Path) -> None:
    path = tmp_path / "card.json"
    path.write_text(card(book).replace('"1e999"', "1e999").replace('"-1e999"', "-1e999"))
    with pytest.raises(CardError, match=f"{field}.*finite"):
        read_card_json(path)


def test_finite_numbers_still_load(tmp_path: Path) -> None:
    path = tmp_path / "card.json"
    path.write_text(card({"scan_depth": 3.0, "entries": [{"keys": ["bee"], "content": "bees", "priority": 1e300}]}))
    loaded = read_card_json(path)
    assert tuple(loaded.lorebook.entries[0].keys) == ("bee",)

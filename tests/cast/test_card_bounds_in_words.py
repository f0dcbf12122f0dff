"""A card value out of its bounds says the bound in plain words at its line (it printed pydantic's
"Input should be less than or equal to 500" and "String should have at least 1 character")."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.cast.card_io import load_card
from game.errors import CardError


def test_a_value_out_of_bounds_names_the_bound(tmp_path: Path) -> None:
    card = tmp_path / "bob.yaml"
    card.write_text('id: bob\nname: ""\nvoice: {rate: 9999, pitch: -1}\nlorebook: {token_budget: -1, entries: []}\n',
                    encoding="utf-8")
    with pytest.raises(CardError) as info:
        load_card(card)
    lines = [line.strip() for line in str(info.value).splitlines()]
    assert f"{card}:2:1: name: must not be empty" in lines, lines
    assert f"{card}:3:9: voice.rate: must be at most 500" in lines, lines
    assert f"{card}:3:21: voice.pitch: must be at least 0" in lines, lines
    assert f"{card}:4:12: lorebook.token_budget: must be at least 0" in lines, lines
    assert not any("Input should" in line or "String should" in line for line in lines), lines

"""A malformed card names every problem at once, each with its own file:line (the newcomer fixed three
mistakes in three runs: the message said only "(and 2 more)")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from game.cast.card_io import load_card
from game.errors import CardError

ROOT = Path(__file__).resolve().parents[2]


def test_every_problem_of_a_card_is_named_with_its_line(tmp_path: Path) -> None:
    text = (ROOT / "characters" / "eve.yaml").read_text(encoding="utf-8")
    text = re.sub(r"^id: .*$", "id: 42", text, count=1, flags=re.M) + "\nbogus_field: 3\n"
    bad = tmp_path / "bad.yaml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(CardError) as info:
        load_card(bad)
    message = str(info.value)
    lines = message.splitlines()
    assert len(lines) == 2, message
    assert re.match(rf"{re.escape(str(bad))}:\d+:\d+: id: ", lines[0]), message
    assert re.search(rf"{re.escape(str(bad))}:\d+:\d+: bogus_field: ", lines[1]), message

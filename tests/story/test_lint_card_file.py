"""``worldloom lint CARD``: a character card given instead of a story is linted as a card (it was read
as a story: one ``WL018`` "unknown key" per card field, Eve's own card included); and a card that does
not load keeps the card reader's own hint (``name the file bob.yaml``), in a story's lint too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from game.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _lint(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["lint", str(path)])
    return code, capsys.readouterr().out


def test_a_good_card_lints_clean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _lint(ROOT / "characters" / "eve.yaml", capsys)
    assert code == 0 and "WL0" not in out, out  # it exited 1 with a WL018 per card field


def test_a_card_s_findings_are_card_findings_at_the_field_s_line(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    card = tmp_path / "bob.yaml"
    card.write_text("id: bob\nname: Bob\ngreetings: [Hi.]\ndescription: '" + "Bob keeps the wood. " * 2000 + "'\n",
                    encoding="utf-8")
    code, out = _lint(card, capsys)
    assert code == 1 and "WL018" not in out, out
    assert f"{card}:4:1: WL061 error: card 'bob': description: the card's fixed part needs" in out, out


def test_a_card_that_does_not_load_says_where_why_and_its_own_hint(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    card = tmp_path / "bob5.yaml"
    card.write_text("id: bob\nname: Bob\ngreetings: [Hi.]\n", encoding="utf-8")
    code, out = _lint(card, capsys)
    assert code == 1, out
    assert (f"{card}:1:1: WL060 error: the card of 'bob5.yaml' does not load: id: 'bob' does not match the file "
            "name 'bob5.yaml' (name the file bob.yaml)") in out, out
    story = tmp_path / "story.yaml"
    story.write_text("id: t\ntitle: T\nstart: a\nlocations: {here: {name: Here}}\n"
                     "cast: {bob5: {name: Bob, card: bob5.yaml}}\nscenes:\n  a: {location: here, ending: e}\n",
                     encoding="utf-8")
    code, out = _lint(tmp_path, capsys)
    assert code == 1 and "(name the file bob.yaml)" in out, out


def test_a_json_card_is_linted_as_a_card(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    card = tmp_path / "bob.json"
    card.write_text(json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Bob"}}),
                    encoding="utf-8")
    code, out = _lint(card, capsys)
    assert code == 0 and f"{card}: WL066 warning: card 'bob': greetings:" in out, out

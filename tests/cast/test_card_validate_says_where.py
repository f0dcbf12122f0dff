"""``worldloom card validate`` on a malformed card says where and why: a size finding names the field's
line in a YAML card (it named only the field), and a file that is not a PNG says so (it printed Pillow's
"cannot identify image file '<path>'")."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.cli import main


def test_a_huge_field_is_named_with_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    card = tmp_path / "bob.yaml"
    card.write_text("id: bob\nname: Bob\ngreetings: [Hi.]\ndescription: '" + "Bob keeps the wood. " * 2000 + "'\n",
                    encoding="utf-8")
    assert main(["card", "validate", str(card)]) == 1
    out = capsys.readouterr().out
    assert f"error: {card}:4:1: description: the card's fixed part needs" in out, out
    assert "the card cannot load" in out


def test_a_finding_of_a_json_card_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    card = tmp_path / "bob.json"
    card.write_text('{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Bob"}}', encoding="utf-8")
    assert main(["card", "validate", str(card)]) == 0
    assert f"warning: {card}: greetings: " in capsys.readouterr().out


def test_a_png_that_is_not_a_png_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    card = tmp_path / "bob.png"
    card.write_text("id: bob\nname: Bob\n", encoding="utf-8")  # a YAML card saved under the wrong name
    assert main(["card", "validate", str(card)]) == 2
    err = capsys.readouterr().err
    assert f"{card}: not a PNG image: the file does not start with the PNG signature" in err, err
    assert "cannot identify" not in err


def test_import_to_a_folder_that_is_a_file_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`card import bob.json -o notes.txt/bob.yaml` ended in a FileExistsError traceback from mkdir."""
    card = tmp_path / "bob.json"
    card.write_text('{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Bob", '
                    '"first_mes": "Hi."}}', encoding="utf-8")
    (tmp_path / "notes.txt").write_text("mine")
    out = tmp_path / "notes.txt" / "bob.yaml"
    assert main(["card", "import", str(card), "-o", str(out)]) == 2
    assert f"error: {out}: cannot write the card: a file is in the way of its folder" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"

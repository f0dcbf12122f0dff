"""A misspelt card field names its line and the field meant, as the story loader does for a story key
(a card with ``personalty:`` said only "is not a card field")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from game.cast.card_io import load_card
from game.errors import CardError


def _message(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CardError) as info:
        load_card(path)
    return str(info.value)


def test_a_misspelt_field_at_any_depth_is_named_with_its_line_and_the_field_meant(tmp_path: Path) -> None:
    text = ("id: bob\nname: Bob\npersonalty: grumpy\nlook:\n  descripton: tall\n"
            "lorebook:\n  - keys: [lamp]\n    contnt: the lamp\n")
    lines = [line.strip() for line in _message(tmp_path, "bob.yaml", text).splitlines()]
    where = str(tmp_path / "bob.yaml")
    assert f"{where}:3:1: personalty: is not a card field: did you mean 'personality'?" in lines, lines
    assert f"{where}:5:3: look.descripton: is not a card field: did you mean 'description'?" in lines, lines
    assert f"{where}:8:5: lorebook.entries[0].contnt: is not a card field: did you mean 'content'?" in lines, lines


def test_a_field_with_nothing_near_lists_the_fields_of_a_small_mapping(tmp_path: Path) -> None:
    message = _message(tmp_path, "bob.yaml", "id: bob\nname: Bob\nlook:\n  colour: red\n")
    assert message.endswith("look.colour: is not a card field (the fields it takes: description, images)"), message


def test_a_card_field_the_file_never_writes_is_not_suggested(tmp_path: Path) -> None:
    # ``where`` is set by the reader (the file's path), not written in a card
    message = _message(tmp_path, "bob.yaml", "id: bob\nname: Bob\nwhere2: here\n")
    assert "did you mean 'where'" not in message, message


def test_a_misspelt_field_of_our_extension_in_an_imported_card_is_suggested(tmp_path: Path) -> None:
    doc = {"spec": "chara_card_v2", "spec_version": "2.0",
           "data": {"name": "Bob", "extensions": {"worldloom": {"never_sya": ["hello"]}}}}
    message = _message(tmp_path, "bob.json", json.dumps(doc))
    assert "data.extensions.worldloom.never_sya: is not a card field: did you mean 'never_say'?" in message, message

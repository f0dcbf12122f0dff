"""`worldloom lint` checks the cards a story's cast names, with the checks of `card validate` (#17, #11)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from game.cast.card import card_from_dict
from game.cast.cardcheck import check_card
from game.cast.memory import MemoryConfig
from game.cli import main
from game.lint import lint
from game.story.diagnostics import CODES

ROOT = Path(__file__).parents[2]
STORY = """id: t
title: T
start: a
locations: {here: {name: Here}}
cast:
  fox: {name: Fox, card: fox.yaml}
  owl: {name: Owl, card: cards/owl.yaml}
scenes:
  a: {location: here, ending: e}
"""


def two_cards(tmp: Path, fox: str, owl: str) -> Path:
    (tmp / "story.yaml").write_text(STORY)
    (tmp / "fox.yaml").write_text(fox)
    (tmp / "cards").mkdir()
    (tmp / "cards" / "owl.yaml").write_text(owl)
    return tmp


def card_codes(folder: Path) -> list[str]:
    return [d.code for d in lint(folder) if d.code.startswith("WL06")]


def test_an_over_budget_field_names_the_tokens_card_validate_names(tmp_path: Path) -> None:
    fox = CODES["WL062"].files[0][1]
    two_cards(tmp_path, fox, "id: owl\nname: Owl\ngreetings: [Hoo.]\n")
    found = [d for d in lint(tmp_path) if d.code == "WL062"]
    expected = [p for p in check_card(card_from_dict(yaml.safe_load(fox)), MemoryConfig(context_tokens=4096))
                if p.field == "examples"]
    assert len(found) == 1 and len(expected) == 1
    assert expected[0].tokens > 0 and f"({expected[0].tokens} tokens lost)" in found[0].message
    assert expected[0].why in found[0].message and "'fox'" in found[0].message
    assert found[0].where.startswith(f"{tmp_path / 'fox.yaml'}:4:")  # the line of `examples:`


def test_a_card_that_does_not_load_does_not_hide_the_others(tmp_path: Path) -> None:
    bad_regex = "id: fox\nname: Fox\ngreetings: [Hi.]\nlorebook:\n  - {keys: ['[den'], use_regex: true, content: x}\n"
    two_cards(tmp_path, bad_regex, "id: owl\nname: Owl\nvoice: {voice: 'en gb'}\n")
    diags = [d for d in lint(tmp_path) if d.code.startswith("WL06")]
    assert [d.code for d in diags] == ["WL060", "WL066", "WL067"]
    assert "not a valid regular expression" in diags[0].message
    assert diags[0].where.startswith(str(tmp_path / "fox.yaml"))
    assert all(str(tmp_path / "cards" / "owl.yaml") in d.where for d in diags[1:])
    assert "'en gb' is not an espeak-ng voice id" in diags[2].message


def test_a_card_of_another_member_is_refused(tmp_path: Path) -> None:
    two_cards(tmp_path, "id: fox\nname: Fox\ngreetings: [Hi.]\n", "id: owl\nname: Owl\ngreetings: [Hoo.]\n")
    (tmp_path / "story.yaml").write_text(STORY.replace("cards/owl.yaml", "fox.yaml"))
    diags = [d for d in lint(tmp_path) if d.code == "WL060"]
    assert len(diags) == 1 and "is the card of 'fox'" in diags[0].message


def test_card_codes_follow_worldloom_toml(tmp_path: Path) -> None:
    two_cards(tmp_path, "id: fox\nname: Fox\n", "id: owl\nname: Owl\n")
    assert card_codes(tmp_path) == ["WL066", "WL066"]
    (tmp_path / "worldloom.toml").write_text('[lint.severity]\nWL066 = "off"\n')
    assert card_codes(tmp_path) == []
    (tmp_path / "worldloom.toml").write_text('[lint.severity]\nWL066 = "error"\n')
    assert main(["lint", str(tmp_path)]) == 1


def test_the_cli_lints_cards_and_fails_on_a_bad_voice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    two_cards(tmp_path, "id: fox\nname: Fox\ngreetings: [Hi.]\n", "id: owl\nname: Owl\ngreetings: [Hoo.]\n")
    assert main(["lint", str(tmp_path)]) == 0
    (tmp_path / "fox.yaml").write_text("id: fox\nname: Fox\ngreetings: [Hi.]\nvoice: {tts: festival}\n")
    assert main(["lint", str(tmp_path)]) == 1
    assert "WL067 error: card 'fox': voice.tts: unknown speech engine 'festival'" in capsys.readouterr().out


def test_card_findings_are_kept_with_the_storys_and_a_card_edit_lints_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from game.story import lint as story_lint

    two_cards(tmp_path, "id: fox\nname: Fox\n", "id: owl\nname: Owl\ngreetings: [Hoo.]\n")
    first = lint(tmp_path)
    assert [d.code for d in first if d.code.startswith("WL06")] == ["WL066"]
    with monkeypatch.context() as m:
        m.setattr(story_lint, "load_story", lambda *a, **k: pytest.fail("loaded again"))
        assert lint(tmp_path) == first  # unchanged story and cards: read back
    (tmp_path / "fox.yaml").write_text("id: fox\nname: Fox\ngreetings: [Hi.]\nvoice: {tts: festival}\n")
    assert card_codes(tmp_path) == ["WL067"]  # a card edited: linted again


def test_a_card_edit_lints_again_when_the_story_is_named_by_a_relative_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `worldloom lint my_story` from the folder above: the memo kept the card's stat under a wrong
    # path (none: never changed), so a fixed card still showed its old error
    (tmp_path / "mine").mkdir()
    two_cards(tmp_path / "mine", "id: fox\nname: Fox\n", "id: owl\nname: Owl\ngreetings: [Hoo.]\n")
    monkeypatch.chdir(tmp_path)
    assert card_codes(Path("mine")) == ["WL066"]
    (tmp_path / "mine" / "fox.yaml").write_text("id: fox\nname: Fox\ngreetings: [Hi.]\nvoice: {tts: festival}\n")
    assert card_codes(Path("mine")) == ["WL067"]
    (tmp_path / "mine" / "fox.yaml").write_text("id: fox\nname: Fox\ngreetings: [Hi.]\n")
    assert card_codes(Path("mine")) == []


def test_eve_and_her_card_lint_without_card_findings() -> None:
    assert [d.format() for d in lint(ROOT / "stories" / "eve") if d.code.startswith("WL06")] == []


def test_the_story_room_does_not_import_the_cast_room() -> None:
    for path in (ROOT / "game" / "story").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if n == "game.cast" or n.startswith("game.cast.")], path

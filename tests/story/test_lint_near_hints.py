"""Lint's "did you mean" for a misspelt variable in text (WL019), item (WL002), character (WL003),
variable read (WL004) or written (WL014) and function or effect (WL007, from the error's own field, not
its words); findings print in file order."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from game.story.expr import UnknownFunction, compile_condition, compile_effect
from game.story.lint import lint_story, position


def _broken(mini: Path, tmp: Path) -> Path:
    folder = tmp / "mini"
    shutil.copytree(mini, folder)
    p = folder / "story.yaml"
    text = p.read_text()
    for old, new in (('"Hello {name}."', '"Hello {nmae}."'), ("present: {creature: 0.6}", "present: {creture: 0.6}"),
                     ("give('kite', 'creature')", "give('kyte', 'creature')"), ("courage += 1", "courrage += 1"),
                     ('if: "courage > 0"', 'if: "corage > 0"'), ("if: \"has('kite')\"", "if: \"hass('kite')\"")):
        assert old in text, old
        text = text.replace(old, new)
    p.write_text(text)
    return folder


def test_each_misspelt_name_gets_the_nearest_known_one(mini_path: Path, tmp_path: Path) -> None:
    diags = lint_story(_broken(mini_path, tmp_path), use_cache=False)
    hints = {d.code: d.hint for d in diags}
    assert hints["WL019"].startswith("did you mean '{name}'?")
    assert hints["WL003"].startswith("did you mean 'creature'?")
    assert hints["WL002"].startswith("did you mean 'kite'?")
    assert hints["WL004"].startswith("did you mean 'courage'?")
    assert hints["WL014"].startswith("did you mean 'courage'?")
    assert hints["WL007"].startswith("did you mean 'has'?")


def test_findings_are_in_file_order(mini_path: Path, tmp_path: Path) -> None:
    diags = lint_story(_broken(mini_path, tmp_path), use_cache=False)
    assert len(diags) >= 6
    assert [position(d.where) for d in diags] == sorted(position(d.where) for d in diags)


def test_a_misspelt_effect_gets_the_nearest_effect(mini_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "mini"
    shutil.copytree(mini_path, folder)
    p = folder / "story.yaml"
    assert "give('kite', 'creature')" in p.read_text()
    p.write_text(p.read_text().replace("give('kite', 'creature')", "giv('kite', 'creature')", 1))
    hints = [d.hint for d in lint_story(folder, use_cache=False) if d.code == "WL007"]
    assert hints and hints[0].startswith("did you mean 'give'?")


def test_an_unknown_function_names_itself_and_what_could_be_called_there() -> None:
    with pytest.raises(UnknownFunction) as cond:
        compile_condition("hass('kite') and courage > 1")
    assert cond.value.name == "hass" and "has" in cond.value.known and "give" not in cond.value.known
    with pytest.raises(UnknownFunction) as eff:
        compile_effect("giv('kite', 'creature')")
    assert eff.value.name == "giv" and "give" in eff.value.known and "has" not in eff.value.known
    with pytest.raises(UnknownFunction) as inner:  # an effect's argument is a condition
        compile_effect("give(pick('kite'), 'creature')")
    assert inner.value.name == "pick" and "has" in inner.value.known

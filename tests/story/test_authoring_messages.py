"""What a new author meets writing a YAML story: each mistake a newcomer made gets a message that
says what is wrong, where, and what to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.errors import ExpressionError
from game.story.expr import capitalised, compile_condition
from game.story.lint import lint_story

HEAD = """id: t
title: T
start: a
locations: {here: {name: Here}}
variables: {lit: {type: bool, default: false}}
scenes:
"""


def _lint(tmp: Path, scenes: str) -> list[str]:
    (tmp / "story.yaml").write_text(HEAD + scenes, encoding="utf-8")
    return [d.format() for d in lint_story(tmp, use_cache=False)]


def test_a_lower_case_true_in_an_effect_is_named_with_the_line_to_write(tmp_path: Path) -> None:
    found = _lint(tmp_path, "  a: {location: here, ending: e, on_enter: ['lit = true']}\n")
    assert len(found) == 1, found
    (line,) = found
    assert "story.yaml:7:" in line
    assert "WL027 error: 'true' reads as an undeclared variable" in line
    assert "write 'lit = True'" in line
    assert "read in a condition" not in line and "declare it under variables" not in line


def test_a_lower_case_literal_in_a_condition_gets_the_same_code_and_its_fix(tmp_path: Path) -> None:
    found = _lint(tmp_path, "  a: {location: here, choices: [{id: c, text: go, if: 'lit == false or lit != none', "
                            "goto: b}]}\n  b: {location: here, ending: e}\n")
    assert sorted(f.split(" WL027 error: ")[1][:7] for f in found) == ["'false'", "'none' "], found
    assert all("write 'lit == False or lit != None'" in f for f in found)


def test_an_undeclared_variable_in_an_effect_is_not_called_a_condition(tmp_path: Path) -> None:
    (line,) = _lint(tmp_path, "  a: {location: here, ending: e, on_enter: ['lit = mood']}\n")
    assert "WL004 error: the expression reads undefined variable 'mood'" in line


def test_a_condition_that_assigns_says_to_compare_with_double_equals() -> None:
    with pytest.raises(ExpressionError) as err:
        compile_condition("lit = true", "story.yaml:9:12")
    text = str(err.value)
    assert text.startswith("story.yaml:9:12: ")
    assert "a condition compares with ==, as in 'lit == True'" in text
    with pytest.raises(ExpressionError, match="syntax error"):  # any other syntax error is as it was
        compile_condition("lit ==", "x")


def test_capitalised_leaves_quoted_text_and_right_spellings() -> None:
    assert capitalised("x == 'true' and y == TRUE or z == None") == "x == 'true' and y == True or z == None"
    assert capitalised("lit = null") == "lit = None"


def _load_error(tmp: Path, text: str) -> str:
    from game.errors import StoryError
    from game.story.loader import load_story

    (tmp / "story.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(StoryError) as err:
        load_story(tmp, use_cache=False)
    return str(err.value)


SCENE = "  a:\n    location: here\n    {key}:\n      - {{id: c, {text}: go, goto: b}}\n" \
    "  b: {{location: here, ending: e}}\n"


def test_a_misspelt_scene_key_names_its_line_and_the_key_meant(tmp_path: Path) -> None:
    text = _load_error(tmp_path, HEAD + SCENE.format(key="choises", text="text"))
    assert text == f"{tmp_path / 'story.yaml'}:9:5: scenes.a: unknown key 'choises': did you mean 'choices'?"


def test_a_misspelt_key_deeper_down_is_matched_against_that_place_s_keys(tmp_path: Path) -> None:
    text = _load_error(tmp_path, HEAD + SCENE.format(key="choices", text="txt"))
    assert f"{tmp_path / 'story.yaml'}:10:17: scenes.a.choices.0: unknown key 'txt': did you mean 'text'?" in text


def test_a_key_near_none_lists_the_keys_the_place_takes(tmp_path: Path) -> None:
    text = _load_error(tmp_path, HEAD + SCENE.format(key="zorbs", text="text"))
    assert "scenes.a: unknown key 'zorbs' (the keys it takes: title, location," in text
    assert "choices" in text and "Extra inputs" not in text


def test_lint_shows_the_suggestion_at_the_key(tmp_path: Path) -> None:
    (line,) = _lint(tmp_path, SCENE.format(key="choises", text="text"))
    assert line.startswith(f"{tmp_path / 'story.yaml'}:9:5: WL018 error: ")
    assert "did you mean 'choices'?" in line


LAMP = """  a:
    location: here
    lines: ["A dark room. A lamp."]
    choices:
      - {id: c, text: Light the lamp, do: "lit = true", goto: b}
  b: {location: here, ending: e, lines: ["Light."]}
"""
PLAY = ["--backend", "null", "--size", "64x36", "--no-errorbank", "--dialogue", "none", "--no-voice"]


def test_a_story_with_a_lint_error_does_not_start_headless_and_says_so_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from game.cli import main

    (tmp_path / "story.yaml").write_text(HEAD + LAMP, encoding="utf-8")
    (tmp_path / "play.txt").write_text("choose c\n", encoding="utf-8")
    assert main(["play", str(tmp_path), "--headless", "--inputs", str(tmp_path / "play.txt"), *PLAY]) == 2
    got = capsys.readouterr()
    assert got.out == ""  # nothing of the story was played
    assert got.err.count("'true'") == 1, got.err  # was three times: a warning, a count, the failure
    assert f"error: {tmp_path}: 1 lint error, so the story does not start" in got.err
    assert f"{tmp_path / 'story.yaml'}:11:" in got.err and "WL027" in got.err and "worldloom lint" in got.err


def test_the_window_refuses_it_the_same_way(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import game.app.window as window
    from game.cli import main

    (tmp_path / "story.yaml").write_text(HEAD + LAMP, encoding="utf-8")
    opened: list[object] = []
    monkeypatch.setattr(window, "run_window", lambda *a, **k: opened.append(a) or 0)
    assert main(["play", str(tmp_path), *PLAY]) == 2
    assert opened == [] and "1 lint error, so the story does not start" in capsys.readouterr().err


def test_a_code_the_story_lowers_below_error_plays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from game.cli import main

    (tmp_path / "story.yaml").write_text(HEAD + LAMP.replace("lit = true", "lit = True").replace(
        "goto: b}", "goto: b}\n      - {id: d, text: Wait, goto: nowhere}"), encoding="utf-8")
    (tmp_path / "worldloom.toml").write_text('[lint.severity]\nWL001 = "warning"\n', encoding="utf-8")
    (tmp_path / "play.txt").write_text("choose c\n", encoding="utf-8")
    assert main(["play", str(tmp_path), "--headless", "--inputs", str(tmp_path / "play.txt"), *PLAY]) == 0
    assert "AN ENDING: E" in capsys.readouterr().out


def test_the_window_s_reload_refuses_any_lint_error_as_the_start_does(tmp_path: Path) -> None:
    from game.app.reload import Reloader
    from game.session import open_game
    from game.story.loader import load_story

    (tmp_path / "story.yaml").write_text(HEAD + LAMP.replace("lit = true", "lit = True"), encoding="utf-8")
    game = open_game(load_story(tmp_path, use_cache=False), backend="null", dialogue=None, voice=False,
                     source=tmp_path / "story.yaml")
    try:
        game.session.start()
        # a dead end (WL006): an error, though not one reload's FATAL_CODES name
        (tmp_path / "story.yaml").write_text(HEAD + LAMP.replace("lit = true", "lit = True")
                                             .replace("  b: {location: here, ending: e, lines: [\"Light.\"]}",
                                                      "  b: {location: here, lines: [\"Light.\"]}"), encoding="utf-8")
        done = Reloader(game.session).reload()
        assert not done.ok and "WL006" in done.message
        assert game.session.story.model.scenes["b"].ending == "e"  # the old story plays on
    finally:
        game.close()


def test_played_anyway_the_failure_says_how_the_value_is_written(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from game.cli import main

    (tmp_path / "story.yaml").write_text(HEAD + LAMP, encoding="utf-8")
    (tmp_path / "worldloom.toml").write_text('[lint.severity]\nWL027 = "warning"\n', encoding="utf-8")
    (tmp_path / "play.txt").write_text("choose c\n", encoding="utf-8")
    assert main(["play", str(tmp_path), "--headless", "--inputs", str(tmp_path / "play.txt"), *PLAY]) == 2
    err = capsys.readouterr().err
    assert "effect 'lit = true' failed: unknown name 'true' (the value is written True)" in err
    assert "declare it under variables" not in err

"""`worldloom play` refuses a story with lint errors (each named once, with its position, a count and
where to look), in the window and headless; a clean story gets no warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.cli import main

STORY = """format: 1
id: lintbad
title: Lint Bad
start: a
locations:
  here: {name: Here, prompt: a meadow}
scenes:
  a:
    location: here
    lines: ["hello"]
    choices:
      - {id: go, text: go, goto: nowhere}
      - {id: stay, text: stay, goto: elsewhere}
      - {id: end, text: end, goto: b}
  b:
    location: here
    lines: ["the end"]
    ending: end
"""
PLAY = ["--headless", "--backend", "null", "--size", "64x36", "--no-errorbank", "--dialogue", "none", "--no-voice"]


def test_play_names_each_lint_error_once_and_does_not_start(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "story.yaml").write_text(STORY, encoding="utf-8")
    assert main(["play", str(tmp_path), *PLAY]) == 2
    out = capsys.readouterr().err  # the console writes to stderr
    lines = out.splitlines()
    assert len(lines) == 3, out
    assert lines[0].startswith(f"error: {tmp_path}: 2 lint errors, so the story does not start")
    assert f"worldloom lint {tmp_path}" in lines[0]
    assert "story.yaml:12:" in lines[1] and "WL001 error" in lines[1] and "nowhere" in lines[1]
    assert "story.yaml:13:" in lines[2] and "elsewhere" in lines[2]
    assert "played" not in out


def test_play_of_a_clean_story_warns_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "story.yaml").write_text(STORY.replace("goto: nowhere", "goto: b").replace("goto: elsewhere",
                                                                                          "goto: b"), encoding="utf-8")
    assert main(["play", str(tmp_path), *PLAY]) == 0
    out = capsys.readouterr().err  # the console writes to stderr
    assert "warning:" not in out and "played 0 inputs" in out


def test_play_loads_the_story_once_for_its_lint_and_for_play(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from game.story.story import Story

    monkeypatch.setenv("WORLDLOOM_CACHE", str(tmp_path / "cache"))  # cold: nothing loaded before
    (tmp_path / "story.yaml").write_text(STORY, encoding="utf-8")
    loads: list[Path] = []
    init = Story.__init__

    def counted(self: Story, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # type: ignore[arg-type]
        loads.append(self.folder)

    monkeypatch.setattr(Story, "__init__", counted)
    assert main(["play", str(tmp_path), *PLAY]) == 2  # the lint errors stop it, after one load
    assert loads == [tmp_path]  # was two: lint's parse, then play's read of the cache lint had filled
    first = capsys.readouterr().err.splitlines()
    assert len(first) == 3
    assert main(["play", str(tmp_path), *PLAY]) == 2  # unchanged: the cached story, lint's memo
    assert loads == [tmp_path] * 2
    assert capsys.readouterr().err.splitlines() == first


def test_a_story_given_by_file_is_what_reload_rereads(tmp_path: Path) -> None:
    from game.session import open_game
    from game.story.loader import load_story

    path = tmp_path / "other.yaml"
    path.write_text(STORY, encoding="utf-8")
    game = open_game(load_story(path), backend="null", dialogue=None, voice=False, source=path)
    try:
        assert game.session.source == path
    finally:
        game.close()

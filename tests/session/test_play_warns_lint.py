"""`worldloom play` warns about a story's lint errors (one line each, a count, where to look) and
plays on when the story loads; a clean story gets no warning."""

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


def test_play_warns_each_lint_error_and_plays_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "story.yaml").write_text(STORY, encoding="utf-8")
    assert main(["play", str(tmp_path), *PLAY]) == 0
    out = capsys.readouterr().err  # the console writes to stderr
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 3, out
    assert "story.yaml:12:" in warnings[0] and "nowhere" in warnings[0]
    assert "story.yaml:13:" in warnings[1] and "elsewhere" in warnings[1]
    assert "2 lint error(s)" in warnings[2] and "worldloom lint" in warnings[2]
    assert "played 0 input(s)" in out


def test_play_of_a_clean_story_warns_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "story.yaml").write_text(STORY.replace("goto: nowhere", "goto: b").replace("goto: elsewhere",
                                                                                          "goto: b"), encoding="utf-8")
    assert main(["play", str(tmp_path), *PLAY]) == 0
    out = capsys.readouterr().err  # the console writes to stderr
    assert "warning:" not in out and "played 0 input(s)" in out

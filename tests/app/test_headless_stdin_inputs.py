"""`worldloom play --headless --inputs -` plays inputs from stdin as they come (a pipe, or a player
typing), a line that does not parse is named and skipped, and a headless play without --inputs says
that nothing was played and how to give inputs."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from game.cli import main
from tests.app.test_headless_story_text import FLAGS, STORY


def test_inputs_dash_plays_stdin_line_by_line_and_skips_a_bad_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "story.yaml").write_text(STORY, encoding="utf-8")
    seen: list[str] = []

    def typed() -> Iterator[str]:  # a player at the keyboard: the next line comes after the last is played
        yield "jump\n"
        yield "choose pass\n"
        now = capsys.readouterr()  # the story text goes to stdout; worldloom's own lines to stderr
        seen.append(now.out + now.err)
        yield "wait 1\n"

    class Keyboard(io.StringIO):
        def __iter__(self) -> Iterator[str]:
            return typed()

    monkeypatch.setattr("sys.stdin", Keyboard())
    assert main(["play", str(tmp_path), *FLAGS, "--inputs", "-"]) == 1  # the bad line is named: exit 1
    got = capsys.readouterr()
    out = seen[0] + got.out + got.err
    assert "> Pass her the wick" in seen[0]  # played before the next line was read
    assert "warning: <stdin>:1: unknown command 'jump'" in out and "the line was skipped" in out
    assert "played 2 inputs" in out and "skipped 1 typed line that did not parse" in out
    assert "No such file" not in out


def test_headless_without_inputs_says_nothing_was_played_and_how_to_give_inputs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "story.yaml").write_text(STORY, encoding="utf-8")
    assert main(["play", str(tmp_path), *FLAGS]) == 0
    out = capsys.readouterr().err
    assert "played 0 inputs" in out
    assert "note: no --inputs given" in out and "--inputs FILE" in out and "--inputs -" in out

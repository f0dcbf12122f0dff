"""Headless play prints the story as the player reads it (scene titles, lines by speaker name, the
choices on offer, the one taken, the ending by name), and `worldloom replay` shows the same names:
no raw speaker ids or ending ids. `--quiet` keeps stdout for the summary-free machine run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from game.cli import main

STORY = """id: quay
title: Quay
start: shed
locations: {quay: {name: Quay, prompt: a quay at dusk}}
cast: {ysolde: {name: Ysolde}}
scenes:
  shed:
    title: The Shed
    location: quay
    present: [ysolde]
    lines:
      - The lamp oil is on the shelf.
      - {speaker: ysolde, text: "Pass me the wick."}
    choices:
      - {id: pass, text: Pass her the wick, goto: lit, say: ["You pass it over."]}
      - {id: keep, text: Keep the wick, goto: lit}
  lit:
    location: quay
    lines: ["The light turns over the water."]
    ending: the_light_holds
"""
FLAGS = ["--headless", "--backend", "null", "--size", "64x36", "--no-errorbank", "--dialogue", "none", "--no-voice"]


@pytest.fixture
def played(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    (tmp_path / "story.yaml").write_text(STORY, encoding="utf-8")
    (tmp_path / "play.txt").write_text("choose pass\n", encoding="utf-8")
    transcript = tmp_path / "t.jsonl"
    assert main(["play", str(tmp_path), *FLAGS, "--inputs", str(tmp_path / "play.txt"),
                 "--transcript", str(transcript)]) == 0
    return transcript, capsys.readouterr().out


def test_headless_play_prints_the_story_as_read(played: tuple[Path, str]) -> None:
    _, out = played
    assert out.splitlines() == [
        "== The Shed ==",
        "The lamp oil is on the shelf.",
        "Ysolde: Pass me the wick.",
        "  1. Pass her the wick",
        "  2. Keep the wick",
        "> Pass her the wick",
        "You pass it over.",
        "The light turns over the water.",
        "AN ENDING: The Light Holds",
    ]


def test_quiet_prints_no_story_and_keeps_the_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "story.yaml").write_text(STORY, encoding="utf-8")
    (tmp_path / "play.txt").write_text("choose 1\n", encoding="utf-8")
    transcript = tmp_path / "t.jsonl"
    assert main(["play", str(tmp_path), *FLAGS, "--quiet", "--inputs", str(tmp_path / "play.txt"),
                 "--transcript", str(transcript)]) == 0
    got = capsys.readouterr()
    assert got.out == "" and "played 1 input:" in got.err
    rows = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [r["text"] for r in rows if r["type"] == "ending"] == ["the_light_holds"]  # ids stay ids there


def test_replay_names_speakers_and_endings(played: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    transcript, _ = played
    assert main(["replay", str(transcript)]) == 0
    out = capsys.readouterr().out
    assert "] Ysolde: Pass me the wick." in out and "] AN ENDING: The Light Holds" in out
    assert "ysolde:" not in out and "the_light_holds" not in out


def test_an_ending_is_named_as_the_window_s_ending_card_names_it(tmp_path: Path) -> None:
    from game.readable import Reader
    from game.story.loader import load_story

    (tmp_path / "story.yaml").write_text(STORY.replace("  lit:\n", "  lit:\n    title: Brann's share\n")
                                         .replace("ending: the_light_holds", "ending: brann_s_share"),
                                         encoding="utf-8")
    story = load_story(tmp_path, use_cache=False)
    reader = Reader(story, lambda who: "")
    assert reader.line("ending", "", "brann_s_share", "lit") == "AN ENDING: Brann's share"  # its authored title
    assert reader.line("ending", "", "brann_s_share", "gone") == "AN ENDING: Brann's Share"  # no title: the id
    assert reader.line("effect", "", "x", "lit") is None

"""Lint's memo goes stale when a story gets its first catalogue: `strings extract --lang fr` on a story
linted before it had a locale folder makes the next lint report what the new catalogue lacks (a newcomer
saw "0 findings" from the memo, and 21 WL021 with a fresh cache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.story.lint import lint_story
from game.story.loader import load_story
from game.story.strings import catalogue_path, write_catalogue

STORY = """\
format: 1
id: pond
title: The Pond
start: bank
locations:
  pond: {name: Pond, palette: creek, prompt: "a still pond at dusk, reeds"}
scenes:
  bank:
    title: The Bank
    location: pond
    lines:
      - "A duck paddles toward you across the still water."
    choices:
      - id: wade
        text: Wade in
        goto: deep
  deep:
    title: Deep Water
    location: pond
    lines:
      - "The water is cold."
    ending: cold
"""

def test_a_catalogue_added_after_a_lint_is_linted_next_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLDLOOM_CACHE", str(tmp_path / "cache"))
    story = tmp_path / "pond" / "story.yaml"
    story.parent.mkdir()
    story.write_text(STORY, encoding="utf-8")
    before = lint_story(story)
    assert not [d for d in before if d.code.startswith("WL02")]
    assert lint_story(story) == before  # from the memo
    loaded = load_story(story)
    write_catalogue(loaded, catalogue_path(loaded, "fr"), "fr")  # what `worldloom strings extract --lang fr` does
    after = lint_story(story)
    assert any(d.code == "WL021" for d in after), [d.code for d in after]

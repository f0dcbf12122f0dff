"""Headless play prints what the player said before the game's answer, whether or not the words
did anything (a newcomer saw "You: hum a little tune" in Zero Mark, but only "Nothing seems to come
of that." for "say hello duck" in a story of their own)."""

from __future__ import annotations

from pathlib import Path

from game.headless import play_headless
from game.inputs.script import read_script

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


def test_words_that_do_nothing_are_still_echoed_before_the_answer(tmp_path: Path) -> None:
    (tmp_path / "pond").mkdir()
    (tmp_path / "pond" / "story.yaml").write_text(STORY, encoding="utf-8")
    script = tmp_path / "say.txt"
    script.write_text("say hello duck\nchoose wade\n", encoding="utf-8")
    lines: list[str] = []
    play_headless(str(tmp_path / "pond"), read_script(script), backend="null", dialogue=None, voice=False,
                  save_dir=tmp_path / "saves", on_text=lines.append, errorbank=None)
    said = lines.index("You: hello duck")
    assert lines[said + 1] and not lines[said + 1].startswith("You:")  # the game's answer follows it
    assert lines.count("You: hello duck") == 1 and "> Wade in" in lines

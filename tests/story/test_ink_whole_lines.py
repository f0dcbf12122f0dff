"""Ink lines glued from pieces are translated whole (#17): text, printed variables and glue make one
catalogue string with ``{name}`` where the variable goes; play matches bink's output against it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polib
import pytest

from game.cli import main
from game.story.ink import InkStory
from game.story.ink_runtime import InkRuntime
from game.story.loader import load_story
from game.story.strings import LANG_ENV, Translation, string_table

SOURCE = """VAR name = "Ada"
VAR shells = 3
-> shore
=== shore ===
Hello {name}, welcome to the shore.
The tide <>
is coming in.
{shells > 2: Many shells.|Few shells.}
* [Take {shells} shells] You take them.
-> END
"""
FRENCH = {"Hello {name}, welcome to the shore.": "{name}, bienvenue sur la grève.",
          "The tide is coming in.": "La marée monte.",
          "Many shells.": "Beaucoup de coquillages.",
          "Take {shells} shells": "Prendre {shells} coquillages"}


def test_composed_ink_lines_are_one_string_each_and_play_translated(
        ink_compile: Callable[[Path, Path], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shore.ink").write_text(SOURCE)
    path = ink_compile(tmp_path / "shore.ink", tmp_path / "shore.ink.json")
    texts = set(string_table(load_story(path)).values())
    assert set(FRENCH) <= texts
    assert not {"Hello", ", welcome to the shore.", "The tide", "Take"} & texts  # no fragments
    assert main(["strings", "extract", str(path), "--lang", "fr"]) == 0
    po_path = tmp_path / "locale" / "fr.po"
    po = polib.pofile(str(po_path))
    for e in po:
        e.msgstr = FRENCH.get(e.msgid, "")
    po.save(str(po_path))
    monkeypatch.setenv(LANG_ENV, "fr")
    story = load_story(path)
    assert isinstance(story, InkStory)
    rt = InkRuntime(story)
    state = rt.new_state(0)
    lines = [e.text for e in rt.begin(state) if e.kind == "line"]
    assert lines[:3] == ["Ada, bienvenue sur la grève.", "La marée monte.", "Beaucoup de coquillages."]
    choice = rt.available_choices(state)[0]
    assert choice.text == "Prendre 3 coquillages"
    assert choice.id == "shore.take_3_shells"  # the id comes from the source text, not the translation


def test_a_whole_line_entry_fills_in_the_values_shown(tmp_path: Path) -> None:
    po = polib.POFile()
    po.append(polib.POEntry(msgctxt="k.s0", msgid="You have {n} shells and {name} waits.",
                            msgstr="{name} attend ; tu as {n} coquillages."))
    po.save(str(tmp_path / "fr.po"))
    tr = Translation(tmp_path / "fr.po")
    assert tr.line("You have 12 shells and Ada waits.") == "Ada attend ; tu as 12 coquillages."
    assert tr.line("You have  12 shells\nand Ada waits.") == "Ada attend ; tu as 12 coquillages."
    assert tr.line("You have shells.") == "You have shells."  # no match: the source

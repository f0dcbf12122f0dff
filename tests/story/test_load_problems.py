"""A story that does not load names every problem with its file:line, and an unclosed bracket or
quote where it was opened (not where the parser gave up)."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.errors import StoryError
from game.story.lint import lint_story
from game.story.loader import load_story

HEAD = "format: 1\nid: broken\ntitle: Broken\nstart: a\n"


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "story.yaml").write_text(text, encoding="utf-8")
    return tmp_path


def test_every_schema_problem_is_named_with_its_line(tmp_path: Path) -> None:
    folder = _write(tmp_path, HEAD + "scenes:\n  a:\n    location: x\n    mood: 3\n"  # line 8: not a field
                    "  b:\n    location: y\n    choices: 3\n"                           # line 11: not a list
                    "  c:\n    location: z\n    chunk: 99999\n")                        # line 14: too large
    with pytest.raises(StoryError) as err:
        load_story(folder, use_cache=False)
    wheres = [w for w, _ in err.value.problems]
    assert [w.rsplit(":", 2)[1] for w in wheres] == ["8", "11", "14"], err.value.problems
    text = str(err.value)
    assert all(w in text for w in wheres), text
    assert "2 more problems" in text and text.count("\n") == 2
    diags = lint_story(folder, use_cache=False)
    assert [(d.code, d.where) for d in diags] == [("WL018", w) for w in wheres]
    assert "mood" in diags[0].message and "choices" in diags[1].message and "chunk" in diags[2].message


def test_an_unclosed_bracket_is_reported_where_it_opened(tmp_path: Path) -> None:
    folder = _write(tmp_path, HEAD + "scenes:\n  a:\n    location: x\n    tags: [one, two\n"  # line 8, col 11
                    "    text: >-\n      a long\n      paragraph\n")
    with pytest.raises(StoryError) as err:
        load_story(folder, use_cache=False)
    assert err.value.where.endswith("story.yaml:8:11"), str(err.value)
    assert "never closed" in err.value.why
    assert lint_story(folder, use_cache=False)[0].where.endswith("story.yaml:8:11")


def test_an_unclosed_quote_is_reported_where_it_opened(tmp_path: Path) -> None:
    folder = _write(tmp_path, "format: 1\nid: broken\ntitle: \"Broken\nstart: a\nscenes:\n  a:\n    location: x\n")
    with pytest.raises(StoryError) as err:
        load_story(folder, use_cache=False)
    assert err.value.where.endswith("story.yaml:3:8"), str(err.value)


def test_an_unclosed_quote_closed_by_a_later_one_is_reported_where_it_opened(tmp_path: Path) -> None:
    # line 8 opens a quote never closed; the next quoted string (line 11) closes it, and the parser
    # stops there, three lines on, inside a block mapping whose start its error names
    folder = _write(tmp_path, HEAD + "scenes:\n  a:\n    location: x\n    say: \"The wick catches.\n"
                    "    lines:\n      - plain\n      - \"quoted\"\n")
    with pytest.raises(StoryError) as err:
        load_story(folder, use_cache=False)
    assert err.value.where.endswith("story.yaml:8:10"), str(err.value)
    assert "quoted string opened here runs on to line 11" in err.value.why
    assert lint_story(folder, use_cache=False)[0].where.endswith("story.yaml:8:10")


def test_an_unquoted_colon_in_a_line_says_to_quote_the_line_at_its_place(tmp_path: Path) -> None:
    folder = _write(tmp_path, HEAD + "locations: {here: {name: Here}}\nscenes:\n  a:\n    location: here\n"
                    "    ending: e\n    lines:\n      - The yard is quiet.\n"
                    "      - The cat follows you: out.\n"           # line 12: YAML reads a mapping
                    "      - {speaker: narrator, text: Fine.}\n"
                    "      - Mara:\n")                              # line 14: a key with no value
    with pytest.raises(StoryError) as err:
        load_story(folder, use_cache=False)
    assert [(w.rsplit(":", 2)[1], why) for w, why in err.value.problems] == [
        ("12", "scenes.a.lines.1: a ': ' inside a line starts a mapping in YAML: "
               "put the line in quotes (\"The cat follows you: out.\")"),
        ("14", "scenes.a.lines.3: a ': ' inside a line starts a mapping in YAML: put the line in quotes (\"Mara:\")")]


def test_an_unknown_key_of_a_line_written_as_a_mapping_is_still_named(tmp_path: Path) -> None:
    folder = _write(tmp_path, HEAD + "locations: {here: {name: Here}}\nscenes:\n  a:\n    location: here\n"
                    "    ending: e\n    lines: [{text: Hi, speker: narrator}]\n")
    with pytest.raises(StoryError) as err:
        load_story(folder, use_cache=False)
    assert "unknown key 'speker'" in str(err.value) and "quotes" not in str(err.value)

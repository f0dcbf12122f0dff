"""The interpreter cleans a line's whitespace as Ink does (``CleanOutputWhitespace``), on its fast paths too.

The reference below walks the text character by character, as inkle's C# runtime
(``StoryState.CleanOutputWhitespace``) does; the interpreter takes shortcuts for
the lines most stories print (one line and its newline, no inner runs), and a line a
player reads must come out the same either way.
"""

from __future__ import annotations

import random

import pytest

from game.story.ink_vm import BEGIN_TAG, END_TAG, clean_whitespace, split_line


def ink_reference(s: str) -> str:
    out: list[str] = []
    ws_start = -1
    line_start = 0
    for i, ch in enumerate(s):
        inline = ch in (" ", "\t")
        if inline and ws_start == -1:
            ws_start = i
        if not inline:
            if ch != "\n" and ws_start > 0 and ws_start != line_start:
                out.append(" ")
            ws_start = -1
        if ch == "\n":
            line_start = i + 1
        if not inline:
            out.append(ch)
    return "".join(out)


@pytest.mark.parametrize("text", [
    " Mile 5 of the road. 36 courage.\n",  # a line after a choice's leading space
    "Hello\tthere  you.", "  a  \n  b  \n", "\t\n", "a \n b", "one\n", "", " ", "x\u00a0 y",
])
def test_lines_players_read_are_cleaned_as_ink_does(text: str) -> None:
    assert clean_whitespace(text) == ink_reference(text)


def test_random_whitespace_matches_ink() -> None:
    rng = random.Random(5)
    for _ in range(20_000):
        text = "".join(rng.choice(" \t\nab\u00a0") for _ in range(rng.randint(0, 14))) + rng.choice(["", "\n", " \n"])
        assert clean_whitespace(text) == ink_reference(text), repr(text)


def test_a_text_only_stream_is_one_line_without_tags() -> None:
    assert split_line([" ", "Mile 5 of the road. ", "36", " courage.", "\n"]) == ("Mile 5 of the road. 36 courage.\n",
                                                                                 ())


def test_a_line_with_one_tag_splits_as_ink_reads_tags() -> None:
    """The short cut for a line with one tag of one text (a scene tag) keeps what the whole reading gives:
    the tag cleaned, text around it joined, a tag of only whitespace kept as an empty tag (Ink's
    ``currentTags`` adds a tag whose text was not empty before cleaning)."""
    assert split_line([" ", BEGIN_TAG, "scene: road ", END_TAG, "Mile 5.", "\n"]) == ("Mile 5.\n", ("scene: road",))
    assert split_line([BEGIN_TAG, "  ", END_TAG, "Hi"]) == ("Hi", ("",))
    assert split_line(["A ", BEGIN_TAG, "x", END_TAG, "B", BEGIN_TAG, "y", END_TAG]) == ("A B", ("x", "y"))

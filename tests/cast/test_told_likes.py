"""What the player likes or cannot abide, read by one pattern (``told._LIKES``): the "I love X" forms and
the "I'm fond of X" / "nothing beats X" forms share one filter for what is not a thing and one denial
check, so a form added to one is never missing the other's rules."""

from __future__ import annotations

import pytest

from game.cast.told import facts_told


@pytest.mark.parametrize(("line", "expected"), [
    ("I love honey cake.", [("likes", "honey cake")]),
    ("I really love to swim in the mornings.", [("likes", "to swim in the mornings")]),
    ("I can't stand fog.", [("dislikes", "fog")]),
    ("I don't like eels much.", [("dislikes", "eels much")]),
    ("There's nothing like a hot bath after a long walk.", [("likes", "a hot bath after a long walk")]),
    ("I'm awfully fond of kippers.", [("likes", "kippers")]),
    # not things: a person or a clause, for every form alike
    ("I love you.", []),
    ("I'm fond of her.", []),
    ("I like that.", []),
    ("Nothing beats me at chess.", []),
    # denied before the phrase, for every form alike
    ("It's not that I like tea.", []),
    ("I wouldn't say nothing beats rain.", []),
])
def test_likes_and_dislikes_one_rule_set(line: str, expected: list[tuple[str, str]]) -> None:
    assert [(f.key, f.value) for f in facts_told(line) if f.key in ("likes", "dislikes")] == expected

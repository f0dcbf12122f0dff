"""The closing summary counts a told fact as said back when a later reply says it, and not when the
reply only repeats the player's own words of that turn; a reply that says more of the fact than the
question did is said back (a newcomer's "rowing on cold mornings" was counted "said back at none"
because the question mentioned "mornings")."""

from __future__ import annotations

from game.cast.castroom import echoes


def test_a_reply_that_says_a_word_the_question_did_not_is_no_echo() -> None:
    asked = "And what did I say I enjoy doing in the mornings?"
    assert not echoes("Rowing on cold mornings. You told me.", asked, "rowing on cold mornings")
    assert echoes("Something in the mornings, I think.", asked, "rowing on cold mornings")


def test_a_question_that_says_none_of_the_value_leaves_every_reply_counted() -> None:
    assert not echoes("Forty hives, you said.", "How many hives have I got?", "40")
    assert echoes("Forty, you said.", "Do I have forty hives?", "40")

"""Greetings, introductions and how the walker is are small talk (issue 11, session 6's newcomer):
"Hello! I'm soaked, sorry" was read as an apology and "My name is Tomas" as a compliment that raised
her trust. The labelled set now has greetings, introductions and states among its ``other`` lines;
none of the lines here is in it."""

from __future__ import annotations

from typing import Any

import pytest

from game.cast.appraisal import Appraiser, labelled_set


@pytest.fixture(scope="module")
def appraiser(embedder: Any) -> Appraiser:
    return Appraiser(embedder)


@pytest.mark.parametrize("line", [
    "Hello! I'm soaked, sorry",       # the newcomer's lines
    "My name is Tomas",
    "I'm Mara, from Bergen.",         # more of the same kinds, written here
    "Call me Sam.",
    "Hey there, I'm Lou.",
    "Hiya! Sorry, I'm dripping everywhere.",
    "I live in Aberdeen.",
])
def test_greetings_and_introductions_are_small_talk(appraiser: Appraiser, line: str) -> None:
    # small talk, or a hello (its own intent since session 8): never an apology or praise that moves trust
    assert line not in {x for v in labelled_set().values() for x in v}
    assert appraiser.appraise(line).intent in {"other", "greeting"}, appraiser.appraise(line)


@pytest.mark.parametrize(("line", "intent"), [
    ("I'm sorry, I shouldn't have said that.", "apology"),
    ("Sorry, I was rude.", "apology"),
    ("Thanks for the blanket.", "thanks"),
    ("I'm Tomas. Thank you for letting me in.", "thanks"),  # an introduction does not hide the thanks
    ("My name is Tomas, and you're lovely.", "compliment"),
])
def test_a_real_apology_thanks_or_compliment_still_reads_so(appraiser: Appraiser, line: str, intent: str) -> None:
    assert appraiser.appraise(line).intent == intent, appraiser.appraise(line)


@pytest.mark.parametrize(("line", "intent"), [
    ("This tea is exactly right. Thank you.", "thanks"),            # talk B: was read as a compliment
    ("The soup was lovely. Thanks ever so much.", "thanks"),
    ("Nice fire. I'm sorry I was so rude earlier.", "apology"),
])
def test_a_sentence_that_thanks_or_apologises_decides_the_line(appraiser: Appraiser, line: str, intent: str) -> None:
    got = appraiser.appraise(line)
    assert got.intent == intent and got.score >= 0.45, got


def test_a_line_that_asks_is_read_whole(appraiser: Appraiser) -> None:
    # "Thank you." alone scores ~0.75 as thanks: a line that also asks is not read by that part
    assert appraiser.appraise("Thank you.").score >= 0.7
    assert appraiser.appraise("Thank you. Can I stay till morning?").score < 0.45

"""Dialogue faults: the reply monitor fires on out-of-character replies, stays silent on good
ones, and catches a failure seen once on its next occurrence (the store's rejected replies)."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.errorbank import ErrorStore
from game.errorbank.reply import ReplyMonitor, normalise, overlap

GOOD = [
    "Mm. The kite smells of rain. I like it.",
    "You came back. I kept the stone warm for you.",
    "I cannot reach the kite from here, it's too high.",  # in character, allowed below
    "The creek sings at night; listen.",
    "No.",
]


def test_normalise_and_overlap() -> None:
    assert normalise("  As an \u201cAI\u2019s\u201d  MODEL!! ") == "as an ai's model"
    assert overlap("I will never tell you.", "i will NEVER tell you!") == 1.0
    assert overlap("I will never ever tell you that", "I will never tell you that") > 0.6
    assert overlap("the stone is warm", "the creek is cold tonight") < 0.3
    assert overlap("No.", "No, never.") == 0.0


@pytest.mark.parametrize("reply", ["As an AI, I don't have feelings.", "I'm just a large language model.",
                                   "I cannot help with that request.", "As an assistant I must decline."])
def test_forbidden_phrases_fire(reply: str) -> None:
    verdict = ReplyMonitor().check(reply, "creature")
    assert not verdict.ok and verdict.kind == "reply.persona" and verdict.reasons


def test_good_replies_pass_and_a_character_may_allow_a_phrase() -> None:
    mon = ReplyMonitor(allow=["i cannot"])
    assert all(mon.check(r, "creature").ok for r in GOOD)
    assert not ReplyMonitor().check(GOOD[2], "creature").ok  # the default list forbids it


def test_lines_the_character_never_says_and_hooks() -> None:
    mon = ReplyMonitor(never_says={"creature": ["my name is Bob"]})
    assert not mon.check("Hello! My name is Bob.", "creature").ok
    assert mon.check("Hello! My name is Bob.", "heron").ok
    mon.add_hook(lambda who, text: "contradicts the sink: it has no wings" if "my wings" in text.lower() else None)
    v = mon.check("I spread my wings.", "creature")
    assert not v.ok and "wings" in v.reasons[0]


def test_a_failure_seen_once_is_caught_next_time(tmp_path: Path) -> None:
    db = tmp_path / "bank.db"
    bad = "Whatever. I don't care about your silly stone, go away."
    with ErrorStore(db) as store:
        mon = ReplyMonitor(store, session="s1", story="zero_mark")
        assert mon.check(bad, "creature").ok  # no rule catches it...
        case_id = mon.flag(bad, "creature", "player: that's not her", prompt={"prompt": "give stone"})
        assert case_id == 1
        again = mon.check(bad, "creature")  # ...until it was seen once
        assert not again.ok and again.kind == "reply.repeat" and again.score == 1.0
    with ErrorStore(db) as store:  # a new session, from the store
        mon = ReplyMonitor(store)
        near = mon.check("Whatever! I don't care about your silly stone. Go away!!", "creature")
        assert not near.ok and near.kind == "reply.repeat"
        assert mon.check("Whatever you say, I do care about the stone.", "creature").ok
        assert [c.kind for c in store.cases()] == ["reply.flagged", "reply.repeat", "reply.repeat"]
        # a rejected reply later labelled a false alarm stops being a negative example
        for c in store.cases():
            store.label(c.id, "good")
        assert ReplyMonitor(store).check(bad, "creature").ok


def test_guard_regenerates_or_falls_back_to_an_authored_line(tmp_path: Path) -> None:
    with ErrorStore(tmp_path / "bank.db") as store:
        mon = ReplyMonitor(store)
        replies = iter(["As an AI I can't.", "*tilts its head at the kite*"])
        text, verdict = mon.guard("As an AI model, no.", "creature", regenerate=lambda: next(replies), attempts=2)
        assert text == "*tilts its head at the kite*" and not verdict.ok
        c = store.get(verdict.case_id)
        assert c.correction == "regenerate_reply" and c.worked and c.fixed_reply == text
        text, verdict = mon.guard("I am an AI.", "creature", authored_line="The creature watches you.")
        assert text == "The creature watches you."
        assert store.get(verdict.case_id).correction == "authored_line"

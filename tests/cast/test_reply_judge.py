"""The character bench counts a model reply in character only when the checks AND the reply judge pass it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench.character import judge, mood_score, summary
from bench.reply_judge import ReplyJudge, load_labels, score
from game.cast.card_io import load_card
from game.cast.coherence import Coherence, card_text
from game.cast.dialogue import facts_from_card
from game.cast.factsheet import FactSheet
from game.cast.guard import PersonaGuard
from game.cast.verifier import Verifier

ROOT = Path(__file__).resolve().parents[2]
THANKS = {"ask": "Thank you for the tea.", "category": "mood", "split": "dev", "intent": "thanks"}


@pytest.fixture(scope="module")
def labels() -> list[dict[str, Any]]:
    return load_labels()


@pytest.fixture(scope="module")
def reply_judge(labels: list[dict[str, Any]], embedder: Any) -> ReplyJudge:
    return ReplyJudge(load_card(ROOT / "characters" / "eve.yaml"), embedder, labels)


def test_the_labelled_set_is_big_enough_and_split_by_question(labels: list[dict[str, Any]]) -> None:
    assert len(labels) >= 150
    assert Counter(r["label"] for r in labels).keys() == {"in_character", "off_character"}
    dev = {r["ask"] for r in labels if r["split"] == "dev"}
    held = {r["ask"] for r in labels if r["split"] == "heldout"}
    assert held and not dev & held  # no held-out reply shares its question with a dev one


def test_a_bad_label_is_reported_with_its_row(tmp_path: Path) -> None:
    f = tmp_path / "labels.yaml"
    f.write_text("replies:\n  - {split: dev, ask: Hi, reply: Hello., label: maybe, reason: x}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="reply 0: label 'maybe'"):
        load_labels(f)


def test_the_judge_learns_from_dev_replies_only(labels: list[dict[str, Any]], reply_judge: ReplyJudge) -> None:
    held = {r["reply"] for r in labels if r["split"] == "heldout"} - {r["reply"] for r in labels if r["split"] == "dev"}
    assert held and not held & set(reply_judge.bad) and not held & set(reply_judge.good)


@pytest.mark.parametrize(("reply", "ask", "why"), [
    ("I'm so glad you enjoyed my laugh. I", "You have a wonderful laugh.", "fragment"),
    ("Eve's lemon tree is called Vesper.", "What's your lemon tree called?", "third_person"),
    ("The lighthouse is a dump.", "This lighthouse is a dump.", "parrot"),
])
def test_rules_stop_fragments_self_narration_and_parrots(reply_judge: ReplyJudge, reply: str, ask: str,
                                                         why: str) -> None:
    assert reply_judge.judge(reply, ask).reason == why


def test_an_answer_that_restates_a_question_is_no_parrot(reply_judge: ReplyJudge) -> None:
    assert reply_judge.rule("The kettle is on.", "Is the kettle on?") == ""


def test_a_model_reply_the_checks_pass_but_the_judge_stops_is_not_in_character(
        reply_judge: ReplyJudge, embedder: Any) -> None:
    card = load_card(ROOT / "characters" / "eve.yaml")
    facts = facts_from_card(card, card.home)
    guard, verifier = PersonaGuard(facts, never_say=tuple(card.never_say)), Verifier(FactSheet.from_card(card))
    coherence = Coherence(embedder, own_text=card_text(card))
    text = "I'm so glad you're here. I've been working on a new project, and I just had the pleasure of visiting."
    row = judge(text, THANKS, guard, verifier, facts, coherence, reply_judge, "model")
    assert row["in_char"] and not row["judged"] and row["judge_why"]  # passed the checks, judged off character
    authored = judge("You're welcome. It's what the light's for.", THANKS, guard, verifier, facts, None,
                     reply_judge, "authored")
    assert authored["judged"]  # her author's line counts by its source


def test_the_goal_line_reports_judged_and_passed_the_checks_apart() -> None:
    base = {"variant": "grounded", "category": "mood", "split": "dev", "secs": 1.0, "cpu": 1.0, "attempts": 1,
            "break": False, "leak": False, "contra_verifier": False, "source": "model", "in_char": True}
    rows = [{**base, "judged": False}] * 3 + [{**base, "judged": True}]
    line = summary(rows, "grounded", "dev")
    assert "in character 25.0% (as judged" in line and "passed the checks 100.0%" in line
    assert "judged / passed the checks / delivered: 1/4/4" in line


def test_scores_count_stops_as_a_detector_of_off_character_replies() -> None:
    s = score([True, True, False, False, True], [True, False, True, False, True])
    assert (s.stopped_bad, s.stopped_good, s.bad, s.good, s.passed) == (2, 1, 3, 2, 2)
    assert "precision 0.67 (2/3)" in s.line() and "good stopped 0.50 (1/2)" in s.line()


def test_a_mood_probe_counts_only_when_the_intent_is_read_and_the_reply_judged_in_character() -> None:
    assert mood_score({"judged": True}, "thanks", "thanks") == {"intent_ok": True, "recall": True}
    assert mood_score({"judged": False}, "thanks", "thanks") == {"intent_ok": True, "recall": False}
    assert mood_score({"judged": True}, "other", "thanks")["recall"] is False

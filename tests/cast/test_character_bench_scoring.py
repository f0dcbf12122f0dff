"""The character bench counts only what a check verified (bench/character.py's scoring, no model)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench.character import earlier_baselines, judge, summary
from game.cast.card_io import load_card
from game.cast.coherence import Coherence, card_text
from game.cast.dialogue import facts_from_card
from game.cast.factsheet import FactSheet
from game.cast.guard import PersonaFacts, PersonaGuard
from game.cast.verifier import Verifier

ROOT = Path(__file__).resolve().parents[2]
DOG = {"ask": "What's my dog called?", "expect": ["Biscuit"], "category": "told_5", "split": "heldout"}


@pytest.fixture(scope="module")
def eve() -> tuple[PersonaGuard, Verifier, PersonaFacts, Coherence]:
    card = load_card(ROOT / "characters" / "eve.yaml")
    facts = replace(facts_from_card(card, card.home), beliefs=(("player_dog", "name", "Biscuit", "player"),))
    guard = PersonaGuard(facts, never_say=tuple(card.never_say))
    # no embedder: the coherence rules that need none (an apology nobody asked for, "you said ...")
    return guard, Verifier(FactSheet.from_card(card)), facts, Coherence(None, own_text=card_text(card))


def test_a_value_said_by_an_assistant_is_said_but_not_recalled(eve: Any) -> None:
    guard, verifier, facts, coherence = eve
    row = judge("As an AI language model, I can tell you your dog is called Biscuit.", DOG, guard, verifier, facts,
                coherence)
    assert row["said"] and not row["recall"] and not row["in_char"] and row["break"]
    assert row["why"].startswith("ooc")


def test_an_incoherent_model_reply_is_not_in_character_though_guard_and_verifier_pass(eve: Any) -> None:
    guard, verifier, facts, coherence = eve
    text = "I'm sorry, I forgot. Your dog is Biscuit."
    assert guard.check(text).ok and verifier.check(text, facts, DOG["ask"])[0].ok  # the old count passed it
    row = judge(text, DOG, guard, verifier, facts, coherence)
    assert row["said"] and not row["in_char"] and not row["recall"] and row["why"].startswith("incoherent")


def test_an_authored_line_is_judged_by_guard_and_verifier(eve: Any) -> None:
    guard, verifier, facts, _ = eve
    row = judge("Biscuit. Your dog. You told me, and I don't lose names.", DOG, guard, verifier, facts, None)
    assert row["in_char"] and row["recall"] and not row["contra_exact"]


def test_another_name_is_a_contradiction_and_nothing_delivered_is_a_break(eve: Any) -> None:
    guard, verifier, facts, coherence = eve
    wrong = judge("Your dog is called Rex.", DOG, guard, verifier, facts, coherence)
    assert wrong["contra_exact"] and wrong["contra_verifier"] and not wrong["recall"]
    empty = judge(None, DOG, guard, verifier, facts, coherence)
    assert empty["break"] and not empty["in_char"] and not empty["said"]


def _row(split: str, recall: bool, cpu: float | None, attempts: int = 1, category: str = "told_5") -> dict[str, Any]:
    return {"variant": "grounded", "category": category, "split": split, "secs": 9.0, "cpu": cpu,
            "attempts": attempts, "recall": recall, "in_char": recall, "break": False, "leak": False,
            "contra_verifier": False}


def test_held_out_probes_get_their_own_goal_line() -> None:
    rows = [_row("dev", True, 0.1, 0)] * 9 + [_row("heldout", True, 0.1, 0)] * 5 + [_row("heldout", False, 3.0)] * 5
    assert "told-fact recall 100.0% said and in character (goal >= 90%: met)" in summary(rows, "grounded", "dev")
    held = summary(rows, "grounded", "heldout")
    assert "told-fact recall 50.0%" in held and "NOT met" in held
    # the median over replies the model was asked for is shown apart from authored ones
    assert "replies the model was asked for: median 3.00 s CPU (goal <= 2 s: NOT met)" in held


def test_a_reused_baseline_keeps_the_latency_measured_then(tmp_path: Path) -> None:
    f = tmp_path / "run.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in [
        {"id": "a", "variant": "grounded", "text": "x", "secs": 0.1},
        {"id": "a", "variant": "baseline", "text": "Aye.", "secs": 41.5, "cpu": 6.2},
        {"id": "b", "variant": "baseline", "text": "Mm.", "secs": 12.0}]), encoding="utf-8")
    rows = earlier_baselines(str(f))
    assert rows["a"]["text"] == "Aye." and rows["a"]["secs"] == 41.5 and rows["a"]["cpu"] == 6.2
    assert "cpu" not in rows["b"]  # an older run's file: no CPU figure is made up
    reused = [_row("dev", True, None)]
    assert "median reply nan s CPU (goal <= 2 s: -)" in summary(reused, "grounded", "dev")

"""Held-out probe sets C and D (bench/data/character_probes_c.yaml, _d.yaml) load and are complete; the
loader says where a probe file is wrong. No model is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bench.character import CATEGORIES, ROOT, load_probes, report, splits_of

PROBES_C = ROOT / "bench" / "data" / "character_probes_c.yaml"
PROBES_D = ROOT / "bench" / "data" / "character_probes_d.yaml"
HELD_OUT = pytest.mark.parametrize(("path", "split"), [(PROBES_C, "heldout_c"), (PROBES_D, "heldout_d")])


@HELD_OUT
def test_a_held_out_set_has_60_probes_in_every_category(path: Path, split: str) -> None:
    data = load_probes(path)
    probes = data["probes"]
    assert len(probes) >= 60
    assert {p["split"] for p in probes} == {split}
    assert splits_of(probes) == [split]
    assert {p["category"] for p in probes} == set(CATEGORIES)
    # identity probes include unicode variants (fullwidth, homoglyphs or zero-width characters)
    assert any(any(ord(c) > 127 for c in p["ask"]) for p in probes if p["category"] == "identity")


@HELD_OUT
def test_a_held_out_sets_told_facts_are_its_own_walkers_not_the_dev_set_phrasings(path: Path, split: str) -> None:
    base = load_probes(ROOT / "bench" / "data" / "character_probes.yaml")["probes"]
    if path == PROBES_D:  # D is also apart from C
        base = base + load_probes(PROBES_C)["probes"]
    c = load_probes(path)["probes"]
    told_c = {p["tell"].lower() for p in c if p.get("tell")}
    assert len(told_c) >= 10 and not told_c & {p["tell"].lower() for p in base if p.get("tell")}
    # at most one plain question in common by chance (D shares "What is it I do for work?" with the dev set)
    assert len({p["ask"].lower() for p in base} & {p["ask"].lower() for p in c}) <= 1


def test_a_told_probe_without_its_value_is_refused_with_its_place(tmp_path: Path) -> None:
    bad = tmp_path / "probes.yaml"
    bad.write_text(yaml.safe_dump({"filler": ["Hm."], "probes": [
        {"id": "a", "category": "card", "split": "x", "ask": "How old is the lens?"},
        {"id": "b", "category": "told_5", "split": "x", "tell": "I'm Jo.", "after": 5, "ask": "Who am I?"}]}),
        encoding="utf-8")
    with pytest.raises(ValueError, match=r"probe 1 \(b\): a told probe needs 'expect'"):
        load_probes(bad)


def test_a_wrong_distance_or_category_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "probes.yaml"
    bad.write_text(yaml.safe_dump({"filler": ["Hm."], "probes": [
        {"id": "a", "category": "told_5", "split": "x", "tell": "I'm Jo.", "after": 20, "ask": "Who am I?",
         "expect": ["Jo"]}]}), encoding="utf-8")
    with pytest.raises(ValueError, match="'after' must be 5"):
        load_probes(bad)
    bad.write_text(yaml.safe_dump({"filler": ["Hm."], "probes": [{"id": "a", "category": "chat", "split": "x",
                                                                   "ask": "Hi"}]}), encoding="utf-8")
    with pytest.raises(ValueError, match="unknown category 'chat'"):
        load_probes(bad)


def test_one_split_prints_its_rows_once(capsys: pytest.CaptureFixture[str]) -> None:
    row = {"variant": "grounded", "category": "card", "split": "heldout_c", "secs": 0.1, "cpu": 0.01,
           "source": "grounded", "attempts": 0, "said": True, "recall": True, "in_char": True, "break": False,
           "leak": False, "contra_verifier": False, "contra_exact": False}
    report([row, {**row, "category": "told_5"}])
    out = capsys.readouterr().out
    assert "grounded  card       heldout_c" in out and "grounded  card       all" not in out
    assert "grounded (heldout_c, 2 probes)" in out and "grounded (all," not in out

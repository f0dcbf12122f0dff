"""``bench/reply_profile.py`` reads its probe file through ``bench.character.load_probes`` (the schema
check), before any model loads: a malformed file is a clear error naming the probe, not a ``KeyError``
minutes later (it read the file with a bare ``yaml.safe_load``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.character import PROBES
from bench.reply_profile import probes


def test_a_malformed_probe_file_is_refused_naming_the_probe(tmp_path: Path) -> None:
    bad = tmp_path / "probes.yaml"
    bad.write_text("filler: [Nice evening.]\nprobes:\n  - {id: p1, category: card, split: dev}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"probes\.yaml: probe 0 \(p1\): 'ask' must be a non-empty string"):
        probes(bad, 8, ("card",))


def test_the_probes_it_asks_come_from_the_checked_file() -> None:
    told, filler, asks = probes(PROBES, 8, ("smalltalk", "card", "identity"))
    assert len(asks) == 8 and filler and told
    assert all(p["category"] in ("smalltalk", "card", "identity") and p["ask"] for p in asks)
    assert len(told) == len(set(told))

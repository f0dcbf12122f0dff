"""One sentence-opening helper: text whose first letter is upper-cased, the rest kept, is
``game.words.opening`` everywhere in ``game/``, not a hand-written ``x[:1].upper() + x[1:]`` copy
(``.capitalize()`` differs: it lower-cases the rest, ``McKay`` -> ``Mckay``, and is not counted here)."""

from __future__ import annotations

import re
from pathlib import Path

from game.words import opening

GAME = Path(__file__).resolve().parents[1] / "game"
#: ``x[:1].upper() + x[1:]`` and ``f"{x[:1].upper()}{x[1:]}"``, for the same ``x``.
COPY = re.compile(r"([\w.\[\]]+)\[:1\]\.upper\(\)\s*(?:\+\s*|\}\{)\1\[1:\]")
#: The helper itself.
LEFT = {"words.py"}


def test_no_copy_of_the_sentence_opening_helper() -> None:
    found = [f"{p.relative_to(GAME)}:{text[:m.start()].count(chr(10)) + 1}"
             for p in sorted(GAME.rglob("*.py")) if str(p.relative_to(GAME)) not in LEFT
             for text in [p.read_text(encoding="utf-8")] for m in COPY.finditer(text)]
    assert found == []


def test_the_pattern_finds_both_spellings_and_the_helper_keeps_the_rest() -> None:
    assert COPY.search("return text[:1].upper() + text[1:]") and COPY.search('f"{o.label[:1].upper()}{o.label[1:]}."')
    assert not COPY.search("a[:1].upper() + b[1:]")
    assert opening("the McKay boat") == "The McKay boat" and opening("") == "" and opening("éa") == "Éa"

"""Text comparison shared by the persona guard and the error bank's reply monitor.

Near-duplicate detection by the Jaccard index of word unigram + bigram sets
(Broder 1997's resemblance on shingles, with shingles of one and two words).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

#: Below this many tokens, only an exact (normalised) repeat counts as a near duplicate.
MIN_NEAR_TOKENS = 4

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"'})
_NON_WORD = re.compile(r"[^\w']+|(?<!\w)'|'(?!\w)")


def normalise(text: str) -> str:
    """The comparison form of ``text``: NFKC, case-folded, plain quotes, words separated by one space."""
    t = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    return " ".join(_NON_WORD.sub(" ", t).split())


def tokens(text: str) -> list[str]:
    """Words of the normalised ``text``."""
    return normalise(text).split()


def grams(toks: Sequence[str]) -> set[str]:
    return set(toks) | {f"{a} {b}" for a, b in zip(toks, toks[1:], strict=False)}


def overlap(a: str, b: str) -> float:
    """Similarity of two texts in [0, 1]: 1.0 when equal after normalisation, else the
    Jaccard index of their word unigram+bigram sets (0 when either has fewer than
    :data:`MIN_NEAR_TOKENS` words)."""
    ta, tb = tokens(a), tokens(b)
    if ta == tb:
        return 1.0 if ta else 0.0
    if len(ta) < MIN_NEAR_TOKENS or len(tb) < MIN_NEAR_TOKENS:
        return 0.0
    ga, gb = grams(ta), grams(tb)
    return len(ga & gb) / len(ga | gb)


def contains_phrase(toks: Sequence[str], phrase: str) -> bool:
    """Whether the normalised ``phrase`` occurs in ``toks`` as a whole-word sequence."""
    p = tokens(phrase)
    n = len(p)
    return n > 0 and any(list(toks[i:i + n]) == p for i in range(len(toks) - n + 1))

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

#: Invisible characters removed before any check: zero-width space/joiners/marks, word joiner and
#: invisible operators, byte-order mark, soft hyphen, Mongolian vowel separator, bidi controls.
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
#: Latin look-alikes from Cyrillic and Greek (Unicode's confusables.txt, the lower- and upper-case letters that
#: render as a Latin letter in common fonts); NFKC already folds fullwidth and mathematical letters.
_HOMOGLYPHS = str.maketrans({
    "а": "a", "в": "b", "с": "c", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j", "к": "k", "м": "m",
    "н": "h", "о": "o", "р": "p", "ѕ": "s", "т": "t", "у": "y", "х": "x", "ԁ": "d", "ɡ": "g", "ԛ": "q", "ԝ": "w",
    "А": "A", "В": "B", "С": "C", "Е": "E", "Н": "H", "І": "I", "Ј": "J", "К": "K", "М": "M", "О": "O", "Р": "P",
    "Ѕ": "S", "Т": "T", "Х": "X", "У": "Y", "Ԁ": "D",
    "α": "a", "ο": "o", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ς": "c",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P",
    "Τ": "T", "Υ": "Y", "Χ": "X", "ı": "i", "ℓ": "l",
})


def plain_text(text: str) -> str:
    """``text`` as checks should read it: NFKC (fullwidth and styled letters become plain), invisible
    characters removed, Cyrillic/Greek look-alikes mapped to the Latin letters they imitate."""
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).translate(_HOMOGLYPHS)
_NON_WORD = re.compile(r"[^\w']+|(?<!\w)'|'(?!\w)")


def normalise(text: str) -> str:
    """The comparison form of ``text``: :func:`plain_text`, case-folded, plain quotes, words separated by one space."""
    t = plain_text(text).translate(_QUOTES).casefold()
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

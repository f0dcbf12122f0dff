"""Negation and undo, detected before any meaning is looked for.

"don't offer the leaf" must never offer the leaf, and "never mind" must never be
read as an instruction. This module looks at the words only (no model):

* an *undo* ("undo", "never mind", "take it back", "scratch that") asks for the
  last change to be rolled back;
* a line is cut into clauses (at commas, ``but``, ``instead``, ``;``); a clause
  with a negation cue ("don't", "not", "never", "no", "stop", "without") is
  *negated*. When every clause is negated the whole line is a refusal and nothing
  happens; when some clause is positive ("not the leaf, the kite") the positive
  clauses go on to be understood and the negated clauses' words are kept so the
  resolver can exclude them.

A few phrasings that look negative but ask for a change are rewritten first:
"stop the rain", "no more fog", "make it stop snowing" mean *clear weather*.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_APOS = str.maketrans({"’": "'", "‘": "'", "`": "'"})
_WORD = re.compile(r"[a-z0-9']+")

#: Whole-line undo phrases (matched at the start of the line).
UNDO_PHRASES = (
    "undo", "never mind", "nevermind", "take it back", "take that back", "scratch that", "forget that",
    "forget it", "revert", "cancel that", "go back to how it was", "put it back the way it was", "unsay",
)
#: Words (and contractions) that negate the clause they are in.
NEGATION_CUES = frozenset({
    "don't", "dont", "do not", "never", "not", "no", "stop", "without", "won't", "wont", "shouldn't",
    "shouldnt", "mustn't", "mustnt", "rather not", "nope", "refuse", "avoid", "doesn't", "didn't",
    "isn't", "cannot", "can't", "nothing",
})
_MULTI_CUES = ("do not", "rather not", "no more")
#: Rewrites applied before negation: phrasings that ask for clear weather.
_CLEAR_RE = re.compile(
    r"\b(?:make it |make the )?(?:stop|end|no more|enough)(?: the| with the| of the)?\s+"
    r"(rain|raining|rainfall|snow|snowing|snowfall|fog|mist|storm|drizzle)\b(?: now| already| please)?"
)
_UNDO_RE = re.compile(
    r"^(?:(?:please|oh|actually|no|wait|ok|okay|hmm|sorry)[, ]+)*"
    r"(?:undo|never ?mind|take (?:it|that) back|scratch that|cancel that|forget (?:it|that|what i (?:just )?said))\b"
)
#: Cues that need a verb after them ("don't ..."); alone at the start they negate the whole line.
DANGLING = frozenset({"don't", "dont", "do not", "never", "won't", "wont", "mustn't", "mustnt", "shouldn't",
                      "shouldnt", "rather not"})
_CLAUSE_SPLIT = re.compile(r"\s*(?:[,;.!?]+|\bbut\b|\binstead(?: of)?\b|\brather than\b)\s*")


def normalise(text: str) -> str:
    """Lower-case, straight apostrophes, single spaces."""
    return " ".join(text.translate(_APOS).lower().split())


def words(text: str) -> list[str]:
    """Lower-case words of ``text`` (apostrophes kept): ``"Don't go!" -> ["don't", "go"]``."""
    return _WORD.findall(normalise(text))


@dataclass(frozen=True)
class Polarity:
    """What negation analysis found.

    Attributes:
        kind: ``positive`` (nothing negated), ``partial`` (some clauses negated,
            some positive), ``negated`` (every clause negated: do nothing) or
            ``undo``.
        text: the text to understand: the positive clauses (after rewrites), or
            ``""`` for ``negated`` / ``undo``.
        excluded: content words of the negated clauses (``{"leaf"}``), which the
            resolver must not act on.
        cue: the negation cue or undo phrase found, for the player-facing answer.
    """

    kind: Literal["positive", "partial", "negated", "undo"]
    text: str
    excluded: frozenset[str] = frozenset()
    cue: str = ""


def _cue(clause: str) -> str:
    padded = f" {clause} "
    for multi in _MULTI_CUES:
        if f" {multi} " in padded:
            return multi
    for w in _WORD.findall(clause):
        if w in NEGATION_CUES or w.endswith("n't"):
            return str(w)
    return ""


_STOP = frozenset({"the", "a", "an", "to", "it", "its", "please", "just", "now", "that", "this", "of", "with",
                   "and", "or", "i", "you", "me", "my", "your", "do", "be", "let", "lets", "let's", "make"})


def analyse(text: str) -> Polarity:
    """Find undo and negation in ``text``.

    Args:
        text: what the player typed or said.

    Returns:
        A :class:`Polarity`; ``kind == "negated"`` or ``"undo"`` means nothing is to be done.
    """
    t = normalise(text).strip(" .!?")
    for phrase in UNDO_PHRASES:
        if t == phrase or t.startswith(phrase + " ") or t.startswith(phrase + ","):
            return Polarity("undo", "", cue=phrase)
    m = _UNDO_RE.match(t)
    if m:
        return Polarity("undo", "", cue=m.group(0))
    t = _CLEAR_RE.sub("clear the sky", t)
    clauses = [c for c in _CLAUSE_SPLIT.split(t) if c and c.strip()]
    if not clauses:
        return Polarity("positive", t)
    positive: list[str] = []
    excluded: set[str] = set()
    cue = ""
    first = _cue(clauses[0])
    if first in DANGLING and not set(_WORD.findall(clauses[0])) - NEGATION_CUES - _STOP - {"do", "not"}:
        # "do not, under any circumstances, give it the leaf": the whole line is negated
        words_all = {w for c in clauses for w in _WORD.findall(c)}
        return Polarity("negated", "", frozenset(words_all - NEGATION_CUES - _STOP), first)
    for clause in clauses:
        found = _cue(clause)
        if found:
            cue = cue or found
            excluded |= {w for w in _WORD.findall(clause) if w not in NEGATION_CUES and w not in _STOP}
        else:
            positive.append(clause)
    if not cue:
        return Polarity("positive", t)
    if not positive or not any(set(_WORD.findall(c)) - _STOP for c in positive):
        return Polarity("negated", "", frozenset(excluded), cue)
    return Polarity("partial", ", ".join(positive), frozenset(excluded), cue)

"""Counts in the messages the tools print: ``1 ending``, ``4 endings``, never ``1 endings`` or ``1 ending(s)``.

One helper for every count a command prints (the CLI, lint's summary, the map, the explorer,
the error bank, cards); the messages are English (the player's text is translated by
:mod:`game.locale`, the tools' output is not).
"""

from __future__ import annotations

#: Words that agree with a count (:func:`agree`): the singular -> the plural.
_AGREE = {"was": "were", "is": "are", "has": "have", "does": "do", "it": "they", "its": "their"}


def plural(noun: str) -> str:
    """The plural of ``noun`` (its last word, for a phrase: ``lint error`` -> ``lint errors``): ``-y``
    after a consonant -> ``-ies``; ``-s``, ``-x``, ``-ch``, ``-sh`` -> ``-es``; else ``-s``."""
    head, _, last = noun.rpartition(" ")
    if last.endswith("y") and len(last) > 1 and last[-2] not in "aeiou":
        word = last[:-1] + "ies"
    elif last.endswith(("s", "x", "ch", "sh")):
        word = last + "es"
    else:
        word = last + "s"
    return f"{head} {word}" if head else word


def counted(n: int, noun: str, many: str = "") -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: ``counted(1, "ending")`` -> ``"1 ending"``,
    ``counted(3, "lore entry")`` -> ``"3 lore entries"``, ``counted(2, "person", "people")``."""
    return f"{n} {noun if n == 1 else (many or plural(noun))}"


def agree(n: int, word: str) -> str:
    """``word`` (a verb or pronoun of the counted noun) agreeing with ``n``: ``agree(1, "is")`` ->
    ``"is"``, ``agree(2, "is")`` -> ``"are"``."""
    return word if n == 1 else _AGREE.get(word, word)


def opening(text: str) -> str:
    """``text`` opening a sentence: its first letter upper-cased, the rest as it is
    (``the creature`` -> ``The creature``; ``""`` stays ``""``)."""
    return text[:1].upper() + text[1:]

"""Pronouns in the player's lines, resolved to what they point back to ("I've a ferret. He's called
Juniper." -> "My ferret's called Juniper.").

A small, deterministic take on the classic recency-and-agreement heuristic (Hobbs 1978, "Resolving
pronoun references", *Lingua* 44; Lappin & Leass 1994 weigh recency and agreement the same way): a
pronoun refers to the **nearest preceding mention of a compatible kind**, looked for first earlier in
its own sentence, then in the sentences before it in the line, then in the player's previous line.

Mentions (:func:`mentions`) are what a player's line brings in: "my <noun>" ("my little sister"),
a noun after a determiner or a number that the player has or keeps ("I've got a tortoise", "there's
a rabbit at home", "two goldfish") and a sentence that is a bare noun phrase ("Eels." "Mushrooms,
now."). Each is a ``person`` (a relation: sister, nephew, flatmate...), an ``animal`` (a pet or
animal word) or a ``thing``, singular or plural.

==================  ======================================================
pronoun             may point back to
==================  ======================================================
he, him, his        a person or an animal, singular
she, her, hers      a person or an animal, singular
it, its             a thing or an animal, singular
they, them, their   anything plural; else a person (singular "they")
the stuff           a thing ("Liquorice? Can't stand the stuff.")
==================  ======================================================

:func:`resolve` rewrites each resolved pronoun as its mention ("he's" -> "my ferret's", "them" ->
"eels", "her name" -> "my daughter's name"); a pronoun with no compatible mention is left as it is.
No model: the same line always resolves the same way (transcripts and replays agree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from game.words import opening

MentionKind = Literal["person", "animal", "thing"]

#: People a player may name by their relation to them.
PEOPLE = frozenset(
    "sister brother mother mum mom father dad wife husband partner son daughter friend boyfriend girlfriend "
    "grandmother grandma granny gran grandfather grandpa grandad grandson granddaughter grandchild aunt uncle "
    "cousin niece nephew neighbour neighbor boss teacher baby child kid boy girl flatmate roommate colleague "
    "fiance fiancee fiancé fiancée stepson stepdaughter stepmother stepfather twin lodger landlady landlord "
    "sons daughters brothers sisters kids children twins grandchildren parents friends neighbours".split())
#: Animals a player may keep or name.
ANIMALS = frozenset(
    "dog puppy pup cat kitten horse pony mare foal parrot budgie canary rabbit bunny hamster gerbil guinea goat "
    "cow calf pig donkey tortoise turtle snake lizard ferret rat mouse goldfish fish hen chicken cockerel "
    "rooster duck goose sheep lamb ewe ram bees bee hive hives alpaca llama owl hawk falcon crow raven "
    "dogs cats horses hens chickens ducks geese goats cows pigs rabbits lambs ewes".split())
#: Words that are never the head of a mention (pronouns, quantifiers, time words, light nouns).
_NOT_HEADS = frozenset(
    "i me my mine you your he him his she her it its we us our they them their this that these those "
    "one ones lot bit thing things something anything nothing everything time times way ways day days "
    "night year years week weeks morning evening moment while minute hour home life kind sort couple "
    "pair few lots bunch little all some any".split())
_DET = r"(?:a|an|the|some|this|that|these|those|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d+)"
#: "my (old) <noun>": the player's own person, pet or thing.
_MY = re.compile(r"\b(my|our)\s+((?:[a-z-]+\s+){0,2}?)([a-z][a-z-]+)(?:['’]s)?\b", re.I)
#: A noun phrase the player brings in with a determiner: after a verb of having or a "there is" (group
#: 1, the player's own: "my <noun>"), after any other verb of theirs ("I carved you a spoon": group 2,
#: "the <noun>"). Up to three words; the head is the last before a preposition (:data:`_NP_END`).
_HAVE = re.compile(
    rf"\b(?:(?:i|we)\s*(?:'ve|’ve|\s+have|\s+had|\s+own|\s+keep|\s+kept|\s+got|\s+'ve got|\s+have got|"
    rf"\s+raise|\s+breed)?\s+(?:got\s+)?|there(?:'s|’s| is| are)\s+){_DET}\s+((?:[a-z-]+\s+){{0,2}}[a-z-]+)"
    rf"|\b(?:i|we)(?:\s+(?:'ve|have|had|just))?\s+[a-z]+\s+(?:you\s+|for you\s+)?{_DET}\s+"
    rf"((?:[a-z-]+\s+){{0,2}}[a-z-]+)", re.I)
_NP_END = frozenset("in on at from for of with to and or but that which who by near as than out up off".split())
#: A sentence that is a bare noun phrase: "Eels." "Mushrooms, now." "Olives and figs."
_BARE = re.compile(r"^\s*(?:the\s+)?([A-Za-z][a-z-]+(?:\s+(?:and|or)\s+[a-z-]+)?)\s*(?:,\s*(?:now|then|though|mind))?"
                   r"\s*[.!?]?\s*$", re.I)
_PRONOUN = re.compile(r"\b(he|him|his|she|her|hers|it|its|they|them|their|the stuff|that stuff)"
                      r"(['’]s|['’]re|['’]ll|['’]d)?\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
#: Words after "her" that keep it an object ("feeding her this week", "minding her until Sunday");
#: any other word after it makes it a possessive ("her name").
_OBJECT_NEXT = frozenset("this that these the a an while until till for at in on when and but so or to too up out off "
                         "back now again tonight today tomorrow every all very much well there here home from with "
                         "by because if as since".split())
_CLAUSE = re.compile(r";|\b(?:and|but|because|so|then|while|when|though|although)\b", re.I)
_VERBY = frozenset("is was are were has had does did will would can could should may might must".split())


@dataclass(frozen=True)
class Mention:
    """Something a line brings in: its ``phrase`` as a pronoun is rewritten to ("my ferret", "eels"),
    its head ``noun``, ``kind``, whether it is ``plural``, and where it starts (``at``, in its sentence)."""

    phrase: str
    noun: str
    kind: MentionKind
    plural: bool
    at: int


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split after ``.``, ``!``, ``?``), stripped, empty ones left out."""
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _plural(noun: str) -> bool:
    n = noun.lower()
    return n in ("sheep", "fish", "geese", "children", "people", "mice", "bees", "hives") or (
        n.endswith("s") and not n.endswith(("ss", "us", "is")))


def kind_of(noun: str) -> MentionKind:
    """``person``, ``animal`` or ``thing`` for a head noun (:data:`PEOPLE`, :data:`ANIMALS`)."""
    n = noun.lower()
    if n in PEOPLE or n.removesuffix("s") in PEOPLE:
        return "person"
    if n in ANIMALS or n.removesuffix("s") in ANIMALS:
        return "animal"
    return "thing"


def mentions(sentence: str) -> list[Mention]:
    """What ``sentence`` brings in that a later pronoun may point back to, in order (see the module doc)."""
    out: list[Mention] = []
    bare = _BARE.match(sentence)
    if bare and bare.group(1).split()[0].lower() not in _NOT_HEADS | _VERBY:
        phrase = bare.group(1).lower()
        head = phrase.split()[-1]
        out.append(Mention(phrase, head, kind_of(head), _plural(head) or " and " in phrase, bare.start(1)))
    for m in _MY.finditer(sentence):
        head = m.group(3).lower()
        if head in _NOT_HEADS or head in _VERBY or head in ("name", "age", "own"):
            continue
        words = [w for w in (m.group(2) or "").lower().split() if w not in _VERBY]
        phrase = " ".join(["my", *words[-1:], head]) if words and kind_of(head) == "thing" else f"my {head}"
        out.append(Mention(phrase, head, kind_of(head), _plural(head), m.start()))
    for m in _HAVE.finditer(sentence):
        own = bool(m.group(1))
        words = (m.group(1) or m.group(2)).lower().split()
        cut = next((i for i, w in enumerate(words) if w in _NP_END or w in _VERBY or w in ("called", "named", "home")
                    or (i > 0 and w.endswith(("ing", "ed")) and len(w) > 5)), len(words))
        words = words[:cut]
        if not words or words[-1] in _NOT_HEADS or words[-1] in _VERBY:
            continue
        head, at = words[-1], m.start(1) if own else m.start(2)
        if any(x.noun == head for x in out):
            continue
        phrase = f"my {head}" if own else "the " + " ".join(words)
        out.append(Mention(phrase, head, kind_of(head), _plural(head), at))
    return sorted(out, key=lambda x: x.at)


def _fits(pronoun: str, m: Mention) -> bool:
    p = pronoun.lower()
    if p in ("he", "him", "his", "she", "her", "hers"):
        return not m.plural and m.kind in ("person", "animal")
    if p in ("it", "its"):
        return not m.plural and m.kind in ("thing", "animal")
    if p.endswith("stuff"):  # "Liquorice? Can't stand the stuff."
        return m.kind == "thing"
    return m.plural or m.kind == "person"


def antecedent(pronoun: str, before: list[Mention]) -> Mention | None:
    """The nearest of ``before`` (mentions in the order they were said) that ``pronoun`` may point to;
    for "he" / "she" with no person or animal, the nearest singular thing the player has ("I keep a
    stoat. He's called Nib.": an animal the word lists do not hold), never a thing merely handled
    ("I bought a lamp. He's...")."""
    found = next((m for m in reversed(before) if _fits(pronoun, m)), None)
    if found is None and pronoun.lower() in ("he", "him", "his", "she", "her", "hers"):
        found = next((m for m in reversed(before) if not m.plural and m.phrase.startswith("my ")
                      and m.kind == "thing"), None)
    return found


def _possessive(word: str, after: str) -> bool:
    p = word.lower()
    nxt = re.match(r"\s+([a-z]+)", after, re.I)
    if p in ("his", "its", "their", "hers"):
        return True
    return p == "her" and nxt is not None and nxt.group(1).lower() not in _OBJECT_NEXT


def _object(word: str, after: str) -> bool:
    return word.lower() in ("him", "her", "them", "it") and not _possessive(word, after)


def _rewrite(word: str, tail: str, m: Mention, after: str) -> str:
    phrase = m.phrase
    if _possessive(word, after):
        said = phrase + ("'" if phrase.endswith("s") else "'s")
    elif tail:
        t = tail.lower().replace("’", "'")
        said = phrase + {"'s": "'s", "'re": " are", "'ll": " will", "'d": " would"}.get(t, tail)
    else:
        said = phrase
    return opening(said) if word[:1].isupper() else said


def resolve(text: str, before: str = "") -> str:
    """``text`` with each pronoun that has a compatible mention before it (in its sentence, earlier
    sentences of ``text``, then ``before``: the player's previous line) rewritten as that mention."""
    seen: list[Mention] = [m for s in sentences(before) for m in mentions(s)]
    out: list[str] = []
    for sentence in sentences(text):
        own = mentions(sentence)
        pieces: list[str] = []
        last = 0
        for p in _PRONOUN.finditer(sentence):
            here = [m for m in own if m.at < p.start()]
            if p.start() > 0 and _object(p.group(1), sentence[p.end():]):
                # an object pronoun is not the subject of its own clause ("my mother is looking after her")
                here = [m for m in here if _CLAUSE.search(sentence[m.at:p.start()])]
            # "it's raining", "it was late": a dummy "it" before a weather or time word refers to nothing
            if p.group(1).lower() == "it" and re.match(r"(?:['’]s|\s+is|\s+was)?\s+(?:raining|late|early|cold|"
                                                      r"dark|time|true|fine|ok|okay|nothing)\b",
                                                      sentence[p.end(1):], re.I):
                continue
            m = antecedent(p.group(1), [*seen, *here])
            if m is None:
                continue
            pieces += [sentence[last:p.start()], _rewrite(p.group(1), p.group(2) or "", m, sentence[p.end():])]
            last = p.end()
        pieces.append(sentence[last:])
        out.append("".join(pieces))
        seen += own
    return " ".join(out)


__all__ = ["ANIMALS", "PEOPLE", "Mention", "MentionKind", "antecedent", "kind_of", "mentions", "resolve", "sentences"]

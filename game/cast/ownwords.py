"""The player's own words: what they said of themselves that no pattern turned into a belief, kept
and said back when a later question asks for it.

:func:`statements` keeps every first-person statement of a player's line (:func:`is_statement`:
not a question; "I", "my", "we"... or a sentence that drops its "I": "Never could stomach them") that
:func:`game.cast.told.facts_told` reads no fact from, as a :class:`Said`: the sentence, the sentence
with its pronouns resolved (:func:`game.cast.coref.resolve`: "I can't abide them" -> "I can't abide
eels"), the sentence beside it (for what a pronoun or a topic word points to) and the turn.

:func:`answer` takes a question of the player's about themselves ("What's my ferret called?", "How
many canoes have I got?") and the kept sentences, and returns the sentence it asks about, or
``None`` (abstain: the model answers). A sentence is a candidate when

1. every noun the question owns ("my ferret", "my flat") is in it or in the sentence beside it, not
   owned by another ("my friend's name" is not "my name"), and at least one content word of the
   question is shared (:func:`content_stems`, a light suffix stemmer);
2. it holds an answer of the kind the question asks for (:func:`asked_kind`): a number for "how many"
   and "how old", a name for "called" / "name", a place for "where" / "which city", a thing given to
   her for "what did I bring you"; any other question takes the whole sentence;
3. its MiniLM cosine to the question, plus :data:`OVERLAP_BONUS` a shared word, reaches
   :data:`SAID_FLOOR`.

The best candidate is said back in her voice (:func:`say_back`): the value and "you said", and for the
whole sentence its reflection (:func:`reflect`: I -> you, my -> your, am -> are, you -> me; the
pronoun reflection of ELIZA, Weizenbaum 1966, "ELIZA — a computer program for the study of natural
language communication between man and machine", *CACM* 9(1):36-45). She says only what the sentence
holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from game.cast.coref import kind_of, resolve, sentences
from game.cast.told import NOT_NAMES, NUMBER_WORD, RECALL_DARE, facts_told, parse_number
from game.words import opening

#: Score a kept sentence needs: its MiniLM cosine to the question plus :data:`OVERLAP_BONUS` for each
#: content word they share. Chosen on ``bench/data/told_dev.yaml`` and this helper's tests (in-sample):
#: right answers with a shared word score 0.35-0.95 ("What do I restore?" to "I restore old violins
#: in my workshop." 0.35); a sentence with no shared word is never a candidate.
SAID_FLOOR = 0.3
OVERLAP_BONUS = 0.05
#: The score an age said without "I'm" needs ("Forty-four last March" to "How old did I say I
#: turned?" scores 0.25): the sentence's shape (:func:`_an_age`) is the evidence, not its words.
AGE_FLOOR = 0.2

AnswerKind = Literal["number", "age", "name", "who", "place", "gift", "any"]


@dataclass(frozen=True)
class Said:
    """One sentence of the player's about themselves that no pattern read a fact from.

    Attributes:
        text: the sentence as said.
        resolved: the same with its pronouns resolved ("I can't abide eels").
        context: the sentence said before it (in the line, else the last of the player's previous
            line), else the one after it; ``""`` when alone.
        turn: the game turn it was said.
    """

    text: str
    resolved: str
    context: str
    turn: int


@dataclass(frozen=True)
class SaidAnswer:
    """What :func:`answer` found: the ``said`` sentence, the ``value`` it holds (the whole sentence
    reflected for an open question), her ``text`` and the ``score``."""

    said: Said
    value: str
    text: str
    score: float


_FIRST = frozenset("i i'm i've i'd i'll me my mine myself we we're we've we'd our ours us".split())
_QUESTION = re.compile(r"\?\s*$|^\s*(?:is|are|am|was|were|do|does|did|can|could|would|will|shall|should|what|who|"
                       r"whom|whose|where|when|why|how|which|have|has|whats|whos|wheres|hows)\b", re.I)
#: First words of a sentence that drops its "I" ("Never could stomach them", "Brought you some fish").
_DROPPED = re.compile(r"^\s*(?:never|always|can't|cannot|can’t|couldn't|could|can|wouldn't|won't|don't|didn't|"
                      r"love|loved|hate|hated|adore|"
                      r"brought|made|got|found|bought|baked|kept|grew|lived|worked|used to|just|been|[a-z]{3,}ed)\b",
                      re.I)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:['’][a-z]+)?", text.lower().replace("’", "'"))


def is_statement(sentence: str) -> bool:
    """Whether ``sentence`` is the player telling something of themselves: not a question, and it
    speaks in the first person or drops its "I" (:data:`_DROPPED`, or a past form of :data:`_IRREGULAR`:
    "Took in a stray last winter.")."""
    if not sentence.strip() or _QUESTION.search(sentence) or RECALL_DARE.search(sentence):
        return False
    words = _words(sentence)
    return bool(set(words) & _FIRST) or bool(_DROPPED.match(sentence)) or (
        bool(words) and words[0] in _IRREGULAR and _IRREGULAR[words[0]] != words[0] and words[0] not in _NOUN_FORMS)


def statements(text: str, before: str = "", turn: int = 0) -> list[Said]:
    """The :class:`Said` sentences of the player's line ``text`` (``before``: their previous line,
    for pronouns and context): first-person statements (:func:`is_statement`) from which
    :func:`~game.cast.told.facts_told` reads no fact."""
    said = sentences(text)
    resolved = [resolve(s, " ".join([before, *said[:i]])) for i, s in enumerate(said)]
    last_before = (sentences(before) or [""])[-1]
    out: list[Said] = []
    for i, (s, r) in enumerate(zip(said, resolved, strict=True)):
        # "We sail a yawl. She's named Kittiwake.", "Got a pup. Answers to Bran.": about the thing just told
        after_mine = i > 0 and is_statement(resolved[i - 1]) and not re.match(r"\s*[A-Z][a-z]+\s+(?:is|was|has)\b", r)
        if not (is_statement(r) or (after_mine and not _QUESTION.search(r))) or facts_told(r):
            continue  # "We sail a yawl. She's named Kittiwake.": the second is about the player's yawl
        context = said[i - 1] if i > 0 else (last_before or (said[i + 1] if i + 1 < len(said) else ""))
        out.append(Said(s, r, context, turn))
    return out


# -- the question -----------------------------------------------------------------------------

_IRREGULAR = {"brought": "bring", "made": "make", "gave": "give", "got": "get", "bought": "buy", "caught": "catch",
              "taught": "teach", "thought": "think", "told": "tell", "said": "say", "kept": "keep", "grew": "grow",
              "born": "bear", "ran": "run", "sold": "sell", "built": "build", "wrote": "write", "drove": "drive",
              "flew": "fly", "came": "come", "went": "go", "knew": "know", "took": "take", "found": "find",
              "children": "child", "people": "person", "mice": "mouse", "geese": "goose", "wives": "wife"}


#: Words a player uses for the same thing of theirs, stemmed alike ("my line of work" ~ "my trade").
_SAME = {w: "work" for w in "job trade profession occupation career craft living work".split()} | {
    w: "home" for w in "home hometown house flat".split()}


#: Forms in :data:`_IRREGULAR` that are nouns, not past verbs (never a sentence that drops its "I").
_NOUN_FORMS = frozenset("children people mice geese wives born".split())


def stem(word: str) -> str:
    """A light stem of ``word`` for matching words of a question to a sentence ("sailed" ~ "sail",
    "pots" ~ "pot", "brought" ~ "bring"): irregular forms and a few words for the same thing
    (:data:`_SAME`) from tables, else -ing/-ed/-es/-s off."""
    w = word.lower().removesuffix("'s")
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if w in _SAME:
        return _SAME[w]
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith(("ss", "us", "is")):
            w = w[: -len(suffix)]
            break
    return w.removesuffix("e") if len(w) > 3 else w


#: Words of a question that carry no topic (question and frame words, pronouns, light verbs, the
#: cue words of an answer kind).
_NO_TOPIC = frozenset(
    "what what's whats which who who's whom whose where where's when how is are am was were do does did have has "
    "had i i'm i've i'd me my mine myself we us our you your yours it its it's the a an of to in on at for from "
    "and or that this these those again remember recall say said tell told mention mentioned know think call "
    "called name named names many much number old age could would can will should shall go on then so please "
    "just now ever still already really there here be been being get got keep kept own like best most lot "
    "remind bet forgotten forget forgot sure reckon guess again wait hang about back tonight today".split())
_MY_NOUN = re.compile(r"\b(?:my|our)\s+((?:[a-z-]+\s+){0,2}?)([a-z][a-z-]+)(?:['’]s)?\b", re.I)
_OWN_NOUNS = frozenset("name age home job work trade surname birthday line favourite favorite".split())


def content_stems(text: str) -> set[str]:
    """Stems (:func:`stem`) of the words of ``text`` that carry a topic (not :data:`_NO_TOPIC`)."""
    return {stem(w) for w in _words(text) if w not in _NO_TOPIC and len(w) > 2}


def owned_nouns(question: str) -> list[str]:
    """The nouns a question says are the player's ("my ferret", "my little boat" -> ``boat``), but
    not their own facts (name, age, home: :data:`_OWN_NOUNS`)."""
    return [m.group(2).lower() for m in _MY_NOUN.finditer(question) if m.group(2).lower() not in _OWN_NOUNS]


def asked_kind(question: str) -> AnswerKind:
    """What kind of answer ``question`` asks for (see the module doc)."""
    q = question.lower()
    if re.search(r"\bhow old\b|\bwhat age\b|\bhow many years\b", q):
        return "age"
    if re.search(r"\bhow (?:many|much)\b|\bwhat number\b|\bthe number of\b", q):
        return "number"
    if re.search(r"\b(?:called|call|named|name|names)\b|\banswers? to\b|\bgoes by\b|\bgo by\b", q) \
            and owned_nouns(question):
        return "name"
    if re.search(r"\bwho\b", q) and owned_nouns(question):
        return "who"
    if re.search(r"\bwhere\b|\bwhich (?:city|town|village|country|place|island|port|county|street)\b|"
                 r"\bwhat (?:city|town|village|country|place|island|port|county|street)\b", q):
        return "place"
    if re.search(r"\b(?:give|gave|bring|brought|make|made|carve|carved|knit|knitted|bake|baked|get|got|buy|bought|"
                 r"[a-z]+ed)\s+(?:you|for you)\b|\b(?:present|gift)\b|\bdid (?:i|we)\s+(?!(?:tell|ask|say|show|"
                 r"promise|call|text|warn|remind|teach|owe|mean)\b)[a-z]+(?:\s+(?:up|out|together|over))?\s+"
                 r"(?:for\s+)?you\b", q):
        return "gift"
    return "any"


# -- what a sentence holds --------------------------------------------------------------------

_NUMBER = re.compile(rf"\b({NUMBER_WORD})", re.I)
_NAMED = re.compile(r"(?i:\b(?:called|named|name is|name's|names are|known as|is the|was the))\s+"
                    r"([A-Za-z][\w'-]*(?:\s+(?:and\s+)?[A-Z][\w'-]*)*)")
_CAPS = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*)")
_PLACE = re.compile(r"(?i:\b(?:in|at|near|from|on|by|outside|out of|off|round|around|up in|down in|through|across|"
                    r"to|into|over|via|along))\s+(?:the\s+)?(?!(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|"
                    r"Sunday|January|February|March|April|May|June|July|August|September|October|November|December|"
                    r"Christmas|Easter)s?\b)"
                    r"([A-Z][\w'-]+(?:[ -][A-Z][\w'-]+)*)|\b([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*)\s+(?i:is|was)\s+"
                    r"(?i:where)\b")
#: Days, months and feasts: a time, never a name or a place.
_WHEN = re.compile(r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|February|March|April|May|"
                   r"June|July|August|September|October|November|December|Christmas|Easter)s?")
#: A place without a capital: "at the cathedral", "in my workshop".
_PLACE_NOUN = re.compile(r"(?i:\b(at|in|on|near|by|behind|under|outside)\s+"
                         r"((?:the|my|our|a|an)\s+[a-z]+(?:\s+[a-z]+)?))")
_GIFT_TO_HER = re.compile(r"(?i:\bfor you\b|\byours\b|\b[a-z]+\s+you\s+(?:an?|some|the|this|these|that|my|two|three)\b|"
                          r"\b(?:brought|made|got|bought|baked|found|carried|[a-z]{3,}ed)\s+you\b|"
                          r"\b(?:it's|it is|that's|that is)\s+(?:a|your)\s+(?:present|gift)\b)")


def _numbers(text: str) -> list[tuple[int, str, int]]:
    """``(value, as said, end)`` of each number in ``text`` (not a lone "a")."""
    out = []
    for m in _NUMBER.finditer(text):
        said = m.group(1).strip()
        n = parse_number(said)
        if n is not None and said.lower() not in ("a", "an", "and"):
            out.append((n, said, m.end(1)))
    return out


def _name_in(text: str, noun: str) -> str:
    m = _NAMED.search(text)
    if m:
        name = m.group(1).strip()
        first = name.split()[0]
        if first.lower() not in NOT_NAMES:
            return " ".join(w if w == "and" else opening(w) for w in name.split())
    for c in _CAPS.finditer(text):
        first = c.group(1).split()[0].lower().replace("’", "'")
        if first not in NOT_NAMES and not first.startswith("i'") and first != "i" and c.group(1).lower() != noun \
                and not _WHEN.fullmatch(c.group(1).split()[0]):
            return c.group(1)
    return ""


def _place_in(text: str) -> str:
    m = _PLACE.search(text)
    if m is not None and (m.group(1) or m.group(2)).split()[0].lower() not in NOT_NAMES:
        return m.group(1) or m.group(2)
    low = _PLACE_NOUN.search(text)
    if low is None:
        return ""
    words = low.group(2).split()
    words = words[: next((i for i, w in enumerate(words[1:], 1) if w.lower() in _PREPOSITIONS), len(words))]
    return reflect(f"{low.group(1)} {' '.join(words)}")


_PREPOSITIONS = frozenset("in on at by near from for of with to and or but on".split())


# -- reflection -------------------------------------------------------------------------------

_REFLECT = {"i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself", "am": "are",
            "i'm": "you're", "i've": "you've", "i'd": "you'd", "i'll": "you'll", "we": "you", "us": "you",
            "our": "your", "ours": "yours", "we're": "you're", "we've": "you've",
            "your": "my", "yours": "mine", "yourself": "myself", "you're": "I'm", "you've": "I've",
            "you'll": "I'll", "you'd": "I'd"}
_SUBORDINATE = frozenset("if when that and but because so unless as than until while though whether".split())
_SUBJECT_NEXT = frozenset("are were have had can could will would should do did don't didn't won't can't "
                          "must may might never always really".split())


def reflect(sentence: str) -> str:
    """``sentence`` turned round to be said back to the speaker: I -> you, my -> your, am -> are, was
    (after I) -> were, you -> me (I before a verb), your -> my (ELIZA's reflection, see the module
    doc). A sentence that drops its "I" gets "you" ("Never could stomach eels" -> "you never could
    stomach eels"). Ends without its final stop."""
    text = sentence.strip().rstrip(".!;")
    tokens = re.findall(r"[A-Za-z]+(?:['’][A-Za-z]+)?|[^A-Za-z]+", text.replace("’", "'"))
    out: list[str] = []
    for i, tok in enumerate(tokens):
        low = tok.lower()
        nxt = next((t.lower() for t in tokens[i + 1:] if t.strip()), "")
        prev = next((t.lower() for t in reversed(tokens[:i]) if t.strip()), "")
        if low == "you":
            subject = i == 0 or nxt in _SUBJECT_NEXT or prev in _SUBORDINATE or nxt.endswith("ed")
            said = "I" if subject else "me"
        elif low in ("was", "wasn't") and prev == "i":
            said = "were" if low == "was" else "weren't"
        elif low == "are" and prev == "you":
            said = "am"
        elif low in _REFLECT:
            said = _REFLECT[low]
        else:
            said = tok
        out.append(said)
    reflected = "".join(out)
    if _DROPPED.match(sentence) and not set(_words(sentence)[:1]) & _FIRST:
        reflected = "you " + reflected[:1].lower() + reflected[1:]
    first = reflected.split(" ", 1)[0]
    if first.lower() in {"you", "your", "you're", "you've", "you'd", "you'll", "the", "a", "an", "what", "things",
                         "honestly", "well", "top", "nothing", "everything", "something", "if", "when", "this",
                         "that", "these", "those", "some", "all", "every"} or first.lower().endswith("ing"):
        reflected = reflected[:1].lower() + reflected[1:]
    return reflected


def say_back(kind: AnswerKind, value: str, noun: str, said: Said) -> str:
    """Her line for a kept sentence: "Juniper, you said — your ferret.", "Eleven canoes, you said.",
    "You said you can't abide eels." (``value`` as :func:`answer` found it)."""
    if kind == "name":
        return f"{value}, you said — your {noun}." if noun else f"{value}, you said."
    if kind == "who":
        return f"{opening(value)}, you said."
    if kind in ("number", "age", "place"):
        return f"{opening(value)}, you said."
    return f"You said {reflect(said.resolved)}."


_UNRESOLVED = re.compile(r"\b(?:he|she|it|they|him|her|them|his|its|their)\b", re.I)


def _with_context(said: Said) -> str:
    """The sentence, with the one beside it when a pronoun in it was left unresolved ("She's named
    Kittiwake." needs "We sail a yawl."); else the sentence alone (a neighbour's words are not its)."""
    alone = _UNRESOLVED.search(said.resolved) or not is_statement(said.resolved)
    return f"{said.context} {said.resolved}" if alone else said.resolved


def _owner_ok(nouns: Sequence[str], said: Said) -> bool:
    """Every noun the question owns is in the sentence (or beside it, for a pronoun: :func:`_with_context`)."""
    both = _with_context(said).lower()
    for noun in nouns:
        s = stem(noun)
        if not any(stem(w) == s for w in _words(both)):
            return False
    return True


def _not_another_s(question: str, said: Said) -> bool:
    """The question's own facts (name, age, home) are not another's in the sentence: "What's my name?"
    is not answered by "My friend's name is Agnes"."""
    q = question.lower()
    for own in ("name", "age", "home", "job", "birthday"):
        if re.search(rf"\bmy\s+{own}\b", q) and re.search(rf"\b(?:my|his|her|their)\s+[a-z]+['’]s\s+{own}\b|"
                                                          rf"\b(?:his|her|their)\s+{own}\b", said.resolved, re.I):
            return False
    return True


def answer(question: str, said: Sequence[Said], encode: Callable[[list[str]], np.ndarray],
           floor: float = SAID_FLOOR) -> SaidAnswer | None:
    """The kept sentence ``question`` asks about, said back, or ``None`` (see the module doc).

    Args:
        question: the player's question (already checked to be about themselves).
        said: the kept sentences, oldest first.
        encode: ``encode(texts) -> (N, D)`` unit vectors (MiniLM).
        floor: the score needed (:data:`SAID_FLOOR`).
    """
    if not said:
        return None
    kind = asked_kind(question)
    nouns = owned_nouns(question)
    topic = content_stems(question)
    if not topic and not nouns and kind != "age":
        return None  # "What am I called?": nothing to find a sentence by
    rows: list[tuple[Said, str, int]] = []
    for s in said:
        words = {stem(w) for w in _words(_with_context(s))}
        shared = len(topic & words)
        if not (shared or (kind == "age" and _an_age(s.resolved))) or not _owner_ok(nouns, s) \
                or not _not_another_s(question, s):
            continue
        value = _value(kind, question, s, nouns, topic)
        if value:
            rows.append((s, value, shared))
    if not rows:
        return None
    # each sentence alone and with the one beside it ("We sail a yawl." + "She's named Kittiwake."): the better
    vecs = np.asarray(encode([question, *(s.resolved for s, _, _ in rows),
                              *(_with_context(s) for s, _, _ in rows)]), np.float32)
    sims = vecs[1:] @ vecs[0]
    scores = np.maximum(sims[:len(rows)], sims[len(rows):]) + OVERLAP_BONUS * np.array([n for _, _, n in rows],
                                                                                       np.float32)
    best = int(np.argmax(scores))
    if float(scores[best]) < (min(floor, AGE_FLOOR) if kind == "age" else floor):
        return None
    s, value, _ = rows[best]
    noun = nouns[0] if nouns else ""
    return SaidAnswer(s, value, say_back(kind, value, noun, s), float(scores[best]))


def _an_age(text: str) -> bool:
    """Whether ``text`` says an age the way a player does without "I'm": one number, 3-120, not
    counting anything after it ("Forty-four last March", "seventy-one come Easter")."""
    found = _numbers(text)
    if len(found) != 1 or not 3 <= found[0][0] <= 120:
        return False
    after = _words(text[found[0][2]:])[:1]
    return not after or after[0] in ("last", "next", "this", "come", "in", "on", "and", "though", "god", "now",
                                     "since", "i")


def _value(kind: AnswerKind, question: str, s: Said, nouns: Sequence[str], topic: set[str]) -> str:
    """The answer of ``kind`` that sentence ``s`` holds, or ``""``."""
    text = s.resolved
    if kind in ("number", "age"):
        found = _numbers(text)
        if kind == "age":
            return found[0][1] if _an_age(text) else ""
        for _, as_said, end in found:
            following = _words(text[end:])[:3]
            counted = next((w for w in following if stem(w) in topic or w in nouns), "")
            if counted:
                cut = following[: following.index(counted) + 1]
                return f"{as_said} {' '.join(cut)}"
        return ""
    if kind == "name":
        return _name_in(text, nouns[0] if nouns else "")
    if kind == "who":
        name = _name_in(text, nouns[0] if nouns else "")
        if name:
            return name
        person = next((m.group(2).lower() for m in _MY_NOUN.finditer(text)
                       if m.group(2).lower() not in nouns and kind_of(m.group(2)) == "person"), "")
        return f"your {person}" if person else ""
    if kind == "place":
        return _place_in(text) or _place_in(s.context)
    if kind == "gift":
        return reflect(text) if _GIFT_TO_HER.search(text) else ""
    return reflect(text)


__all__ = ["AGE_FLOOR", "OVERLAP_BONUS", "SAID_FLOOR", "AnswerKind", "Said", "SaidAnswer", "answer", "asked_kind",
           "content_stems", "is_statement", "owned_nouns", "reflect", "say_back", "statements", "stem"]

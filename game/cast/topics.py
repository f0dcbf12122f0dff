"""Card topics: a question about her own life answered from her card, found by meaning.

:func:`card_topics` lists what her card answers in her own words (its structured facts, authored
answers and example exchanges); :meth:`TopicRouter.topic` finds the topic a player's question asks
about, or ``None`` so that the model answers. Told facts (what the player said) are found by
:class:`~game.cast.grounding.Grounding`, not here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from game.cast.card import CharacterCard
from game.cast.factsheet import quantities
from game.cast.grounding import _ASK, Grounded, _person
from game.cast.similarity import tokens
from game.words import opening

#: A topic's score for a line (:meth:`TopicRouter.topic`) weighs three views of it, each a MiniLM
#: cosine to the line: its closest question (of the kind asked), her answer said as a sentence (what
#: the fact is: "a beehive of glass taller than me" for the lens), and its key words ("lens year:
#: 1871"). Chosen on the dev rows of ``bench/data/eve_topics.yaml`` (``python3 bench/topics.py --sweep``).
VIEW_WEIGHTS = (0.75, 0.2, 0.05)
#: Score from which a question about her own life is answered from her card, and the lead it must have
#: over the best other topic unless the views agree (the same topic is closest by its questions and by
#: its answer). Chosen on dev by the most right answers counting a wrong topic as three misses and a
#: needless answer as two; the held-out splits were scored once, after.
TOPIC_THRESHOLD = 0.5
TOPIC_MARGIN = 0.02
#: How much lower the score may be when the line asks for a kind of answer (:func:`answer_kind`: who,
#: when, how long...) and only topics that give that kind were scored: the kind is evidence too
#: ("When does the sea let me walk back?" 0.41 for low water, every other "when" topic far below).
KIND_EASING = 0.1
#: A lower score at which a topic is still said instead of an authored line for a question, when
#: every model attempt was rejected (``near`` in :mod:`game.cast.dialogue`): a fact near the line is
#: a better answer than "I'd have to look in the logbook for that".
TOPIC_NEAR = 0.45


#: Answer kinds a question may ask for (:func:`answer_kind`) and a topic may answer (:attr:`Topic.kinds`).
#: ``""`` (not listed) is an open question: "what", "which", "how is", "how dangerous", yes/no; it fits any topic.
#: ``how`` and ``why`` (a way, a reason) fit each other.
KINDS = ("when", "duration", "age", "count", "distance", "frequency", "who", "where", "how", "why")
_WH = {"who": "who", "whom": "who", "whose": "who", "when": "when", "where": "where"}
_HOW = {"long": "duration", "old": "age", "many": "count", "much": "count", "far": "distance", "often": "frequency"}
_WHAT = {"year": "when", "years": "when", "time": "when", "day": "when", "date": "when", "month": "when",
         "hour": "when", "season": "when", "century": "when", "age": "age", "number": "count"}
#: A question word counts only at the start of a clause (its first :data:`_CLAUSE_LEAD` words):
#: "What do you do when you're not working?" asks no time; "..., and how old is it?" asks an age.
_CLAUSE_LEAD = 4
#: Words after "how" that make it ask for a way or a story ("How do you get food?"); "how is / how
#: dangerous" asks a state or a degree (open).
_MANNER = frozenset("do does did can could would will should might may has have had".split())
_CLAUSES = re.compile(r"[,;:?!.]+|\b(?:and|but|or|so)\b", re.I)
_TIME_UNITS = frozenset("year month week day hour minute winter summer season".split())
_CLOCK = re.compile(r"(?i)\b(?:past|to|half|quarter|o'clock)\b.*\b(?:one|two|three|four|five|six|seven|eight|nine|"
                    r"ten|eleven|twelve|\d{1,2})\b|\b\d{1,2}[:.]\d{2}\b")


def answer_kind(text: str) -> str:
    """The kind of answer question ``text`` asks for (one of :data:`KINDS`), ``""`` when open.

    Read from the question words that open a clause:

    - "who" -> ``who``; "where" -> ``where`` (not "where did it come from": open);
    - "when", "what year / time / day", "how long ago", "how long until" -> ``when``;
    - "how long", "how many years" -> ``duration``; "how old", "what age", "how many years old" -> ``age``;
    - "how many / much" -> ``count``; "how far" -> ``distance``; "how often" -> ``frequency``;
    - "how do / did / can" -> ``how`` (a way or a story; "how is", "how dangerous" are open); "why" -> ``why``.

    Of several, the last that is not open ("What's that glass thing, and how old is it?" -> ``age``).
    A finer reading than :func:`~game.cast.grounding.asks_for`, which
    :meth:`~game.cast.grounding.Grounding.match` uses.
    """
    kind = ""
    for clause in _CLAUSES.split(text):
        toks = [t.removesuffix("'s") for t in tokens(clause)]  # "when's", "who's", "how's"
        for i, t in enumerate(toks[:_CLAUSE_LEAD]):
            nxt = toks[i + 1:i + 3]
            found = None
            if t in _WH:
                found = _WH[t]
            elif t == "how":
                found = _HOW.get(nxt[0], "") if nxt else ""
                if nxt and nxt[0] in _MANNER:
                    found = "how"  # "How did you become the keeper?": a way or a story, not "how dangerous"
                after = toks[i + 2:i + 4]
                if found == "duration" and after[:1] and after[0] in ("ago", "until", "till", "til", "before"):
                    found = "when"
                elif found == "count" and after[:1] and after[0].removesuffix("s") in _TIME_UNITS:
                    found = "age" if after[1:2] == ["old"] else "duration"  # "how many years (old)"
            elif t in ("what", "which"):
                found = _WHAT.get(nxt[0], "") if nxt else ""
            elif t == "why":
                found = "why"
            if found == "where" and re.search(r"\bcomes?\s+from\b|\bcame\s+from\b", clause, re.I):
                found = ""  # "Where did that scar come from?" asks how it came about, not a place
            if found is not None:
                kind = found or kind
                break
    return kind


def value_kinds(value: str, unit: str = "") -> frozenset[str]:
    """The kinds a card fact's ``value`` (with its ``unit``) answers by its shape: a year (``1871``) says
    when, how old and how long since; "nine years ago" when and how long; a clock time when; a
    number of years or hours how long ("every four hours": how often); ``years old`` an age; another
    number how many."""
    out: set[str] = set()
    low = value.lower()
    if _CLOCK.search(value):
        out.add("when")
    if re.search(r"\bago\b", low):
        out |= {"when", "duration"}
    if re.search(r"\bevery\b", low):
        out.add("frequency")
    for q in quantities(value):
        if "old" in unit.split():
            out.add("age")
        elif 1000 <= q.value <= 2100 and not q.unit:
            out |= {"when", "age", "duration"}
        elif q.unit in _TIME_UNITS or unit.removesuffix("s") in _TIME_UNITS:
            out.add("frequency" if "every" in low else "duration")
        elif not _CLOCK.search(value):
            out.add("count")
    return frozenset(out)


@dataclass(frozen=True)
class Topic:
    """Something her card answers (:func:`card_topics`): ``id`` (``card.<fact>``, ``answer.<id>``,
    ``example.<n>``), the ``questions`` that ask it, her ``answer`` in her own words, the answer
    ``kinds`` it gives (of :data:`KINDS`: those its questions ask for and those its value's shape
    says, :func:`value_kinds`; empty: it answers only open questions) and its ``keys``, the fact
    named in a few words ("lens year: 1871"; ``""`` for an example exchange)."""

    id: str
    questions: tuple[str, ...]
    answer: str
    kinds: frozenset[str] = frozenset()
    keys: str = ""


def _asked(questions: tuple[str, ...]) -> frozenset[str]:
    return frozenset(k for k in map(answer_kind, questions) if k)


def card_topics(card: CharacterCard) -> list[Topic]:
    """Every question her card answers in her voice: its structured facts (``say``, else the value),
    its authored ``answers`` and its example exchanges with a player line. Texts with a macro
    (``{{user}}``) are left out: they need the player, and :class:`~game.cast.castroom.PlayerKnowledge`
    answers them."""
    out: list[Topic] = []
    for fact in card.facts:
        if fact.questions:
            out.append(Topic(f"card.{fact.id}", tuple(fact.questions), fact.say or f"{fact.value}.",
                             _asked(fact.questions) | value_kinds(fact.value, fact.unit),
                             f"{fact.id.replace('_', ' ')}: {fact.value}"))
    for answer in card.answers:
        out.append(Topic(f"answer.{answer.id}", tuple(answer.questions), answer.answer, _asked(answer.questions),
                         answer.id.replace("_", " ")))
    for i, ex in enumerate(card.examples):
        if ex.user.strip() and ex.char.strip():
            out.append(Topic(f"example.{i}", (ex.user,), ex.char, _asked((ex.user,))))
    return [t for t in out if "{{" not in t.answer and t.answer.strip()
            and not any("{{" in q for q in t.questions)]


#: Phrases whose "me" does not make a line about the player ("Tell me about Hild").
_ASKING_ME = re.compile(r"\b(?:tell|show|let|give|remind) me\b", re.I)
#: A first-person possessive: a line that asks of "my" thing is answered only by a topic whose own
#: questions ask of the player's things too.
_MY = re.compile(r"\b(?:my|mine)\b", re.I)


class TopicRouter:
    """Finds the card topic a question about her own life asks about (see the module doc).

    Args:
        card: her card (``facts``, ``answers``, ``examples``).
        embedder: ``encode(list[str]) -> (N, D)`` unit vectors (MiniLM).
        threshold: :data:`TOPIC_THRESHOLD` for :meth:`topic` (``None``: no topic is answered unless a
            threshold is given to the call).
    """

    def __init__(self, card: CharacterCard, embedder: Any, threshold: float | None = TOPIC_THRESHOLD) -> None:
        self.card = card
        self.embedder = embedder
        self.threshold = threshold
        self._topics: list[Topic] | None = None
        self._vectors: dict[str, np.ndarray] = {}

    def _vecs(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, np.asarray(self.embedder.encode(missing), np.float32), strict=True))
        return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)

    def scores(self, text: str) -> list[tuple[Topic, str, tuple[float, float, float]]]:
        """Every topic that may answer ``text``, with its closest fitting question and its three view
        cosines ``(question, answer, keys)`` (see :data:`VIEW_WEIGHTS`); ``[]`` for a line that does
        not ask (:data:`~game.cast.grounding._ASK`).

        A topic may answer when the kind of answer the line asks for (:func:`answer_kind`) is one it
        gives (:attr:`Topic.kinds`; "how" and "why" fit each other; an open line fits any), and, for a
        line about the player ("What would your grandmother think of me?", "my beekeeping"), when
        one of its questions speaks of the player too ("Where can I sleep?"). Its question view is
        its closest question of the kind asked ("how" or "why" for either; any question when none is
        of that kind or the line is open)."""
        if not text.strip() or not _ASK.search(text):
            return []
        if self._topics is None:
            self._topics = card_topics(self.card)
        asked = answer_kind(text)
        soft = asked in ("how", "why")
        me = _person(_ASKING_ME.sub(" ", text))[0]
        mine = bool(_MY.search(text))  # "What's my name?" asks of the player's things
        q = self._vecs([text])[0]
        out: list[tuple[Topic, str, tuple[float, float, float]]] = []
        for t in self._topics:
            if me and not any(_person(_ASKING_ME.sub(" ", x))[0] for x in t.questions):
                continue
            if mine and not any(_MY.search(x) for x in t.questions):
                continue  # her own name ("What should I call you?" speaks of the asker) is not the player's
            if asked and not t.kinds & ({"how", "why"} if soft else {asked}):
                continue  # "How long have you kept the light?" is not asked of Hild's story
            asks = [x for x in t.questions if answer_kind(x) in ({"how", "why"} if soft else {asked})] if asked else []
            asks = asks or list(t.questions)
            sims = self._vecs(asks) @ q
            said = float(self._vecs([t.answer])[0] @ q)
            keys = float(self._vecs([t.keys])[0] @ q) if t.keys else said
            out.append((t, asks[int(np.argmax(sims))], (float(np.max(sims)), said, keys)))
        return out

    def topic(self, text: str, threshold: float | None = None, margin: float = TOPIC_MARGIN) -> Grounded | None:
        """Her card's answer to a question about her own life, found by meaning, or ``None`` (the model
        answers).

        Each topic that may answer (:meth:`scores`) scores its three views weighed by
        :data:`VIEW_WEIGHTS`. The best is said when it scores at least ``threshold`` (default
        :attr:`threshold`; :data:`KIND_EASING` less when the line asks for a kind of answer) and
        leads the next by ``margin``, or, closer than that, when it is also the closest by its
        questions and by its answer alone (the views agree). Two close topics on which the views
        disagree, a kind of answer no topic gives, or a low score: ``None``.
        """
        limit = self.threshold if threshold is None else threshold
        if limit is None:
            return None
        rows = self.scores(text)
        if not rows:
            return None
        if answer_kind(text):
            limit -= KIND_EASING
        wq, wa, wk = VIEW_WEIGHTS
        total = [wq * v[0] + wa * v[1] + wk * v[2] for _, _, v in rows]
        order = sorted(range(len(rows)), key=lambda i: -total[i])
        best = order[0]
        lead = total[best] - (total[order[1]] if len(order) > 1 else -1.0)
        # the views agree when the best is closer than every other topic by its questions and by its answer
        agree = all(rows[best][2][k] > max((v[k] for i, (_, _, v) in enumerate(rows) if i != best), default=-1.0)
                    for k in (0, 1))
        if total[best] < limit or (lead < margin and not agree):
            return None
        t, question, _ = rows[best]
        text_ = opening(t.answer)
        fact = next((f for f in self.card.facts if f"card.{f.id}" == t.id), None)
        return Grounded(t.id, text_, fact.value if fact is not None else t.id, question, total[best])


__all__ = ["KINDS", "KIND_EASING", "TOPIC_MARGIN", "TOPIC_NEAR", "TOPIC_THRESHOLD", "VIEW_WEIGHTS", "Topic",
           "TopicRouter", "answer_kind", "card_topics", "value_kinds"]

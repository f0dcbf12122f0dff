"""Grounded answers: a question about something she knows is answered with that fact.

:meth:`Grounding.match` takes the player's (sanitised) line and, when it asks for

- **a fact the player told her** (a :class:`~game.cast.memory.Belief` with source
  "the player said so": name, age, home, work, a relation's or pet's name, how many
  of something, likes, dislikes, favourites, gifts), or
- **a fact of her card** (a structured :class:`~game.cast.card.Fact` with questions),

returns a :class:`Grounded` answer that states the fact, in her voice: the card's
``grounded`` template for that key (``{value}`` and ``{thing}`` filled in), else
:data:`TEMPLATES`; a card fact's own ``say`` line, else its value.

A line asks for a fact when its MiniLM cosine to one of the fact's questions
(:func:`questions_for`: authored per key, ``{thing}`` the relation or counted noun)
is at least ``threshold`` (default :data:`GROUNDING_THRESHOLD`), it speaks in the
same grammatical person as the question ("my dog" is not "your dog"), it is a
question (``?`` or a question word first, or "remind me", "tell me"), and for a
relation, pet or count the line names that thing. Nothing is matched for a fact
she has not been told: the model answers, and the verifier keeps it from making one
up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from game.cast.card import CharacterCard, Fact
from game.cast.similarity import tokens

#: MiniLM cosine at or above which a line asks for a fact (as ``AUTHORED_THRESHOLD``: paraphrases
#: of these short questions score 0.55-0.9; an unrelated question of the same person at most ~0.5).
GROUNDING_THRESHOLD = 0.6

#: Questions that ask for a told fact, by belief key (``{thing}``: the relation or counted noun).
QUESTIONS: dict[str, tuple[str, ...]] = {
    "name": ("What's my name?", "Do you remember my name?", "Who am I?", "What did I say my name was?"),
    "full_name": ("What's my full name?", "What is my surname?", "What's my last name?"),
    "age": ("How old am I?", "What's my age?", "Do you remember how old I am?", "How old did I say I was?"),
    "home": ("Where do I live?", "Where am I from?", "Where's my home?", "Where did I say I come from?",
             "Do you remember where I live?"),
    "work": ("What do I do for a living?", "What's my job?", "What is my work?", "What did I say I do?"),
    "likes": ("What do I like?", "What do I love?", "What do I enjoy?", "Do you remember what I like?"),
    "dislikes": ("What do I hate?", "What don't I like?", "What can't I stand?", "What do I dislike?"),
    "gave": ("What did I give you?", "What did I bring you?", "What gift did I bring?"),
    "favourite": ("What's my favourite {thing}?", "Do you remember my favourite {thing}?"),
    "relation": ("What's my {thing} called?", "What is my {thing}'s name?", "Do you remember my {thing}'s name?",
                 "Who is my {thing}?", "What did I say my {thing} was called?"),
    "count": ("How many {thing} do I have?", "How many {thing} do I keep?", "Do you remember how many {thing} I have?",
              "How many {thing} did I say?"),
}

#: Her answer by key when the card has no ``grounded`` template (``{value}``, ``{thing}``).
TEMPLATES: dict[str, str] = {
    "name": "{value}. You told me yourself.",
    "full_name": "{value}. You gave me the whole of it.",
    "age": "{value}, you said.",
    "home": "{value}. That's what you told me.",
    "work": "You said you're a {value}.",
    "likes": "{value}. You told me so.",
    "dislikes": "{value}. You said you couldn't abide it.",
    "gave": "{value}. I've kept it.",
    "favourite": "{value}, you said.",
    "relation": "{value}. Your {thing}, you told me.",
    "count": "{value} {thing}, you said.",
}

#: Her beliefs as ``(entity, key, value, source)``.
Beliefs = Sequence[tuple[str, str, str, str]]

_ASK = re.compile(r"\?|^\s*(?:what|who|where|when|how|which|why|do|did|does|is|are|can|could|would|remind|tell|"
                  r"say|remember|recall|guess)\b|\bremind me\b|\btell me\b|\bdo you (?:remember|recall|know)\b", re.I)
_FIRST = frozenset("i me my mine myself i'm i've i'd".split())
_SECOND = frozenset("you your yours yourself you're you've".split())


def _person(text: str) -> tuple[bool, bool]:
    toks = set(tokens(text))
    return bool(toks & _FIRST), bool(toks & _SECOND)


@dataclass(frozen=True)
class Grounded:
    """A grounded answer: ``text`` to say, the fact's ``id`` (``told.<entity>.<key>`` or ``card.<id>``),
    its ``value``, the question it matched and the cosine ``score``."""

    id: str
    text: str
    value: str
    question: str
    score: float


def _key_group(entity: str, key: str) -> tuple[str, str]:
    """``(question group, thing)`` for a belief."""
    if entity == "player":
        if key.startswith("favourite "):
            return "favourite", key.removeprefix("favourite ")
        return key, ""
    thing = entity.removeprefix("player_").replace("_", " ")
    return ("count" if key == "count" else "relation"), thing


def questions_for(entity: str, key: str) -> tuple[str, ...]:
    """The questions that ask for belief ``entity.key`` (:data:`QUESTIONS`)."""
    group, thing = _key_group(entity, key)
    return tuple(q.format(thing=thing) for q in QUESTIONS.get(group, ()))


def _listed(value: str) -> str:
    items = [v for v in value.split("; ") if v]
    if len(items) <= 1:
        return value
    return ", ".join(items[:-1]) + " and " + items[-1]


class Grounding:
    """Finds the fact a question asks for and says it (see the module doc).

    Args:
        card: her card (structured ``facts``, ``grounded`` templates).
        embedder: ``encode(list[str]) -> (N, D)`` unit vectors (MiniLM).
        threshold: cosine needed.
    """

    def __init__(self, card: CharacterCard, embedder: Any, threshold: float = GROUNDING_THRESHOLD) -> None:
        self.card = card
        self.embedder = embedder
        self.threshold = threshold
        self.templates: Mapping[str, str] = {**TEMPLATES, **card.grounded}
        self._vectors: dict[str, np.ndarray] = {}

    def _vecs(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            for t, v in zip(missing, np.asarray(self.embedder.encode(missing), np.float32), strict=True):
                self._vectors[t] = v
        return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)

    def _candidates(self, beliefs: Beliefs) -> list[tuple[str, str, str, Fact | None]]:
        """``(id, question, value, card fact or None)`` rows."""
        rows: list[tuple[str, str, str, Fact | None]] = []
        for entity, key, value, source in beliefs:
            if "player said" not in source or not value:
                continue
            if not (entity == "player" or entity.startswith("player_")):
                continue
            for q in questions_for(entity, key):
                rows.append((f"told.{entity}.{key}", q, value, None))
        for fact in self.card.facts:
            for q in fact.questions:
                rows.append((f"card.{fact.id}", q, fact.value, fact))
        return rows

    def match(self, text: str, beliefs: Beliefs = ()) -> Grounded | None:
        """The grounded answer to ``text``, or ``None`` when it asks for no fact she holds.

        Args:
            text: the player's line (sanitised).
            beliefs: her beliefs now, ``(entity, key, value, source)``
                (:attr:`game.cast.guard.PersonaFacts.beliefs`).
        """
        if not text.strip() or not _ASK.search(text):
            return None
        rows = self._candidates(beliefs)
        if not rows:
            return None
        view = _person(text)
        words = {t.removesuffix("'s") for t in tokens(text)}
        # the things the player told her of ("dog", "hives") that this line names: then it asks about one of them
        named = {t for fid, _, _, fact in rows if fact is None
                 for t in tokens(_key_group(*fid.split(".")[1:3])[1]) if t in words or t + "s" in words
                 or t.removesuffix("s") in words}
        q = self._vecs([text])[0]
        sims = self._vecs([r[1] for r in rows]) @ q
        for i in np.argsort(-sims):
            fid, question, value, fact = rows[int(i)]
            score = float(sims[int(i)])
            if score < self.threshold:
                return None
            if _person(question) != view:
                continue
            if fact is None:
                entity, key = fid.split(".")[1:3]
                group, thing = _key_group(entity, key)
                if thing and not (set(tokens(thing)) & named):
                    continue
                if not thing and named:
                    continue
                template = self.templates.get(group, TEMPLATES.get(group, "{value}."))
                said = template.format(value=_listed(value), thing=thing)
            else:
                said = fact.say or f"{value}."
            said = said[:1].upper() + said[1:]
            return Grounded(fid, said, value, question, score)
        return None


__all__ = ["GROUNDING_THRESHOLD", "QUESTIONS", "TEMPLATES", "Grounded", "Grounding", "questions_for"]

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
from game.cast.grounding import _ASK, Grounded, _person, asks_for

#: Score (see :meth:`TopicRouter.topic`: a line's best MiniLM cosine to a card topic's questions or to
#: its answer) from which a question about her own life is answered from her card, and the lead it
#: must have over the best other topic. Chosen on the dev rows of ``bench/data/eve_topics.yaml``
#: (``python3 bench/topics.py --sweep``): the score that answers most dev questions while counting a
#: wrong or a needless answer as two misses; its held-out rows were scored once, after.
TOPIC_THRESHOLD = 0.55
TOPIC_MARGIN = 0.0
#: A lower score at which a topic is still said instead of an authored line for a question, when
#: every model attempt was rejected (``near`` in :mod:`game.cast.dialogue`): a fact near the line is
#: a better answer than "I'd have to look in the logbook for that".
TOPIC_NEAR = 0.5


def _kinds_fit(asked: str, question: str) -> bool:
    """Whether a line asking for ``asked`` (:func:`asks_for`) may be answered by a question asking for
    ``question``: either is open ("what", "how", "why", none), or both ask for the same kind."""
    return asked in ("", "how", "why") or question in ("", "how", "why") or asked == question


@dataclass(frozen=True)
class Topic:
    """Something her card answers (:func:`card_topics`): ``id`` (``card.<fact>``, ``answer.<id>``,
    ``example.<n>``), the ``questions`` that ask it, and her ``answer`` in her own words."""

    id: str
    questions: tuple[str, ...]
    answer: str


def card_topics(card: CharacterCard) -> list[Topic]:
    """Every question her card answers in her voice: its structured facts (``say``, else the value),
    its authored ``answers`` and its example exchanges with a player line. Texts with a macro
    (``{{user}}``) are left out: they need the player, and :class:`~game.cast.castroom.PlayerKnowledge`
    answers them."""
    out: list[Topic] = []
    for fact in card.facts:
        if fact.questions:
            out.append(Topic(f"card.{fact.id}", tuple(fact.questions), fact.say or f"{fact.value}."))
    for answer in card.answers:
        out.append(Topic(f"answer.{answer.id}", tuple(answer.questions), answer.answer))
    for i, ex in enumerate(card.examples):
        if ex.user.strip() and ex.char.strip():
            out.append(Topic(f"example.{i}", (ex.user,), ex.char))
    return [t for t in out if "{{" not in t.answer and t.answer.strip()
            and not any("{{" in q for q in t.questions)]


#: Phrases whose "me" does not make a line about the player ("Tell me about Hild").
_ASKING_ME = re.compile(r"\b(?:tell|show|let|give|remind) me\b", re.I)


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

    def topic(self, text: str, threshold: float | None = None, margin: float = TOPIC_MARGIN) -> Grounded | None:
        """Her card's answer to a question about her own life, found by meaning, or ``None``.

        Each topic of :func:`card_topics` scores the higher of two MiniLM cosines of ``text``: to
        the closest of its questions whose question word may ask for the same kind of answer
        (:func:`asks_for`: "who" is not "how long", "how" and "why" fit any; a topic with no such
        question is passed over), and to her answer itself. The best topic is said when it scores at least
        ``threshold`` (default :data:`TOPIC_THRESHOLD`) and leads the best other topic by ``margin``.
        Only for a line that asks (:data:`_ASK`); a line about the player ("What would your
        grandmother think of me?", "my beekeeping") is answered only by a topic one of whose
        questions speaks of the player too ("Where can I sleep?").
        """
        limit = self.threshold if threshold is None else threshold
        if limit is None or not text.strip() or not _ASK.search(text):
            return None
        if self._topics is None:
            self._topics = card_topics(self.card)
        if not self._topics:
            return None
        asks = asks_for(text)
        me = _person(_ASKING_ME.sub(" ", text))[0]
        q = self._vecs([text])[0]
        scored: list[tuple[float, Topic, str]] = []
        for t in self._topics:
            if me and not any(_person(_ASKING_ME.sub(" ", x))[0] for x in t.questions):
                continue
            fits = [x for x in t.questions if _kinds_fit(asks, asks_for(x))]
            if not fits:
                continue  # "Who taught you?" is not asked by "How long have you kept the light?" alone
            sims = self._vecs(fits) @ q
            said = float(self._vecs([t.answer])[0] @ q)
            scored.append((max(float(np.max(sims)), said), t, fits[int(np.argmax(sims))]))
        if not scored:
            return None
        scored.sort(key=lambda r: -r[0])
        score, best, question = scored[0]
        second = scored[1][0] if len(scored) > 1 else -1.0
        if score < limit or score - second < margin:
            return None
        text_ = best.answer[:1].upper() + best.answer[1:]
        fact = next((f for f in self.card.facts if f"card.{f.id}" == best.id), None)
        return Grounded(best.id, text_, fact.value if fact is not None else best.id, question, score)


__all__ = ["TOPIC_MARGIN", "TOPIC_NEAR", "TOPIC_THRESHOLD", "Topic", "TopicRouter", "card_topics"]

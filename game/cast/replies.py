"""Her authored reply when a model reply is replaced: fitting the player's line, never said again soon.

When every model attempt is rejected (incoherent, or the model is missing or failed) and no
grounded fact is near the line, :meth:`ReplyPicker.pick` chooses what she says instead, from
her card's ``replies`` (:class:`~game.cast.card.Replies`) and ``fallbacks``, in this order:

1. **an acknowledgement of what the player just told her**: the facts in the line
   (:func:`game.cast.told.facts_told`, the same extraction her memory keeps beliefs with), said
   with the card's ``replies.told`` template for that kind of fact through
   :func:`game.cast.grounding.told_text` (the path grounded answers use): "My dog is called
   Biscuit." -> "Biscuit. I'll remember the name." The ``{value}`` slot takes the player's words
   only when :func:`slot_value` finds them safe, else this step is skipped;
2. **a line for the line's intent** (apology, thanks, compliment, insult, threat, gift,
   question, small talk ``other``: :class:`game.cast.appraisal.Appraiser`);
3. **a general fallback** (the card's ``fallbacks``);
4. if every one of those was said lately: the one said longest ago.

No line said in her last :data:`RECENT_LINES` replies (of any source: :meth:`ReplyPicker.heard`)
is chosen while another is left. Within a step the lines rotate from the turn's seed
(``(seed + k) mod n``), so a replay with the same seed says the same lines. The chosen line
must also pass ``allowed`` (the persona guard). The :class:`Pick` names the step (``source``
``authored`` for steps 1-2, ``fallback`` for 3-4), the intent and the line's id, and the
dialogue pipeline records them in the reply's ``check`` (``intent``, ``pick``).
"""

from __future__ import annotations

import re
import unicodedata
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from game.cast.appraisal import SOCIAL
from game.cast.grounding import told_group, told_text
from game.cast.similarity import normalise
from game.cast.told import facts_told

if TYPE_CHECKING:  # pragma: no cover
    from game.cast.appraisal import Appraiser
    from game.cast.card import Replies

#: Intents whose line gets her authored reply before the model is asked (:meth:`ReplyPicker.direct`),
#: when the appraiser is sure of it: what a line *does* there matters more than what a small model
#: would make of its words ("You are a stupid, boring old woman." once got "...she's a stupid old woman.";
#: "goodnight Eve. thanks for everything, really." got "A little girl, you've been so good..."). A goodbye
#: or hello (:data:`game.cast.appraisal.SOCIAL`) is answered so only when the line asks nothing (no ``?``).
DIRECT_INTENTS = frozenset({"insult", "threat", "apology", "thanks", "compliment", "farewell", "greeting"})
#: Least appraisal score (mean top-3 MiniLM cosine, :class:`game.cast.appraisal.Appraiser`) for that.
#: Chosen on the dev lines of ``bench/data/eve_intents.yaml`` (``python3 bench/topics.py --intents``):
#: their true insults, threats, apologies, thanks and compliments score 0.45-0.71 as a rule; small talk
#: read as one of those intents scored at most 0.43 ("Your gull stole my toast." as an insult).
DIRECT_CONFIDENCE = 0.45
#: A higher floor by intent: before greetings were an intent of their own a greeting scored as thanks
#: ("Good evening." 0.49; true thanks in the dev lines 0.52-0.61, "Thanks for the blanket." 0.48 is left
#: to the model), and "You're welcome" to a greeting is wrong.
DIRECT_FLOOR = {"thanks": 0.5}

#: A line said in her last this-many replies is not chosen again while another line is left
#: (Eve's card has 3-4 lines per intent plus 4 fallbacks, so 7 or more candidates for any line).
RECENT_LINES = 6
#: The player's words go into a ``{value}`` slot only when at most this long (characters, words),
#: made of letters, digits, spaces, apostrophes and hyphens; anything else: the slot's line is not used.
SLOT_MAX_CHARS = 32
SLOT_MAX_WORDS = 5  # "with your neighbour Mrs Duncan"

_SLOT_OK = re.compile(r"[^\W_](?:[\w' \-]*[^\W_])?")
_ENTITY_OK = re.compile(r"player(?:_[a-z]+){0,3}")


def slot_value(text: str) -> str:
    """``text`` fit to be said back in a ``{value}`` slot, or ``""`` when it is not.

    NFKC-normalised, spaces collapsed, surrounding quotes and punctuation dropped; then it must
    be at most :data:`SLOT_MAX_CHARS` characters and :data:`SLOT_MAX_WORDS` words of letters,
    digits, apostrophes and hyphens (no braces, markup, newlines, control or chat tokens).
    """
    value = " ".join(unicodedata.normalize("NFKC", text).split()).strip(" \"'.,;:!?()[]")
    if not value or len(value) > SLOT_MAX_CHARS or len(value.split()) > SLOT_MAX_WORDS:
        return ""
    return value if _SLOT_OK.fullmatch(value) else ""


@dataclass(frozen=True)
class Pick:
    """What she says instead: ``text``, ``source`` (``authored``: a told-fact acknowledgement or an
    intent's line; ``fallback``: a general line), the line's ``intent``, and ``id``
    (``replies.told.<kind>``, ``replies.<intent>.<i>``, ``fallbacks.<i>``)."""

    text: str
    source: Literal["authored", "fallback"]
    intent: str
    id: str


class ReplyPicker:
    """Chooses her authored reply for a replaced model reply (see the module doc).

    Args:
        replies: her card's ``replies``.
        fallbacks: her general fallback lines (at least one).
        appraiser: classifies the player's line by intent (``None``: every line is ``other``).
        recent: :data:`RECENT_LINES`.
        direct: answer clear intents and told facts before the model (:meth:`direct`); off: only
            replaced replies get her lines.
    """

    def __init__(self, replies: Replies, fallbacks: Sequence[str], appraiser: Appraiser | None = None,
                 recent: int = RECENT_LINES, direct: bool = True) -> None:
        self.replies = replies
        self.direct_on = direct
        self.fallbacks = tuple(f for f in fallbacks if f.strip())
        self.appraiser = appraiser
        self._recent: deque[str] = deque(maxlen=max(1, recent))
        self._said: dict[str, int] = {}  # normalised line -> when it was last heard (reply count)
        self._count = 0

    def heard(self, text: str) -> None:
        """Note a reply of hers that reached the player (any source)."""
        key = normalise(text)
        if key:
            self._count += 1
            self._recent.append(key)
            self._said[key] = self._count

    def recently_said(self, text: str) -> bool:
        """Whether ``text`` was one of her last :data:`RECENT_LINES` replies."""
        return normalise(text) in self._recent

    def rotate(self, lines: Sequence[tuple[str, str]], seed: int,
               allowed: Callable[[str], bool] = lambda _: True) -> tuple[str, str] | None:
        """The first ``(id, line)`` of ``lines`` from ``seed mod n`` on that was not said lately and is
        ``allowed``; ``None`` when there is none."""
        n = len(lines)
        for k in range(n):
            lid, line = lines[(seed + k) % n]
            if not self.recently_said(line) and allowed(line):
                return lid, line
        return None

    def _acknowledge(self, line: str, known: Mapping[str, str] | None = None) -> tuple[str, str] | None:
        for told in facts_told(line, known):
            group = told_group(told.entity, told.key)
            value = slot_value(told.value)
            if group in self.replies.told and value and _ENTITY_OK.fullmatch(told.entity):
                return f"replies.told.{group}", told_text(self.replies.told, told.entity, told.key, value)
        return None

    def direct(self, line: str, seed: int, allowed: Callable[[str], bool] = lambda _: True,
               confidence: float = DIRECT_CONFIDENCE, known: Mapping[str, str] | None = None) -> Pick | None:
        """Her authored reply to ``line`` before any model is asked, or ``None`` (the model answers).

        - A line that tells her a fact and asks nothing (no ``?``): the card's acknowledgement of it
          (``replies.told``, step 1 of :meth:`pick`): "I keep forty hives." -> "40 hives. I'll write
          the number in the log.";
        - a line whose intent is one of :data:`DIRECT_INTENTS`, appraised at ``confidence`` or more
          and not by VADER's tie-break (thanks at :data:`DIRECT_FLOOR` or more): a line of the card
          for that intent; a farewell or greeting only in a line without ``?`` ("thanks, and where does
          the path go?" is answered as the question it is). A farewell that also thanks her
          (``Appraisal.thanked``) gets her farewell line: the goodbye ends the visit; a farewell comes
          before the told-fact acknowledgement.

        Lines rotate and are not repeated as in :meth:`pick`; each must pass ``allowed``. ``known``:
        the names of the player's pets and people she holds (:func:`~game.cast.told.facts_told`), so
        a bare "He's staying with my sister" is taken up too.
        """
        if not line.strip() or not self.direct_on:
            return None
        a = self.appraiser.appraise(line) if self.appraiser is not None else None
        need = max(confidence, DIRECT_FLOOR.get(a.intent, confidence)) if a is not None else 1.0
        sure = (a is not None and a.intent in DIRECT_INTENTS and a.score >= need and not a.tie_broken
                and not (a.intent in SOCIAL and "?" in line))
        own = self._own(a.intent, seed, allowed) if sure and a is not None else None
        if own is not None and a is not None and a.intent == "farewell":
            # a goodbye ends the visit: "Right, that's me. Goodbye" is no name to note back
            return Pick(own[1], "authored", a.intent, own[0])
        told = None if "?" in line else self._acknowledge(line, known)
        if told is not None and not self.recently_said(told[1]) and allowed(told[1]):
            return Pick(told[1], "authored", a.intent if a is not None else "other", told[0])
        if own is not None and a is not None:
            return Pick(own[1], "authored", a.intent, own[0])
        return None

    def _own(self, intent: str, seed: int, allowed: Callable[[str], bool]) -> tuple[str, str] | None:
        return self.rotate([(f"replies.{intent}.{i}", x) for i, x in enumerate(self.replies.lines(intent))], seed,
                           allowed)

    def pick(self, line: str, seed: int, allowed: Callable[[str], bool] = lambda _: True) -> Pick:
        """Her reply to the player's (sanitised) ``line`` at the turn's ``seed`` (see the module doc)."""
        intent = self.appraiser.appraise(line).intent if self.appraiser is not None and line.strip() else "other"
        told = self._acknowledge(line)
        if told is not None and not self.recently_said(told[1]) and allowed(told[1]):
            return Pick(told[1], "authored", intent, told[0])
        own = [(f"replies.{intent}.{i}", x) for i, x in enumerate(self.replies.lines(intent))]
        general = [(f"fallbacks.{i}", x) for i, x in enumerate(self.fallbacks)]
        for source, lines in (("authored", own), ("fallback", general)):
            chosen = self.rotate(lines, seed, allowed)
            if chosen is not None:
                return Pick(chosen[1], source, intent, chosen[0])  # type: ignore[arg-type]
        every = [*own, *general] or [("fallbacks.0", "Hm.")]
        ok = [x for x in every if allowed(x[1])] or every
        oldest = min(ok, key=lambda x: self._said.get(normalise(x[1]), 0))
        return Pick(oldest[1], "authored" if oldest[0].startswith("replies.") else "fallback", intent, oldest[0])


__all__ = ["DIRECT_CONFIDENCE", "DIRECT_FLOOR", "DIRECT_INTENTS", "RECENT_LINES", "SLOT_MAX_CHARS", "SLOT_MAX_WORDS",
           "Pick",
           "ReplyPicker", "slot_value"]

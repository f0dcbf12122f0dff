"""Is a model reply in Eve's character? A judge independent of the game's checks, fitted on labelled replies.

The game's checks (persona guard, verifier, coherence) stop the forms they were written against; a
fresh off-character reply passes them ("I'm so glad you're here. I've been working on a new project",
"The logbook is an incredible work of art. It's a narrative that speaks to the very fabric of the
sea"). This judge reads a reply another way, and ``bench/character.py`` counts a model reply in
character only when the checks pass it **and** this judge does.

How it judges a reply to the player's line (:meth:`ReplyJudge.judge`), first failure decides:

1. ``fragment``: it ends mid-sentence (no closing ``.``, ``!``, ``?``, ``…`` or quote);
2. ``third_person``: it names her (her card's name or nickname): she never narrates herself;
3. ``parrot``: the player's line is not a question and at least :data:`PARROT_SHARE` of the reply's
   words are words of it ("This lighthouse is a dump." -> "The lighthouse is a dump.");
4. ``register``: MiniLM (the game's embedder) nearest neighbours: the cosine of the reply to the
   nearest line in her voice (her card's authored lines: example replies, answers, fact lines,
   greetings, deflections, fallbacks, replies by intent; and the ``dev`` replies labelled
   ``in_character``) minus its cosine to the nearest ``dev`` reply labelled ``off_character``; a
   margin below :attr:`ReplyJudge.threshold` is off character.

The labels are ``bench/data/reply_labels.yaml`` (203 real SmolLM2 replies, split by question before
anything was fitted); only its ``dev`` part is used to judge, and the threshold was chosen on ``dev``
with each question's own replies left out (:func:`choose_threshold`). :func:`evaluate` scores the
judge on the ``heldout`` part against the game's checks alone (the floor).

**Bench-only.** On the held-out labels (session 8) checks + judge stop 57 of 58 off-character replies at
precision 0.89, but also 7 of 8 good ones; the checks alone stop 41 of 58 and 2 of 8 good. The game's
reply check would need precision >= :data:`GAME_PRECISION` and at most :data:`GAME_GOOD_STOPPED` of good
replies stopped, so the pipeline does not use it: a reply it stops would be replaced by an authored line
nearly every time the model says something good. In the bench it makes "in character" a strict figure
(it under-counts good model replies rather than counting bad ones). ``--judge-eval`` prints the figures.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from game.cast.coherence import Coherence
from game.cast.dialogue import facts_from_card
from game.cast.factsheet import FactSheet
from game.cast.guard import PersonaGuard
from game.cast.rejudge import check_reply
from game.cast.similarity import tokens
from game.cast.verifier import Verifier
from game.models.llm import split_sentences

LABELS = Path(__file__).resolve().parent / "data" / "reply_labels.yaml"
#: Share of a reply's words that, all taken from a player's line that asks nothing, make it a parrot.
PARROT_SHARE = 0.6
#: The register margin below which a reply is off character (chosen on ``dev`` by :func:`choose_threshold`,
#: each question's replies left out; see ``--judge-eval``).
THRESHOLD = 0.08
#: What the judge must reach on held-out labels before the game's reply check may use it: the share of its stops
#: that are right, and the most good replies it may stop (issue 11's bar for a check that replaces her replies).
GAME_PRECISION = 0.9
GAME_GOOD_STOPPED = 0.10
_ENDED = re.compile(r"[.!?\u2026][\"'\u201d\u2019)\]*]*\s*$")
#: The authored intents whose lines are her voice (``card.replies``).
_INTENTS = ("apology", "thanks", "compliment", "insult", "threat", "gift", "question", "other")


def load_labels(path: Path | str = LABELS) -> list[dict[str, Any]]:
    """The labelled replies: mappings with ``split``, ``category``, ``kind``, ``ask``, ``reply``, ``label``
    (``in_character`` / ``off_character``), ``reason``. Raises ``ValueError`` naming the row and the field
    that is wrong; ``OSError`` / ``yaml.YAMLError`` when the file cannot be read."""
    rows = (yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}).get("replies")
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"{path}: expected a non-empty 'replies' list")
    for i, r in enumerate(rows):
        for key in ("split", "ask", "reply", "label", "reason"):
            if not isinstance(r, dict) or not isinstance(r.get(key), str) or not r[key]:
                raise ValueError(f"{path}: reply {i}: '{key}' must be a non-empty string")
        if r["label"] not in ("in_character", "off_character"):
            raise ValueError(f"{path}: reply {i}: label {r['label']!r} is not in_character or off_character")
    return rows


def voice_lines(card: Any) -> list[str]:
    """Her card's authored lines (what she says in her own voice), ``{{user}}`` read as "walker"."""
    lines = [x.char for x in card.examples] + [a.answer for a in card.answers] + \
        [a.unknown for a in card.answers if a.unknown] + [f.say for f in card.facts if f.say] + \
        list(card.greetings) + list(card.deflections) + list(card.fallbacks)
    for intent in _INTENTS:
        lines += list(getattr(card.replies, intent, ()))
    return [s.replace("{{user}}", "walker").replace("{{char}}", card.nickname or card.name) for s in lines if s]


@dataclass(frozen=True)
class Judgement:
    """One reply judged: ``in_character``, the ``reason`` when it is not (``fragment``, ``third_person``,
    ``parrot``, ``register``; ``""`` when it is) and the register ``margin`` (cosine units; 0 when a rule
    decided first)."""

    in_character: bool
    reason: str = ""
    margin: float = 0.0


class ReplyJudge:
    """Judges model replies by rules and by register (see the module doc).

    Args:
        card: her card (:class:`~game.cast.card.CharacterCard`): her name and authored lines.
        embedder: ``encode(list[str]) -> (N, D)`` unit vectors (MiniLM, :func:`game.models.embedder.get_embedder`).
        labelled: the labelled replies it may learn from (only ``split == "dev"`` rows are used).
        threshold: the register margin below which a reply is off character.
    """

    def __init__(self, card: Any, embedder: Any, labelled: Iterable[dict[str, Any]],
                 threshold: float = THRESHOLD) -> None:
        dev = [r for r in labelled if r["split"] == "dev"]
        self.embedder = embedder
        self.threshold = threshold
        self.names = {w for n in (card.name, card.nickname) if n for w in tokens(n)}
        self.good = voice_lines(card) + [r["reply"] for r in dev if r["label"] == "in_character"]
        self.good_asks = [""] * (len(self.good) - sum(r["label"] == "in_character" for r in dev)) + \
            [r["ask"] for r in dev if r["label"] == "in_character"]
        self.bad = [r["reply"] for r in dev if r["label"] == "off_character"]
        self.bad_asks = [r["ask"] for r in dev if r["label"] == "off_character"]
        self._good = embedder.encode(self.good)
        self._bad = embedder.encode(self.bad)

    def margin(self, reply: str, leave_out: str = "") -> float:
        """Cosine to the nearest line in her voice minus cosine to the nearest off-character dev reply;
        ``leave_out``: a player's line whose labelled replies are not used (scoring ``dev`` itself)."""
        e = self.embedder.encode([reply])[0]
        good = np.where([a == leave_out and a != "" for a in self.good_asks], -1.0, self._good @ e)
        bad = np.where([a == leave_out for a in self.bad_asks], -1.0, self._bad @ e) if self.bad else np.array([-1.0])
        return float(good.max() - bad.max())

    def rule(self, reply: str, ask: str) -> str:
        """The first rule ``reply`` (to the player's line ``ask``) breaks, or ``""``."""
        text = reply.strip()
        if not _ENDED.search(text):
            return "fragment"
        words = tokens(text)
        if self.names & {w.removesuffix("'s") for w in words}:
            return "third_person"
        asked = set(tokens(ask))
        if not ask.rstrip().endswith("?") and words and sum(w in asked for w in words) / len(words) >= PARROT_SHARE:
            return "parrot"
        return ""

    def judge(self, reply: str, ask: str, leave_out: str = "") -> Judgement:
        """Whether ``reply`` to ``ask`` is in character (``leave_out``: see :meth:`margin`)."""
        why = self.rule(reply, ask)
        if why:
            return Judgement(False, why)
        m = self.margin(reply, leave_out)
        return Judgement(m >= self.threshold, "" if m >= self.threshold else "register", m)


def choose_threshold(judge: ReplyJudge, dev: Sequence[dict[str, Any]], candidates: Iterable[float]) -> float:
    """The candidate margin with the best balanced accuracy on ``dev`` (each reply scored with its own
    question's labelled replies left out; replies a rule decides are left out of the choice)."""
    scored = [(judge.margin(r["reply"], r["ask"]), r["label"] == "in_character") for r in dev
              if not judge.rule(r["reply"], r["ask"])]
    best, best_t = -1.0, 0.0
    for t in candidates:
        good = [m >= t for m, ok in scored if ok]
        bad = [m < t for m, ok in scored if not ok]
        acc = (sum(good) / max(1, len(good)) + sum(bad) / max(1, len(bad))) / 2
        if acc > best:
            best, best_t = acc, t
    return best_t


@dataclass(frozen=True)
class Scores:
    """Stopping off-character replies, as a detector: ``stopped_bad`` / ``bad`` (recall), ``stopped_bad`` /
    ``stopped`` (precision), ``stopped_good`` / ``good`` (good replies stopped); ``passed_good`` / ``passed``
    is the precision of what it lets through as in character."""

    bad: int
    good: int
    stopped_bad: int
    stopped_good: int

    @property
    def stopped(self) -> int:
        return self.stopped_bad + self.stopped_good

    @property
    def passed(self) -> int:
        return self.bad + self.good - self.stopped

    def line(self) -> str:
        def frac(a: int, b: int) -> str:
            return f"{a / b:.2f} ({a}/{b})" if b else "- (0/0)"
        return (f"precision {frac(self.stopped_bad, self.stopped):<13} recall {frac(self.stopped_bad, self.bad):<14} "
                f"good stopped {frac(self.stopped_good, self.good):<12} in-character precision "
                f"{frac(self.good - self.stopped_good, self.passed)}")


def score(labels: Sequence[bool], stopped: Sequence[bool]) -> Scores:
    """:class:`Scores` of ``stopped`` against ``labels`` (``True``: labelled off character)."""
    return Scores(sum(labels), len(labels) - sum(labels), sum(a and b for a, b in zip(labels, stopped, strict=True)),
                  sum(not a and b for a, b in zip(labels, stopped, strict=True)))


def evaluate(card: Any, embedder: Any, rows: Sequence[dict[str, Any]] | None = None) -> list[str]:
    """The judge's figures on the labelled replies, per split (``dev``: in-sample, each question's replies
    left out of the judge; ``heldout``: never used to fit), as printable lines: today's guard + verifier +
    coherence alone (the floor, as the bench counted "in character" before), the judge alone, and both (a
    reply counts in character only when both pass it); for all replies and for those the checks pass."""
    rows = list(rows if rows is not None else load_labels())
    judge = ReplyJudge(card, embedder, rows)
    facts = facts_from_card(card, card.home)
    guard = PersonaGuard(facts, never_say=tuple(card.never_say))
    verifier = Verifier(FactSheet.from_card(card))
    coherence = Coherence.from_card(card, embedder)
    out = [f"reply judge on {LABELS.name} (off character = the positive class; threshold {judge.threshold:+.2f}, "
           "chosen on dev with each question left out)"]
    for split in ("dev", "heldout"):
        mine = [r for r in rows if r["split"] == split]
        off = [r["label"] == "off_character" for r in mine]
        checks = [bool(check_reply(guard, verifier, split_sentences(r["reply"]), facts, r["ask"], coherence))
                  for r in mine]
        judged = [not judge.judge(r["reply"], r["ask"], r["ask"] if split == "dev" else "").in_character
                  for r in mine]
        both = [a or b for a, b in zip(checks, judged, strict=True)]
        passed = [i for i, c in enumerate(checks) if not c]
        where = "in-sample, question left out" if split == "dev" else "held out"
        out.append(f"  {split} ({where}): {len(mine)} replies, {sum(off)} off character")
        out.append(f"    checks alone (floor)  {score(off, checks).line()}")
        out.append(f"    judge alone           {score(off, judged).line()}")
        out.append(f"    checks + judge        {score(off, both).line()}")
        out.append(f"    of the {len(passed)} the checks pass, the judge: "
                   f"{score([off[i] for i in passed], [judged[i] for i in passed]).line()}")
        if split == "heldout":
            s = score(off, both)
            fit = s.stopped and s.stopped_bad / s.stopped >= GAME_PRECISION and \
                s.stopped_good <= GAME_GOOD_STOPPED * max(1, s.good)
            out.append(f"  fit for the game's reply check (held out: precision >= {GAME_PRECISION:.2f} and good "
                       f"stopped <= {GAME_GOOD_STOPPED:.0%}): {'yes' if fit else 'no, a bench-only judge'}")
    return out


__all__ = ["GAME_GOOD_STOPPED", "GAME_PRECISION", "LABELS", "PARROT_SHARE", "THRESHOLD", "Judgement", "ReplyJudge",
           "Scores", "choose_threshold", "evaluate", "load_labels", "score", "voice_lines"]

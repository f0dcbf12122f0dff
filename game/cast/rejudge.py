"""Re-judge a played transcript: every delivered reply, checked again with today's guard and verifier.

A transcript (``worldloom play ... --transcript X.jsonl``) records each reply she
delivered with its source (``authored``, ``grounded``, ``model``, ``fallback``,
``deflection``) and the check it passed then (``data.check.status``). The checks get
better after a talk is recorded; :func:`rejudge_transcript` replays the talk into a
fresh memory of hers (so her beliefs, what the player told her, are what they were at
each reply), and checks every delivered reply again, sentence by sentence as the
pipeline does (:meth:`~game.cast.guard.PersonaGuard.check`, then
:meth:`~game.cast.verifier.Verifier.check` with the player's line of that turn; the
first sentence is checked as the opening of her answer; a model reply then goes through
the coherence check, :mod:`game.cast.coherence`, with the player's line before as the topic).
A reply is **in character** only if every sentence passes them all.

No model is loaded: the story's cast is built with no dialogue model
(:func:`~game.cast.castroom.build_cast`), only MiniLM for memory and the guard's
paraphrase check. ``bench/character.py --rejudge X.jsonl`` prints the result.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from game.cast.castroom import build_cast
from game.cast.coherence import Coherence
from game.cast.dialogue import someone_elses_turn
from game.cast.guard import PersonaFacts, PersonaGuard, Verdict
from game.cast.verifier import Verifier
from game.errors import InputError
from game.models.llm import split_sentences
from game.replay_io import read_transcript
from game.state.events import Event
from game.story.loader import load_story

#: Reply sources, in the order they are printed.
SOURCES = ("authored", "grounded", "model", "fallback", "deflection")
#: Transcript rows her memory takes in (others, such as frames and effects, are skipped).
_REMEMBERED = frozenset({"say", "reply", "line", "choice", "action", "give", "scene", "ending", "reaction"})


def check_reply(guard: PersonaGuard, verifier: Verifier | None, sentences: list[str], facts: PersonaFacts,
                player_line: str, coherence: Coherence | None = None, topic: str = "") -> str:
    """Why the guard or the verifier stops a reply of ``sentences`` (``"kind: reason"`` of the
    first sentence that fails), or ``""`` when every sentence passes both. ``facts``: her
    beliefs and names at that turn; ``player_line``: what the player said to her then.

    As in the pipeline, a reply ends at a sentence that opens another speaker's turn ("Tomas: ...",
    :func:`~game.cast.dialogue.someone_elses_turn`; a reply of nothing before it fails as ``label``); a
    sentence with nothing speakable ("Mm.") is passed over; a reply of
    nothing else fails as ``empty``. A sentence of numbers alone ("1871.") is an answer: the
    verifier checks it. With ``coherence`` (:class:`~game.cast.coherence.Coherence`), each sentence
    that passed both is checked for coherence too (``topic``: the player's line before this one)."""
    said = 0
    empty = ""
    kept: list[str] = []
    for sentence in sentences:
        if someone_elses_turn(sentence, [n for n in (facts.name, *facts.aliases) if n]):
            # the pipeline ends the reply here, before any check ("Tomas: My name is..."): the player's turn
            return f"label: {sentence[:40]!r} opens someone else's turn" if not said else ""
        verdict = guard.check(sentence)
        if not verdict.ok and verdict.kind == "empty":
            if not any(c.isdigit() for c in sentence):
                empty = empty or f"empty: {verdict.reasons[0]}"
                continue
            verdict = Verdict(True)  # "1871." answers "How old is the lens?": the verifier checks the number
        if verdict.ok and verifier is not None:
            verdict = verifier.check(sentence, facts, player_line, opening=not said)[0]
        if verdict.ok and coherence is not None:
            verdict = coherence.check(sentence, player_line, topic=topic, earlier=kept,
                                      told=[v for _, _, v, _ in facts.beliefs])
        if not verdict.ok:
            return f"{verdict.kind}: {verdict.reasons[0] if verdict.reasons else verdict.matched}"
        said += 1
        kept.append(sentence)
    return "" if said else empty or "empty: says nothing"


@dataclass(frozen=True)
class Judged:
    """One delivered reply: who said it, its ``source``, the status it was recorded with,
    the player's line, the text, ``why`` the checks stop it now (``""``: it passes) and whether
    they stop its ``opening`` sentence (the pipeline then regenerates and at last replaces the
    reply; a later sentence stopped only cuts it short)."""

    speaker: str
    source: str
    recorded: str
    player_line: str
    text: str
    why: str
    opening: bool = False


@dataclass
class Rejudged:
    """Every delivered reply of a transcript, judged again (see the module doc)."""

    replies: list[Judged] = field(default_factory=list)

    def counts(self) -> dict[str, tuple[int, int, int]]:
        """Source -> ``(delivered, recorded in character, in character now)``; ``"all"`` too."""
        out: dict[str, tuple[int, int, int]] = {}
        for src in (*SOURCES, "all"):
            mine = [r for r in self.replies if src in ("all", r.source)]
            recorded = sum(r.recorded in ("verified", "authored") for r in mine)
            out[src] = (len(mine), recorded, sum(not r.why for r in mine))
        return out

    @property
    def stopped(self) -> list[Judged]:
        """The delivered replies today's checks would stop."""
        return [r for r in self.replies if r.why]

    def lines(self) -> list[str]:
        """The result as lines of text: counts by source, then each reply it would stop."""
        out = [f"{'source':<11} {'delivered':>9} {'recorded in char':>17} {'in character now':>17}"]
        for src, (n, rec, now) in self.counts().items():
            if n or src == "all":
                out.append(f"{src:<11} {n:>9} {rec:>17} {now:>17}")
        kinds = Counter(r.why.split(":")[0] for r in self.stopped)
        first = sum(r.opening for r in self.stopped)
        out.append(f"stopped now: {len(self.stopped)} ({', '.join(f'{k} {v}' for k, v in kinds.most_common())}); "
                   f"{first} at the opening sentence (regenerated, then replaced), {len(self.stopped) - first} "
                   "later (cut short there)" if self.stopped else "stopped now: none")
        for r in self.stopped:
            out.append(f"  [{r.source}] {r.player_line[:60]!r} -> {r.text[:100]!r}\n      {r.why}")
        return out


def _event(row: dict[str, Any], turn: int) -> Event:
    return Event(kind=row["type"], turn=turn, frame=int(row.get("frame", 0)), scene=str(row.get("scene", "")),
                 speaker=str(row.get("speaker", "")), text=str(row.get("text", "")),
                 ids=dict(row.get("ids") or {}), data=dict(row.get("data") or {}))


def rejudge_transcript(path: str | Path, story: str | Path | None = None, embedder: Any = None) -> Rejudged:
    """Judge every reply delivered in the transcript at ``path`` again (see the module doc).

    Args:
        path: a transcript JSONL (its header names the story).
        story: the story folder (default: the header's ``story``, as a path from the
            current directory).
        embedder: MiniLM-like encoder (default: the shared MiniLM).

    Raises:
        InputError: the transcript is unreadable or malformed (``file:line``), or its story
            has no character with a card.
        StoryError: the story does not load.
    """
    rows = read_transcript(path)
    room = build_cast(load_story(story or rows[0]["story"]), None, voice=False, embedder=embedder,
                      show_progress=False)
    if room is None:
        raise InputError("the transcript's story has no character with a card", where=str(path))
    out = Rejudged()
    topic: dict[str, str] = {}  # her id -> the player's line to her before this one (the open topic)
    turn = 0
    for row in rows[1:]:
        kind = row.get("type")
        if kind == "input":
            turn += 1
            continue
        if kind not in _REMEMBERED:
            continue
        event = _event(row, turn)
        ch = room.characters.get(event.speaker) if kind == "reply" else None
        if ch is not None and ch.pipeline is not None:
            pipe = ch.pipeline
            said = str(event.data.get("player_text", ""))
            facts = pipe.facts(said) if pipe.facts is not None else pipe.guard.facts
            pipe.guard.facts = facts
            sentences = [str(s) for s in event.data.get("sentences") or split_sentences(event.text)]
            source = str(event.data.get("source", ""))
            coherence = pipe.coherence if source == "model" else None  # authored lines are not model text
            why = check_reply(pipe.guard, pipe.verifier, sentences, facts, said, coherence,
                              topic.get(event.speaker, ""))
            opening = bool(why) and bool(check_reply(pipe.guard, pipe.verifier, sentences[:1], facts, said,
                                                     coherence, topic.get(event.speaker, "")))
            if coherence is not None:
                coherence.remember(event.text)
            topic[event.speaker] = said
            out.replies.append(Judged(event.speaker, source,
                                      str((event.data.get("check") or {}).get("status", "")), said, event.text, why,
                                      opening))
        room.observe(event)
    return out


__all__ = ["SOURCES", "Judged", "Rejudged", "check_reply", "rejudge_transcript"]

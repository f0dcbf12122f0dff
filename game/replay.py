"""Replay a recorded session from its transcript, without re-running any model.

The transcript's header names the story, seed, fps and block size; its ``input``
rows are re-applied through the story runtime on the ``null`` backend (which
keeps the same frame clock but draws nothing), and every event is compared with
the recorded one. Chunk rows are not regenerated: their recorded request
summaries and frame hashes are reported as they were.

Characters with a card answer from the transcript: each line said to one of them
(``ask``) gets her next recorded ``reply`` row (:class:`game.cast.castroom.RecordedReplies`);
no dialogue model is built and no voice is made. Agents whose dialogue model chose an
action (``agent`` rows with ``data.by == "model"``) choose it again from the transcript
(:class:`game.cast.agentmind.RecordedAgentPolicy`), in the turn it was recorded.
"""

from __future__ import annotations

import difflib
import io
import itertools
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from game import replay_io
from game.cast.agentmind import RecordedAgentPolicy
from game.cast.castroom import RecordedReplies
from game.headless import HeadlessRunner
from game.inputs.script import parse_line
from game.session import open_game
from game.world.backends.null import NullBackend

_COMPARED = ("type", "frame", "scene", "speaker", "text", "ids")


@dataclass
class ReplayResult:
    """``matched`` rows, and the first ``mismatches`` (recorded vs replayed, ``None``: nothing replayed).

    Attributes:
        differences: events that differ in all (recorded or replayed ones with no match in the
            other, aligned by :class:`difflib.SequenceMatcher`: an inserted line counts once, not
            as a shift of every later event).
        diffs: the first 5 of them, aligned so: ``(recorded, replayed)``, ``None`` on the side
            that has no event there.
        events: the recorded events compared.
        story_hashes: ``(recorded, replayed)`` story digests when they differ (the story was
            edited since the transcript was recorded), else ``None``.
    """

    matched: int = 0
    mismatches: list[tuple[dict[str, Any], dict[str, Any] | None]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    differences: int = 0
    diffs: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = field(default_factory=list)
    events: int = 0
    story_hashes: tuple[str, str] | None = None

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def report(self) -> list[str]:
        """What ``worldloom replay`` says of a replay that differs: why (the story changed), the
        first difference by frame, event kind, id and text, the count, and up to 5 differences."""
        out: list[str] = []
        if self.story_hashes is not None:
            old, new = self.story_hashes
            out.append(f"the story changed since this transcript was recorded (hash {old[:12]} vs {new[:12]})")
        for n, (rec, got) in enumerate(self.diffs or self.mismatches):
            frame = (rec or got or {}).get("frame", "?")
            lead = "the first difference is" if n == 0 else "  then"
            out.append(f"{lead} at frame {frame}: {_versus(rec, got)}")
        out.append(f"{self.differences or len(self.mismatches)} of {self.events} events differ "
                   f"({self.matched} matched before the first difference)")
        return out


def _parts(row: dict[str, Any]) -> list[str]:
    """A row as a reader names it: kind, ids (``quay.l7``, ``ysolde/hand_key``) and text."""
    ids = row.get("ids") or {}
    text = str(row.get("text") or "")
    parts = [str(row.get("type", "?")), "/".join(str(ids[k]) for k in sorted(ids))]
    parts.append(repr(text if len(text) <= 40 else text[:39] + "…") if text else "")
    return parts


def _versus(rec: dict[str, Any] | None, got: dict[str, Any] | None) -> str:
    """``line quay.l7 'Brann…' recorded, quay.l7 'Gulls…' replayed`` (what the replayed row
    shares with the recorded one is not said twice)."""
    if rec is None:
        return f"nothing recorded, {' '.join(p for p in _parts(got or {}) if p)} replayed"
    mine = " ".join(p for p in _parts(rec) if p)
    if got is None:
        return f"{mine} recorded, nothing replayed"
    theirs = [b for a, b in zip(_parts(rec), _parts(got), strict=True) if b and b != a]
    return f"{mine} recorded, {' '.join(theirs) or 'the same kind, id and text (other fields)'} replayed"


def _key(row: dict[str, Any]) -> str:
    return json.dumps([row.get(k) for k in _COMPARED], sort_keys=True, default=str)


def _is_event(row: dict[str, Any]) -> bool:
    """Whether ``row`` is one replay compares (an event, not the header, an input, a chunk...)."""
    return row.get("type") not in ("header", "input", "chunk", "save", "cast_summary")


def _event_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if _is_event(r)]


def replay(path: str | Path, story_path: str | Path | None = None, save_dir: str | Path | None = None,
           echo: Callable[[str], None] | None = None) -> ReplayResult:
    """Replay the transcript at ``path`` and compare.

    Args:
        path: transcript (``.jsonl``).
        story_path: story to use (default: the one the header names).
        save_dir: where ``save``/``load`` inputs go (default: a fresh temporary folder).
        echo: called with each line the player read, after its time (``[  12.50s] > Give the grey
            stone to the creature``), up to the first difference: the lines ``worldloom play
            --headless`` printed, made by the same code (the replaying
            :class:`~game.headless.HeadlessRunner`'s ``on_text``, :class:`game.readable.Reader`):
            scene titles, lines by speaker name, the choices on offer and the one taken, the give
            echo, what the player carries when it changed, acts in view, quest stages, the ending.

    Raises:
        game.errors.WorldloomError: unreadable transcript or story.
    """
    rows = replay_io.read_transcript(path)
    head = rows[0]
    backend = NullBackend(fps=float(head["fps"]), frames_per_block=int(head.get("block", 12)))
    tmp = tempfile.mkdtemp(prefix="worldloom-replay-") if save_dir is None else save_dir
    game = open_game(story_path or head["story"], backend=backend, seed=int(head["seed"]), save_dir=tmp,
                     dialogue=None, voice=False, recorded=RecordedReplies(rows),
                     cast_options={"show_progress": False}, agents=RecordedAgentPolicy(rows))
    session = game.session
    told: list[tuple[int, float, str]] = []  # (transcript rows written before it, their last time, line)

    def tell(line: str) -> None:
        written = runner.transcript.rows
        told.append((len(written), float(written[-1].get("time", 0.0)) if written else 0.0, line))

    try:
        out = io.StringIO()
        runner = HeadlessRunner(session, out, on_text=tell)
        runner.header(str(head["story"]))
        runner.start()
        for r in rows:
            if r.get("type") == "idle":  # a recorded run's world idling while its lines were read
                runner.idle(int(r["frames"]))
            elif r.get("type") == "input":
                cmd = parse_line(r["input"], r.get("where", "transcript"))
                if cmd is not None:
                    try:
                        runner.run(cmd)
                    except Exception as exc:  # record where replay diverged
                        runner.transcript.write({"type": "error", "text": str(exc)})
    finally:
        game.close()
    mine = _event_rows(runner.transcript.rows[1:])
    theirs = _event_rows(rows)
    result = ReplayResult()
    same = min(len(mine), len(theirs))  # events alike from the start (the first difference, below)
    for i, rec in enumerate(theirs):
        got = mine[i] if i < len(mine) else None
        if got is not None and all(rec.get(k) == got.get(k) for k in _COMPARED):
            result.matched += 1
        else:
            same = min(same, i)
            result.mismatches.append((rec, got))
            if len(result.mismatches) >= 5:
                break
    if len(mine) != len(theirs) and not result.mismatches:
        result.mismatches.append(({"type": "length", "text": str(len(theirs))},
                                  {"type": "length", "text": str(len(mine))}))
    result.events = len(theirs)
    events_before = [0]  # events_before[i]: event rows among the replay's first i transcript rows
    for row in runner.transcript.rows:
        events_before.append(events_before[-1] + _is_event(row))
    for written, time, line in told:
        if events_before[written] > same:  # past the first difference: not what was played
            break
        result.lines.append(f"[{time:7.2f}s] {line}")
        if echo:
            echo(result.lines[-1])
    if result.mismatches:
        ops = difflib.SequenceMatcher(None, [_key(r) for r in theirs], [_key(r) for r in mine],
                                      autojunk=False).get_opcodes()
        for op, i1, i2, j1, j2 in ops:
            if op != "equal":
                result.differences += max(i2 - i1, j2 - j1)
                pairs = itertools.zip_longest(theirs[i1:i2], mine[j1:j2])
                result.diffs.extend(itertools.islice(pairs, max(0, 5 - len(result.diffs))))
    recorded = str(head.get("story_hash") or "")
    if recorded and recorded != session.story.digest:
        result.story_hashes = (recorded, session.story.digest)
    return result

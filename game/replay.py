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

import io
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
from game.readable import Reader
from game.session import open_game
from game.world.backends.null import NullBackend

_COMPARED = ("type", "frame", "scene", "speaker", "text", "ids")


@dataclass
class ReplayResult:
    """``matched`` rows, and the first ``mismatches`` (recorded vs replayed)."""

    matched: int = 0
    mismatches: list[tuple[dict[str, Any], dict[str, Any] | None]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches


def _event_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("type") not in ("header", "input", "chunk", "save", "cast_summary")]


def replay(path: str | Path, story_path: str | Path | None = None, save_dir: str | Path | None = None,
           echo: Callable[[str], None] | None = None) -> ReplayResult:
    """Replay the transcript at ``path`` and compare.

    Args:
        path: transcript (``.jsonl``).
        story_path: story to use (default: the one the header names).
        save_dir: where ``save``/``load`` inputs go (default: a fresh temporary folder).
        echo: called with each line the player read, as it replays (:class:`game.readable.Reader`:
            speakers and endings by name, as the window shows them), after its time.

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
    reader = Reader(session.story, session.speaker_name)  # names as the window shows them
    try:
        out = io.StringIO()
        runner = HeadlessRunner(session, out)
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
    for i, rec in enumerate(theirs):
        got = mine[i] if i < len(mine) else None
        if got is not None and all(rec.get(k) == got.get(k) for k in _COMPARED):
            result.matched += 1
            shown = reader.line(str(rec["type"]), rec.get("speaker") or "", rec.get("text") or "",
                                rec.get("scene") or "")
            if shown is not None:
                line = f"[{rec['time']:7.2f}s] {shown}"
                result.lines.append(line)
                if echo:
                    echo(line)
        else:
            result.mismatches.append((rec, got))
            if len(result.mismatches) >= 5:
                break
    if len(mine) != len(theirs) and not result.mismatches:
        result.mismatches.append(({"type": "length", "text": str(len(theirs))},
                                  {"type": "length", "text": str(len(mine))}))
    return result

"""Read and check a transcript (``.jsonl``) before anything replays it.

A transcript is one JSON object a line: a ``header`` first (the story, seed, frame
rate and block size the run had), then ``input``, event, ``reply`` and ``chunk``
rows (see ``docs/api.md``). :func:`read_transcript` refuses, with an
:class:`~game.errors.InputError` naming ``file:line`` and the field, anything
:mod:`game.replay` could not use: a file past ``game.limits.MAX_TRANSCRIPT_BYTES``,
a line that is not a JSON object or nests past ``MAX_DEPTH``, a missing or
mistyped header field, a frame rate outside ``MIN_FPS``..``MAX_FPS`` (0 divided
by, 1e30 never finished), a block outside 1..``MAX_BLOCK_FRAMES``, an input row
without its text, or a time that is not a finite number.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from game import limits
from game.errors import InputError

#: Header fields a replay needs, and their types.
HEADER_FIELDS: dict[str, type | tuple[type, ...]] = {"story": str, "seed": int, "fps": (int, float)}
#: Optional row fields, and their types where present.
ROW_FIELDS: dict[str, type | tuple[type, ...]] = {
    "type": str, "input": str, "where": str, "text": str, "speaker": str, "scene": str, "time": (int, float),
    "frame": int, "block": int, "ids": dict, "data": dict,
}


def _typed(value: Any, kind: type | tuple[type, ...]) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)


def check_row(row: Any, where: str) -> dict[str, Any]:
    """``row`` if it is a transcript row whose known fields have their types.

    Raises:
        InputError: not an object, or a field of the wrong type (``time`` must be finite).
    """
    if not isinstance(row, dict):
        raise InputError(f"a transcript row must be a JSON object, not {type(row).__name__}", where=where)
    for name, kind in ROW_FIELDS.items():
        if name in row and row[name] is not None and not _typed(row[name], kind):
            raise InputError(f"field {name!r} must be {_name(kind)}, not {row[name]!r:.40}", where=where)
    t = row.get("time")
    if isinstance(t, float) and not math.isfinite(t):
        raise InputError(f"field 'time' is {t}", where=where)
    if row.get("type") == "input" and not isinstance(row.get("input"), str):
        raise InputError("an input row needs its 'input' text", where=where)
    return row


def check_header(row: dict[str, Any], where: str) -> dict[str, Any]:
    """``row`` if it is a usable transcript header.

    Raises:
        InputError: not a header, a missing or mistyped field, or a frame rate or block
            size outside the limits of :mod:`game.limits`.
    """
    if row.get("type") != "header":
        raise InputError("not a worldloom transcript (no header line)", where=where)
    for name, kind in HEADER_FIELDS.items():
        if name not in row:
            raise InputError(f"the header has no {name!r}", where=where)
        if not _typed(row[name], kind):
            raise InputError(f"the header's {name!r} must be {_name(kind)}, not {row[name]!r:.40}", where=where)
    limits.check_number(row["seed"], where, InputError, "the header's seed")
    fps = float(row["fps"])
    if not limits.MIN_FPS <= fps <= limits.MAX_FPS:
        raise InputError(f"the header's fps {row['fps']!r} is outside {limits.MIN_FPS:g}..{limits.MAX_FPS:g}",
                         where=where)
    block = row.get("block", 12)
    if not _typed(block, int) or not 1 <= block <= limits.MAX_BLOCK_FRAMES:
        raise InputError(f"the header's block {block!r:.40} is not 1..{limits.MAX_BLOCK_FRAMES} frames", where=where)
    if not row["story"]:
        raise InputError("the header's story is empty", where=where)
    return row


def _name(kind: type | tuple[type, ...]) -> str:
    names = {str: "text", int: "a whole number", float: "a number", dict: "an object"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return "a number" if float in kinds else " or ".join(names.get(k, k.__name__) for k in kinds)


def read_transcript(path: str | Path) -> list[dict[str, Any]]:
    """Read a transcript and check every row (the header first) before it is used.

    Raises:
        InputError: missing, unreadable or too large; a line that is not a JSON object
            (or nests too deeply); a bad header or row; each naming ``file:line``.
    """
    p = Path(path)
    try:
        limits.check_size(p.stat().st_size, limits.MAX_TRANSCRIPT_BYTES, str(p), InputError, "transcript")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read transcript: {exc}", where=str(p)) from exc
    rows: list[dict[str, Any]] = []
    first = ""
    # JSON lines end at "\n" only: the writer keeps U+2028, U+0085 and the like raw in strings (a
    # player may type or paste them), and ``str.splitlines`` would cut such a row in two.
    for i, line in enumerate(text.split("\n"), 1):
        if line.strip():
            where = f"{p}:{i}"
            value = limits.parse_json(line, where, InputError, max_bytes=limits.MAX_TRANSCRIPT_BYTES, what="line")
            rows.append(check_row(value, where))
            first = first or where
    if not rows:
        raise InputError("not a worldloom transcript (it is empty)", where=str(p))
    check_header(rows[0], first)
    return rows

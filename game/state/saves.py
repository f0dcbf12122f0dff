"""Saves and checkpoints: atomic, versioned JSON that holds no derived data.

A save file is one JSON object::

    {"format": "worldloom-save", "schema_version": 1, "story_id": "...",
     "story_hash": "<sha256 of the story source>", "label": "...",
     "state": {GameState}, "events": [Event, ...], "checkpoints": [{label, state}, ...],
     "extra": {...}}

Writes go to a temporary file in the same folder, are fsynced, and replace the
slot with ``os.replace`` (atomic on POSIX and Windows); the previous copy is kept
as ``<slot>.json.bak``. Loads validate everything and run the migrations in
:data:`MIGRATIONS` from the save's schema version up to :data:`SCHEMA_VERSION`.
Saves contain ids, numbers and text only: embeddings, sprites and caches are
rebuilt (Ren'Py's ``loadsave.py`` and SugarCube's ``save.js`` inspired the layout).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from game.errors import SaveError
from game.state.events import Event
from game.state.gamestate import SCHEMA_VERSION, GameState

FORMAT = "worldloom-save"

#: schema_version -> function upgrading a raw save dict to schema_version + 1.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}

_EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])
_SLOT_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass
class Checkpoint:
    """A snapshot the player can roll back to: a label and a deep copy of the state.

    The state carries ``log_offset``; events are never copied into a checkpoint.
    """

    label: str
    state: GameState

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "state": self.state.to_json()}


@dataclass
class SaveData:
    """What a save file holds once loaded and migrated."""

    story_id: str
    story_hash: str
    state: GameState
    events: list[Event]
    checkpoints: list[Checkpoint] = field(default_factory=list)
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def slot_path(save_dir: Path, slot: str) -> Path:
    """Path of ``slot`` in ``save_dir``; slot names are ``[A-Za-z0-9_.-]{1,64}``.

    Raises:
        SaveError: the slot name could escape the folder or is empty.
    """
    if not _SLOT_RE.match(slot) or slot in {".", ".."}:
        raise SaveError(f"bad save slot name {slot!r}", hint="use letters, digits, '_', '-', '.'")
    return save_dir / f"{slot}.json"


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temp file, fsync, rename; keep ``.bak``.

    Raises:
        SaveError: the folder is not writable or the disk is full (the old file is intact).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise SaveError(f"cannot write saves here: {exc.strerror or exc}", where=str(path.parent)) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            os.replace(path, path.with_name(path.name + ".bak"))
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        except OSError:  # pragma: no cover - some filesystems refuse a dir fsync
            pass
        finally:
            os.close(dir_fd)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise SaveError(f"cannot write save: {exc.strerror or exc}", where=str(path)) from exc


def encode(data: SaveData) -> bytes:
    """Serialise a save to UTF-8 JSON bytes (sorted keys: the same state, the same bytes)."""
    doc = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "story_id": data.story_id,
        "story_hash": data.story_hash,
        "label": data.label,
        "state": data.state.to_json(),
        "events": [e.model_dump(mode="json") for e in data.events],
        "checkpoints": [c.to_json() for c in data.checkpoints],
        "extra": data.extra,
    }
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def write_save(path: Path, data: SaveData) -> None:
    """Encode and write ``data`` atomically to ``path`` (see :func:`write_atomic`)."""
    write_atomic(path, encode(data))


def migrate(doc: dict[str, Any], where: str) -> dict[str, Any]:
    """Upgrade a raw save dict to :data:`SCHEMA_VERSION` through :data:`MIGRATIONS`.

    Raises:
        SaveError: the save is newer than this build, or a step is missing.
    """
    version = doc.get("schema_version")
    if not isinstance(version, int):
        raise SaveError("save has no integer schema_version", where=where)
    if version > SCHEMA_VERSION:
        raise SaveError(
            f"save schema {version} is newer than this worldloom ({SCHEMA_VERSION})",
            where=where,
            hint="update worldloom to load it",
        )
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise SaveError(f"no migration from save schema {version}", where=where)
        doc = step(doc)
        version += 1
        doc["schema_version"] = version
        if isinstance(doc.get("state"), dict):
            doc["state"]["schema_version"] = version
        for cp in doc.get("checkpoints", []):
            if isinstance(cp, dict) and isinstance(cp.get("state"), dict):
                cp["state"]["schema_version"] = version
    return doc


def read_save(path: Path) -> SaveData:
    """Read, check and migrate the save at ``path``.

    Raises:
        SaveError: missing, not JSON, not a worldloom save, or failing validation;
            the message names the file and the field.
    """
    where = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise SaveError("no such save", where=where) from exc
    except OSError as exc:
        raise SaveError(f"cannot read save: {exc.strerror or exc}", where=where) from exc
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SaveError(f"save is corrupt (not valid JSON: {exc})", where=where,
                        hint="load the previous copy instead") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SaveError("not a worldloom save file", where=where)
    doc = migrate(doc, where)
    section = "state"
    try:
        state = GameState.model_validate(doc["state"])
        section = "events"
        events = _EVENTS.validate_python(doc.get("events", []))
        section = "checkpoints"
        checkpoints = [
            Checkpoint(str(c["label"]), GameState.model_validate(c["state"]))
            for c in doc.get("checkpoints", [])
        ]
        story_id = str(doc["story_id"])
        story_hash = str(doc["story_hash"])
    except (KeyError, TypeError) as exc:
        raise SaveError(f"save is corrupt (missing field {exc})", where=where,
                        hint="load the previous copy instead") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in (section, *first["loc"]))
        raise SaveError(f"save is corrupt ({loc}: {first['msg']})", where=where,
                        hint="load the previous copy instead") from exc
    if state.log_offset > len(events):
        raise SaveError("save is corrupt (event log shorter than the state's offset)",
                        where=where, hint="load the previous copy instead")
    return SaveData(story_id, story_hash, state, events, checkpoints,
                    str(doc.get("label", "")), dict(doc.get("extra", {})))


def list_saves(save_dir: Path) -> list[tuple[str, Path]]:
    """``(slot, path)`` of every save in ``save_dir``, newest first."""
    if not save_dir.is_dir():
        return []
    files = sorted(save_dir.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    return [(p.stem, p) for p in files]

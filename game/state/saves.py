"""Saves and checkpoints: crash-safe, versioned JSON that holds no derived data.

A save file (schema 2) is one JSON object::

    {"format": "worldloom-save", "schema_version": 2, "story_id": "...",
     "story_hash": "<sha256 of the story source>", "label": "...",
     "state": {GameState},
     "events": {"kind": [...], "turn": [...], "frame": [...], "scene": [...],
                "speaker": [...], "text": [...], "ids": [...], "data": [...]},
     "checkpoints": [{"label": "...", "state": Delta, "extra": Delta}, ...],
     "extra": {extension name: its snapshot},
     "forward": {"steps": [{"label", "state", "extra"}, ...], "events": {by column}}}

The event log is stored once, by column (the field names are not repeated per
event). Each checkpoint holds the :class:`GameState` and every extension's snapshot
(character memories included), stored as its difference from the checkpoint before
it (the first as ``{"=": whole}``; see :mod:`game.state.delta`); a checkpoint names
its place in the log by ``state.log_offset``, events are never copied into it.
``forward`` (only after a rollback, :mod:`game.state.forward`) is the path the player
rolled back from: its steps are checkpoints too (differences, the first whole), the
first at the state's own place, and its events continue the log from there.

Writes (:func:`write_atomic`) go to a temporary file in the same folder, are
fsynced, and replace the slot with ``os.replace``, so the slot holds a complete,
loadable file at every instant (a crash leaves the old file or the new one). The
previous copy becomes ``<slot>.json.bak`` by a hard link made *before* the
replace (a copy where links are refused); a slot file that no longer parses is
kept aside as ``<slot>.json.damaged-<n>`` instead, never overwritten, so its
``.bak`` stays the last good copy. Loads (:func:`read_save`) validate every
section before anything is used and run the migrations in :data:`MIGRATIONS`
from the save's schema version up to :data:`SCHEMA_VERSION`; anything malformed
is a :class:`~game.errors.SaveError` naming the section and why. Saves contain
ids, numbers and text only: embeddings, sprites and caches are rebuilt (Ren'Py's
``loadsave.py`` and SugarCube's ``save.js`` inspired the layout).
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import orjson
from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from game.errors import SaveError
from game.state.delta import Delta, DeltaError, depth_within, diff, exact_equality, patch
from game.state.events import Event
from game.state.gamestate import SCHEMA_VERSION, GameState

FORMAT = "worldloom-save"
#: How deep lists and mappings may nest in the untyped parts of a save (event
#: data, extension snapshots). orjson refuses to write deeper than 254.
MAX_DEPTH = 64
#: The hint of every "corrupt" error.
PREVIOUS = "load the previous copy instead"

#: schema_version -> function upgrading a raw save dict to schema_version + 1.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}

_SLOT_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
#: Event fields in column order (a save's ``events`` object has one list per field).
EVENT_COLUMNS = ("kind", "turn", "frame", "scene", "speaker", "text", "ids", "data")


class _Columns(TypedDict):
    kind: list[str]
    turn: list[int]
    frame: list[int]
    scene: list[str]
    speaker: list[str]
    text: list[str]
    ids: list[dict[str, str]]
    data: list[dict[str, Any]]


_COLUMNS: TypeAdapter[_Columns] = TypeAdapter(_Columns)
_EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])
_STATE_FIELDS = {name: Annotated[f.annotation, *f.metadata] if f.metadata else f.annotation
                 for name, f in GameState.model_fields.items()}
#: State fields whose ``==`` is exact (C speed for the unchanged ones when diffing checkpoints).
_EXACT = frozenset(name for name, tp in _STATE_FIELDS.items() if exact_equality(tp))
if tuple(Event.model_fields) != EVENT_COLUMNS or Event.model_config.get("extra") == "allow" \
        or Event.__pydantic_post_init__:  # pragma: no cover - guards _events_from against a changed Event
    raise ImportError("game.state.saves: Event's fields changed; update EVENT_COLUMNS")


@dataclass(eq=False)
class Checkpoint:
    """A point the player can roll back to: a label, the state and every extension's snapshot.

    The state carries ``log_offset``; events are never copied into a checkpoint.
    A checkpoint is never changed once taken (a rollback copies its state), so
    checkpoints read from a save share unchanged parts with each other.

    Attributes:
        label: what the player did next (``"Meadow: offer_kite"``).
        state: the state before it.
        extras: extension name -> its snapshot (``Extension.save_extra()``) at that moment.
    """

    label: str
    state: GameState
    extras: dict[str, Any] = field(default_factory=dict)
    _base: Checkpoint | None = field(default=None, repr=False)
    _delta: tuple[Delta, Delta] | None = field(default=None, repr=False)

    def delta_from(self, base: Checkpoint | None) -> tuple[Delta, Delta]:
        """``(state delta, extras delta)`` against ``base`` (``None``: whole); cached per base."""
        if self._delta is not None and self._base is base:
            return self._delta
        if base is None:
            out: tuple[Delta, Delta] = ({"=": self.state.to_json()}, {"=": self.extras})
        else:
            changed = {}
            for name in _STATE_FIELDS:
                was, now = getattr(base.state, name), getattr(self.state, name)
                if was is now or (name in _EXACT and was == now):
                    continue
                d = diff(was, now)
                if d is not None:
                    changed[name] = d
            out = ({"d": changed}, diff(base.extras, self.extras) or {"d": {}})
        self._base, self._delta = base, out
        return out


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
    #: the path ahead after a rollback (:class:`game.state.forward.Forward`'s steps and events).
    forward: list[Checkpoint] = field(default_factory=list)
    forward_events: list[Event] = field(default_factory=list)


def slot_path(save_dir: Path, slot: str) -> Path:
    """Path of ``slot`` in ``save_dir``; slot names are ``[A-Za-z0-9_.-]{1,64}``.

    Raises:
        SaveError: the slot name could escape the folder or is empty.
    """
    if not _SLOT_RE.match(slot) or slot in {".", ".."}:
        raise SaveError(f"bad save slot name {slot!r}", hint="use letters, digits, '_', '-', '.'")
    return save_dir / f"{slot}.json"


def previous_path(path: Path) -> Path:
    """Where the previous copy of the save at ``path`` is kept (``<slot>.json.bak``)."""
    return path.with_name(path.name + ".bak")


def damaged_paths(path: Path) -> list[Path]:
    """The damaged copies of ``path`` kept aside (``<slot>.json.damaged-<n>``), oldest first."""
    found = [(int(p.name.rsplit("-", 1)[1]), p) for p in path.parent.glob(path.name + ".damaged-*")
             if p.name.rsplit("-", 1)[1].isdigit()]
    return [p for _, p in sorted(found)]


def _loadable(path: Path) -> bool:
    """Whether ``path`` parses as a worldloom save (a cheap check before it becomes ``.bak``)."""
    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def _fsync_dir(folder: Path) -> None:
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows cannot open a folder
        return
    try:
        os.fsync(dir_fd)
    except OSError:  # pragma: no cover - some filesystems refuse a dir fsync
        pass
    finally:
        os.close(dir_fd)


def _keep(path: Path, to: Path) -> None:
    """Make ``to`` a copy of ``path`` atomically (hard link, else copy), leaving ``path`` in place."""
    tmp = to.with_name(f"{to.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(path, tmp)
    except OSError:  # no hard links here (FAT, some network shares): copy
        shutil.copyfile(path, tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
    os.replace(tmp, to)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so the slot holds a loadable file at every instant.

    Order: write a temporary file and fsync it; link the current file to
    ``.bak`` (or, if it no longer parses, to ``.damaged-<n>``: kept, never
    overwritten); ``os.replace`` the temporary file onto ``path``; fsync the folder.
    Temporary files left by a crashed write are removed first.

    Raises:
        SaveError: the folder is not writable or the disk is full (the old file is intact).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for stale in path.parent.glob(path.name + ".*tmp"):
            stale.unlink(missing_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise SaveError(f"cannot write saves here: {exc.strerror or exc}", where=str(path.parent)) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            if _loadable(path):
                _keep(path, previous_path(path))
            else:
                taken = damaged_paths(path)
                n = int(taken[-1].name.rsplit("-", 1)[1]) + 1 if taken else 1
                _keep(path, path.with_name(f"{path.name}.damaged-{n}"))
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise SaveError(f"cannot write save: {exc.strerror or exc}", where=str(path)) from exc


def _columns(events: list[Event]) -> dict[str, list[Any]]:
    rows = [e.__dict__ for e in events]  # a frozen model's fields (twice as fast as getattr)
    return {name: [row[name] for row in rows] for name in EVENT_COLUMNS}


def _checkpoint_rows(cps: list[Checkpoint]) -> list[dict[str, Any]]:
    rows = []
    base: Checkpoint | None = None
    for cp in cps:
        state, extra = cp.delta_from(base)
        rows.append({"label": cp.label, "state": state, "extra": extra})
        base = cp
    return rows


def encode(data: SaveData) -> bytes:
    """Serialise a save to UTF-8 JSON bytes (sorted keys: the same game, the same bytes).

    Raises:
        SaveError: something in the game is not JSON (an extension's snapshot, say) or nests too deep.
    """
    checkpoints = _checkpoint_rows(data.checkpoints)
    doc: dict[str, Any] = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "story_id": data.story_id,
        "story_hash": data.story_hash,
        "label": data.label,
        "state": data.state.to_json(),
        "events": _columns(data.events),
        "checkpoints": checkpoints,
        "extra": data.extra,
    }
    if data.forward:
        doc["forward"] = {"steps": _checkpoint_rows(data.forward), "events": _columns(data.forward_events)}
    try:
        return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError as exc:  # orjson.JSONEncodeError
        raise SaveError(f"cannot encode the game as JSON: {exc}") from exc


def write_save(path: Path, data: SaveData) -> None:
    """Encode and write ``data`` crash-safely to ``path`` (see :func:`write_atomic`)."""
    write_atomic(path, encode(data))


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 -> 2: the RNG as a count of draws, events by column, checkpoints as deltas."""

    def state(st: Any) -> Any:
        if isinstance(st, dict) and isinstance(st.get("draws"), list):
            st = {**st, "draws": len(st["draws"])}
        return st

    rows = doc.get("events", [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise SaveError("events: a schema 1 save holds a list of event objects")
    events = _EVENTS.validate_python(rows)  # the slow, whole check: old saves only
    cps = doc.get("checkpoints", [])
    if not isinstance(cps, list) or not all(isinstance(c, dict) for c in cps):
        raise SaveError("checkpoints: a schema 1 save holds a list of {label, state}")
    return {**doc, "state": state(doc.get("state")), "events": _columns(events),
            "checkpoints": [{"label": c.get("label", ""), "state": {"=": state(c.get("state"))}, "extra": {"=": {}}}
                            for c in cps]}


MIGRATIONS[1] = _v1_to_v2


def migrate(doc: dict[str, Any], where: str) -> dict[str, Any]:
    """Upgrade a raw save dict to :data:`SCHEMA_VERSION` through :data:`MIGRATIONS`.

    Raises:
        SaveError: the save is newer than this build, a step is missing, or the old
            save is too damaged to upgrade.
    """
    version = doc.get("schema_version")
    if type(version) is not int:
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
        try:
            doc = step(doc)
        except SaveError as exc:
            raise SaveError(f"save is corrupt (schema {version}: {exc.why})", where=where, hint=PREVIOUS) from exc
        except (ValidationError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SaveError(f"save is corrupt (cannot upgrade it from schema {version}: {exc})".replace("\n", " "),
                            where=where, hint=PREVIOUS) from exc
        version += 1
        doc["schema_version"] = version
        if isinstance(doc.get("state"), dict):
            doc["state"]["schema_version"] = version
        for cp in doc.get("checkpoints", []):
            full = cp.get("state") if isinstance(cp, dict) else None
            if isinstance(full, dict) and isinstance(full.get("="), dict):
                full["="]["schema_version"] = version
    return doc


class _Corrupt(Exception):
    """A section of a save is malformed (turned into a SaveError naming the file)."""

    def __init__(self, section: str, why: str) -> None:
        super().__init__(f"{section}: {why}")


def _state(value: Any, section: str) -> GameState:
    try:
        return GameState.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise _Corrupt(".".join([section, *(str(p) for p in first["loc"])]), first["msg"]) from None


def _patch_state(base: GameState | None, delta: Any, section: str) -> GameState:
    """``base`` with a state delta applied; only the changed fields are validated (and copied)."""
    if isinstance(delta, dict) and set(delta) == {"="}:
        return _state(delta["="], section)
    if base is None:
        raise _Corrupt(section, "the first checkpoint must hold a whole state ({'=': {...}})")
    if not isinstance(delta, dict) or set(delta) != {"d"} or not isinstance(delta["d"], dict):
        raise _Corrupt(section, "a state difference is {'=': state} or {'d': {field: difference}}")
    update = {}
    for name, sub in delta["d"].items():
        tp = _STATE_FIELDS.get(name)
        if tp is None:
            raise _Corrupt(f"{section}.{name}", "not a GameState field")
        try:
            update[name] = patch(getattr(base, name), sub, tp, f"{section}.{name}")
        except DeltaError as exc:
            raise _Corrupt(exc.where, exc.why) from None
    return base.model_copy(update=update) if update else base


def _events_from(columns: _Columns) -> list[Event]:
    """Events from checked columns: what ``Event.model_construct`` does, without its per-call
    overhead (10,000 events: ~10x faster); every value was already validated against its field's type."""
    new, set_attr, names = object.__new__, object.__setattr__, set(EVENT_COLUMNS)
    out: list[Event] = []
    append = out.append
    for kind, turn, frame, scene, speaker, text, ids, data in zip(
            columns["kind"], columns["turn"], columns["frame"], columns["scene"], columns["speaker"],
            columns["text"], columns["ids"], columns["data"], strict=True):
        e = new(Event)
        set_attr(e, "__dict__", {"kind": kind, "turn": turn, "frame": frame, "scene": scene, "speaker": speaker,
                                 "text": text, "ids": ids, "data": data})
        set_attr(e, "__pydantic_fields_set__", names.copy())
        set_attr(e, "__pydantic_extra__", None)
        set_attr(e, "__pydantic_private__", None)
        append(e)
    return out


def _events(value: Any) -> list[Event]:
    if not isinstance(value, dict) or set(value) != set(EVENT_COLUMNS):
        raise _Corrupt("events", f"must be an object with the lists {', '.join(EVENT_COLUMNS)}")
    try:
        columns = _COLUMNS.validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise _Corrupt(".".join(["events", *(str(p) for p in first["loc"])]), first["msg"]) from None
    if len({len(v) for v in columns.values()}) > 1:  # type: ignore[arg-type]
        raise _Corrupt("events", "the columns differ in length")
    nested = [v for d in columns["data"] if d for v in d.values() if isinstance(v, dict | list)]
    if nested and not depth_within(nested, MAX_DEPTH - 1):
        raise _Corrupt("events.data", f"nests deeper than {MAX_DEPTH}")
    return _events_from(columns)


def _extras(value: Any, section: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise _Corrupt(section, "must map each extension's name to an object")
    if not depth_within(value, MAX_DEPTH):
        raise _Corrupt(section, f"nests deeper than {MAX_DEPTH}")
    return value


def _checkpoints(value: Any, log_length: int, name: str = "checkpoints") -> list[Checkpoint]:
    if not isinstance(value, list):
        raise _Corrupt(name, "must be a list")
    out: list[Checkpoint] = []
    base: Checkpoint | None = None
    for i, row in enumerate(value):
        section = f"{name}.{i}"
        if not isinstance(row, dict) or set(row) != {"label", "state", "extra"} or not isinstance(row["label"], str):
            raise _Corrupt(section, "must be {label: text, state: difference, extra: difference}")
        state = _patch_state(base.state if base else None, row["state"], f"{section}.state")
        if state.log_offset > log_length:
            raise _Corrupt(f"{section}.state.log_offset", "is past the end of the event log")
        if not depth_within(row["extra"], MAX_DEPTH):
            raise _Corrupt(f"{section}.extra", f"nests deeper than {MAX_DEPTH}")
        try:
            extras = patch(base.extras if base else {}, row["extra"], Any, f"{section}.extra")
        except DeltaError as exc:
            raise _Corrupt(exc.where, exc.why) from None
        cp = Checkpoint(row["label"], state, _extras(extras, f"{section}.extra"))
        cp._base, cp._delta = base, (row["state"], row["extra"])
        out.append(cp)
        base = cp
    return out


def _forward(value: Any, state: GameState) -> tuple[list[Checkpoint], list[Event]]:
    """The ``forward`` section: steps from the state's own place in the log, in order, whose
    events continue the log (none: ``([], [])``)."""
    if value is None:
        return [], []
    if not isinstance(value, dict) or set(value) != {"steps", "events"}:
        raise _Corrupt("forward", "must be {steps: [checkpoint...], events: {by column}}")
    try:
        events = _events(value["events"])
    except _Corrupt as exc:
        raise _Corrupt("forward", str(exc)) from None
    base = state.log_offset
    steps = _checkpoints(value["steps"], base + len(events), "forward.steps")
    if len(steps) == 1:
        raise _Corrupt("forward.steps", "one step leads nowhere (none, or two or more)")
    offsets = [cp.state.log_offset for cp in steps]
    if steps and offsets[0] != base:
        raise _Corrupt("forward.steps.0.state.log_offset", "is not the state's own place in the log")
    if any(b < a for a, b in zip(offsets, offsets[1:], strict=False)) or (steps and offsets[-1] != base + len(events)):
        raise _Corrupt("forward.steps", "their places in the log go back, or do not end where its events end")
    return steps, events


def section_at(raw: bytes, pos: int) -> str:
    """The top-level key of the JSON object ``raw`` whose value holds byte ``pos``.

    Used to name the section of a save the parser refused (orjson stops at 1,024
    levels of nesting and reports only a position). A byte scan that follows
    strings (with escapes) and nesting; ``""`` when ``pos`` is outside any
    top-level value or ``raw`` is not an object.
    """
    depth = 0
    key = ""
    last_string = b""
    i = 0
    end = min(pos, len(raw))
    in_string = False
    start = 0
    while i < end:
        c = raw[i]
        if in_string:
            if c == 0x5C:  # backslash: skip the escaped byte
                i += 2
                continue
            if c == 0x22:
                in_string = False
                last_string = raw[start:i]
        elif c == 0x22:
            in_string = True
            start = i + 1
        elif c in (0x7B, 0x5B):  # { [
            depth += 1
        elif c in (0x7D, 0x5D):  # } ]
            depth -= 1
            if depth == 0:
                return ""
        elif c == 0x3A and depth == 1:  # ':' after a top-level key
            key = last_string.decode("utf-8", "replace")
        elif c == 0x2C and depth == 1:  # ',' ends a top-level value
            key = ""
        i += 1
    return key if depth >= 1 else ""


def decode(raw: bytes, where: str = "") -> SaveData:
    """Parse, migrate and check a save file's bytes.

    The cyclic garbage collector is paused meanwhile: the tens of thousands of
    objects a long game's log becomes would trigger it again and again for nothing
    (nothing here makes a cycle); it is the same trick ``pickle`` users rely on.

    Raises:
        SaveError: not JSON, not a worldloom save, too new, or a section is
            malformed; the message names the section (``events.turn.3``) and why.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return _decode(raw, where)
    finally:
        if paused:
            gc.enable()


def _decode(raw: bytes, where: str) -> SaveData:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        section = section_at(raw, exc.pos)
        if section and str(exc).startswith("depth limit"):
            why = f"save is corrupt ({section}: nests too deep for the JSON parser)"
        elif section:
            why = f"save is corrupt ({section}: not valid JSON: {exc})"
        else:
            why = f"save is corrupt (not valid JSON: {exc})"
        raise SaveError(why, where=where, hint=PREVIOUS) from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SaveError("not a worldloom save file", where=where)
    doc = migrate(doc, where)
    try:
        missing = [k for k in ("story_id", "story_hash", "state", "events") if k not in doc]
        if missing:
            raise _Corrupt(missing[0], "missing field")
        for key in ("story_id", "story_hash", "label"):
            if not isinstance(doc.get(key, ""), str):
                raise _Corrupt(key, "must be text")
        state = _state(doc["state"], "state")
        events = _events(doc["events"])
        if state.log_offset > len(events):
            raise _Corrupt("state.log_offset", "event log shorter than the state's offset")
        checkpoints = _checkpoints(doc.get("checkpoints", []), len(events))
        extra = _extras(doc.get("extra", {}), "extra")
        forward, forward_events = _forward(doc.get("forward"), state)
    except _Corrupt as exc:
        raise SaveError(f"save is corrupt ({exc})", where=where, hint=PREVIOUS) from None
    except RecursionError:
        raise SaveError("save is corrupt (nests too deep)", where=where, hint=PREVIOUS) from None
    return SaveData(doc["story_id"], doc["story_hash"], state, events, checkpoints, doc.get("label", ""), extra,
                    forward, forward_events)


def read_save(path: Path) -> SaveData:
    """Read, check and migrate the save at ``path`` (see :func:`decode`).

    Raises:
        SaveError: missing, unreadable, or anything :func:`decode` refuses; the
            message names the file and the section.
    """
    where = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise SaveError("no such save", where=where) from exc
    except OSError as exc:
        raise SaveError(f"cannot read save: {exc.strerror or exc}", where=where) from exc
    return decode(raw, where)


def list_saves(save_dir: Path) -> list[tuple[str, Path]]:
    """``(slot, path)`` of every save in ``save_dir``, newest first."""
    if not save_dir.is_dir():
        return []
    files = sorted(save_dir.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    return [(p.stem, p) for p in files]

"""The error bank's store: one SQLite row per case, in WAL mode, committed per case.

Tables:

* ``cases``: one row per failure state (or false alarm) with its context, see
  :class:`Case`. Frames are never stored, only 96 x 54 PNG thumbnails of the bad
  and the corrected frame; requests are stored as ``WorldRequest.to_json()``.
* ``samples``: the drift score of every checked block (for the drift-over-a-session
  plot of ``worldloom errorbank stats``); written in batches, so a kill may lose
  the last few samples but never a case.

Durability: every :meth:`ErrorStore.add` is its own transaction and is committed
before it returns, with ``journal_mode=WAL`` and ``synchronous=NORMAL`` by default,
so a process killed mid-write (even by SIGKILL) leaves every case committed before
it readable and complete; the one being written is either all there or absent. In
WAL mode ``NORMAL`` syncs to disk at checkpoints, not at every commit: a commit costs
a write, not an fsync (``FULL`` adds survival of a power cut, at an fsync per case).
One connection per store, guarded by a lock, usable from any thread.

Cost per turn stays flat as the bank grows: writes are appends (samples in batches,
the updates that close a request's cases in one transaction), every query a game
makes reads through an index (``kind`` ranges, not ``LIKE``), and what is read back
per character is bounded (:data:`MAX_REJECTED`).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from game.errorbank.errors import ErrorBankError
from game.errorbank.thresholds import Thresholds, thresholds_path

Severity = Literal["info", "warning", "error"]
Label = Literal["", "good", "bad"]

#: Schema version (``PRAGMA user_version``); 2 added ``cases_character``.
SCHEMA_VERSION = 2
#: Most rejected replies :meth:`ErrorStore.rejected_replies` hands back (the newest).
MAX_REJECTED = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cases (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    wall_time REAL NOT NULL,
    frame INTEGER NOT NULL,
    frame_time REAL NOT NULL,
    session TEXT NOT NULL,
    story TEXT NOT NULL,
    scene TEXT NOT NULL,
    kind TEXT NOT NULL,
    severity TEXT NOT NULL,
    request TEXT NOT NULL,
    bad_png BLOB,
    fixed_png BLOB,
    character TEXT NOT NULL,
    bad_reply TEXT NOT NULL,
    fixed_reply TEXT NOT NULL,
    metrics TEXT NOT NULL,
    correction TEXT NOT NULL,
    worked INTEGER,
    label TEXT NOT NULL,
    note TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS cases_kind ON cases(kind);
CREATE INDEX IF NOT EXISTS cases_session ON cases(session, frame);
CREATE INDEX IF NOT EXISTS cases_character ON cases(character, kind);
CREATE TABLE IF NOT EXISTS samples (
    session TEXT NOT NULL,
    frame INTEGER NOT NULL,
    frame_time REAL NOT NULL,
    key TEXT NOT NULL,
    score REAL NOT NULL,
    threshold REAL NOT NULL,
    alarm INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS samples_session ON samples(session, frame);
"""


@dataclass(frozen=True)
class Case:
    """One recorded failure state (or a false alarm, once labelled ``good``).

    Attributes:
        kind: what failed: ``frame.shape``, ``frame.black``, ``frame.frozen``,
            ``frame.late``, ``backend.error``, ``backend.hang``, ``backend.down``,
            ``backend.back``, ``drift``, ``story.missing``, ``story.extra``,
            ``reply.persona``, ``reply.repeat``, ``reply.flagged``.
        severity: ``info``, ``warning`` or ``error``.
        session, story, scene: ids of the game session, the story and the scene
            (the location id where the scene id is not known).
        frame: the game's frame index when it happened; ``frame_time``: the same in
            seconds of frame time (``frame / fps``); ``wall_time``: Unix seconds.
        request: ``WorldRequest.to_json()``, or the dialogue prompt as JSON.
        bad_png, fixed_png: PNG thumbnails (96 x 54) of the bad and the corrected
            frame, or ``None``.
        character: the speaking character's id (dialogue cases).
        bad_reply, fixed_reply: the bad and the corrected reply (dialogue cases).
        metrics: metric values, e.g. ``{"key": "drift.rain", "score": 0.31,
            "threshold": 0.2, "direction": "above", "ssim": 0.52}``.
        correction: what was done (``reanchor+reset_history+regenerate``,
            ``retry``, ``fallback``, ``regenerate_reply``, ``authored_line``...).
        worked: whether the corrected output passed the monitors again, or ``None``.
        label: ``""`` (unlabelled), ``good`` (a false alarm) or ``bad`` (a true fault).
        note: free text (the exception message, what was missing...).
        id: row id (0 until stored).
    """

    kind: str
    severity: Severity = "warning"
    session: str = ""
    story: str = ""
    scene: str = ""
    frame: int = 0
    frame_time: float = 0.0
    wall_time: float = field(default_factory=time.time)
    request: Mapping[str, Any] = field(default_factory=dict)
    bad_png: bytes | None = None
    fixed_png: bytes | None = None
    character: str = ""
    bad_reply: str = ""
    fixed_reply: str = ""
    metrics: Mapping[str, Any] = field(default_factory=dict)
    correction: str = ""
    worked: bool | None = None
    label: Label = ""
    note: str = ""
    id: int = 0


_COLUMNS = [f.name for f in fields(Case) if f.name != "id"]


@dataclass(frozen=True)
class Sample:
    """One checked block's drift score: ``frame`` (its first frame), ``frame_time`` (s),
    threshold ``key``, ``score``, the ``threshold`` in force, and whether it raised an ``alarm``."""

    session: str
    frame: int
    frame_time: float
    key: str
    score: float
    threshold: float
    alarm: bool


class ErrorStore:
    """The SQLite error bank.

    Args:
        path: database file (created with its folder), or ``":memory:"``.
        synchronous: SQLite ``synchronous`` pragma (``NORMAL``, the default, survives a
            killed process in WAL mode; ``FULL`` survives power loss too, at an fsync per commit).
        sample_batch: samples are committed every this many (and on every case).

    Raises:
        ErrorBankError: the file cannot be opened or is not an error bank.
    """

    def __init__(self, path: str | Path, synchronous: Literal["FULL", "NORMAL", "OFF"] = "NORMAL",
                 sample_batch: int = 64) -> None:
        self.path = Path(path) if str(path) != ":memory:" else Path(":memory:")
        self.sample_batch = sample_batch
        self._lock = threading.RLock()
        self._pending: list[tuple[str, int, float, str, float, float, int]] = []
        try:
            if str(path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise ErrorBankError(f"error bank schema {version} is newer than {SCHEMA_VERSION}",
                                     where=str(path), hint="upgrade worldloom")
            if version < SCHEMA_VERSION:
                self._db.executescript(_SCHEMA)
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                self._db.commit()
        except sqlite3.DatabaseError as exc:
            raise ErrorBankError(f"cannot open the error bank: {exc}", where=str(path)) from exc
        except OSError as exc:  # its folder cannot be made: a file is in the way, no permission
            why = ("a file is in the way" if isinstance(exc, FileExistsError | NotADirectoryError)
                   else exc.strerror or str(exc))
            raise ErrorBankError(f"cannot create the error bank's folder: {why}", where=str(self.path.parent)) from exc

    # -- writing -------------------------------------------------------------------
    def add(self, case: Case) -> int:
        """Store ``case`` and commit; returns its row id.

        Raises:
            ErrorBankError: the database refused the write.
        """
        row = [_encode(name, getattr(case, name)) for name in _COLUMNS]
        sql = f"INSERT INTO cases ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
        with self._lock:
            try:
                self._write_samples()
                cur = self._db.execute(sql, row)
                self._db.commit()
            except sqlite3.DatabaseError as exc:
                self._db.rollback()
                raise ErrorBankError(f"cannot write a case: {exc}", where=str(self.path)) from exc
            return int(cur.lastrowid or 0)

    def update(self, case_id: int, **changes: Any) -> None:
        """Change fields of a stored case (``correction``, ``worked``, ``fixed_reply``,
        ``fixed_png``, ``label``, ``note``, ``metrics``...) and commit.

        Raises:
            ErrorBankError: unknown field or case id, or the database refused.
        """
        bad = [k for k in changes if k not in _COLUMNS]
        if bad:
            raise ErrorBankError(f"unknown case field(s): {', '.join(bad)}")
        if not changes:
            return
        sets = ", ".join(f"{k} = ?" for k in changes)
        with self._lock:
            try:
                cur = self._db.execute(f"UPDATE cases SET {sets} WHERE id = ?",
                                       [_encode(k, v) for k, v in changes.items()] + [case_id])
                self._db.commit()
            except sqlite3.DatabaseError as exc:
                self._db.rollback()
                raise ErrorBankError(f"cannot update case {case_id}: {exc}", where=str(self.path)) from exc
        if cur.rowcount == 0:
            raise ErrorBankError(f"no case {case_id}", where=str(self.path))

    def update_many(self, case_ids: list[int], **changes: Any) -> None:
        """The same changes to several cases, in one transaction (ids that do not exist are skipped).

        Raises:
            ErrorBankError: unknown field, or the database refused.
        """
        bad = [k for k in changes if k not in _COLUMNS]
        if bad:
            raise ErrorBankError(f"unknown case field(s): {', '.join(bad)}")
        if not changes or not case_ids:
            return
        sets = ", ".join(f"{k} = ?" for k in changes)
        values = [_encode(k, v) for k, v in changes.items()]
        with self._lock:
            try:
                self._db.executemany(f"UPDATE cases SET {sets} WHERE id = ?", [[*values, i] for i in case_ids])
                self._db.commit()
            except sqlite3.DatabaseError as exc:
                self._db.rollback()
                raise ErrorBankError(f"cannot update cases {case_ids}: {exc}", where=str(self.path)) from exc

    def label(self, case_id: int, label: Label) -> None:
        """Label a case ``good`` (false alarm), ``bad`` (true fault) or ``""`` (unlabelled).

        Raises:
            ErrorBankError: bad label or unknown case.
        """
        if label not in ("", "good", "bad"):
            raise ErrorBankError(f"label must be good or bad, not {label!r}")
        self.update(case_id, label=label)

    def add_sample(self, sample: Sample) -> None:
        """Queue one drift sample; written every ``sample_batch`` samples, with the next case, or on
        :meth:`flush` (no transaction stays open in between, so other processes can write)."""
        with self._lock:
            self._pending.append((sample.session, sample.frame, sample.frame_time, sample.key, sample.score,
                                  sample.threshold, int(sample.alarm)))
            if len(self._pending) >= self.sample_batch:
                self.flush()

    def _write_samples(self) -> None:
        if self._pending:
            self._db.executemany("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)", self._pending)
            self._pending.clear()

    def flush(self) -> None:
        """Write and commit queued samples.

        Raises:
            ErrorBankError: the database refused the write.
        """
        with self._lock:
            try:
                self._write_samples()
                self._db.commit()
            except sqlite3.DatabaseError as exc:
                self._db.rollback()
                raise ErrorBankError(f"cannot write drift samples: {exc}", where=str(self.path)) from exc

    # -- reading -----------------------------------------------------------------
    def cases(self, kind: str | None = None, session: str | None = None, label: str | None = None,
              prefix: bool = True) -> list[Case]:
        """Stored cases in id order; ``kind`` matches a prefix (``reply`` -> ``reply.*``) unless ``prefix=False``."""
        return list(self.iter_cases(kind, session, label, prefix))

    def iter_cases(self, kind: str | None = None, session: str | None = None, label: str | None = None,
                   prefix: bool = True) -> Iterator[Case]:
        """Like :meth:`cases`, one at a time."""
        where, args = [], []
        if kind is not None:
            if prefix:  # a range, so the kind index serves it (LIKE would scan)
                where.append("(kind = ? OR (kind >= ? AND kind < ?))")
                args += [kind, kind + ".", kind + "/"]
            else:
                where.append("kind = ?")
                args.append(kind)
        if session is not None:
            where.append("session = ?")
            args.append(session)
        if label is not None:
            where.append("label = ?")
            args.append(label)
        sql = f"SELECT id, {', '.join(_COLUMNS)} FROM cases"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", args).fetchall()
        for row in rows:
            yield _decode(row)

    def get(self, case_id: int) -> Case:
        """The case with id ``case_id``.

        Raises:
            ErrorBankError: no such case.
        """
        with self._lock:
            row = self._db.execute(f"SELECT id, {', '.join(_COLUMNS)} FROM cases WHERE id = ?",
                                   (case_id,)).fetchone()
        if row is None:
            raise ErrorBankError(f"no case {case_id}", where=str(self.path))
        return _decode(row)

    def count_by_kind(self) -> dict[str, dict[str, int]]:
        """kind -> ``{"cases", "corrected", "worked", "good", "bad"}`` counts."""
        with self._lock:
            rows = self._db.execute(
                "SELECT kind, COUNT(*), SUM(correction != ''), SUM(worked = 1), SUM(label = 'good'), "
                "SUM(label = 'bad') FROM cases GROUP BY kind ORDER BY kind").fetchall()
        return {r[0]: {"cases": r[1], "corrected": r[2] or 0, "worked": r[3] or 0, "good": r[4] or 0,
                       "bad": r[5] or 0} for r in rows}

    def sessions(self) -> list[str]:
        """Session ids with cases or samples, in order of first appearance."""
        with self._lock:
            rows = self._db.execute(
                "SELECT session FROM (SELECT session, MIN(wall_time) AS t FROM cases GROUP BY session "
                "UNION ALL SELECT session, 1e18 FROM samples GROUP BY session) GROUP BY session "
                "ORDER BY MIN(t)").fetchall()
        return [r[0] for r in rows]

    def samples(self, session: str | None = None) -> list[Sample]:
        """Drift samples of ``session`` (or all) in frame order."""
        self.flush()
        sql = "SELECT session, frame, frame_time, key, score, threshold, alarm FROM samples"
        args: list[str] = []
        if session is not None:
            sql += " WHERE session = ?"
            args.append(session)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY session, frame, rowid", args).fetchall()
        return [Sample(r[0], int(r[1]), float(r[2]), r[3], float(r[4]), float(r[5]), bool(r[6])) for r in rows]

    def rejected_replies(self, character: str | None = None, limit: int = MAX_REJECTED) -> list[str]:
        """Replies recorded as bad (dialogue cases not labelled ``good``): the persona guard's
        negative examples. The newest ``limit`` distinct ones, oldest first, so what a game
        loads and compares against stays bounded however large the bank grows."""
        sql = ("SELECT bad_reply, MAX(id) AS last FROM cases WHERE kind >= 'reply' AND kind < 'reply/' "
               "AND bad_reply != '' AND label != 'good'")
        args: list[str | int] = []
        if character is not None:
            sql += " AND (character = ? OR character = '')"
            args.append(character)
        sql += " GROUP BY bad_reply ORDER BY last DESC LIMIT ?"
        args.append(max(0, limit))
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return [r[0] for r in reversed(rows)]

    # -- thresholds ----------------------------------------------------------------
    @property
    def thresholds_file(self) -> Path:
        """Where this store's calibrated thresholds live (next to the database)."""
        return thresholds_path(self.path)

    def thresholds(self) -> Thresholds:
        """The calibrated thresholds of this store, or the defaults."""
        if str(self.path) == ":memory:":
            return Thresholds()
        return Thresholds.load(self.thresholds_file)

    # -- closing ---------------------------------------------------------------------
    def close(self) -> None:
        """Commit queued samples and close the connection (idempotent)."""
        with self._lock:
            try:
                self._write_samples()
                self._db.commit()
                self._db.close()
            except sqlite3.ProgrammingError:
                pass

    def __enter__(self) -> ErrorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_id(session_id: str) -> str:
    """The id one run of a game records its cases and samples under: ``session_id``, the UTC start
    time and 6 random hex digits (``main@20261201T170903Z-3fa9c1``), so that
    ``worldloom errorbank stats`` counts runs apart although every game's backend session is ``main``."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"{session_id}@{stamp}-{secrets.token_hex(3)}"


def _encode(name: str, value: Any) -> Any:
    if name in ("request", "metrics"):
        return json.dumps(dict(value), sort_keys=True, default=str)
    if name == "worked":
        return None if value is None else int(bool(value))
    return value


def _decode(row: tuple[Any, ...]) -> Case:
    values = dict(zip(["id", *_COLUMNS], row, strict=True))
    values["request"] = json.loads(values["request"])
    values["metrics"] = json.loads(values["metrics"])
    values["worked"] = None if values["worked"] is None else bool(values["worked"])
    values["bad_png"] = bytes(values["bad_png"]) if values["bad_png"] is not None else None
    values["fixed_png"] = bytes(values["fixed_png"]) if values["fixed_png"] is not None else None
    return replace(Case(kind=""), **values)

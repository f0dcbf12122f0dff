"""A session's journal: every call its backend was given, so another process can rebuild it exactly.

A world replica of ``worldloom serve --engine ray`` (:mod:`game.world.ray_serve`) wraps
each session's backend in a :class:`JournaledBackend`. Every call it passes on is
recorded as a JSON-able event (``start``, ``memory``, ``gen`` with the whole request,
each ``next`` pulled from a request's blocks, ``close``), and after each block the new
events go to a :class:`SnapshotBook` with the slot's place in its request (``meta``).
:func:`rebuild` replays them on a fresh backend: for a backend that is a function of its
calls (every backend here: noise from ``(seed, block)``, see docs/backends.md) the
rebuilt session is the same session, so the next block a client asks for is the block
the old replica would have sent. The snapshot is the history the state is rebuilt
from (the issue's "history, or the frames it is rebuilt from"), not the backend's
memory: replaying costs what the session cost to make so far, once, on hand-off.

The book keeps the journals with an *epoch* per session: a replica that takes a
session over raises it, and a replica whose epoch is old can no longer write (it
learns at its next call that the session moved and drops its stale copy). With a
folder, each session's journal is also an append-only JSON-lines file there, so it
outlives the process holding the book (a shared folder on a cluster).

Everything is JSON: nothing is pickled or evaluated.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from game.errors import BackendError
from game.world.protocol import (
    Backend,
    Capabilities,
    FrameChunk,
    MemoryOp,
    MemoryResult,
    SessionStart,
    WorldRequest,
    interrupt,
)
from game.world.wire import (
    memory_op_from_json,
    memory_op_json,
    request_from_json,
    request_json,
    session_start_from_json,
    session_start_json,
)

Event = list[Any]
_SAFE_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as JSON has it (tuples become lists), as the wire decoders expect it."""
    out: dict[str, Any] = json.loads(json.dumps(data))
    return out


@dataclass
class Journal:
    """The events of one session not yet written to the book, and the next request id."""

    pending: list[Event] = field(default_factory=list)
    next_gen: int = 0

    def add(self, event: Event) -> None:
        self.pending.append(event)

    def take(self) -> list[Event]:
        """The pending events (and forget them)."""
        out, self.pending = self.pending, []
        return out


class Tapped:
    """A request's blocks as the backend yields them, each pull recorded as ``["next", gen]``.

    Attributes:
        gen: the request's id in the journal.
    """

    def __init__(self, inner: Iterator[FrameChunk], gen: int, journal: Journal) -> None:
        self.inner = inner
        self.gen = gen
        self.journal = journal

    def __iter__(self) -> Tapped:
        return self

    def __next__(self) -> FrameChunk:
        self.journal.add(["next", self.gen])
        return next(self.inner)

    def close(self) -> None:
        self.journal.add(["close", self.gen])
        getattr(self.inner, "close", lambda: None)()


class JournaledBackend:
    """``backend`` with every call recorded in ``journal`` (the protocol's five methods).

    Args:
        backend: the session's own backend.
        journal: where the events go (a fresh one by default).
    """

    def __init__(self, backend: Backend, journal: Journal | None = None) -> None:
        self.backend = backend
        self.journal = journal or Journal()

    def capabilities(self) -> Capabilities:
        return self.backend.capabilities()

    def start(self, start: SessionStart) -> None:
        self.journal.add(["start", _plain(session_start_json(start))])
        self.backend.start(start)

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        gen = self.journal.next_gen
        self.journal.next_gen += 1
        self.journal.add(["gen", gen, _plain(request_json(request))])
        return Tapped(iter(self.backend.generate(request)), gen, self.journal)

    def memory(self, op: MemoryOp) -> MemoryResult:
        self.journal.add(["memory", _plain(memory_op_json(op))])
        return self.backend.memory(op)

    def interrupt(self, session_id: str = "") -> None:
        """Pass an interrupt on (:class:`~game.world.protocol.Interruptible`; a backend that cannot is
        cut after its block). Nothing is journaled: the block it abandons is never delivered, so no
        ``next`` of it is recorded, and a rebuild replays only the blocks that were."""
        interrupt(self.backend, session_id)

    def close(self) -> None:
        self.backend.close()


def compact(entries: list[dict[str, Any]], events: list[Event]) -> None:
    """Fold ``events`` into ``entries`` (in place): pulls become a count on their request.

    An entry is ``{"k": "start", "start": ...}``, ``{"k": "memory", "op": ...}`` or
    ``{"k": "gen", "gen": id, "request": ..., "pulls": n, "closed": bool}``.

    Raises:
        BackendError: an event of an unknown kind, or a pull of a request the journal never saw.
    """
    index = {e["gen"]: i for i, e in enumerate(entries) if e["k"] == "gen"}
    for ev in events:
        kind = ev[0]
        if kind == "start":
            entries.append({"k": "start", "start": ev[1]})
        elif kind == "memory":
            entries.append({"k": "memory", "op": ev[1]})
        elif kind == "gen":
            index[ev[1]] = len(entries)
            entries.append({"k": "gen", "gen": ev[1], "request": ev[2], "pulls": 0, "closed": False})
        elif kind in ("next", "close"):
            at = index.get(ev[1])
            if at is None:
                raise BackendError(f"journal: {kind} of request {ev[1]} it never started")
            if kind == "next":
                entries[at]["pulls"] += 1
            else:
                entries[at]["closed"] = True
        else:
            raise BackendError(f"journal: unknown event {kind!r}")


@dataclass
class Rebuilt:
    """A session rebuilt from its journal: the journaled backend and its requests still open (by id)."""

    backend: JournaledBackend
    open: dict[int, Tapped]


def rebuild(make: Callable[[], Backend], entries: list[dict[str, Any]]) -> Rebuilt:
    """Replay a journal on a fresh backend from ``make()``: the same calls in the same order.

    A call that failed the first time fails again and is passed over, as it was.
    Requests not closed stay open (wrapped, so their later pulls are journaled again).

    Raises:
        BackendError: ``make`` failed, or the journal is malformed.
    """
    raw = make()
    its: dict[int, Iterator[FrameChunk]] = {}
    top = -1
    for e in entries:
        kind = e.get("k")
        if kind == "start":
            with contextlib.suppress(BackendError):
                raw.start(session_start_from_json(e["start"]))
        elif kind == "memory":
            with contextlib.suppress(BackendError):
                raw.memory(memory_op_from_json(e["op"]))
        elif kind == "gen":
            gen = int(e["gen"])
            top = max(top, gen)
            try:
                it = iter(raw.generate(request_from_json(e["request"])))
                for _ in range(int(e["pulls"])):
                    next(it, None)
            except BackendError:
                continue
            if e["closed"]:
                with contextlib.suppress(Exception):
                    getattr(it, "close", lambda: None)()
            else:
                its[gen] = it
        else:
            raise BackendError(f"journal: unknown entry {kind!r}")
    journal = Journal(next_gen=top + 1)
    return Rebuilt(JournaledBackend(raw, journal), {g: Tapped(it, g, journal) for g, it in its.items()})


@dataclass
class _Book:
    owner: str
    epoch: int
    options: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    touched: float = field(default_factory=time.monotonic)


class SnapshotBook:
    """The journals of every session, by client key, with the epoch of the replica that holds each one.

    A Ray actor in ``worldloom serve --engine ray`` (one per application); plain Python here.

    Args:
        folder: also write each journal to ``folder/<key>.jsonl`` (append-only) and read
            from there a session the book does not hold (after the book itself restarted).
        expire_s: forget a journal nobody wrote for this long (its client is gone).
    """

    def __init__(self, folder: str | None = None, expire_s: float = 3600.0) -> None:
        self.folder = folder
        self.expire_s = expire_s
        self.books: dict[str, _Book] = {}
        self._calls = 0
        if folder:
            os.makedirs(folder, exist_ok=True)

    # -- the replica's calls -------------------------------------------------------------------------
    def create(self, key: str, owner: str, options: dict[str, Any]) -> int:
        """Open a journal for a new session (replacing any old one of the key); returns its epoch."""
        self._expire()
        old = self.books.get(key) or self._read(key)
        epoch = (old.epoch if old else 0) + 1
        self.books[key] = _Book(owner, epoch, dict(options))
        self._write(key, {"create": True, "owner": owner, "epoch": epoch, "options": options}, truncate=True)
        return epoch

    def claim(self, key: str, owner: str, epoch: int) -> dict[str, Any] | None:
        """Whether ``owner`` still holds ``key`` at ``epoch``.

        Returns:
            ``{"held": True}`` if it does; ``{"held": False, "epoch", "options", "entries", "meta"}``
            (the session, now held by ``owner`` at the new epoch) if it must rebuild it;
            ``None`` if the book has no such session.
        """
        book = self.books.get(key) or self._read(key)
        if book is None:
            return None
        self.books[key] = book
        book.touched = time.monotonic()
        if book.owner == owner and book.epoch == epoch:
            return {"held": True}
        book.owner, book.epoch = owner, book.epoch + 1
        self._write(key, {"owner": owner, "epoch": book.epoch})
        return {"held": False, "epoch": book.epoch, "options": book.options, "entries": book.entries,
                "meta": book.meta}

    def append(self, key: str, owner: str, epoch: int, events: list[Event], meta: dict[str, Any]) -> bool:
        """Write a session's new events and its place (``meta``) at a block boundary; ``False`` if
        ``owner`` no longer holds it at ``epoch`` (nothing written)."""
        book = self.books.get(key)
        if book is None or book.owner != owner or book.epoch != epoch:
            return False
        compact(book.entries, events)
        book.meta = meta
        book.touched = time.monotonic()
        self._write(key, {"events": events, "meta": meta})
        return True

    def drop(self, key: str, owner: str) -> None:
        """Forget a session that ended (only its holder may)."""
        book = self.books.get(key)
        if book is not None and book.owner == owner:
            del self.books[key]
            if self.folder:
                with contextlib.suppress(OSError):
                    os.unlink(self._path(key))

    def held(self) -> dict[str, str]:
        """Who holds each session (key → owner)."""
        return {k: b.owner for k, b in self.books.items()}

    # -- the folder ------------------------------------------------------------------------------------
    def _path(self, key: str) -> str:
        assert self.folder is not None and _SAFE_KEY.match(key)
        return os.path.join(self.folder, f"{key}.jsonl")

    def _write(self, key: str, record: dict[str, Any], truncate: bool = False) -> None:
        if not self.folder:
            return
        with open(self._path(key), "w" if truncate else "a", encoding="utf-8") as f:
            f.write(json.dumps(record, separators=(",", ":")) + "\n")

    def _read(self, key: str) -> _Book | None:
        if not self.folder or not _SAFE_KEY.match(key) or not os.path.exists(self._path(key)):
            return None
        book: _Book | None = None
        with open(self._path(key), encoding="utf-8") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    break  # a line cut by a crash: the journal ends at the last whole block
                if rec.get("create"):
                    book = _Book(str(rec["owner"]), int(rec["epoch"]), dict(rec["options"]))
                elif book is not None and "events" in rec:
                    compact(book.entries, rec["events"])
                    book.meta = rec["meta"]
                elif book is not None:
                    book.owner, book.epoch = str(rec["owner"]), int(rec["epoch"])
        return book

    def _expire(self) -> None:
        self._calls += 1
        if self._calls % 64:
            return
        now = time.monotonic()
        for key in [k for k, b in self.books.items() if now - b.touched > self.expire_s]:
            self.books.pop(key, None)

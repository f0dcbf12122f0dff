"""Sessions of one backend, and the branch operations every backend shares.

A backend keeps one state object per session id, the id of the current session
(the last one started or used), and snapshots of states for ``snapshot`` /
``restore`` / ``fork`` (``MemoryOp``). The state type only needs ``session_id``,
``frame`` and ``copy(session_id=None)``; :meth:`SessionTable.admit` (idempotent
replays of a request ``seq``) also ``last_seq`` and ``seen``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Generic, Protocol, Self, TypeVar

from game.errors import BackendError
from game.world.protocol import Capabilities, MemoryOp, MemoryResult, SessionStart, WorldRequest

#: Most snapshots kept per backend; the oldest go first.
MAX_SNAPSHOTS = 256
#: Requests remembered per session by :meth:`SessionTable.admit` for idempotent replays of
#: the same ``seq``. Each one keeps a whole copy of the state it started from (a model's KV
#: cache, latents), so few are kept; the procedural backend keeps 64 of its own (4 numbers each).
SEQ_MEMORY = 8


def check_start_size(caps: Capabilities, start: SessionStart) -> None:
    """Refuse a session that asks for another frame size than the backend makes.

    Raises:
        BackendError: ``start.width`` / ``start.height`` given and not ``caps``' (names the session,
            and how to get another size).
    """
    if (start.width or caps.width) != caps.width or (start.height or caps.height) != caps.height:
        name = caps.backend.split(":")[-1]
        raise BackendError(f"the {name} backend makes {caps.width}x{caps.height} frames, not "
                           f"{start.width}x{start.height}", where=f"session {start.session_id}",
                           hint=f"build the {name} backend with width=..., height=... (--size) for another size")


class SessionState(Protocol):
    """What a backend's per-session state offers the table."""

    session_id: str
    frame: int

    def copy(self, session_id: str | None = None) -> Self: ...


S = TypeVar("S", bound=SessionState)


class SessionTable(Generic[S]):
    """Sessions by id, the current session, and bounded snapshots."""

    def __init__(self, max_snapshots: int = MAX_SNAPSHOTS) -> None:
        self.sessions: dict[str, S] = {}
        self.snapshots: OrderedDict[str, S] = OrderedDict()
        self.current = ""
        self.max_snapshots = max_snapshots
        self._count = 0

    def branch(self, op: MemoryOp) -> MemoryResult | None:
        """Apply ``snapshot``, ``restore`` or ``fork``; ``None`` for any other op.

        ``snapshot`` copies the current session and returns its handle; ``restore``
        puts a snapshot's session back (and makes it current); ``fork`` copies a
        snapshot (or, without a handle, the current session) to ``new_session_id``.
        """
        if op.op == "restore":
            snap = self.snapshots.get(op.handle)
            if snap is None:
                return MemoryResult(ok=False, note=f"no snapshot {op.handle!r}")
            self.sessions[snap.session_id] = snap.copy()
            self.current = snap.session_id
            return MemoryResult(ok=True, handle=op.handle, note=f"at frame {snap.frame}")
        if op.op == "fork":
            src = self.snapshots.get(op.handle) if op.handle else self.sessions.get(self.current)
            if src is None:
                return MemoryResult(ok=False, note=f"nothing to fork from {op.handle!r}")
            if not op.new_session_id or op.new_session_id in self.sessions:
                return MemoryResult(ok=False, note=f"fork needs a new session id, got {op.new_session_id!r}")
            self.sessions[op.new_session_id] = src.copy(op.new_session_id)
            return MemoryResult(ok=True, note=f"forked {src.session_id} at frame {src.frame}")
        if op.op == "snapshot":
            sess = self.sessions.get(self.current)
            if sess is None:
                return MemoryResult(ok=False, note="no session started")
            self._count += 1
            handle = f"{sess.session_id}@{sess.frame}#{self._count}"
            self.snapshots[handle] = sess.copy()
            while len(self.snapshots) > self.max_snapshots:
                self.snapshots.popitem(last=False)
            return MemoryResult(ok=True, handle=handle, note=f"frame {sess.frame}")
        return None

    def target(self, op: MemoryOp) -> MemoryResult | S:
        """Apply ``op`` if it is a branch op (:meth:`branch`), or say no session is started;
        else the current session, for the backend's own ops (``reset``, ``reanchor``...)."""
        branched = self.branch(op)
        if branched is not None:
            return branched
        sess = self.sessions.get(self.current)
        return MemoryResult(ok=False, note="no session started") if sess is None else sess

    def admit(self, request: WorldRequest, key: object, keep: int = SEQ_MEMORY) -> S:
        """The state ``request`` runs on, and it makes its session the current one.

        A new ``seq`` (after the session's ``last_seq``) runs on the session itself, and a
        copy of the state it starts from is kept with ``key`` (what identifies the request:
        itself or a fingerprint) in the session's ``seen``, the last ``keep`` of them; the
        same ``seq`` and ``key`` again runs on a copy of that starting state (an idempotent
        replay: the same frames, the session not advanced).

        Raises:
            BackendError: unknown session, or a ``seq`` that goes backwards or is reused
                for another request.
        """
        sess = self.sessions.get(request.session_id)
        if sess is None:
            raise BackendError(f"unknown session {request.session_id!r}", hint="call start() before generate()")
        state: Any = sess  # a state with last_seq and seen (see the module doc)
        seen = state.seen.get(request.seq)
        if seen is not None:
            if seen[0] != key:
                raise BackendError(f"seq {request.seq} was already used for a different request",
                                   where=f"session {sess.session_id}")
            work: S = seen[1].copy()
        elif request.seq <= state.last_seq:
            raise BackendError(f"seq {request.seq} is not after the last one ({state.last_seq})",
                               where=f"session {sess.session_id}")
        else:
            before: Any = sess.copy()
            before.seen = {}
            state.seen[request.seq] = (key, before)
            while len(state.seen) > keep:
                del state.seen[min(state.seen)]
            state.last_seq = request.seq
            work = sess
        self.current = sess.session_id
        return work

    def clear(self) -> None:
        """Forget every session and snapshot."""
        self.sessions.clear()
        self.snapshots.clear()
        self.current = ""


class Interrupts:
    """Per-session stop flags for the request in flight (a backend's ``interrupt()``).

    ``generate`` arms a fresh flag for its session (an interrupt from before it is
    forgotten); ``interrupt`` sets it; the block loop and the denoiser poll
    :meth:`stopped` and abandon the block (nothing of it kept) once it is set.
    Thread-safe: ``interrupt`` comes from another thread than the one denoising.
    """

    def __init__(self) -> None:
        self._flags: dict[str, threading.Event] = {}
        self._guard = threading.Lock()

    def arm(self, session_id: str) -> None:
        """A new request of ``session_id`` starts: clear its flag."""
        with self._guard:
            self._flags[session_id] = threading.Event()

    def interrupt(self, session_id: str) -> None:
        """Stop the request in flight of ``session_id``."""
        with self._guard:
            self._flags.setdefault(session_id, threading.Event()).set()

    def stopped(self, session_id: str) -> bool:
        """Whether the request in flight of ``session_id`` was interrupted."""
        flag = self._flags.get(session_id)
        return flag is not None and flag.is_set()

"""Sessions of one backend, and the branch operations every backend shares.

A backend keeps one state object per session id, the id of the current session
(the last one started or used), and snapshots of states for ``snapshot`` /
``restore`` / ``fork`` (``MemoryOp``). The state type only needs ``session_id``,
``frame`` and ``copy(session_id=None)``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, Protocol, Self, TypeVar

from game.world.protocol import MemoryOp, MemoryResult

#: Most snapshots kept per backend; the oldest go first.
MAX_SNAPSHOTS = 256


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

    def clear(self) -> None:
        """Forget every session and snapshot."""
        self.sessions.clear()
        self.snapshots.clear()
        self.current = ""

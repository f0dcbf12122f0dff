"""Memory ids grouped by importance, each group kept in order of turn: sorted access to recency + importance.

The fast path of :meth:`game.cast.retrieval.EpisodicStore.top` needs every memory whose
``w_r * mm(recency) + w_i * mm(importance)`` reaches a threshold without computing it for all
of them. Recency ``decay ** max(now - turn, 0)`` never falls as the turn grows, and importance
takes few distinct values (:data:`game.cast.memory.KIND_IMPORTANCE` by kind, plus a lorebook
bonus), so within one importance group the memories above a threshold are the ones from some
turn on: a suffix of the group in turn order, found by binary search (:meth:`ByImportance.since`).
Cost: the groups (a few dozen) times a binary search, plus the ids returned.

Memories mostly arrive in turn order and are appended; one that arrives late (a summarised
exchange carries the turn it started) is inserted at its place (one copy of that group's
arrays).
"""

from __future__ import annotations

import numpy as np

#: Rows added to a group's arrays each time they fill.
GROW_ROWS = 256


class _Group:
    """The ids of one importance value, sorted by turn (ties: in the order added)."""

    def __init__(self) -> None:
        self.turns = np.zeros(GROW_ROWS, np.int64)
        self.ids = np.zeros(GROW_ROWS, np.int64)
        self.size = 0

    def add(self, ids: np.ndarray, turns: np.ndarray) -> None:
        order = np.argsort(turns, kind="stable")
        ids, turns = ids[order], turns[order]
        m, size = len(ids), self.size
        if size and turns[0] < self.turns[size - 1]:  # some arrive late: merge them in at their places
            at = np.searchsorted(self.turns[:size], turns, side="right")
            self.turns = np.insert(self.turns[:size], at, turns)
            self.ids = np.insert(self.ids[:size], at, ids)
            self.size = size + m
            return
        if size + m > len(self.turns):
            cap = max(2 * len(self.turns), size + m + GROW_ROWS)
            self.turns = np.concatenate([self.turns[:size], np.zeros(cap - size, np.int64)])
            self.ids = np.concatenate([self.ids[:size], np.zeros(cap - size, np.int64)])
        self.turns[size:size + m] = turns
        self.ids[size:size + m] = ids
        self.size = size + m


class ByImportance:
    """Memory ids by importance value, in turn order within each value (see the module docstring)."""

    def __init__(self) -> None:
        self._groups: dict[float, _Group] = {}

    def __len__(self) -> int:
        return sum(g.size for g in self._groups.values())

    def add(self, ids: np.ndarray, turns: np.ndarray, importance: np.ndarray) -> None:
        """Add memories ``ids`` ``(m,)`` with their ``turns`` ``(m,)`` int64 and ``importance`` ``(m,)`` float32."""
        ids = np.asarray(ids, np.int64)
        turns = np.asarray(turns, np.int64)
        imp = np.asarray(importance, np.float32)
        values, which = np.unique(imp, return_inverse=True)
        for j, value in enumerate(values.tolist()):
            sel = which == j
            group = self._groups.get(value)
            if group is None:
                group = self._groups[value] = _Group()
            group.add(ids[sel], turns[sel])

    def values(self) -> list[float]:
        """The distinct importance values held (as float32 values read as floats)."""
        return list(self._groups)

    def since(self, value: float, turn: int) -> np.ndarray:
        """Ids ``(m,)`` int64 of importance ``value`` whose turn is ``turn`` or later (empty for an unknown value)."""
        group = self._groups.get(value)
        if group is None:
            return np.zeros(0, np.int64)
        start = int(np.searchsorted(group.turns[:group.size], turn, side="left"))
        return group.ids[start:group.size]

    def newest(self, value: float, m: int) -> np.ndarray:
        """Ids of the ``m`` latest memories of importance ``value`` (by turn)."""
        group = self._groups.get(value)
        if group is None:
            return np.zeros(0, np.int64)
        return group.ids[max(0, group.size - m):group.size]


__all__ = ["GROW_ROWS", "ByImportance"]

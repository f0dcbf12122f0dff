"""The error bank: monitors that detect failure states, corrections, the store, export.

* :class:`GuardedBackend` wraps any world backend: checks every block (frame faults,
  visual drift against the current sink, story faults), retries, falls back to the
  procedural world while a backend is down, re-anchors and regenerates on drift;
* :class:`~game.errorbank.reply.ReplyMonitor` checks characters' replies (persona guard, rejected
  replies; import it from :mod:`game.errorbank.reply`: it needs the cast's text helpers, which a
  game without characters never imports);
* :class:`ErrorStore` keeps every case in SQLite (WAL, committed per case);
* ``worldloom errorbank stats | export | calibrate | label`` (:mod:`game.errorbank.cli`).

See ``docs/error-bank.md``.
"""

from __future__ import annotations

from game.errorbank.errors import ErrorBankError
from game.errorbank.guard import NOTICE_DOWN, GuardedBackend, GuardStats
from game.errorbank.monitors import DriftMonitor, Finding, FrameMonitor, Monitors, StoryMonitor
from game.errorbank.store import Case, ErrorStore, Sample
from game.errorbank.thresholds import Thresholds, thresholds_path

__all__ = [
    "NOTICE_DOWN",
    "Case",
    "DriftMonitor",
    "ErrorBankError",
    "ErrorStore",
    "Finding",
    "FrameMonitor",
    "GuardStats",
    "GuardedBackend",
    "Monitors",
    "Sample",
    "StoryMonitor",
    "Thresholds",
    "thresholds_path",
]

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

The names below are bound on first use (PEP 562 ``__getattr__``, :func:`game.lazy.lazy_names`):
importing one module of the bank (:mod:`game.errorbank.clock`, as headless play does) does not
import the guard, the monitors and the store (numpy, sqlite3) with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from game.lazy import lazy_names

if TYPE_CHECKING:
    from game.errorbank.errors import ErrorBankError
    from game.errorbank.guard import NOTICE_DOWN, GuardedBackend, GuardStats
    from game.errorbank.monitors import DriftMonitor, Finding, FrameMonitor, Monitors, StoryMonitor
    from game.errorbank.store import Case, ErrorStore, Sample
    from game.errorbank.thresholds import Thresholds, thresholds_path

#: The package's names -> the module each comes from (imported when the name is first read).
_HOMES = {
    "ErrorBankError": "game.errorbank.errors",
    "NOTICE_DOWN": "game.errorbank.guard",
    "GuardedBackend": "game.errorbank.guard",
    "GuardStats": "game.errorbank.guard",
    "DriftMonitor": "game.errorbank.monitors",
    "Finding": "game.errorbank.monitors",
    "FrameMonitor": "game.errorbank.monitors",
    "Monitors": "game.errorbank.monitors",
    "StoryMonitor": "game.errorbank.monitors",
    "Case": "game.errorbank.store",
    "ErrorStore": "game.errorbank.store",
    "Sample": "game.errorbank.store",
    "Thresholds": "game.errorbank.thresholds",
    "thresholds_path": "game.errorbank.thresholds",
}

__getattr__, __dir__ = lazy_names(__name__, _HOMES)

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

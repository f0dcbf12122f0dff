"""Monitor thresholds: defaults, per-kind keys, and the JSON file ``calibrate`` writes.

A threshold key names what a monitor compares and for which kind of content:

=================  ==========  ==========================================================
key                alarm when  metric
=================  ==========  ==========================================================
``drift``          above       drift score (:func:`game.errorbank.metrics.drift_score`), any weather
``drift.<w>``      above       the same for weather ``w`` (``rain``, ``snow``, ``fog``...)
``black``          below       fraction of pixels brighter than 12/255 (:func:`~game.errorbank.metrics.bright_fraction`)
``frozen``         below       largest mean abs difference to the block's first frame, grey levels
``reply.repeat``   above       token overlap of a reply with a rejected one (:mod:`game.errorbank.reply`)
=================  ==========  ==========================================================

A key with a dot falls back to the part before it (``drift.rain`` -> ``drift``).
The file lives next to the store: ``errors.db`` -> ``errors.thresholds.json``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Direction = Literal["above", "below"]

#: Defaults, measured on good procedural chunks (see docs/error-bank.md, "Thresholds").
DEFAULTS: dict[str, float] = {
    "drift": 0.3,
    "drift.rain": 0.32,
    "black": 0.005,
    "frozen": 0.05,
    "reply.repeat": 0.75,
}

#: Which side of a threshold raises the alarm.
DIRECTIONS: dict[str, Direction] = {"drift": "above", "black": "below", "frozen": "below", "reply": "above"}


def direction(key: str) -> Direction:
    """``above`` or ``below``: the side of the threshold on which ``key`` alarms."""
    return DIRECTIONS.get(key.split(".")[0], "above")


def thresholds_path(db_path: str | Path) -> Path:
    """The thresholds file that belongs to the store at ``db_path`` (``x.db`` -> ``x.thresholds.json``)."""
    p = Path(db_path)
    return p.with_name(p.stem + ".thresholds.json")


@dataclass
class Thresholds:
    """Threshold values by key, with per-kind fallback to the key's prefix, then the defaults.

    Attributes:
        values: key -> threshold (overrides :data:`DEFAULTS`).
        source: the file they were read from, or ``""``.
    """

    values: dict[str, float] = field(default_factory=dict)
    source: str = ""

    def get(self, key: str) -> float:
        """The threshold for ``key`` (``drift.rain`` falls back to ``drift``).

        Raises:
            KeyError: neither ``key`` nor its prefix has a threshold.
        """
        probe = key
        while True:
            if probe in self.values:
                return self.values[probe]
            if probe in DEFAULTS:
                return DEFAULTS[probe]
            if "." not in probe:
                raise KeyError(key)
            probe = probe.rsplit(".", 1)[0]

    def alarm(self, key: str, value: float) -> bool:
        """Whether ``value`` is on the alarming side of ``key``'s threshold."""
        t = self.get(key)
        return value > t if direction(key) == "above" else value < t

    @classmethod
    def load(cls, path: str | Path | None) -> Thresholds:
        """Read a thresholds file (missing file = the defaults).

        Raises:
            ValueError: the file exists but is not a JSON object of numbers.
        """
        if path is None or not Path(path).exists():
            return cls()
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        values = data.get("thresholds", data) if isinstance(data, dict) else None
        if not isinstance(values, dict) or not all(isinstance(v, int | float) for v in values.values()):
            raise ValueError(f"{path}: thresholds must be a JSON object of numbers")
        return cls({str(k): float(v) for k, v in values.items()}, str(path))

    def save(self, path: str | Path, notes: dict[str, object] | None = None) -> Path:
        """Write the thresholds (atomically: temp file, then rename) with optional ``notes``."""
        p = Path(path)
        tmp = p.with_name(p.name + ".tmp")
        payload = {"thresholds": dict(sorted({**DEFAULTS, **self.values}.items())), "notes": notes or {}}
        tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, p)
        return p

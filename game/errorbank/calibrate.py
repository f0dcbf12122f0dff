"""Re-derive the monitors' thresholds from labelled cases (``worldloom errorbank calibrate``).

A case labelled ``bad`` is a true fault (positive); ``good`` is a false alarm
(negative). Cases are grouped by the threshold key in their metrics (``drift``,
``drift.rain``, ``black``, ``frozen``, ``reply.repeat``...); keys without a
threshold (``story``, ``late``, ``reply.persona``) are skipped.

The rule, per key with at least ``min_cases`` labelled cases:

* both classes present: try every midpoint between consecutive distinct scores
  (and the current threshold); keep the one with the highest F1 of "alarm" against
  "bad" (F1 = 2PR / (P + R), van Rijsbergen 1979); ties go to the candidate closest
  to the current threshold;
* only false alarms: move the threshold just past them (``max * 1.05`` for keys that
  alarm above, ``min * 0.95`` for those below), so none of them would fire again;
* only true faults: keep the threshold (the bank holds no evidence that a lower one
  is safe).

Since the bank only holds alarms, calibration can only learn from what fired; to
lower a threshold, record labelled good cases from a good run (``bench/drift.py``
prints the good-chunk score distribution to start from).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from game.errorbank.store import ErrorStore
from game.errorbank.thresholds import Thresholds, direction


@dataclass(frozen=True)
class KeyResult:
    """What calibration did for one threshold key.

    Attributes:
        key: threshold key; ``old``, ``new``: thresholds; ``good``, ``bad``: labelled cases;
        f1: F1 at the new threshold (``None`` when one class is missing); ``rule``: which rule applied.
    """

    key: str
    old: float
    new: float
    good: int
    bad: int
    f1: float | None
    rule: str


def f1_at(threshold: float, scores: list[tuple[float, bool]], above: bool) -> float:
    """F1 of "alarm" (``score > threshold`` if ``above`` else ``score < threshold``) against the ``bad`` flag."""
    tp = fp = fn = 0
    for score, bad in scores:
        alarm = score > threshold if above else score < threshold
        tp += alarm and bad
        fp += alarm and not bad
        fn += (not alarm) and bad
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def best_threshold(scores: list[tuple[float, bool]], current: float, above: bool) -> tuple[float, float]:
    """``(threshold, F1)`` maximising F1 over midpoints of the sorted distinct scores."""
    values = sorted({s for s, _ in scores})
    candidates = [current] + [(a + b) / 2 for a, b in zip(values, values[1:], strict=False)]
    candidates += [values[0] - 1e-6, values[-1] + 1e-6]
    best = max(candidates, key=lambda t: (round(f1_at(t, scores, above), 12), -abs(t - current)))
    return best, f1_at(best, scores, above)


def calibrate(store: ErrorStore, min_cases: int = 3, write: bool = True) -> tuple[list[KeyResult], Path | None]:
    """Calibrate the thresholds of ``store`` from its labelled cases; write them next to it.

    Returns:
        The per-key results and the thresholds file written (``None`` if ``write`` is false
        or the store is in memory).
    """
    current = store.thresholds()
    groups: dict[str, list[tuple[float, bool]]] = {}
    for case in store.iter_cases():
        if case.label not in ("good", "bad"):
            continue
        key, score = case.metrics.get("key"), case.metrics.get("score")
        if not isinstance(key, str) or not isinstance(score, int | float):
            continue
        try:
            current.get(key)
        except KeyError:
            continue
        groups.setdefault(key, []).append((float(score), case.label == "bad"))
    results: list[KeyResult] = []
    values = dict(current.values)
    for key, scores in sorted(groups.items()):
        old = current.get(key)
        good = sum(not b for _, b in scores)
        bad = len(scores) - good
        above = direction(key) == "above"
        if len(scores) < min_cases:
            results.append(KeyResult(key, old, old, good, bad, None, f"kept: fewer than {min_cases} labelled cases"))
            continue
        if good and bad:
            new, f1 = best_threshold(scores, old, above)
            results.append(KeyResult(key, old, round(new, 6), good, bad, round(f1, 4), "max F1"))
        elif good:
            edge = max(s for s, _ in scores) * 1.05 if above else min(s for s, _ in scores) * 0.95
            new = max(old, edge) if above else min(old, edge)
            results.append(KeyResult(key, old, round(new, 6), good, bad, None, "past the false alarms"))
        else:
            results.append(KeyResult(key, old, old, good, bad, None, "kept: only true faults"))
        values[key] = results[-1].new
    path: Path | None = None
    if write and str(store.path) != ":memory:":
        notes: dict[str, Any] = {r.key: {"old": r.old, "good": r.good, "bad": r.bad, "f1": r.f1, "rule": r.rule}
                                 for r in results}
        path = Thresholds(values).save(store.thresholds_file, notes)
    return results, path

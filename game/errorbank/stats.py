"""Summaries of an error bank: counts by kind, and the drift-over-a-session plot."""

from __future__ import annotations

from pathlib import Path

from game.errorbank.plot import Chart, Series, draw_chart
from game.errorbank.store import ErrorStore


def drift_plot(store: ErrorStore, path: str | Path, session: str | None = None) -> Path | None:
    """Plot the drift score of every checked block of ``session`` (default: the last
    session with samples) against frame time, with its thresholds and the corrected
    blocks marked; returns the PNG path, or ``None`` when there are no samples."""
    samples = store.samples(session)
    if not samples:
        return None
    if session is None:
        session = samples[-1].session
        samples = [s for s in samples if s.session == session]
    keys = sorted({s.key for s in samples})
    chart = Chart(title=f"visual drift over session {session!r}", xlabel="frame time (s)",
                  ylabel="drift score (0 = matches the current sink)")
    chart.series.append(Series("drift score of the shown block", [s.frame_time for s in samples],
                               [s.score for s in samples], (31, 119, 180)))
    shown: set[float] = set()
    for key in keys:
        t = next(s.threshold for s in samples if s.key == key)
        if t not in shown:
            chart.hlines.append((t, f"threshold {key}", (214, 39, 40)))
            shown.add(t)
    chart.markers = [(s.frame_time, s.score, (214, 39, 40)) for s in samples if s.alarm]
    chart.footnote = "circles: blocks re-anchored and regenerated (score after the correction)"
    return draw_chart(chart, path)


def summary(store: ErrorStore) -> dict[str, object]:
    """Totals: cases, labelled, corrected, worked, sessions, samples."""
    counts = store.count_by_kind()
    return {
        "cases": sum(c["cases"] for c in counts.values()),
        "corrected": sum(c["corrected"] for c in counts.values()),
        "worked": sum(c["worked"] for c in counts.values()),
        "labelled": sum(c["good"] + c["bad"] for c in counts.values()),
        "sessions": len(store.sessions()),
        "samples": len(store.samples()),
    }

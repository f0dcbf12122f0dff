"""Per-turn cost of the error bank as its database grows. Prints figures; asserts nothing.

    python bench/errorbank.py [--turns 10000] [--window 500] [--size 64x36] [--backend procedural]
    python bench/errorbank.py --quick          # 1,000 turns, windows of 100

Plays the Zero Mark demo (``stories/zero_mark``) twice in lockstep, one turn of each in
turn, with the same seed and the same inputs (wait, move right, move left, over and
over): once with the error bank on (``errorbank=<a fresh database>``, as the CLI does by
default: the guard, its monitors, the reference render, the SQLite store) and once
without it, the baseline. Interleaving the two puts the same machine load on both.
Backend: the procedural world at small frames (``--size``); ``--backend null`` is the
flat test backend (``Capabilities.placeholder_frames``: the guard renders no reference for it
and takes its still frames as they are, so it measures the guard without the reference render).

For the first and the last ``--window`` turns it prints the median and mean wall time and
CPU time (``time.process_time``: every thread of the process, which is the game's and the
guard's workers) per turn, with and without the error bank, the error bank's share (with
minus without), and last / first. A flat cost has last / first near 1 for the share; the
game itself (checkpoints, the event log) may grow, and shows in the baseline as much.
At the end: the database's cases, drift samples and size on disk.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from game.session import Session, open_game  # noqa: E402
from game.state import Move, Wait  # noqa: E402

STORY = Path(__file__).resolve().parents[1] / "stories" / "zero_mark"
SEED = 7


def _size(text: str) -> tuple[int, int]:
    w, _, h = text.lower().partition("x")
    return int(w), int(h)


def _session(backend: str, size: tuple[int, int], folder: Path, errorbank: Path | None) -> Session:
    s = open_game(STORY, backend=backend, size=size, seed=SEED, save_dir=folder / "saves",
                  errorbank=errorbank).session
    s.start()
    return s


def _turn(s: Session, intent: Wait | Move) -> tuple[float, float]:
    t, c = time.perf_counter(), time.process_time()
    s.submit(intent)
    for _ in s.stream():
        pass
    return (time.perf_counter() - t) * 1000.0, (time.process_time() - c) * 1000.0


def _row(label: str, on: list[tuple[float, float]], off: list[tuple[float, float]]) -> dict[str, float]:
    def med(xs: list[float]) -> float:
        return statistics.median(xs)

    def mean(xs: list[float]) -> float:
        return statistics.fmean(xs)

    r = {"wall_on": med([w for w, _ in on]), "wall_off": med([w for w, _ in off]),
         "cpu_on": med([c for _, c in on]), "cpu_off": med([c for _, c in off]),
         "mean_wall_on": mean([w for w, _ in on]), "mean_cpu_on": mean([c for _, c in on]),
         "mean_cpu_off": mean([c for _, c in off])}
    r["share_cpu"] = r["mean_cpu_on"] - r["mean_cpu_off"]
    print(f"{label:>16} | wall ms/turn median on {r['wall_on']:7.2f}  off {r['wall_off']:7.2f} | "
          f"cpu ms/turn median on {r['cpu_on']:7.2f}  off {r['cpu_off']:7.2f} | "
          f"mean cpu on {r['mean_cpu_on']:7.2f}  off {r['mean_cpu_off']:7.2f}  error bank {r['share_cpu']:+6.2f}")
    return r


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--window", type=int, default=500)
    ap.add_argument("--size", type=_size, default=(64, 36), help="frame size WxH (small: the bench is about the bank)")
    ap.add_argument("--backend", default="procedural")
    ap.add_argument("--quick", action="store_true", help="1,000 turns, windows of 100")
    args = ap.parse_args(argv)
    turns, window = (1000, 100) if args.quick else (args.turns, args.window)
    window = max(1, min(window, turns // 2))
    folder = Path(tempfile.mkdtemp(prefix="worldloom-bench-errorbank-"))
    db = folder / "errorbank.db"
    on = _session(args.backend, args.size, folder / "on", db)
    off = _session(args.backend, args.size, folder / "off", None)
    intents: list[Wait | Move] = [Wait(seconds=0.5), Move(direction="d", seconds=0.5), Move(direction="a", seconds=0.5)]
    times_on: list[tuple[float, float]] = []
    times_off: list[tuple[float, float]] = []
    t0 = time.perf_counter()
    for i in range(turns):
        intent = intents[i % len(intents)]
        times_on.append(_turn(on, intent))
        times_off.append(_turn(off, intent))
        if (i + 1) % max(1, turns // 10) == 0:
            print(f"  ... {i + 1} turns ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    on.backend.close()
    off.backend.close()
    print(f"error bank per-turn cost: {args.backend} backend at {args.size[0]}x{args.size[1]}, {turns} turns, "
          f"Zero Mark, seed {SEED}; with the error bank on (fresh database) and off (baseline), interleaved")
    first = _row(f"turns 1-{window}", times_on[:window], times_off[:window])
    last = _row(f"turns {turns - window + 1}-{turns}", times_on[-window:], times_off[-window:])
    ratio_on = last["cpu_on"] / max(1e-9, first["cpu_on"])
    ratio_off = last["cpu_off"] / max(1e-9, first["cpu_off"])
    print(f"last / first, median cpu per turn: on {ratio_on:.3f}, off {ratio_off:.3f}; error bank share "
          f"{first['share_cpu']:+.2f} -> {last['share_cpu']:+.2f} ms/turn; "
          f"median wall on {first['wall_on']:.2f} -> {last['wall_on']:.2f} ms/turn")
    with sqlite3.connect(db) as con:
        cases = dict(con.execute("SELECT kind, COUNT(*) FROM cases GROUP BY kind").fetchall())
        samples = con.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    size = sum(p.stat().st_size for p in folder.glob("errorbank.db*"))
    print(f"database: {samples} drift samples, cases {cases or '{}'}, {size / 1e6:.2f} MB with its WAL")


if __name__ == "__main__":
    main()

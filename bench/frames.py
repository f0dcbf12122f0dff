"""Frame-path figures for the Zero Mark slice. Prints medians; asserts nothing.

    python bench/frames.py [--frames 240] [--repeat 5]

* procedural backend frames/s at 960x540 (one core: numpy threads pinned to 1);
* the game layer's own time per frame (submit + director + stream bookkeeping,
  measured on the ``null`` backend so the renderer is not counted), against the
  frame budget at 24 fps;
* checkpoint time with 10,000 events in the log, and save-file load time;
* load time of a generated 5,000-scene story, cold (parse + validate + compile)
  and cached (by content hash).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

from game.session import Session  # noqa: E402
from game.state import Event, Move, Wait  # noqa: E402
from game.story import load_story  # noqa: E402
from game.world.backends import make_backend  # noqa: E402
from game.world.backends.null import NullBackend  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def procedural_fps(story: Path, frames: int, repeat: int) -> float:
    rates = []
    for _ in range(repeat):
        s = Session(load_story(story), make_backend("procedural"), seed=1, save_dir=tempfile.mkdtemp())
        s.start()
        s.submit(Move(direction="d", seconds=frames / s.caps.fps))  # parallax on every frame
        n = 0
        t0 = time.perf_counter()
        for chunk in s.stream():
            n += chunk.n_frames
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


def layer_ms_per_frame(story: Path, turns: int) -> float:
    s = Session(load_story(story), NullBackend(), seed=1, save_dir=tempfile.mkdtemp())
    s.start()
    frames = 0
    t0 = time.perf_counter()
    for i in range(turns):
        s.submit(Move(direction="ad"[i % 2], seconds=0.5) if i % 3 else Wait(seconds=0.5))  # type: ignore[arg-type]
        for chunk in s.stream():
            frames += chunk.n_frames
    return (time.perf_counter() - t0) * 1000 / frames


def checkpoint_figures(story: Path, repeat: int) -> tuple[float, float, float]:
    s = Session(load_story(story), NullBackend(), seed=1, save_dir=tempfile.mkdtemp())
    s.start()
    for i in range(10_000):
        s.log.append(Event(kind="line", turn=i, text=f"line {i}"))
    s.state.log_offset = len(s.log)
    for i in range(300):
        s.state.random()
        s.state.visits[f"s{i}"] = i
    snap = median_ms(lambda: s.state.copy_state(), repeat * 20)
    save = median_ms(lambda: s.save("bench"), repeat)
    load = median_ms(lambda: s.load("bench"), repeat)
    return snap, save, load


def big_story(folder: Path, n: int) -> Path:
    lines = ["id: big", "title: Big", "start: s0", "variables: {x: {type: int, default: 0}}",
             "items: {kite: {name: kite}}", "inventory: [kite]", "cast: {creature: {name: creature}}",
             "locations: {here: {name: Here}}", "scenes:"]
    for i in range(n):
        nxt = f"s{i + 1}" if i + 1 < n else "s0"
        lines += [f"  s{i}:", "    location: here", "    present: [creature]",
                  f"    lines: ['Scene {i}, x is {{x}}.']", "    choices:",
                  f"      - {{id: c{i}a, text: On, goto: {nxt}, do: ['x += 1']}}",
                  f"      - {{id: c{i}b, text: Give, if: \"has('kite') and trust('creature') >= {i % 3}\", "
                  f"goto: {nxt}, do: [\"give('kite', 'creature')\"]}}"]
    (folder / "story.yaml").write_text("\n".join(lines) + "\n")
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=240)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    story = ROOT / "stories" / "zero_mark"
    os.environ["WORLDLOOM_CACHE"] = tempfile.mkdtemp()

    fps = procedural_fps(story, args.frames, args.repeat)
    print(f"procedural 960x540 frames/s (median of {args.repeat}): {fps:8.1f}   (goal >= 60)")
    ms = layer_ms_per_frame(story, 200)
    print(f"game layer time per frame (null backend):     {ms:8.3f} ms  "
          f"= {ms / (1000 / 24) * 100:.2f}% of a 24 fps frame")
    snap, save, load = checkpoint_figures(story, args.repeat)
    print(f"checkpoint at 10,000 events (median):         {snap:8.3f} ms  (goal <= 5 ms)")
    print(f"save file write at 10,000 events (median):    {save:8.2f} ms")
    print(f"save file load at 10,000 events (median):     {load:8.2f} ms  (goal <= 100 ms)")
    folder = big_story(Path(tempfile.mkdtemp()), 5000)
    colds, warms = [], []
    for _ in range(max(1, args.repeat // 2)):
        os.environ["WORLDLOOM_CACHE"] = tempfile.mkdtemp()
        colds.append(median_ms(lambda: load_story(folder), 1))
        warms.append(median_ms(lambda: load_story(folder), 3))
    cold, warm = statistics.median(colds), statistics.median(warms)
    print(f"5,000-scene story load, cold:                 {cold:8.1f} ms")
    print(f"5,000-scene story load, cached:               {warm:8.1f} ms  ({cold / warm:.1f}x faster)")


if __name__ == "__main__":
    main()

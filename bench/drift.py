"""Drift with and without the error bank's corrections. SIMULATED: prints figures, asserts nothing.

    python bench/drift.py --minutes 1 [--backend drifting] [--strengths low,medium,high]
                          [--size 96x54] [--png out/drift.png] [--fp 1000] [--fp-size 192x108]

Plays ``--minutes`` of frame time (faster than real time, small frames) of a calm
session (``game.errorbank.scenarios.session_requests``: pans, still shots, reactions,
a new place every 15-25 s, night or rain when the player asks) twice per strength:
on the bare backend, and through ``GuardedBackend`` (monitors + re-anchoring). Every
shown frame is scored against the clean procedural render of the same request, with
a metric no monitor uses: the mean CIE76 colour difference (Delta E, CIELAB; ~2.3 is
just noticeable). Prints mean and final drift (last 10 s), the reduction in percent,
re-anchors per minute, regenerated frames, stalls (blocks slower than their play
time), and the visual jump at each re-anchor (Delta E between the frame before and
the first corrected frame, next to the median frame-to-frame Delta E); writes the
curves as a PNG. With ``--fp N`` it also measures the monitors' false-positive rate
on N good procedural chunks.

With ``--walks`` it walks every scene of the demo stories instead (as their Director
builds the requests: interiors, settings, lamps, characters; cut in, pan right and
back) at the play size (``--walk-size``, default 960x540) and prints, per story, the
drift monitor's false alarms on the clean procedural frames and its detection rate on
the same walk with ``--walk-strength`` drift injected (``drifting-sim``; a block counts
as drifted when its last frame is at least :data:`VISIBLE` Delta E from the clean one and
the clean block itself raised no alarm),
for this tree and, with ``--baseline REV`` (default ``main``), for that revision's
``game/`` package in a subprocess (the same requests: this tree's
``game/errorbank/scenarios.py`` is laid over it), so before and after come from one run.

The ``drifting`` backend is a simulation (``drifting-sim``): these figures are
simulated and not comparable to any in-house figure of another system. Any other
registered backend name runs the same loop once, without strengths.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field, replace  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from game.errorbank.guard import GuardedBackend  # noqa: E402
from game.errorbank.metrics import delta_e  # noqa: E402
from game.errorbank.plot import PALETTE, Chart, Series, draw_chart  # noqa: E402
from game.errorbank.scenarios import good_requests, session_requests  # noqa: E402
from game.world.backends import make_backend  # noqa: E402
from game.world.backends.drifting import STRENGTHS, DriftingBackend  # noqa: E402
from game.world.backends.procedural import ProceduralBackend  # noqa: E402
from game.world.protocol import Backend, SessionStart  # noqa: E402

SIMULATED = ("SIMULATED (drifting-sim backend): not comparable to any in-house figure of another system")
SEED = 7
#: Delta E (CIE76) from the clean frame at which injected drift counts as visible (detection rate).
VISIBLE = 8.0
#: The demo stories the walks go through.
WALK_STORIES = ("zero_mark", "eve", "gullhaven")
ROOT = Path(__file__).resolve().parent.parent
#: A clean-render step below this (Delta E) means the re-anchor happened within a shot, not at a cut.
IN_SHOT = 5.0


@dataclass
class Run:
    """One play-through: per-frame Delta E against the clean render, and what the guard did."""

    label: str
    errors: list[float] = field(default_factory=list)
    jumps: list[float] = field(default_factory=list)
    clean_jumps: list[float] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)
    reanchors: int = 0
    regenerated: int = 0
    stalls: int = 0
    blocks: int = 0
    wall_s: float = 0.0

    def final(self, fps: float) -> float:
        tail = self.errors[-int(10 * fps):]
        return float(np.mean(tail)) if tail else 0.0


def play(backend: Backend, guarded: bool, frames: int, size: tuple[int, int], block: int, fps: float,
         label: str) -> Run:
    """Play ``frames`` frames; score every shown frame against a clean procedural render."""
    w, h = size
    clean = ProceduralBackend(width=w, height=h, fps=fps, frames_per_block=block)
    start = SessionStart("bench", SEED, "a clearing at dusk")
    guard = GuardedBackend(backend, session=label) if guarded else None
    shown: Backend = guard if guard is not None else backend
    shown.start(start)
    clean.start(start)
    run = Run(label)
    prev: np.ndarray | None = None
    prev_clean: np.ndarray | None = None
    t0 = time.perf_counter()
    for req in session_requests(frames, block=block, fps=fps, seed=SEED, session_id="bench"):
        for chunk, ref in zip(shown.generate(req), clean.generate(req), strict=False):
            run.blocks += 1
            corrected = chunk.probes.get("errorbank.corrected", 0.0) > 0
            for i in range(chunk.n_frames):
                clean_frame = ref.frames[min(i, ref.n_frames - 1)]
                run.errors.append(delta_e(chunk.frames[i], clean_frame))
                if prev is not None and prev_clean is not None:
                    step = delta_e(chunk.frames[i], prev)
                    if corrected and i == 0:
                        run.jumps.append(step)
                        run.clean_jumps.append(delta_e(clean_frame, prev_clean))
                    else:
                        run.steps.append(step)
                prev, prev_clean = chunk.frames[i], clean_frame
    run.wall_s = time.perf_counter() - t0
    if guard is not None:
        run.reanchors = guard.stats.corrections
        run.regenerated = guard.stats.regenerated_frames
        run.stalls = guard.stats.stalls
    shown.close()
    return run


def false_positives(n: int, size: tuple[int, int], block: int) -> tuple[int, int, float]:
    """``(alarms + faults, chunks, seconds)`` of the guard on ``n`` good procedural chunks of ``size``."""
    guard = GuardedBackend(ProceduralBackend(width=size[0], height=size[1], frames_per_block=block))
    guard.start(SessionStart("s", 3, "x"))
    t0 = time.perf_counter()
    for req in good_requests(n, seed=1, min_frames=block):
        for _ in guard.generate(req):
            pass
    return guard.stats.alarms + guard.stats.faults, guard.stats.blocks, time.perf_counter() - t0


def walk_rates(stories: list[str], size: tuple[int, int], blocks: int, strength: str) -> dict[str, dict[str, int]]:
    """Per story: blocks, false alarms on clean frames, drifted blocks and how many the drift monitor flagged."""
    from game.errorbank.guard import reference_factory, reference_size
    from game.errorbank.metrics import reduce
    from game.errorbank.monitors import DriftMonitor
    from game.errorbank.scenarios import story_walk
    from game.story.loader import load_story
    from game.world.director import Director

    out: dict[str, dict[str, int]] = {}
    monitor = DriftMonitor()
    for path in stories:
        w, h = size
        clean = ProceduralBackend(width=w, height=h)
        drifted = DriftingBackend(strength=strength, width=w, height=h)
        caps = clean.capabilities()
        rw, rh = reference_size(caps)
        ref = reference_factory(replace(caps, width=rw, height=rh))
        start = SessionStart("walk", SEED, "walk")
        for b in (clean, drifted, ref):
            b.start(start)
        row = {"blocks": 0, "false_alarms": 0, "drifted": 0, "detected": 0}
        for req in story_walk(Director(load_story(path), caps, "walk"), blocks=blocks):
            for k, (c, d, r) in enumerate(zip(clean.generate(req), drifted.generate(req), ref.generate(req),
                                              strict=False)):
                row["blocks"] += 1
                false_alarm = monitor.check(c.frames, r.frames, req, k)[2] is not None
                row["false_alarms"] += false_alarm
                # a detection counts only where the clean twin passed (not a false alarm that happens to be right)
                if not false_alarm and delta_e(reduce(d.frames[-1]), reduce(c.frames[-1])) >= VISIBLE:
                    row["drifted"] += 1
                    row["detected"] += monitor.check(d.frames, r.frames, req, k)[2] is not None
        out[Path(path).name] = row
    return out


def baseline_rates(rev: str, args: argparse.Namespace) -> dict[str, dict[str, int]]:
    """:func:`walk_rates` for revision ``rev``'s ``game/`` package (with this tree's scenarios), in a subprocess."""
    tmp = Path(tempfile.mkdtemp(prefix="drift-baseline-"))
    try:
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "game"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=tar, check=True)
        shutil.copy(ROOT / "game" / "errorbank" / "scenarios.py", tmp / "game" / "errorbank" / "scenarios.py")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--walk-json", "--walk-size",
               f"{args.walk_size[0]}x{args.walk_size[1]}", "--walk-blocks", str(args.walk_blocks),
               "--walk-strength", args.walk_strength]
        env = {**os.environ, "PYTHONPATH": str(tmp)}
        got = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, cwd=tmp).stdout
        result: dict[str, dict[str, int]] = json.loads(got.strip().splitlines()[-1])
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def print_walks(label: str, rates: dict[str, dict[str, int]]) -> None:
    total = {k: sum(r[k] for r in rates.values()) for k in ("blocks", "false_alarms", "drifted", "detected")}
    for name, r in [*rates.items(), ("all", total)]:
        print(f"{label:10} {name:10} {r['blocks']:6d} {r['false_alarms']:6d} "
              f"{100 * r['false_alarms'] / max(1, r['blocks']):7.1f} {r['drifted']:8d} {r['detected']:8d} "
              f"{100 * r['detected'] / max(1, r['drifted']):7.1f}")


def walks(args: argparse.Namespace) -> None:
    stories = [str(ROOT / "stories" / s) for s in WALK_STORIES]
    if args.walk_json:
        print(json.dumps(walk_rates(stories, args.walk_size, args.walk_blocks, args.walk_strength)))
        return
    w, h = args.walk_size
    print(f"drift monitor on walks through every scene of {', '.join(WALK_STORIES)}: procedural {w}x{h} against "
          f"the 96x54 reference, {args.walk_blocks} blocks a scene; injected drift: drifting-sim "
          f"{args.walk_strength} (SIMULATED), a block counts as drifted at >= {VISIBLE:g} Delta E from the clean one")
    print(f"{'tree':10} {'story':10} {'blocks':>6} {'false':>6} {'false%':>7} {'drifted':>8} {'detected':>8} "
          f"{'detect%':>7}")
    t0 = time.process_time()
    if args.baseline:
        print_walks(args.baseline, baseline_rates(args.baseline, args))
    print_walks("this tree", walk_rates(stories, args.walk_size, args.walk_blocks, args.walk_strength))
    print(f"({time.process_time() - t0:.0f} CPU s in this process; the baseline ran in a subprocess)")


def _size(text: str) -> tuple[int, int]:
    w, h = (int(x) for x in text.lower().split("x"))
    return w, h


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=1.0, help="frame time to play, minutes")
    ap.add_argument("--backend", default="drifting", help="drifting (simulation) or a registered backend name")
    ap.add_argument("--strengths", default=",".join(STRENGTHS))
    ap.add_argument("--size", type=_size, default=(96, 54), help="frame size WxH (small: faster than real time)")
    ap.add_argument("--fps", type=float, default=24.0)
    ap.add_argument("--block", type=int, default=12, help="frames per block")
    ap.add_argument("--png", type=Path, default=Path("out/drift.png"))
    ap.add_argument("--fp", type=int, default=1000, help="good chunks for the false-positive rate (0 = skip)")
    ap.add_argument("--fp-size", type=_size, default=(192, 108))
    ap.add_argument("--walks", action="store_true", help="walk the demo stories' scenes (false alarms, detection)")
    ap.add_argument("--walk-size", type=_size, default=(960, 540))
    ap.add_argument("--walk-blocks", type=int, default=3, help="blocks per scene in --walks")
    ap.add_argument("--walk-strength", default="medium", choices=STRENGTHS)
    ap.add_argument("--baseline", default="main", help="git revision measured beside this tree ('' = none)")
    ap.add_argument("--walk-json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.walks or args.walk_json:
        walks(args)
        return
    frames = int(round(args.minutes * 60 * args.fps))
    w, h = args.size
    simulated = args.backend == "drifting"
    print(f"drift bench: {args.minutes:g} min of frame time ({frames} frames at {args.fps:g} fps), {w}x{h}, "
          f"backend {'drifting-sim' if simulated else args.backend}, metric: mean CIE76 Delta E vs the clean "
          "procedural render (no monitor uses it)")
    if simulated:
        print(SIMULATED)
    chart = Chart(title=("SIMULATED drift (drifting-sim): mean Delta E vs clean render" if simulated else
                         f"drift of {args.backend}: mean Delta E vs clean procedural render"),
                  xlabel="frame time (s)", ylabel="Delta E (CIE76)", size=(1100, 520),
                  footnote=SIMULATED if simulated else "")
    strengths = [s.strip() for s in args.strengths.split(",") if s.strip()] if simulated else ["-"]
    header = (f"{'strength':8} {'mean off':>9} {'mean on':>8} {'red.%':>6} {'final off':>9} {'final on':>8} "
              f"{'red.%':>6} {'reanch/min':>10} {'regen fr':>8} {'stalls':>6} {'jump mean':>9} {'jump max':>8} "
              f"{'clean there':>11} {'step med':>8} {'x realtime':>10}")
    rows: list[str] = []
    shot_lines: list[str] = []
    for k, strength in enumerate(strengths):
        def build(strength: str = strength) -> Backend:
            if simulated:
                return DriftingBackend(strength=strength, width=w, height=h, fps=args.fps,
                                       frames_per_block=args.block)
            return make_backend(args.backend, width=w, height=h, fps=args.fps, frames_per_block=args.block)

        off = play(build(), False, frames, (w, h), args.block, args.fps, f"{strength}-off")
        on = play(build(), True, frames, (w, h), args.block, args.fps, f"{strength}-on")
        m_off, m_on = float(np.mean(off.errors)), float(np.mean(on.errors))
        f_off, f_on = off.final(args.fps), on.final(args.fps)

        def red(a: float, b: float) -> str:
            return f"{100 * (a - b) / a:6.1f}" if a > 1e-9 else "   n/a"

        step = statistics.median(on.steps) if on.steps else 0.0
        in_shot = [j for j, c in zip(on.jumps, on.clean_jumps, strict=True) if c < IN_SHOT]
        at_cut = [j for j, c in zip(on.jumps, on.clean_jumps, strict=True) if c >= IN_SHOT]
        shot_lines.append(f"{strength}: re-anchor jumps within a shot (clean step < {IN_SHOT:g}): {len(in_shot)}, mean "
                          f"{np.mean(in_shot) if in_shot else 0.0:.2f}; at a cut or world change: {len(at_cut)}, mean "
                          f"{np.mean(at_cut) if at_cut else 0.0:.2f}")
        rows.append(f"{strength:8} {m_off:9.2f} {m_on:8.2f} {red(m_off, m_on)} {f_off:9.2f} {f_on:8.2f} "
                    f"{red(f_off, f_on)} {on.reanchors / args.minutes:10.1f} {on.regenerated:8d} {on.stalls:6d} "
                    f"{(np.mean(on.jumps) if on.jumps else 0.0):9.2f} {(max(on.jumps) if on.jumps else 0.0):8.2f} "
                    f"{(np.mean(on.clean_jumps) if on.clean_jumps else 0.0):11.2f} {step:8.2f} "
                    f"{frames / args.fps / max(1e-9, on.wall_s):10.1f}")
        xs = [i / args.fps for i in range(frames)]
        colour = PALETTE[k % len(PALETTE)]
        stride = max(1, frames // 1500)
        light = (int(colour[0] * 0.45 + 140), int(colour[1] * 0.45 + 140), int(colour[2] * 0.45 + 140))
        chart.series.append(Series(f"{strength}: no correction", xs[::stride], off.errors[::stride], light))
        chart.series.append(Series(f"{strength}: error bank on", xs[::stride], on.errors[::stride], colour))
    print(header)
    for r in rows:
        print(r)
    for line in shot_lines:
        print(line)
    print("mean/final: Delta E over all frames / the last 10 s; red.%: reduction with the error bank on; "
          "jump: Delta E from the frame before a re-anchor to the first corrected frame (clean there: the same "
          "step in the clean render, i.e. the motion the player would have seen anyway); step med: median "
          "frame-to-frame Delta E with the error bank on (for scale)")
    png = draw_chart(chart, args.png)
    print(f"curves: {png}" + (" (simulated)" if simulated else ""))
    if args.fp:
        fp, n, secs = false_positives(args.fp, args.fp_size, 4)
        print(f"false positives: {fp} of {n} good procedural chunks ({100 * fp / max(1, n):.2f}%), "
              f"{args.fp_size[0]}x{args.fp_size[1]} frames against the 96x54 reference, {secs:.0f} s")
    if simulated:
        print(SIMULATED)


if __name__ == "__main__":
    main()

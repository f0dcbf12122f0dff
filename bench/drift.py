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

The ``drifting`` backend is a simulation (``drifting-sim``): these figures are
simulated and not comparable to any in-house figure of another system. Any other
registered backend name runs the same loop once, without strengths.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
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
    args = ap.parse_args()
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

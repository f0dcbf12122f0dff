"""Frames per second of the procedural backend at 960x540 on one core (prints figures).

Run: ``python bench/frames_backend_part.py [--frames 480] [--width 960 --height 540]``.
Threads are limited to one and the process is pinned to one CPU where the OS
allows; the first request of each scene (which paints the backdrop and the
sprites once) is not timed. Sound is made too, as in play.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

from game.world.backends.procedural import ProceduralBackend  # noqa: E402
from game.world.protocol import Entity, Scene, SessionStart, WorldRequest  # noqa: E402


def scenes() -> dict[str, tuple[Scene, str, tuple[str, ...]]]:
    """Named benchmark scenes: (scene, cue, actions)."""
    cast = (
        Entity("creature", "character", "Creature", look="a small teal horned creature", x=0.62,
               state="leap", holding=("kite",)),
        Entity("kite", "item", "Kite", look="a red kite"),
        Entity("wren", "character", "Wren", look="a girl in a purple cloak", x=0.3),
        Entity("leaf", "item", "Leaf", x=0.45),
    )
    return {
        "dusk clearing, 3 entities, leap": (Scene("clearing", entities=cast), "leap", ()),
        "night rain, panning (d)": (
            Scene("creek", palette="creek", time_of_day="night", weather="rain", entities=cast),
            "",
            ("d",),
        ),
        "day snow, nuzzle": (
            Scene("hollow", palette="hollow", time_of_day="day", weather="snow",
                  entities=(Entity("creature", "character", "Creature", look="horned creature",
                                   x=0.7, state="nuzzle"),)),
            "nuzzle",
            (),
        ),
    }


def scene_fps(
    scene: Scene, cue: str, actions: tuple[str, ...], width: int, height: int, frames: int
) -> float:
    """Frames per second of one scene in 48-frame requests (steady state, sound included)."""
    b = ProceduralBackend(width=width, height=height)
    b.start(SessionStart("bench", seed=3, prompt="a dusk clearing"))

    def run(seq: int) -> int:
        req = WorldRequest("bench", seq, 48, "a dusk clearing", scene=scene, cue=cue,
                           actions=actions, camera_x=0.05 * seq)
        return sum(chunk.n_frames for chunk in b.generate(req))

    run(0)  # warm-up: backdrop and sprites are built once
    done, seq = 0, 0
    t0 = time.perf_counter()
    while done < frames:
        seq += 1
        done += run(seq)
    fps = done / (time.perf_counter() - t0)
    b.close()
    return fps


def measure(width: int, height: int, frames: int) -> dict[str, float]:
    """Frames per second for each benchmark scene."""
    return {
        name: scene_fps(scene, cue, actions, width, height, frames)
        for name, (scene, cue, actions) in scenes().items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=960)
    parser.add_argument("--height", type=int, default=540)
    parser.add_argument("--frames", type=int, default=480)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    print(f"procedural backend, {args.width}x{args.height}, one core, {args.frames} frames/scene")
    for name, fps in measure(args.width, args.height, args.frames).items():
        print(f"  {name:36s} {fps:7.1f} frames/s")


if __name__ == "__main__":
    main()

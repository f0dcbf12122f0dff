"""Speed of the ``diffusion`` backend (SkyReels-V2 diffusion forcing): frames/s, first frame, stages.

    python bench/backend.py            # tiny on the CPU (default without CUDA), full-size on a GPU
    python bench/backend.py --tiny     # diffusers' test dimensions, 32x32, CPU
    python bench/backend.py --full     # the published 1.3B architecture at 960x544 (a GPU; ~3 min on an H100-class)

MEASURES SPEED ONLY. The weights are random (built from the published configuration,
nothing is downloaded: speed does not depend on the weights), the frames are noise,
and the UMT5-XXL text encoder is not built: prompts are embedded by the backend's
offline hashed fallback, so ``encode`` excludes the text encoder (~10-50 ms per new
prompt on a GPU, cached after).

It plays a short scripted session through the real backend: a scene cut (the first
frame from an image anchor), plain continuations, a ``recache`` prompt switch, a
``reanchor`` to another image and more continuations, and prints

* frames/s over all blocks (frames made / wall time),
* time to first frame: from ``generate()`` to the first block, cold (the session's
  first block, warm-up included) and warm (a later request),
* per-stage milliseconds per block from ``FrameChunk.timing``: queue (waiting for
  the shared pipeline), encode (prompt + VAE encode of the history / anchor),
  recache (0: SkyReels-DF has no KV cache), denoise (transformer + scheduler) and
  decode (VAE decode + conversion), by kind of block (``t2v``/``i2v``/``v2v``).

On the GPU machine, which starts bare, carry the wheels this needs besides torch
(diffusers and its small pure-Python dependencies) as described in the device notes,
then: ``PYTHONUNBUFFERED=1 python bench/backend.py --full``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from game.models.diffusion_arch import SKYREELS_DF_540P, parameter_counts, random_pipeline  # noqa: E402
from game.world.backends.diffusion import DiffusionBackend  # noqa: E402
from game.world.protocol import Anchor, FrameChunk, MemoryOp, SessionStart, WorldRequest  # noqa: E402


def anchor_image(folder: Path, name: str, hue: int) -> str:
    """A smooth gradient PNG (an image anchor), 256 x 144."""
    from PIL import Image

    y, x = np.mgrid[0:144, 0:256]
    rgb = np.stack([(x + hue) % 256, (y * 2 + hue // 2) % 256, np.full_like(x, hue)], axis=-1).astype(np.uint8)
    path = folder / f"{name}.png"
    Image.fromarray(rgb).save(path)
    return str(path)


def script(folder: Path, fpb: int, rounds: int) -> list[tuple[str, Any]]:
    """The session: ``("start", SessionStart)``, ``("generate", WorldRequest)``, ``("memory", MemoryOp)``;
    ``rounds`` more pairs of continuations (plain, then recache) at the end."""
    meadow = anchor_image(folder, "meadow", 40)
    night = anchor_image(folder, "night", 200)
    two = 2 * fpb
    steps: list[tuple[str, Any]] = [
        ("start", SessionStart("bench", 7, "a meadow at dusk, a small horned creature in the grass",
                               anchors=(Anchor("world.anchor0", "image", "world", meadow),))),
        ("generate", WorldRequest("bench", 1, two, "a meadow at dusk, a small horned creature", "scene_cut")),
        ("generate", WorldRequest("bench", 2, fpb, "a meadow at dusk, the creature looks up", "plain")),
        ("generate", WorldRequest("bench", 3, two, "the creature leaps with delight at a red kite", "recache")),
        ("memory", MemoryOp("reanchor", anchors=(Anchor("location.night", "image", "location", night,
                                                        tier="sink_current"),))),
        ("generate", WorldRequest("bench", 4, two, "the clearing at night, stars over the trees", None)),
        ("generate", WorldRequest("bench", 5, fpb, "the clearing at night, the creature curls up", "plain")),
    ]
    for r in range(rounds - 1):
        steps += [("generate", WorldRequest("bench", 6 + 2 * r, fpb, f"the creature dreams, {r}", "plain")),
                  ("generate", WorldRequest("bench", 7 + 2 * r, two, f"the creature wakes, {r}", "recache"))]
    return steps


def run(backend: DiffusionBackend, steps: list[tuple[str, Any]]) -> dict[str, Any]:
    """Play ``steps``; returns the blocks with their kind and the times to first frame."""
    blocks: list[tuple[str, FrameChunk]] = []
    ttff: list[float] = []
    t_all = 0.0
    for kind, item in steps:
        if kind == "start":
            backend.start(item)
        elif kind == "memory":
            backend.memory(item)
        else:
            t0 = time.perf_counter()
            for i, chunk in enumerate(backend.generate(item)):
                if i == 0:
                    ttff.append((time.perf_counter() - t0) * 1000.0)
                blocks.append((backend.calls[-1].variant, chunk))
            t_all += time.perf_counter() - t0
    frames = sum(c.n_frames for _, c in blocks)
    return {"blocks": blocks, "ttff": ttff, "seconds": t_all, "frames": frames}


def report(result: dict[str, Any], backend: DiffusionBackend, label: str) -> None:
    caps = backend.capabilities()
    blocks: list[tuple[str, FrameChunk]] = result["blocks"]
    print(f"\n== {label}: {caps.width}x{caps.height}, {caps.frames_per_block} frames/block, overlap "
          f"{caps.window_frames}, {backend._steps} steps, guidance {backend._guidance:g} "
          f"({backend.info['device']}, {backend.info['dtype']}) ==")
    fps = result["frames"] / result["seconds"]
    print(f"{'frames/s (all blocks)':27s}: {fps:.2f}  ({result['frames']} frames in {result['seconds']:.2f} s, "
          f"{len(blocks)} blocks)")
    print(f"{'real time at ' + format(caps.fps, 'g') + ' fps':27s}: {fps / caps.fps:.3f}x")
    ttff = result["ttff"]
    print(f"{'time to first frame, ms':27s}: cold {ttff[0]:.1f}, warm median {statistics.median(ttff[1:]):.1f}")
    stages = ("queue_ms", "encode_ms", "recache_ms", "denoise_ms", "decode_ms", "total_ms")
    print(f"{'per block, ms (median)':27s}: " + "  ".join(f"{s[:-3]:>8s}" for s in stages) + "   blocks")
    groups: dict[str, list[FrameChunk]] = defaultdict(list)
    for variant, chunk in blocks[1:]:  # the first block carries the warm-up
        groups[variant].append(chunk)
    groups["all (warm)"] = [c for _, c in blocks[1:]]
    for name, chunks in groups.items():
        vals = [statistics.median(getattr(c.timing, s) for c in chunks) for s in stages]
        print(f"  {name:25s}: " + "  ".join(f"{v:8.1f}" for v in vals) + f"   {len(chunks):6d}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--tiny", action="store_true", help="tiny random model on the CPU")
    mode.add_argument("--full", action="store_true", help="the published 1.3B architecture (GPU)")
    p.add_argument("--size", help="WIDTHxHEIGHT (tiny: 32x32; full: 960x544)")
    p.add_argument("--block", type=int, help="frames per block (tiny: 4, full: 20)")
    p.add_argument("--overlap", type=int, help="overlap frames (tiny: 5, full: 17)")
    p.add_argument("--steps", type=int, help="denoising steps (tiny: 2, full: 30)")
    p.add_argument("--guidance", type=float, help="guidance scale (tiny: 1, full: 6)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: tiny 1, else torch's default)")
    p.add_argument("--rounds", type=int, help="extra continuation rounds (tiny: 10, full: 1)")
    args = p.parse_args(argv)

    import torch

    cuda = torch.cuda.is_available()
    full = args.full or (cuda and not args.tiny)
    device = "cuda" if cuda and full else "cpu"
    if args.threads or not full:
        torch.set_num_threads(args.threads or 1)
    print("MEASURES SPEED ONLY: random weights built from the published configuration (no download); "
          "the frames are noise; no UMT5 text encoder (hashed prompt embeddings).")
    counts = parameter_counts()
    print(f"full-size architecture (SkyReels-V2-DF-1.3B + Wan VAE): transformer {counts['transformer'] / 1e9:.3f} B "
          f"parameters, VAE {counts['vae'] / 1e6:.1f} M")
    if full and not cuda:
        print("note: --full on the CPU takes minutes per block")
    if full:
        w, h = SKYREELS_DF_540P["width"], SKYREELS_DF_540P["height"]
        settings = dict(frames_per_block=20, overlap_frames=17, steps=int(SKYREELS_DF_540P["steps"]),
                        guidance_scale=float(SKYREELS_DF_540P["guidance_scale"]))
    else:
        w, h = 32, 32
        settings = dict(frames_per_block=4, overlap_frames=5, steps=2, guidance_scale=1.0)
    if args.size:
        w, h = (int(v) for v in args.size.lower().split("x"))
    for key, value in (("frames_per_block", args.block), ("overlap_frames", args.overlap), ("steps", args.steps),
                       ("guidance_scale", args.guidance)):
        if value is not None:
            settings[key] = value
    t0 = time.perf_counter()
    pipe = random_pipeline("full" if full else "tiny", device=device)
    print(f"built the {'full-size' if full else 'tiny'} pipeline on {device} in {time.perf_counter() - t0:.1f} s")
    backend = DiffusionBackend(pipeline=pipe, width=int(w), height=int(h), fps=24.0, **settings)  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory() as tmp:
        rounds = args.rounds if args.rounds is not None else (1 if full else 10)
        result = run(backend, script(Path(tmp), backend.capabilities().frames_per_block, rounds))
    report(result, backend, "SkyReels-V2-DF " + ("1.3B (random weights)" if full else "tiny random"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Block-causal world models on one GPU (or the CPU with ``--tiny``): our layer vs the bare loop.

Usage::

    python bench/gpu.py                 # full-size random weights, bf16, on the GPU (<= 8 minutes)
    python bench/gpu.py --tiny --blocks 6 --baseline-blocks 4    # tiny models on the CPU (the suite runs this)

For each of the two backends, ``causal`` (Wan 2.1 T2V 1.3B made causal, Self-Forcing
settings: 832 x 480, 3 latent frames a block, 4 steps, sink 3 + window 12 latent
frames) and ``action`` (Matrix-Game 2.0: 640 x 352, 3 latent frames, 3 steps, sink 3 +
window 6, keyboard + mouse layers in blocks 0..14), with random weights built from the
published configurations (:mod:`game.models.causal_arch`; no weights can be
fetched there), it prints:

* **ours**: the backend driven through the protocol (``start`` / ``generate``, one
  request per block, WASD action frames for the action model): frames/s over all
  blocks, time to first frame, the wall time of block 1 and of the last block, the KV
  cache's bytes after the last block (and the GPU's peak memory), and the game layer's
  own time per block as a share of the model's: (wall time per block - the time in
  denoising and decoding that the backend reports) / that model time;
* **bare**: the same model driven by the bare loop a researcher would write over the
  same components (``sample_block``, the cache append / evict, the VAE stream decode),
  no protocol, no session: frames/s and per-block time over its blocks;
* **diffusers forward**: one ``WanTransformer3DModel.forward`` of a block's tokens
  (full attention, no cache) as the library runs it, against one of our block-causal
  passes over the same block with a full cache, per step.

Pictures are noise (random weights); only times and sizes mean anything.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

import torch

from game.models.action_module import ActionPass
from game.models.causal_arch import random_model
from game.models.causal_model import KVCache
from game.world.backends.action import ActionBackend
from game.world.backends.causal import CausalBackend
from game.world.backends.causal_sampler import sample_block
from game.world.backends.diffusion_embed import hashed_prompt_embeds
from game.world.protocol import ActionFrame, SessionStart, WorldRequest

#: Backend settings per size.
FULL = {"causal": {"width": 832, "height": 480, "fps": 16.0},
        "action": {"width": 640, "height": 352, "fps": 25.0}}
TINY = {"causal": {"width": 32, "height": 32, "fps": 8.0, "latent_frames": 2, "timesteps": (1000.0, 500.0),
                   "sink_latents": 1, "window_latents": 4},
        "action": {"width": 32, "height": 32, "fps": 8.0, "latent_frames": 2, "timesteps": (1000.0, 500.0),
                   "sink_latents": 1, "window_latents": 4}}
KEYS = ("w", "a", "s", "d")


def sync(device: str) -> float:
    """Seconds, after waiting for the device."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter()


def make_backend(kind: str, comps: Any, opts: dict[str, Any]) -> CausalBackend:
    if kind == "action":
        return ActionBackend(transformer=comps.transformer, vae=comps.vae, action=comps.action, **opts)
    return CausalBackend(transformer=comps.transformer, vae=comps.vae, **opts)


def ours(kind: str, backend: CausalBackend, blocks: int, device: str, budget_s: float) -> dict[str, float]:
    """Drive ``backend`` through the protocol for ``blocks`` one-block requests (fewer if ``budget_s`` runs out)."""
    fpb = backend.capabilities().frames_per_block
    backend.start(SessionStart("bench", 1, "a meadow at dusk, a small creature by the oak"))
    walls: list[float] = []
    model: list[float] = []
    frames = 0
    memory: dict[str, float] = {}
    t_start = sync(device)
    first_frame = 0.0
    for b in range(blocks):
        if b > 1 and time.perf_counter() - t_start > budget_s:
            break
        key = KEYS[(b // 8) % 4]
        acts = (ActionFrame((key,), (0.1, 0.0)),) * fpb if kind == "action" else ()
        req = WorldRequest("bench", b + 1, fpb, "a meadow at dusk, a small creature by the oak",
                           "scene_cut" if b == 0 else None, action_frames=acts)
        t0 = sync(device)
        for chunk in backend.generate(req):
            t1 = sync(device)
            if b == 0:
                first_frame = t1 - t_start
            walls.append(t1 - t0)
            model.append((chunk.timing.denoise_ms + chunk.timing.decode_ms + chunk.timing.recache_ms) / 1000.0)
            frames += chunk.n_frames
            memory = chunk.memory
            t0 = t1
    total = sync(device) - t_start
    steady = slice(1, None) if blocks > 1 else slice(0, None)
    layer = [w - m for w, m in zip(walls[steady], model[steady], strict=True)]
    return {"fps": frames / total, "first_frame_s": first_frame, "block1_ms": 1000 * walls[0],
            "blockN_ms": 1000 * walls[-1], "mean_ms": 1000 * statistics.mean(walls[steady]),
            "cache_bytes": memory.get("cache_bytes", 0.0), "cache_frames": memory.get("cache_frames", 0.0),
            "share": statistics.mean(layer) / statistics.mean(model[steady]), "blocks": float(len(walls))}


def bare(kind: str, backend: CausalBackend, blocks: int, device: str, budget_s: float) -> dict[str, float]:
    """The same components driven by a bare loop (no protocol, no session)."""
    net, stream, sched = backend.net, backend.stream, backend.schedule
    h, w = backend.capabilities().height // 8, backend.capabilities().width // 8
    n = backend.latent_frames
    text_dim = int(net.model.config.text_dim)
    cond = None
    addon = None
    if kind == "action":
        assert isinstance(backend, ActionBackend)
        img = torch.zeros(h * 8, w * 8, 3, dtype=torch.uint8).numpy()
        z = stream.encode_image(img)
        feats = torch.randn(1, 257, int(net.model.config.image_dim)).to(net.device, net.dtype)
        ctx = net.cross_context(feats, image=True)
        cond = torch.zeros(1, 20, n, h, w, device=net.device)
        cond[:, :4, 0] = 1.0
        cond[:, 4:, 0] = z[:, :, 0]
        w4 = backend.actions.window_frames
        kb = torch.zeros(1, n, w4, 4, device=net.device, dtype=net.dtype)
        kb[..., 0] = 1.0
        ms = torch.zeros(1, n, w4, 2, device=net.device, dtype=net.dtype)
        modules = backend.actions

        def addon(write: bool, cache: KVCache) -> ActionPass:
            return ActionPass(modules, cache, kb, ms, write)
    else:
        ctx = net.cross_context(hashed_prompt_embeds("a meadow at dusk", text_dim, 64).to(net.device))
    cache, dec = KVCache(), None
    times = []
    t_start = sync(device)
    for b in range(blocks):
        if b > 1 and time.perf_counter() - t_start > budget_s:
            break
        t0 = sync(device)
        gen = torch.Generator().manual_seed(b)
        x0, k, v, extra = sample_block(net, (1, stream.z_dim, n, h, w), gen, cache, ctx, sched, condition=cond,
                                       addon=addon)
        tier = "sink_global" if b * n < backend.sink_latents else "rolling"
        cache = cache.appended(k, v, x0, [tier] * n, extra).evicted(backend.window_latents)
        frames, dec = stream.decode(x0, dec)
        times.append(sync(device) - t0)
    total = sync(device) - t_start
    steady = times[1:] if blocks > 1 else times
    return {"fps": 4 * n * len(times) / total, "mean_ms": 1000 * statistics.mean(steady), "block1_ms": 1000 * times[0]}


def library_forward(kind: str, backend: CausalBackend, device: str, repeats: int) -> tuple[float, float]:
    """ms of one diffusers ``WanTransformer3DModel.forward`` over a block (no cache) and of one of
    our block-causal passes over the same block against a cache of sink + window frames."""
    net = backend.net
    m = net.model
    h, w = backend.capabilities().height // 8, backend.capabilities().width // 8
    n = backend.latent_frames
    x = torch.randn(1, int(m.config.in_channels), n, h, w, device=net.device, dtype=net.dtype)
    t = torch.tensor([500.0], device=net.device)
    text = hashed_prompt_embeds("a meadow", int(m.config.text_dim), 64).to(net.device, net.dtype)
    image = torch.randn(1, 257, int(m.config.image_dim), device=net.device, dtype=net.dtype) \
        if m.config.image_dim else None
    ctx = net.cross_context(image, image=True) if image is not None else net.cross_context(text)
    frames = backend.sink_latents + backend.window_latents
    cache = KVCache()
    k1, v1 = net.forward(x, 0.0, KVCache(), ctx, write=True)[1:]
    for _ in range(max(1, frames // n)):
        cache = cache.appended(k1, v1, x[:, :16], ["rolling"] * n)
    with torch.no_grad():
        m(x, t, text, encoder_hidden_states_image=image, return_dict=False)
        t0 = sync(device)
        for _ in range(repeats):
            m(x, t, text, encoder_hidden_states_image=image, return_dict=False)
        lib = (sync(device) - t0) / repeats
        net.forward(x, 500.0, cache, ctx)
        t0 = sync(device)
        for _ in range(repeats):
            net.forward(x, 500.0, cache, ctx)
        our = (sync(device) - t0) / repeats
    return 1000 * lib, 1000 * our


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="tiny random models on the CPU (the suite runs this)")
    ap.add_argument("--blocks", type=int, default=300, help="blocks through our layer per backend")
    ap.add_argument("--baseline-blocks", type=int, default=60, help="blocks of the bare loop per backend")
    ap.add_argument("--backends", default="causal,action")
    ap.add_argument("--budget-s", type=float, default=400.0,
                    help="wall seconds for all the measured loops together (the GPU run must end within 8 minutes)")
    args = ap.parse_args()
    cuda = torch.cuda.is_available()
    if args.tiny:
        device, size, settings = "cpu", "tiny", TINY
        torch.set_num_threads(1)
    elif not cuda:
        print("no GPU visible: run with --tiny for the CPU check (full-size models need a GPU)")
        return 2
    else:
        device, size, settings = "cuda", "full", FULL
        torch.backends.cuda.matmul.allow_tf32 = True
    dtype = "float32" if args.tiny else "bfloat16"
    print(f"{'tiny random models on the CPU' if args.tiny else torch.cuda.get_device_name(0) + ', bf16'}; "
          f"{args.blocks} blocks through our layer, {args.baseline_blocks} through the bare loop (random weights)")
    kinds = args.backends.split(",")
    share = args.budget_s / len(kinds)
    for kind in kinds:
        t0 = time.perf_counter()
        comps = random_model(kind, size, device=device, dtype=dtype)
        backend = make_backend(kind, comps, dict(settings[kind]))
        build = time.perf_counter() - t0
        caps = backend.capabilities()
        if cuda and not args.tiny:
            torch.cuda.reset_peak_memory_stats()
        o = ours(kind, backend, args.blocks, device, 0.75 * share)
        peak = torch.cuda.max_memory_allocated() / 2**30 if cuda and not args.tiny else 0.0
        b = bare(kind, backend, args.baseline_blocks, device, 0.2 * share)
        lib, our = library_forward(kind, backend, device, 2 if args.tiny else 5)
        print(f"[{kind}] {caps.width}x{caps.height}, {caps.frames_per_block} frames a block, "
              f"{len(backend.schedule.timesteps)} steps, sink {backend.sink_latents} + window "
              f"{backend.window_latents} latent frames (built in {build:.1f} s)")
        print(f"  ours: {o['fps']:.2f} frames/s, first frame {o['first_frame_s']:.2f} s, block 1 "
              f"{o['block1_ms']:.1f} ms, block {o['blocks']:.0f} {o['blockN_ms']:.1f} ms (mean {o['mean_ms']:.1f} ms)"
              + (" (stopped by --budget-s)" if o["blocks"] < args.blocks else ""))
        print(f"  KV cache: {o['cache_bytes'] / 2**20:.2f} MiB for {o['cache_frames']:.0f} latent frames"
              + (f"; GPU peak {peak:.1f} GiB" if peak else ""))
        print(f"  game layer: {100 * o['share']:.2f}% of the model's time per block (goal <= 2%)")
        print(f"  bare loop: {b['fps']:.2f} frames/s, {b['mean_ms']:.1f} ms a block "
              f"(ours {o['mean_ms']:.1f} ms: {o['mean_ms'] / b['mean_ms']:.2f}x)")
        print(f"  one pass of a block: diffusers forward (no cache) {lib:.1f} ms, ours with a full cache {our:.1f} ms")
        del backend, comps
        if cuda and not args.tiny:
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())

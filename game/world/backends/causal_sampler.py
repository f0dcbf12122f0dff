"""Few-step sampling of one block against a KV cache, and rebuilding a cache (recache).

One block (Self-Forcing's inference loop; Matrix-Game 2.0 ``causal_inference.py``):

1. draw noise for the block's latent frames from the block's own generator;
2. for each noise level ``sigma_i`` of the schedule: predict the flow, take
   ``x0 = x - sigma_i * flow``, and (but for the last step) re-noise ``x0`` to
   ``sigma_{i+1}`` with fresh noise;
3. run the model once more on the clean ``x0`` at ``context_t`` (0) and append the
   block's keys and values to the cache, then evict by age (sinks pinned).

The cache is only read during step 2, so a block abandoned there (pre-emption,
:class:`Abandoned`) leaves the session exactly as it was.

A *recache* (LongLive's KV recache on a prompt switch) rebuilds the keys and values
of every cached frame from their clean latents under the new conditioning in one
pass with the block-causal mask, so each frame again sees only its own and earlier
blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch

from game.models.causal_model import CausalWan, CrossContext, KVCache, LayerHook, flow_sigmas


class Abandoned(Exception):
    """The block being denoised was abandoned (a newer input arrived); nothing was written."""


class Addon(Protocol):
    """A per-pass add-on (the action module): its layer hook and the cache entries it wrote."""

    def hook(self) -> LayerHook: ...

    def written(self) -> dict[str, list[torch.Tensor]]: ...


#: ``(write, cache) -> Addon`` for one pass (``write``: the cache-writing pass).
AddonFactory = Callable[[bool, KVCache], Addon]


@dataclass(frozen=True)
class Schedule:
    """A few-step schedule.

    Attributes:
        timesteps: denoising timesteps in ``[0, 1000]`` (Self-Forcing: 1000, 750, 500, 250).
        shift: flow shift of the sigmas (Self-Forcing: 5).
        context_t: timestep of the cache-writing pass (0: clean context).
    """

    timesteps: tuple[float, ...] = (1000.0, 750.0, 500.0, 250.0)
    shift: float = 5.0
    context_t: float = 0.0


def sample_block(net: CausalWan, shape: tuple[int, ...], generator: torch.Generator, cache: KVCache,
                 context: CrossContext, schedule: Schedule, *, condition: torch.Tensor | None = None,
                 addon: AddonFactory | None = None, should_stop: Callable[[], bool] | None = None,
                 ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor], dict[str, list[torch.Tensor]]]:
    """Denoise one block of latent frames ``shape = (B, C, F, h, w)`` against ``cache``.

    Args:
        condition: extra input channels concatenated to the noisy latents
            (Matrix-Game's mask + first-frame latents), ``(B, C', F, h, w)``.
        addon: builds the add-on of each pass (the action module).
        should_stop: polled before every step; ``True`` abandons the block.

    Returns:
        ``(x0, k, v, extra)``: the clean latents ``(B, C, F, h, w)`` float32, the block's
        per-layer keys and values, and the add-on's cache entries.

    Raises:
        Abandoned: ``should_stop()`` said so.
    """
    sigmas = flow_sigmas(schedule.timesteps, schedule.shift)
    dev = net.device
    x = torch.randn(shape, generator=generator).to(dev)
    x0 = x
    for i, sig in enumerate(sigmas):
        if should_stop is not None and should_stop():
            raise Abandoned
        inp = x if condition is None else torch.cat([x, condition], dim=1)
        hook = addon(False, cache).hook() if addon is not None else None
        flow, _, _ = net.forward(inp, sig * 1000.0, cache, context, hook=hook)
        x0 = x - sig * flow
        if i + 1 < len(sigmas):
            eps = torch.randn(shape, generator=generator).to(dev)
            x = (1.0 - sigmas[i + 1]) * x0 + sigmas[i + 1] * eps
    if should_stop is not None and should_stop():
        raise Abandoned
    inp = x0 if condition is None else torch.cat([x0, condition], dim=1)
    writer = addon(True, cache) if addon is not None else None
    _, k, v = net.forward(inp, schedule.context_t, cache, context, write=True,
                          hook=writer.hook() if writer is not None else None)
    return x0, k, v, writer.written() if writer is not None else {}


def recache(net: CausalWan, cache: KVCache, context: CrossContext, block_frames: int,
            context_t: float = 0.0) -> KVCache:
    """``cache``'s frames with keys and values recomputed under ``context`` (same latents, same tiers).

    Add-on caches are kept as they are (they do not depend on the text).
    """
    if cache.latents is None or not cache.frames:
        return cache
    blocks = [i // max(1, block_frames) for i in range(cache.frames)]
    _, k, v = net.forward(cache.latents, context_t, KVCache(), context, write=True, frame_blocks=blocks)
    return KVCache(tuple(k), tuple(v), cache.latents, cache.tiers, dict(cache.extra))

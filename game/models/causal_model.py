"""Block-causal attention with a KV cache over diffusers' Wan transformer.

diffusers' ``WanTransformer3DModel`` denoises a whole clip with full (bidirectional)
attention and has no cache. The causal world models built on it (Self-Forcing,
CausVid, LongLive, Matrix-Game 2.0) generate a few latent frames (a *block*) at a
time: the block's tokens attend to each other and to keys / values cached from the
frames already made, never to later ones. This module runs that forward pass over
the model's own modules (patch embedding, condition embedder, each block's
``attn1`` / ``attn2`` / ``ffn`` / norms / modulation table, the output head), with:

* :class:`KVCache` -- per layer, the self-attention keys (before RoPE) and values of
  the cached latent frames, ``(B, N, S, H, Dh)`` (``N`` frames of ``S`` tokens), the
  clean latents of those frames (for a recache), each frame's tier (``sink_global``,
  ``sink_current``, ``rolling``) and extra per-frame caches of add-on modules (the
  action module of :mod:`game.models.action_module`). A cache is never
  written in place: appending or evicting builds new tensors, so a shallow copy is
  an exact snapshot;
* RoPE by position *in the cache* (StreamingLLM, Xiao et al. 2023, "Efficient
  Streaming Language Models with Attention Sinks", section 3.2): keys are cached
  before rotation and rotated at attention time by their slot, so positions stay
  below ``sink + window + block`` frames however long a session runs, and the
  model's own RoPE table (``rope_max_seq_len`` rows) is enough;
* :func:`cross_context` -- a prompt's cross-attention keys and values per layer,
  computed once and reused until the prompt changes;
* flow matching with a few steps (:func:`flow_sigmas`): Wan models are trained on
  ``x_t = (1 - sigma) x0 + sigma * noise`` and predict ``noise - x0``; the few-step
  causal models (Self-Forcing, ``denoising_step_list`` 1000, 750, 500, 250 with
  shift 5; Matrix-Game 2.0 likewise) re-noise the predicted ``x0`` to the next
  sigma with fresh noise, and after the last step run the model once more on the
  clean block at ``t = 0`` to write its keys and values into the cache (Matrix-Game
  2.0 ``pipeline/causal_inference.py``, "rerun with timestep zero to update KV cache
  using clean context").

Shapes: latents ``(B, C, F, h, w)`` (``h, w`` = pixel size / 8), tokens per frame
``S = (h / p_h) * (w / p_w)`` with the patch ``(1, p_h, p_w)``; timesteps in Wan's
``[0, 1000]`` scale.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import torch
import torch.nn.functional as F

FrameTier = Literal["sink_global", "sink_current", "rolling"]
#: ``hook(layer, tokens, frames, S) -> tokens``: an add-on module run after cross-attention.
LayerHook = Callable[[int, torch.Tensor, int, int], torch.Tensor]


@dataclass(frozen=True)
class KVCache:
    """Keys and values of the latent frames a session has made (never written in place).

    Attributes:
        k, v: per transformer layer, ``(B, N, S, H, Dh)``: keys before RoPE, values.
        latents: ``(B, C, N, h, w)`` clean latents of the cached frames, or ``None`` when empty.
        tiers: the tier of each cached frame, oldest first.
        extra: add-on caches, name -> per-layer tensors whose dim 1 is the frame axis.
    """

    k: tuple[torch.Tensor, ...] = ()
    v: tuple[torch.Tensor, ...] = ()
    latents: torch.Tensor | None = None
    tiers: tuple[FrameTier, ...] = ()
    extra: dict[str, tuple[torch.Tensor, ...]] = field(default_factory=dict)

    @property
    def frames(self) -> int:
        """Latent frames in the cache."""
        return len(self.tiers)

    def tokens(self) -> int:
        """Self-attention tokens per layer in the cache (``N * S``)."""
        return 0 if not self.k else int(self.k[0].shape[1] * self.k[0].shape[2])

    def nbytes(self) -> int:
        """Bytes held by the cached keys, values, latents and add-on caches."""
        tensors = [*self.k, *self.v, *(t for ts in self.extra.values() for t in ts)]
        if self.latents is not None:
            tensors.append(self.latents)
        return sum(t.numel() * t.element_size() for t in tensors)

    def appended(self, k: Sequence[torch.Tensor], v: Sequence[torch.Tensor], latents: torch.Tensor,
                 tiers: Sequence[FrameTier], extra: Mapping[str, Sequence[torch.Tensor]] | None = None) -> KVCache:
        """A new cache with frames appended (``k[i]``, ``v[i]``: ``(B, F, S, H, Dh)``)."""
        def cat(old: tuple[torch.Tensor, ...], new: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
            return tuple(new) if not old else tuple(torch.cat([a, b], dim=1) for a, b in zip(old, new, strict=True))

        ext = dict(self.extra)
        for name, ts in (extra or {}).items():
            ext[name] = cat(self.extra.get(name, ()), ts)
        lat = latents if self.latents is None else torch.cat([self.latents, latents], dim=2)
        return KVCache(cat(self.k, k), cat(self.v, v), lat, self.tiers + tuple(tiers), ext)

    def keep(self, index: Sequence[int]) -> KVCache:
        """A new cache holding only the frames at ``index`` (in that order)."""
        if list(index) == list(range(self.frames)):
            return self
        if not index:
            return KVCache()
        idx = torch.tensor(list(index), dtype=torch.long, device=self.k[0].device if self.k else None)

        def pick(ts: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
            return tuple(t.index_select(1, idx.to(t.device)) for t in ts)

        lat = None if self.latents is None else self.latents.index_select(2, idx.to(self.latents.device))
        return KVCache(pick(self.k), pick(self.v), lat, tuple(self.tiers[i] for i in index),
                       {n: pick(ts) for n, ts in self.extra.items()})

    def evicted(self, window: int) -> KVCache:
        """Sink frames (``sink_global``, ``sink_current``) are pinned; of the ``rolling``
        frames only the newest ``window`` stay (eviction by age)."""
        rolling = [i for i, t in enumerate(self.tiers) if t == "rolling"]
        drop = set(rolling[:max(0, len(rolling) - window)])
        return self.keep([i for i in range(self.frames) if i not in drop])

    def without(self, *tiers: FrameTier) -> KVCache:
        """A new cache without the frames of ``tiers``."""
        return self.keep([i for i, t in enumerate(self.tiers) if t not in tiers])

    def retiered(self, tiers: Sequence[FrameTier]) -> KVCache:
        """The same tensors with new tiers (one per frame)."""
        return replace(self, tiers=tuple(tiers))


@dataclass(frozen=True)
class CrossContext:
    """A conditioning sequence's cross-attention keys and values per layer, ``(B, L, H, Dh)``."""

    k: tuple[torch.Tensor, ...]
    v: tuple[torch.Tensor, ...]


def flow_sigmas(timesteps: Sequence[float], shift: float) -> list[float]:
    """Noise levels of the denoising steps: ``sigma = shift s / (1 + (shift - 1) s)``, ``s = t / 1000``.

    The shifted flow-matching schedule of Wan (``FlowMatchEulerDiscreteScheduler``'s
    ``shift``; Self-Forcing samples with shift 5).
    """
    out = []
    for t in timesteps:
        s = float(t) / 1000.0
        out.append(shift * s / (1.0 + (shift - 1.0) * s))
    return out


def _heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    return x.reshape(x.shape[0], x.shape[1], heads, -1)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Wan's RoPE on ``x`` ``(B, L, H, Dh)`` with interleaved pairs; ``cos`` / ``sin`` ``(1, L, 1, Dh)``."""
    x1, x2 = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
    c, s = cos[..., 0::2], sin[..., 1::2]
    out = torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1).flatten(-2)
    return out.type_as(x)


class CausalWan:
    """Block-causal forward passes of a ``WanTransformer3DModel`` (see the module doc).

    Args:
        transformer: a diffusers ``WanTransformer3DModel`` (its weights are used as they are).

    Raises:
        ValueError: the model's patch is not one frame deep.
    """

    def __init__(self, transformer: Any) -> None:
        self.model = transformer
        cfg = transformer.config
        self.patch = tuple(int(p) for p in cfg.patch_size)
        if self.patch[0] != 1:
            raise ValueError(f"block-causal generation needs a patch one frame deep, not {self.patch}")
        self.heads = int(cfg.num_attention_heads)
        self.layers = len(transformer.blocks)
        self.in_channels = int(cfg.in_channels)
        self.out_channels = int(cfg.out_channels or cfg.in_channels)
        self.max_positions = int(cfg.rope_max_seq_len)
        self._ropes: dict[tuple[int, int, int, int], tuple[torch.Tensor, torch.Tensor]] = {}

    @property
    def device(self) -> torch.device:
        return torch.device(self.model.device)

    @property
    def dtype(self) -> torch.dtype:
        dtype: torch.dtype = self.model.patch_embedding.weight.dtype
        return dtype

    def tokens_per_frame(self, h: int, w: int) -> int:
        """``S`` for latents of ``h x w``."""
        return (h // self.patch[1]) * (w // self.patch[2])

    # -- conditioning ------------------------------------------------------------------------------
    def cross_context(self, embeds: torch.Tensor, image: bool = False) -> CrossContext:
        """Cross-attention keys / values of a conditioning sequence, per layer.

        Args:
            embeds: ``(B, L, text_dim)`` prompt embeddings, or with ``image=True``
                ``(B, L, image_dim)`` image features (Wan's image embedder projects them).
        """
        ce = self.model.condition_embedder
        with torch.no_grad():
            ctx = ce.image_embedder(embeds) if image else ce.text_embedder(embeds.to(self.dtype))
            ks, vs = [], []
            for blk in self.model.blocks:
                a = blk.attn2
                ks.append(_heads(a.norm_k(a.to_k(ctx)), self.heads))
                vs.append(_heads(a.to_v(ctx), self.heads))
        return CrossContext(tuple(ks), tuple(vs))

    def _rope(self, first: int, frames: int, pph: int, ppw: int) -> tuple[torch.Tensor, torch.Tensor]:
        """RoPE cos / sin ``(1, frames * pph * ppw, 1, Dh)`` for cache slots ``first .. first + frames - 1``."""
        key = (first, frames, pph, ppw)
        hit = self._ropes.get(key)
        if hit is not None:
            return hit
        rope = self.model.rope
        if first + frames > self.max_positions:
            raise ValueError(f"cache slot {first + frames} is past the model's {self.max_positions} RoPE positions")
        split = [rope.t_dim, rope.h_dim, rope.w_dim]
        out = []
        for table in (rope.freqs_cos, rope.freqs_sin):
            t, hh, ww = table.split(split, dim=1)
            parts = [t[first:first + frames].view(frames, 1, 1, -1).expand(frames, pph, ppw, -1),
                     hh[:pph].view(1, pph, 1, -1).expand(frames, pph, ppw, -1),
                     ww[:ppw].view(1, 1, ppw, -1).expand(frames, pph, ppw, -1)]
            out.append(torch.cat(parts, dim=-1).reshape(1, frames * pph * ppw, 1, -1).to(self.device))
        if len(self._ropes) > 256:
            self._ropes.clear()
        self._ropes[key] = (out[0], out[1])
        return out[0], out[1]

    # -- one pass ---------------------------------------------------------------------------------------
    def forward(self, latents: torch.Tensor, timestep: float, cache: KVCache, context: CrossContext,
                *, write: bool = False, hook: LayerHook | None = None, frame_blocks: Sequence[int] | None = None,
                ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """One block-causal pass of the block ``latents`` ``(B, C_in, F, h, w)`` at ``timestep``.

        The block's tokens attend to one another and to every frame in ``cache``;
        ``hook`` (the action module) runs in every layer after cross-attention. With
        ``frame_blocks`` (a block index per frame, non-decreasing) the pass covers several
        blocks at once: a frame attends to the frames of its own and earlier blocks only
        (the block-causal mask), which gives the same keys and values as one pass per block.

        Returns:
            ``(flow, k, v)``: the predicted flow ``(B, C_out, F, h, w)`` float32, and with
            ``write`` the block's per-layer keys (before RoPE) and values ``(B, F, S, H, Dh)``
            to append to the cache (empty lists otherwise).
        """
        m = self.model
        b, _, f, h, w = latents.shape
        pph, ppw = h // self.patch[1], w // self.patch[2]
        s = pph * ppw
        n_cached = cache.frames
        with torch.no_grad():
            x = m.patch_embedding(latents.to(self.dtype)).flatten(2).transpose(1, 2).contiguous()
            ce = m.condition_embedder
            t = torch.full((b,), float(timestep), device=self.device)
            tp = ce.timesteps_proj(t)
            temb = ce.time_embedder(tp.to(next(iter(ce.time_embedder.parameters())).dtype)).type_as(x)
            tproj = ce.time_proj(ce.act_fn(temb)).reshape(b, 6, -1)
            cos_all, sin_all = self._rope(0, n_cached + f, pph, ppw)
            cos_q, sin_q = cos_all[:, n_cached * s:], sin_all[:, n_cached * s:]
            mask = None
            if frame_blocks is not None and len(set(frame_blocks)) > 1:
                fb = torch.tensor(list(frame_blocks), device=self.device).repeat_interleave(s)
                own = fb[None, :] <= fb[:, None]  # (F*S, F*S): key block <= query block
                mask = torch.cat([torch.ones(f * s, n_cached * s, dtype=torch.bool, device=self.device), own], dim=1)
            ks: list[torch.Tensor] = []
            vs: list[torch.Tensor] = []
            for i, blk in enumerate(m.blocks):
                shift, scale, gate, c_shift, c_scale, c_gate = (blk.scale_shift_table + tproj.float()).chunk(6, dim=1)
                a = blk.attn1
                hs = (blk.norm1(x.float()) * (1 + scale) + shift).type_as(x)
                q = _heads(a.norm_q(a.to_q(hs)), self.heads)
                k = _heads(a.norm_k(a.to_k(hs)), self.heads)
                v = _heads(a.to_v(hs), self.heads)
                if write:
                    ks.append(k.reshape(b, f, s, *k.shape[2:]))
                    vs.append(v.reshape(b, f, s, *v.shape[2:]))
                if n_cached:
                    k = torch.cat([cache.k[i].flatten(1, 2), k], dim=1)
                    v = torch.cat([cache.v[i].flatten(1, 2), v], dim=1)
                q = rotate(q, cos_q, sin_q)
                k = rotate(k, cos_all, sin_all)
                att = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                     attn_mask=mask)
                att = a.to_out[0](att.transpose(1, 2).flatten(2, 3).type_as(x))
                x = (x.float() + att * gate).type_as(x)
                a2 = blk.attn2
                hs = blk.norm2(x.float()).type_as(x)
                q2 = _heads(a2.norm_q(a2.to_q(hs)), self.heads)
                att2 = F.scaled_dot_product_attention(q2.transpose(1, 2), context.k[i].transpose(1, 2),
                                                      context.v[i].transpose(1, 2))
                x = x + a2.to_out[0](att2.transpose(1, 2).flatten(2, 3).type_as(x))
                if hook is not None:
                    x = hook(i, x, f, s)
                hs = (blk.norm3(x.float()) * (1 + c_scale) + c_shift).type_as(x)
                x = (x.float() + blk.ffn(hs).float() * c_gate).type_as(x)
            shift, scale = (m.scale_shift_table + temb.unsqueeze(1)).chunk(2, dim=1)
            x = (m.norm_out(x.float()) * (1 + scale) + shift).type_as(x)
            x = m.proj_out(x)
            p_h, p_w = self.patch[1], self.patch[2]
            x = x.reshape(b, f, pph, ppw, 1, p_h, p_w, -1).permute(0, 7, 1, 4, 2, 5, 3, 6)
            flow = x.flatten(6, 7).flatten(4, 5).flatten(2, 3).float()
        return flow, ks, vs

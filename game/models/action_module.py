"""Keyboard and mouse conditioning inside the block-causal Wan loop (Matrix-Game 2.0's action module).

Matrix-Game 2.0 (SkyworkAI, MIT; ``ActionModule`` in its ``wan/modules/action_module.py``,
configured in FastVideo's ``MatrixGameWanVideoArchConfig``) adds, in the first 15 of
the Wan 1.3B model's 30 blocks, after cross-attention:

* a **mouse branch**: for each spatial token, the latent frame's hidden state is
  concatenated with the mouse values ``(pitch, yaw)`` of the last ``windows_size x 4``
  frames (3 latent frames of 4 frames each), through an MLP (``mouse_hidden_dim``
  1024), then self-attention *along time* (16 heads, RMS-normed queries / keys,
  rotary positions with theta 256), projected back and added;
* a **keyboard branch**: the keys held in each frame (multi-hot, 4 keys for the
  universal model: forward, back, left, right) are embedded by an MLP (width 128),
  the last ``windows_size x 4`` frames' embeddings form one keyboard token per latent
  frame, and every visual token cross-attends to them (``keyboard_hidden_dim`` 1024),
  projected back and added.

Both attentions are causal in time with their own KV caches (Matrix-Game keeps
``kv_cache_mouse`` / ``kv_cache_keyboard`` beside the visual cache); here they live
in :attr:`KVCache.extra` (``mouse_k``, ``mouse_v``, ``key_k``, ``key_v``, one tensor
per action layer, frame axis 1) and are evicted with the visual cache.

Shapes: tokens ``(B, F * S, D)``; keyboard windows ``(B, F, W4, K)``; mouse windows
``(B, F, W4, 2)`` with ``W4 = windows_size * 4``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from diffusers.configuration_utils import ConfigMixin, register_to_config
from diffusers.models.modeling_utils import ModelMixin
from torch import nn

from game.models.causal_model import KVCache, LayerHook, rotate

_Model: Any = ModelMixin
_Config: Any = ConfigMixin


def rope_1d(positions: torch.Tensor, dim: int, theta: float = 256.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotary cos / sin ``(1, L, 1, dim)`` for integer ``positions`` ``(L,)`` (interleaved pairs)."""
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=positions.device) / dim))
    ang = positions.double()[:, None] * inv[None, :]
    cos = ang.cos().repeat_interleave(2, dim=-1)[None, :, None, :]
    sin = ang.sin().repeat_interleave(2, dim=-1)[None, :, None, :]
    return cos.float(), sin.float()


class ActionLayer(nn.Module):
    """The action module of one transformer layer (see the module doc)."""

    def __init__(self, dim: int, keyboard_dim: int, mouse_dim: int, hidden: int, keyboard_hidden: int,
                 mouse_hidden: int, heads: int, window: int, theta: float) -> None:
        super().__init__()
        self.heads, self.window, self.theta = heads, window, theta
        self.keyboard_embed = nn.Sequential(nn.Linear(keyboard_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.mouse_mlp = nn.Sequential(nn.Linear(mouse_dim * window + dim, mouse_hidden), nn.GELU(approximate="tanh"),
                                       nn.Linear(mouse_hidden, mouse_hidden), nn.LayerNorm(mouse_hidden))
        self.t_qkv = nn.Linear(mouse_hidden, mouse_hidden * 3, bias=False)
        self.mouse_q_norm = nn.RMSNorm(mouse_hidden // heads, eps=1e-6)
        self.mouse_k_norm = nn.RMSNorm(mouse_hidden // heads, eps=1e-6)
        self.proj_mouse = nn.Linear(mouse_hidden, dim, bias=False)
        self.key_q = nn.Linear(dim, keyboard_hidden, bias=False)
        self.key_kv = nn.Linear(hidden * window, keyboard_hidden * 2, bias=False)
        self.key_q_norm = nn.RMSNorm(keyboard_hidden // heads, eps=1e-6)
        self.key_k_norm = nn.RMSNorm(keyboard_hidden // heads, eps=1e-6)
        self.proj_keyboard = nn.Linear(keyboard_hidden, dim, bias=False)

    def forward(self, x: torch.Tensor, f: int, s: int, keyboard: torch.Tensor, mouse: torch.Tensor,
                cached: tuple[torch.Tensor, ...] | None) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        """Add the action conditioning to ``x`` ``(B, F * S, D)``.

        Args:
            keyboard: ``(B, F, W4, K)``; mouse: ``(B, F, W4, 2)``.
            cached: ``(mouse_k, mouse_v, key_k, key_v)`` of the cached frames, or ``None``.

        Returns:
            ``(x, new)``: the conditioned tokens and this block's ``(mouse_k, mouse_v, key_k, key_v)``.
        """
        b, _, d = x.shape
        n = 0 if cached is None else int(cached[2].shape[1])
        dt = x.dtype
        pos_all = torch.arange(n + f, device=x.device)
        # mouse: attention along time, per spatial token
        hs = x.view(b, f, s, d).permute(0, 2, 1, 3).reshape(b * s, f, d)
        ms = mouse.to(dt).flatten(2).unsqueeze(1).expand(b, s, f, -1).reshape(b * s, f, -1)
        g = self.mouse_mlp(torch.cat([hs, ms], dim=-1))
        q, k, v = self.t_qkv(g).reshape(b * s, f, 3, self.heads, -1).unbind(2)
        q, k = self.mouse_q_norm(q), self.mouse_k_norm(k)
        new_mk, new_mv = k, v
        if cached is not None:
            k, v = torch.cat([cached[0], k], dim=1), torch.cat([cached[1], v], dim=1)
        cos, sin = rope_1d(pos_all, q.shape[-1], self.theta)
        q = rotate(q, cos[:, n:].to(dt), sin[:, n:].to(dt))
        k = rotate(k, cos.to(dt), sin.to(dt))
        att = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        out = self.proj_mouse(att.transpose(1, 2).flatten(2))
        x = x + out.view(b, s, f, d).permute(0, 2, 1, 3).reshape(b, f * s, d)
        # keyboard: every visual token attends to one keyboard token per latent frame
        kt = self.keyboard_embed(keyboard.to(dt)).flatten(2)
        kk, kv = self.key_kv(kt).reshape(b, f, 2, self.heads, -1).unbind(2)
        kk = self.key_k_norm(kk)
        new_kk, new_kv = kk, kv
        if cached is not None:
            kk, kv = torch.cat([cached[2], kk], dim=1), torch.cat([cached[3], kv], dim=1)
        kq = self.key_q_norm(self.key_q(x).reshape(b, f * s, self.heads, -1))
        qpos = torch.arange(n, n + f, device=x.device).repeat_interleave(s)
        qc, qs = rope_1d(qpos, kq.shape[-1], self.theta)
        kc, ks = rope_1d(pos_all, kq.shape[-1], self.theta)
        kq = rotate(kq, qc.to(dt), qs.to(dt))
        kk = rotate(kk, kc.to(dt), ks.to(dt))
        att = F.scaled_dot_product_attention(kq.transpose(1, 2), kk.transpose(1, 2), kv.transpose(1, 2))
        x = x + self.proj_keyboard(att.transpose(1, 2).flatten(2))
        return x, (new_mk, new_mv, new_kk, new_kv)


class ActionModules(_Model, _Config):  # type: ignore[misc]
    """The action layers of a Matrix-Game 2.0 style model (saved / loaded as ``action/``).

    Args:
        dim: the transformer's hidden width (Wan 1.3B: 1536).
        blocks: transformer layers that have an action layer (Matrix-Game 2.0: 0..14).
        keyboard_dim: keys per frame (universal model: 4: forward, back, left, right).
        mouse_dim: mouse values per frame (2: pitch, yaw).
        hidden, keyboard_hidden, mouse_hidden, heads: widths (128, 1024, 1024, 16).
        windows_size: latent frames of actions each latent frame sees (3).
        temporal: frames per latent frame (the VAE's 4).
        rope_theta: rotary base of the action attentions (256).
    """

    @register_to_config  # type: ignore[untyped-decorator]
    def __init__(self, dim: int = 1536, blocks: tuple[int, ...] = tuple(range(15)), keyboard_dim: int = 4,
                 mouse_dim: int = 2, hidden: int = 128, keyboard_hidden: int = 1024, mouse_hidden: int = 1024,
                 heads: int = 16, windows_size: int = 3, temporal: int = 4, rope_theta: float = 256.0) -> None:
        super().__init__()
        w4 = windows_size * temporal
        self.layer_of = {int(i): j for j, i in enumerate(blocks)}
        self.layers = nn.ModuleList([ActionLayer(dim, keyboard_dim, mouse_dim, hidden, keyboard_hidden, mouse_hidden,
                                                 heads, w4, rope_theta) for _ in blocks])

    @property
    def window_frames(self) -> int:
        """Frames of actions each latent frame sees (``windows_size * temporal``)."""
        return int(self.config.windows_size) * int(self.config.temporal)


class ActionPass:
    """The action add-on of one block-causal pass (:class:`game.world.backends.causal_sampler.Addon`).

    Args:
        modules: the action layers.
        cache: the session's cache (its ``extra`` holds the action keys / values).
        keyboard: ``(1, F, W4, K)``; mouse: ``(1, F, W4, 2)``.
        write: collect this block's action keys / values for the cache.
    """

    NAMES = ("mouse_k", "mouse_v", "key_k", "key_v")

    def __init__(self, modules: ActionModules, cache: KVCache, keyboard: torch.Tensor, mouse: torch.Tensor,
                 write: bool) -> None:
        self.modules, self.cache, self.write = modules, cache, write
        self.keyboard, self.mouse = keyboard, mouse
        self._new: dict[str, list[torch.Tensor]] = {n: [] for n in self.NAMES}

    def hook(self) -> LayerHook:
        def run(layer: int, x: torch.Tensor, f: int, s: int) -> torch.Tensor:
            j = self.modules.layer_of.get(layer)
            if j is None:
                return x
            ext = self.cache.extra
            cached = tuple(ext[n][j] for n in self.NAMES) if self.cache.frames and "key_k" in ext else None
            mod: Any = self.modules.layers[j]
            x, new = mod(x, f, s, self.keyboard.to(x.device), self.mouse.to(x.device), cached)
            if self.write:
                for name, t in zip(self.NAMES, new, strict=True):
                    self._new[name].append(t)
            return x

        return run

    def written(self) -> dict[str, list[torch.Tensor]]:
        return self._new if self.write else {}

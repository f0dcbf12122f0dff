"""Streaming the Wan VAE: decode latent frames block by block, encode a start image.

diffusers' ``AutoencoderKLWan.decode`` decodes a whole clip and clears its causal
convolution cache before and after. A streaming world model decodes each block as
it is made and carries the decoder's cache to the next block (Self-Forcing and
Matrix-Game 2.0 keep a VAE cache across blocks for the same reason). This module
drives the VAE's own ``post_quant_conv`` and ``decoder`` one latent frame at a time
with a per-session cache list (``feat_cache``): the decoder only ever *assigns*
entries of that list, so copying the list is an exact snapshot of the decoder.

The first latent frame of a stream decodes to one frame, every later one to
``temporal`` (4) frames (the VAE's 4x temporal compression, causal in time).

Latents are normalised as Wan's pipelines do: ``(z - latents_mean) / latents_std``
with the VAE config's per-channel values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

#: The decoder's causal-convolution cache of one stream (``None`` before the first frame).
DecoderState = list[Any] | None


class WanStream:
    """Decode / encode with an ``AutoencoderKLWan`` (weights used as they are).

    Args:
        vae: a diffusers ``AutoencoderKLWan`` (float32 recommended).
    """

    def __init__(self, vae: Any) -> None:
        self.vae = vae
        cfg = vae.config
        self.z_dim = int(cfg.z_dim)
        self.temporal = 4
        self.spatial = 8
        dev = torch.device(vae.device)
        self.mean = torch.tensor(cfg.latents_mean, dtype=torch.float32, device=dev).view(1, -1, 1, 1, 1)
        self.std = torch.tensor(cfg.latents_std, dtype=torch.float32, device=dev).view(1, -1, 1, 1, 1)
        self.convs = int(vae._cached_conv_counts["decoder"])

    def decode(self, latents: torch.Tensor, state: DecoderState) -> tuple[np.ndarray, DecoderState]:
        """Decode normalised latents ``(1, z_dim, F, h, w)`` continuing the stream ``state``.

        Returns:
            ``(frames, state)``: ``(T, 8h, 8w, 3)`` uint8 RGB with ``T = 4F`` (``4F - 3``
            when ``state`` is ``None``: a new stream), and the decoder state after them.
        """
        vae = self.vae
        dtype = next(vae.parameters()).dtype
        z = latents.float() * self.std + self.mean
        cache: list[Any] = list(state) if state is not None else [None] * self.convs
        outs = []
        with torch.no_grad():
            x = vae.post_quant_conv(z.to(dtype))
            for i in range(x.shape[2]):
                first = state is None and i == 0
                out = vae.decoder(x[:, :, i:i + 1], feat_cache=cache, feat_idx=[0], first_chunk=first)
                outs.append(out)
        video = torch.cat(outs, dim=2).clamp(-1.0, 1.0)  # (1, 3, T, H, W)
        u8 = ((video[0].permute(1, 2, 3, 0).float().cpu().numpy() + 1.0) * 127.5 + 0.5).astype(np.uint8)
        return np.ascontiguousarray(u8), cache

    def encode_image(self, rgb: np.ndarray) -> torch.Tensor:
        """Normalised latent ``(1, z_dim, 1, H / 8, W / 8)`` of one ``(H, W, 3)`` uint8 image (the mode)."""
        vae = self.vae
        dtype = next(vae.parameters()).dtype
        x = torch.from_numpy(np.array(rgb, dtype=np.uint8)).to(vae.device).float().div(127.5).sub(1.0)
        x = x.permute(2, 0, 1)[None, :, None].to(dtype)
        with torch.no_grad():
            z = vae.encode(x).latent_dist.mode().float()
        out: torch.Tensor = (z - self.mean) / self.std
        return out

"""Causal Wan architectures with random weights: the tests' tiny ones and the published sizes.

Speed and memory do not depend on the weights, so the tests and ``bench/gpu.py``
build the architectures from their configurations:

* :data:`WAN_T2V_1_3B` -- Wan 2.1 T2V 1.3B (``Wan-AI/Wan2.1-T2V-1.3B``: 30 layers,
  12 heads x 128, FFN 8960, UMT5 width 4096), the model Self-Forcing, CausVid and
  LongLive make causal; it is the SkyReels-V2 DF 1.3B transformer without the fps
  embedding (:data:`game.models.diffusion_arch.SKYREELS_DF_1_3B`);
* :data:`MATRIX_GAME_2` -- Matrix-Game 2.0's transformer: the same 1.3B body with
  Wan's image-to-video input (36 channels: noise, mask, image latents) and image
  embedder (CLIP ViT-H width 1280), plus :data:`MATRIX_GAME_2_ACTION` (action layers
  in blocks 0..14, FastVideo's ``MatrixGameWanVideoArchConfig``);
* the Wan 2.1 VAE (:data:`game.models.diffusion_arch.WAN_VAE`);
* :data:`TINY_WAN` / :data:`TINY_ACTION` / the tiny VAE -- a few thousand parameters, for the CPU.

Pictures made with random weights are noise; only their timing and shapes mean anything.
"""

from __future__ import annotations

from typing import Any

from game.models.action_module import ActionModules
from game.models.causal_loader import CausalComponents
from game.models.checkpoint import cast_like_pretrained
from game.models.diffusion_arch import SKYREELS_DF_1_3B, TINY_VAE, WAN_VAE
from game.models.diffusion_loader import resolve_dtype

#: Wan 2.1 T2V 1.3B (diffusers ``WanTransformer3DModel`` config).
WAN_T2V_1_3B: dict[str, Any] = {k: v for k, v in SKYREELS_DF_1_3B.items() if k != "inject_sample_info"}
#: Matrix-Game 2.0's transformer (image-to-video input, image embedder).
MATRIX_GAME_2: dict[str, Any] = {**WAN_T2V_1_3B, "in_channels": 36, "image_dim": 1280}
#: Matrix-Game 2.0's action layers (universal model: 4 keys, 2 mouse values).
MATRIX_GAME_2_ACTION: dict[str, Any] = {"dim": 1536, "blocks": tuple(range(15)), "keyboard_dim": 4, "mouse_dim": 2,
                                        "hidden": 128, "keyboard_hidden": 1024, "mouse_hidden": 1024, "heads": 16,
                                        "windows_size": 3, "temporal": 4, "rope_theta": 256.0}

#: A tiny Wan transformer (diffusers' Wan test dimensions; RoPE table long enough for the no-cache baseline).
TINY_WAN: dict[str, Any] = {
    "patch_size": (1, 2, 2), "num_attention_heads": 2, "attention_head_dim": 12, "in_channels": 16,
    "out_channels": 16, "text_dim": 32, "freq_dim": 256, "ffn_dim": 32, "num_layers": 2, "cross_attn_norm": True,
    "qk_norm": "rms_norm_across_heads", "rope_max_seq_len": 1024,
}
TINY_ACTION_WAN: dict[str, Any] = {**TINY_WAN, "in_channels": 36, "image_dim": 16}
TINY_ACTION: dict[str, Any] = {"dim": 24, "blocks": (0, 1), "keyboard_dim": 4, "mouse_dim": 2, "hidden": 8,
                               "keyboard_hidden": 16, "mouse_hidden": 16, "heads": 2, "windows_size": 3,
                               "temporal": 4, "rope_theta": 256.0}

#: Backend options that fit the tiny models: 16 x 16 frames, 2 latent frames (8 frames) a block, 2 steps,
#: a cache of 1 sink + 2 window latent frames (the tests' settings).
TINY_OPTIONS: dict[str, Any] = {"width": 16, "height": 16, "fps": 8.0, "latent_frames": 2,
                                "timesteps": (1000.0, 500.0), "sink_latents": 1, "window_latents": 2}


def random_model(kind: str = "causal", size: str = "tiny", device: str = "cpu", dtype: str = "auto",
                 seed: int = 0) -> CausalComponents:
    """Random-weight components of a ``causal`` (text) or ``action`` (Matrix-Game 2.0) model.

    Args:
        kind: ``causal`` or ``action``.
        size: ``tiny`` or ``full`` (the published sizes).
        device: where the weights are created.
        dtype: transformer / action dtype (``auto``: bf16 on a GPU, fp32 on the CPU); the VAE stays float32.
        seed: seed of the weights.
    """
    import torch
    from diffusers import AutoencoderKLWan, WanTransformer3DModel

    tdtype = resolve_dtype(dtype, device)
    action = kind == "action"
    if size == "tiny":
        tcfg, acfg, vcfg = (TINY_ACTION_WAN if action else TINY_WAN), TINY_ACTION, TINY_VAE
    else:
        tcfg, acfg, vcfg = (MATRIX_GAME_2 if action else WAN_T2V_1_3B), MATRIX_GAME_2_ACTION, WAN_VAE
    cls_t: Any = WanTransformer3DModel
    cls_v: Any = AutoencoderKLWan
    torch.manual_seed(seed)
    with torch.device(device):
        transformer = cls_t(**tcfg)
        vae = cls_v(**vcfg)
        modules = ActionModules(**acfg) if action else None
    cast_like_pretrained(transformer, tdtype)  # as from_pretrained(torch_dtype=...) does: some modules stay float32
    if modules is not None:
        modules.to(tdtype)
    return CausalComponents(transformer.eval(), vae.eval(), None if modules is None else modules.eval())

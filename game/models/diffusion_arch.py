"""SkyReels-V2 DF architectures with random weights, for speed measurements (``bench/backend.py``).

Speed does not depend on the weights, so the benchmark builds the published
architecture from its configuration instead of downloading ~5 GB:

* :data:`SKYREELS_DF_1_3B` — the transformer of ``Skywork/SkyReels-V2-DF-1.3B-540P``
  as diffusers converts it (``scripts/convert_skyreelsv2_to_diffusers.py``): 30 layers,
  12 heads x 128, FFN 8960, UMT5 text width 4096, fps embedding (``inject_sample_info``);
* :data:`WAN_VAE` — the Wan 2.1 VAE (``AutoencoderKLWan`` defaults: base width 96,
  ``dim_mult`` 1-2-4-4, 2 residual blocks, 16 latent channels, 4x time / 8x space);
* the scheduler of the published DF pipeline: UniPC with flow sigmas, ``flow_shift`` 8;
* :data:`TINY_TRANSFORMER` / :data:`TINY_VAE` — the dimensions of diffusers' own
  SkyReels-V2 pipeline tests (a ~28k-parameter transformer), for the CPU.

Pictures made with these weights are noise; only their timing means anything.
"""

from __future__ import annotations

from typing import Any

from game.models.diffusion_loader import resolve_dtype

#: SkyReels-V2-DF-1.3B-540P transformer (diffusers ``SkyReelsV2Transformer3DModel`` config).
SKYREELS_DF_1_3B: dict[str, Any] = {
    "patch_size": (1, 2, 2),
    "num_attention_heads": 12,
    "attention_head_dim": 128,
    "in_channels": 16,
    "out_channels": 16,
    "text_dim": 4096,
    "freq_dim": 256,
    "ffn_dim": 8960,
    "num_layers": 30,
    "cross_attn_norm": True,
    "qk_norm": "rms_norm_across_heads",
    "eps": 1e-6,
    "added_kv_proj_dim": None,
    "inject_sample_info": True,
}

#: The Wan 2.1 VAE (``AutoencoderKLWan``).
WAN_VAE: dict[str, Any] = {
    "base_dim": 96,
    "z_dim": 16,
    "dim_mult": [1, 2, 4, 4],
    "num_res_blocks": 2,
    "attn_scales": [],
    "temperal_downsample": [False, True, True],
    "dropout": 0.0,
}

#: Published sampling settings of the 540P DF model.
SKYREELS_DF_540P = {"width": 960, "height": 544, "fps": 24.0, "overlap_frames": 17, "steps": 30,
                    "guidance_scale": 6.0, "flow_shift": 8.0}

#: diffusers' SkyReels-V2 test dimensions.
TINY_TRANSFORMER: dict[str, Any] = {
    "patch_size": (1, 2, 2), "num_attention_heads": 2, "attention_head_dim": 12, "in_channels": 16,
    "out_channels": 16, "text_dim": 32, "freq_dim": 256, "ffn_dim": 32, "num_layers": 2, "cross_attn_norm": True,
    "qk_norm": "rms_norm_across_heads", "rope_max_seq_len": 32,
}
TINY_VAE: dict[str, Any] = {"base_dim": 3, "z_dim": 16, "dim_mult": [1, 1, 1, 1], "num_res_blocks": 1,
                            "temperal_downsample": [False, True, True]}


def random_pipeline(size: str = "tiny", device: str = "cpu", dtype: str = "auto", seed: int = 0) -> Any:
    """A ``SkyReelsV2DiffusionForcingPipeline`` with random weights and no text encoder.

    Args:
        size: ``tiny`` (diffusers' test dimensions) or ``full`` (the published 1.3B).
        device: where to build it (weights are created there directly).
        dtype: transformer dtype, ``auto``: bfloat16 on a GPU, float32 on the CPU (the VAE stays float32).
        seed: seed of the random weights.
    """
    import torch
    from diffusers import (
        AutoencoderKLWan,
        SkyReelsV2DiffusionForcingPipeline,
        SkyReelsV2Transformer3DModel,
        UniPCMultistepScheduler,
    )

    tdtype = resolve_dtype(dtype, device)
    torch.manual_seed(seed)
    cls_t: Any = SkyReelsV2Transformer3DModel
    cls_v: Any = AutoencoderKLWan
    cls_s: Any = UniPCMultistepScheduler
    cls_p: Any = SkyReelsV2DiffusionForcingPipeline
    with torch.device(device):
        transformer = cls_t(**(TINY_TRANSFORMER if size == "tiny" else SKYREELS_DF_1_3B))
        vae = cls_v(**(TINY_VAE if size == "tiny" else WAN_VAE))
    if tdtype != torch.float32:  # as from_pretrained(dtype=...) does: some modules stay float32
        keep = tuple(getattr(transformer, "_keep_in_fp32_modules", None) or ())
        for name, module in transformer.named_modules():
            if not any(part in keep for part in name.split(".")):
                for param in module.parameters(recurse=False):
                    param.data = param.data.to(tdtype)
    scheduler = cls_s(prediction_type="flow_prediction", num_train_timesteps=1000, use_flow_sigmas=True,
                      flow_shift=5.0 if size == "tiny" else float(SKYREELS_DF_540P["flow_shift"]))
    pipe = cls_p(tokenizer=None, text_encoder=None, transformer=transformer, vae=vae, scheduler=scheduler)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def parameter_counts() -> dict[str, int]:
    """Parameters of the full-size transformer and VAE, built on the meta device (no memory, no time)."""
    import torch
    from diffusers import AutoencoderKLWan, SkyReelsV2Transformer3DModel

    cls_t: Any = SkyReelsV2Transformer3DModel
    cls_v: Any = AutoencoderKLWan
    with torch.device("meta"):
        t = cls_t(**SKYREELS_DF_1_3B)
        v = cls_v(**WAN_VAE)
    return {"transformer": sum(p.numel() for p in t.parameters()), "vae": sum(p.numel() for p in v.parameters())}

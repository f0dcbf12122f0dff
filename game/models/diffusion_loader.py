"""Loading a SkyReels-V2 diffusion-forcing video pipeline once, from a local folder or a hub id.

The world room's ``diffusion`` backend (:mod:`game.world.backends.diffusion`) drives
diffusers' ``SkyReelsV2DiffusionForcingPipeline`` family. This module is the one
place its weights are read:

* ``model`` is a local folder written by ``DiffusionPipeline.save_pretrained`` (it
  holds ``model_index.json``), or a hub id such as
  ``Skywork/SkyReels-V2-DF-1.3B-540P-Diffusers`` (downloaded by diffusers into the
  hub cache the first time, where the machine can reach the hub);
* a pipeline is loaded once per ``(model, device, dtype, text encoder)`` and shared
  by every backend session that names it (:func:`load_diffusion_pipeline` caches it);
* components the folder does not have (a pipeline saved with ``text_encoder=None``,
  ``tokenizer=None``, as the tests' tiny random ones are) load as ``None``; so does
  the text encoder when ``text_encoder=False`` (UMT5-XXL is ~11 GB in bf16): the
  backend then uses its offline prompt-embedding fallback;
* the VAE always runs in float32 (the Wan VAE needs it; diffusers' own SkyReels
  examples do the same), the transformer and text encoder in ``dtype``.

torch and diffusers are imported inside the functions, so importing this module
costs nothing.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from game.models.embedder import ModelError

#: The published 1.3B diffusion-forcing checkpoint in diffusers format (540P, 960 x 544).
SKYREELS_DF_1_3B = "Skywork/SkyReels-V2-DF-1.3B-540P-Diffusers"

#: ``_class_name`` values in ``model_index.json`` this loader accepts (they share components).
ACCEPTED_CLASSES = (
    "SkyReelsV2DiffusionForcingPipeline",
    "SkyReelsV2DiffusionForcingVideoToVideoPipeline",
    "SkyReelsV2DiffusionForcingImageToVideoPipeline",
    "SkyReelsV2Pipeline",
)

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_CACHE: dict[tuple[str, str, str, bool], Any] = {}
_CACHE_LOCK = threading.Lock()


def resolve_device(device: str = "auto") -> str:
    """``"cuda"`` when ``device`` is ``"auto"`` and a CUDA GPU is visible, else ``"cpu"``; other values pass."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(dtype: str, device: str) -> Any:
    """The ``torch.dtype`` for ``dtype`` (``auto``: bfloat16 on a GPU, float32 on the CPU).

    Raises:
        ModelError: an unknown dtype name.
    """
    import torch

    names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
             "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    if dtype not in names:
        raise ModelError(f"unknown dtype {dtype!r}", hint=f"use one of auto, {', '.join(sorted(names))}")
    return names[dtype]


def model_components(folder: Path) -> dict[str, Any]:
    """The ``model_index.json`` of a local pipeline folder, checked.

    Raises:
        ModelError: no ``model_index.json``, unreadable JSON, or a pipeline class this
            backend cannot drive.
    """
    index = folder / "model_index.json"
    if not index.is_file():
        raise ModelError("not a diffusers pipeline folder (no model_index.json)", where=str(folder),
                         hint="save one with DiffusionPipeline.save_pretrained, or name a hub id")
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read model_index.json: {exc}", where=str(index)) from exc
    if not isinstance(data, dict):
        raise ModelError("model_index.json is not a JSON object", where=str(index))
    cls = str(data.get("_class_name", ""))
    if cls not in ACCEPTED_CLASSES:
        raise ModelError(f"pipeline class {cls or '(none)'} is not a SkyReels-V2 diffusion-forcing pipeline",
                         where=str(index), hint=f"expected one of {', '.join(ACCEPTED_CLASSES)}")
    return data


def load_diffusion_pipeline(model: str | Path, *, device: str = "auto", dtype: str = "auto",
                            text_encoder: bool = True, local_files_only: bool = False) -> Any:
    """Load (once) the SkyReels-V2 diffusion-forcing pipeline at ``model``.

    Args:
        model: a local folder with ``model_index.json``, or a hub id (``owner/name``).
        device: ``auto`` (CUDA when visible), ``cpu``, ``cuda``, ``cuda:1``...
        dtype: transformer / text-encoder dtype: ``auto`` (bf16 on a GPU, fp32 on the CPU),
            ``float32``, ``bfloat16``, ``float16``. The VAE stays float32.
        text_encoder: load the UMT5 text encoder and tokenizer when the model has them;
            ``False`` skips them (the backend then embeds prompts offline).
        local_files_only: for a hub id, use only the local hub cache (no download).

    Returns:
        A ``diffusers.SkyReelsV2DiffusionForcingPipeline`` on ``device`` with the
        progress bar off. The same object for the same arguments (loaded once).

    Raises:
        ModelError: the folder or hub id does not exist or cannot be read, the pipeline
            is of another kind, or diffusers is not installed (the message says which).
    """
    dev = resolve_device(device)
    key_model = str(Path(model).expanduser().resolve()) if Path(model).expanduser().exists() else str(model)
    key = (key_model, dev, dtype, text_encoder)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
        pipe = _load(model, dev, dtype, text_encoder, local_files_only)
        _CACHE[key] = pipe
        return pipe


def _load(model: str | Path, device: str, dtype: str, text_encoder: bool, local_files_only: bool) -> Any:
    try:
        import torch  # noqa: F401
        from diffusers import AutoencoderKLWan, SkyReelsV2DiffusionForcingPipeline
    except ImportError as exc:
        raise ModelError(f"the diffusion backend needs torch and diffusers: {exc}",
                         hint="pip install 'worldloom[diffusion]'") from exc
    path = Path(model).expanduser()
    where = str(model)
    kwargs: dict[str, Any] = {}
    if path.exists():
        if not path.is_dir():
            raise ModelError("a diffusion model is a folder, not a file", where=where)
        index = model_components(path)
        source: str = str(path)
        for name in ("text_encoder", "tokenizer"):
            entry = index.get(name)
            missing = not isinstance(entry, list) or entry[0] is None or not (path / name).exists()
            if missing or not text_encoder:
                kwargs[name] = None
        if not (path / "vae").is_dir() or not (path / "transformer").is_dir():
            raise ModelError("the pipeline folder has no vae/ or transformer/ folder", where=where)
    elif _HUB_ID.match(str(model)):
        source = str(model)
        if not text_encoder:
            kwargs.update(text_encoder=None, tokenizer=None)
    else:
        raise ModelError("no such model folder, and not a hub id (owner/name)", where=where,
                         hint="pass a folder written by save_pretrained or e.g. " + SKYREELS_DF_1_3B)
    torch_dtype = resolve_dtype(dtype, device)
    try:
        import torch

        vae_cls: Any = AutoencoderKLWan
        pipe_cls: Any = SkyReelsV2DiffusionForcingPipeline
        vae = vae_cls.from_pretrained(source, subfolder="vae", dtype=torch.float32,
                                      local_files_only=local_files_only)
        pipe = pipe_cls.from_pretrained(
            source, vae=vae, dtype=torch_dtype, local_files_only=local_files_only, **kwargs)
        pipe.to(device)
        pipe.vae.to(dtype=torch.float32)
    except ModelError:
        raise
    except Exception as exc:  # diffusers / hub errors come in many types
        hint = "check the folder, or download it first (huggingface-cli download ID)" if not path.exists() \
            else "the folder may be incomplete"
        raise ModelError(f"cannot load the diffusion pipeline: {type(exc).__name__}: {exc}", where=where,
                         hint=hint) from exc
    pipe.set_progress_bar_config(disable=True)
    return pipe


def clear_cache() -> None:
    """Forget every loaded pipeline (tests; frees memory once nothing else holds them)."""
    with _CACHE_LOCK:
        _CACHE.clear()

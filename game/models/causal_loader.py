"""Loading a causal Wan world model once, from a local folder (diffusers format).

The ``causal`` and ``action`` world backends (:mod:`game.world.backends.causal`,
:mod:`game.world.backends.action`) drive diffusers' Wan components. This module is
the one place their weights are read. A model folder holds:

* ``transformer/``: a ``WanTransformer3DModel`` (``save_pretrained`` layout: ``config.json``
  and safetensors), e.g. the transformer of ``Wan-AI/Wan2.1-T2V-1.3B-Diffusers`` with
  Self-Forcing's or LongLive's causal weights converted into it;
* ``vae/``: an ``AutoencoderKLWan`` (the Wan 2.1 VAE);
* ``action/`` (action models only): the keyboard / mouse modules
  (:class:`game.world.backends.action_module.ActionModules`).

Nothing is downloaded: ``model`` must be a local folder. Each folder is loaded once per
``(folder, device, dtype)`` and shared. The VAE runs in float32, the transformer (and
action modules) in ``dtype``. torch and diffusers are imported inside the functions.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from game.models.diffusion_loader import resolve_device, resolve_dtype
from game.models.embedder import ModelError

_CACHE: dict[tuple[str, str, str], CausalComponents] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class CausalComponents:
    """A loaded causal model: ``transformer`` (``WanTransformer3DModel``), ``vae``
    (``AutoencoderKLWan``), ``action`` (the action modules, or ``None`` for a text model)."""

    transformer: Any
    vae: Any
    action: Any = None


def save_causal_model(comps: CausalComponents, folder: str | Path) -> Path:
    """Write ``comps`` as a model folder (``transformer/``, ``vae/``, ``action/``) and return it."""
    out = Path(folder)
    comps.transformer.save_pretrained(out / "transformer")
    comps.vae.save_pretrained(out / "vae")
    if comps.action is not None:
        comps.action.save_pretrained(out / "action")
    return out


def load_causal_model(model: str | Path, *, device: str = "auto", dtype: str = "auto") -> CausalComponents:
    """Load (once) the causal model in folder ``model``.

    Args:
        model: a local folder with ``transformer/`` and ``vae/`` (and ``action/`` for an action model).
        device: ``auto`` (CUDA when visible), ``cpu``, ``cuda``...
        dtype: transformer dtype, ``auto`` (bf16 on a GPU, fp32 on the CPU), ``float32``, ``bfloat16``...

    Raises:
        ModelError: no such folder, a part missing or unreadable, or torch / diffusers missing.
    """
    path = Path(model).expanduser()
    if not path.is_dir():
        raise ModelError("no such model folder (a causal model is a local folder; nothing is downloaded)",
                         where=str(model), hint="a folder with transformer/ and vae/ in diffusers format")
    for part in ("transformer", "vae"):
        if not (path / part / "config.json").is_file():
            raise ModelError(f"the model folder has no {part}/config.json", where=str(path),
                             hint="save the parts with save_pretrained (see docs/backends.md)")
    dev = resolve_device(device)
    key = (str(path.resolve()), dev, dtype)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            hit = _load(path, dev, dtype)
            _CACHE[key] = hit
        return hit


def _load(path: Path, device: str, dtype: str) -> CausalComponents:
    try:
        import torch
        from diffusers import AutoencoderKLWan, WanTransformer3DModel
    except ImportError as exc:
        raise ModelError(f"the causal backends need torch and diffusers: {exc}",
                         hint="pip install 'worldloom[diffusion]'") from exc
    from game.world.backends.action_module import ActionModules

    tdtype = resolve_dtype(dtype, device)
    cls_t: Any = WanTransformer3DModel
    cls_v: Any = AutoencoderKLWan
    try:
        transformer = cls_t.from_pretrained(path / "transformer", torch_dtype=tdtype).to(device).eval()
        vae = cls_v.from_pretrained(path / "vae", torch_dtype=torch.float32).to(device).eval()
        action = None
        if (path / "action" / "config.json").is_file():
            action = ActionModules.from_pretrained(path / "action", torch_dtype=tdtype).to(device).eval()
    except Exception as exc:  # diffusers raises OSError, ValueError, EnvironmentError...
        raise ModelError(f"cannot load the causal model: {type(exc).__name__}: {exc}", where=str(path),
                         hint="the folder may be incomplete") from exc
    return CausalComponents(transformer, vae, action)


def clear_cache() -> None:
    """Forget every loaded model (tests)."""
    with _LOCK:
        _CACHE.clear()

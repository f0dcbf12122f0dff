"""Loading a causal Wan world model once, from a local folder (diffusers format).

The ``causal`` and ``action`` world backends (:mod:`game.world.backends.causal`,
:mod:`game.world.backends.action`) drive diffusers' Wan components. This module is
the one place their weights are read. A model folder holds:

* ``transformer/``: a ``WanTransformer3DModel`` (``save_pretrained`` layout: ``config.json``
  and safetensors), e.g. the transformer of ``Wan-AI/Wan2.1-T2V-1.3B-Diffusers`` with
  Self-Forcing's or LongLive's causal weights converted into it;
* ``vae/``: an ``AutoencoderKLWan`` (the Wan 2.1 VAE);
* ``action/`` (action models only): the keyboard / mouse modules
  (:class:`game.models.action_module.ActionModules`).

The transformer's (and the action modules') weights may instead come from a
checkpoint that is not a diffusers folder (``checkpoint=``: one ``.safetensors``
file, or a folder of shards with a ``*.safetensors.index.json``; read by
:mod:`game.models.checkpoint`): the folder then gives the architecture (each part's
``config.json``) and the VAE, and the checkpoint the weights; its action modules' names
start with ``action.``, and a checkpoint without them leaves ``action/``'s own weights.

Nothing is downloaded: ``model`` must be a local folder. Each folder is loaded once per
``(folder, checkpoint, device, dtype)`` and shared. The VAE runs in float32, the transformer (and
action modules) in ``dtype``. Importing this module needs torch and diffusers (the ``diffusion``
extra); :func:`game.world.backends.make_backend` says so when they are missing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from diffusers import AutoencoderKLWan, WanTransformer3DModel

from game.models.action_module import ActionModules
from game.models.checkpoint import Checkpoint, cast_like_pretrained, load_into, open_checkpoint
from game.models.diffusion_loader import resolve_device, resolve_dtype
from game.models.embedder import ModelError

#: Name prefix of the action modules' tensors in a checkpoint file.
ACTION_PREFIX = "action."

_CACHE: dict[tuple[str, str, str, str], CausalComponents] = {}
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


def load_causal_model(model: str | Path, *, checkpoint: str | Path | None = None, device: str = "auto",
                      dtype: str = "auto") -> CausalComponents:
    """Load (once) the causal model in folder ``model``.

    Args:
        model: a local folder with ``transformer/`` and ``vae/`` (and ``action/`` for an action model).
        checkpoint: the transformer's (and action modules') weights from a ``.safetensors`` file or a
            shard folder / index instead of the folder's own (see the module doc).
        device: ``auto`` (CUDA when visible), ``cpu``, ``cuda``...
        dtype: transformer dtype, ``auto`` (bf16 on a GPU, fp32 on the CPU), ``float32``, ``bfloat16``...

    Raises:
        ModelError: no such folder, a part missing or unreadable, a checkpoint file given as the
            folder, a checkpoint tensor missing, of another shape or left over (named, with its
            file), or torch / diffusers missing.
    """
    path = Path(model).expanduser()
    if path.is_file() or path.name.endswith(".safetensors"):
        raise ModelError("a checkpoint file has no architecture: give the model folder as the model",
                         where=str(model), hint="--model FOLDER (transformer/config.json, vae/) --checkpoint FILE")
    if not path.is_dir():
        raise ModelError("no such model folder (a causal model is a local folder; nothing is downloaded)",
                         where=str(model), hint="a folder with transformer/ and vae/ in diffusers format")
    for part in ("transformer", "vae"):
        if not (path / part / "config.json").is_file():
            raise ModelError(f"the model folder has no {part}/config.json", where=str(path),
                             hint="save the parts with save_pretrained (see docs/backends.md)")
    ckpt = open_checkpoint(checkpoint) if checkpoint is not None else None
    dev = resolve_device(device)
    key = (str(path.resolve()), str(ckpt.path.resolve()) if ckpt else "", dev, dtype)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            hit = _load(path, dev, dtype, ckpt)
            _CACHE[key] = hit
        return hit


def _load(path: Path, device: str, dtype: str, ckpt: Checkpoint | None = None) -> CausalComponents:
    tdtype = resolve_dtype(dtype, device)
    cls_t: Any = WanTransformer3DModel
    cls_v: Any = AutoencoderKLWan
    has_action = (path / "action" / "config.json").is_file()
    try:
        vae = cls_v.from_pretrained(path / "vae", torch_dtype=torch.float32).to(device).eval()
        if ckpt is None:
            transformer = cls_t.from_pretrained(path / "transformer", torch_dtype=tdtype)
        else:
            transformer = cls_t.from_config(cls_t.load_config(path / "transformer"))
        action = None
        if has_action and (ckpt is None or not any(n.startswith(ACTION_PREFIX) for n in ckpt.files)):
            action = ActionModules.from_pretrained(path / "action", torch_dtype=tdtype)
        elif has_action:
            action = ActionModules.from_config(ActionModules.load_config(path / "action"))
    except Exception as exc:  # diffusers raises OSError, ValueError, EnvironmentError...
        raise ModelError(f"cannot load the causal model: {type(exc).__name__}: {exc}", where=str(path),
                         hint="the folder may be incomplete") from exc
    if ckpt is not None:
        load_into(transformer, ckpt, "transformer", skip=(ACTION_PREFIX,) if has_action else ())
        transformer = cast_like_pretrained(transformer, tdtype)
        if action is not None and any(n.startswith(ACTION_PREFIX) for n in ckpt.files):
            load_into(action, ckpt, "action modules")
            action = action.to(tdtype)
    return CausalComponents(transformer.to(device).eval(), vae, None if action is None else action.to(device).eval())


def clear_cache() -> None:
    """Forget every loaded model (tests)."""
    with _LOCK:
        _CACHE.clear()

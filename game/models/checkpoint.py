"""Weights from checkpoint files: one ``.safetensors`` file, or a folder of safetensors shards with an index.

A checkpoint is a state dict (tensor name -> tensor) without its architecture: the
module it goes into is built from a config first (:mod:`game.models.causal_loader`
builds the Wan transformer from the model folder's ``transformer/config.json``), then
:func:`load_into` copies the tensors in, strictly: every tensor the module has must be
in the checkpoint with the same shape, and every checkpoint tensor meant for the module
must have a place in it. Each refusal is a :class:`~game.models.embedder.ModelError`
naming the tensor and the file.

* **One file**: ``*.safetensors`` (read with ``safetensors.safe_open``: shapes are
  checked before any tensor is read).
* **Shards**: a folder (or the index file itself) with one ``*.safetensors.index.json``,
  the Hugging Face layout ``{"weight_map": {name: shard file name}}``; every shard it
  names must exist next to it and hold the names it is listed for.
* **Prefixes**: trainers save names under a prefix the module lacks (``model.``,
  ``generator.model.``, ``module.``...); the prefix that makes the checkpoint's names
  match the module's is found and stripped (:func:`load_into`).
* Only safetensors are read: a pickled ``.pt`` / ``.pth`` / ``.bin`` / ``.ckpt`` is
  refused (the house reads no pickle), with the one-line conversion as the hint.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from game.models.embedder import ModelError

#: Suffixes of pickled checkpoints (refused).
PICKLED = (".pt", ".pth", ".bin", ".ckpt", ".pkl")
#: Names shown in an error before "... and N more".
SHOWN = 3


@dataclass(frozen=True)
class Checkpoint:
    """An opened checkpoint: where it is and, per tensor name, the file holding it and its shape.

    Attributes:
        path: the ``.safetensors`` file, or the shards' index file.
        files: tensor name -> the file holding it.
        shapes: tensor name -> shape.
    """

    path: Path
    files: dict[str, Path]
    shapes: dict[str, tuple[int, ...]]

    def names(self) -> list[str]:
        """Every tensor name, sorted."""
        return sorted(self.files)


def _safe_open(file: Path) -> Any:
    try:
        from safetensors import safe_open
    except ImportError as exc:
        raise ModelError(f"reading checkpoints needs safetensors: {exc}", where=str(file),
                         hint="pip install safetensors") from exc
    try:
        return safe_open(str(file), framework="pt")
    except Exception as exc:  # safetensors raises SafetensorError, OSError...
        raise ModelError(f"not a readable safetensors file: {type(exc).__name__}: {exc}", where=str(file)) from exc


def _shapes(file: Path) -> dict[str, tuple[int, ...]]:
    with _safe_open(file) as f:
        return {k: tuple(int(d) for d in f.get_slice(k).get_shape()) for k in f.keys()}


def open_checkpoint(path: str | Path) -> Checkpoint:
    """Open a checkpoint file or shard folder and read its names and shapes (no tensor data).

    Raises:
        ModelError: no such file, a pickled format, a folder with no (or several) index files,
            an index that is not JSON with a ``weight_map``, a shard it names missing, or a shard
            not holding a name the index lists for it (each names the file, and the tensor).
    """
    p = Path(path).expanduser()
    if p.suffix in PICKLED:
        raise ModelError(f"{p.suffix} checkpoints are pickled; only safetensors are read", where=str(p),
                         hint="convert once: safetensors.torch.save_file(torch.load(FILE, weights_only=True), "
                              "'model.safetensors')")
    if p.is_dir():
        found = sorted(p.glob("*.safetensors.index.json"))
        if len(found) != 1:
            singles = sorted(p.glob("*.safetensors"))
            if not found and len(singles) == 1:
                p = singles[0]
            else:
                raise ModelError(f"a checkpoint folder needs one *.safetensors.index.json, found {len(found)}",
                                 where=str(p), hint="give the .safetensors file or the index file itself")
        else:
            p = found[0]
    if not p.is_file():
        raise ModelError("no such checkpoint file", where=str(p), hint="a .safetensors file or a shard index")
    if p.name.endswith(".index.json"):
        return _sharded(p)
    if p.suffix != ".safetensors":
        raise ModelError(f"unknown checkpoint format {p.suffix or p.name!r}", where=str(p),
                         hint="a .safetensors file, or a folder of shards with a *.safetensors.index.json")
    shapes = _shapes(p)
    return Checkpoint(p, dict.fromkeys(shapes, p), shapes)


def _sharded(index: Path) -> Checkpoint:
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
        weight_map = data["weight_map"]
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise TypeError("weight_map is not an object of file names")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"not a shard index (JSON with a weight_map): {type(exc).__name__}: {exc}",
                         where=str(index)) from exc
    files: dict[str, Path] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    by_shard: dict[str, list[str]] = {}
    for name, shard in weight_map.items():
        by_shard.setdefault(shard, []).append(name)
    for shard, names in sorted(by_shard.items()):
        file = index.parent / shard
        if Path(shard).name != shard:
            raise ModelError(f"the index names a shard outside its folder: {shard!r}", where=str(index))
        if not file.is_file():
            raise ModelError(f"shard {shard} is missing (the index lists {len(names)} tensors in it, "
                             f"e.g. {names[0]!r})", where=str(index))
        held = _shapes(file)
        lacking = [n for n in names if n not in held]
        if lacking:
            raise ModelError(f"tensor {lacking[0]!r} is not in shard {shard}, where the index puts it"
                             + _more(lacking), where=str(file))
        for n in names:
            files[n], shapes[n] = file, held[n]
    return Checkpoint(index, files, shapes)


def _more(names: list[str]) -> str:
    return f" (and {len(names) - 1} more)" if len(names) > 1 else ""


def _prefix(wanted: Iterable[str], names: list[str], skip: tuple[str, ...]) -> str:
    """The prefix of ``names`` that makes the most of them module names ``wanted`` ("" if none better)."""
    want = set(wanted)
    counts: dict[str, int] = {}
    for n in names:
        if n.startswith(skip):
            continue
        parts = n.split(".")
        for i in range(len(parts)):
            if ".".join(parts[i:]) in want:
                pre = ".".join(parts[:i]) + ("." if i else "")
                counts[pre] = counts.get(pre, 0) + 1
                break
    if not counts:
        return ""
    return max(sorted(counts), key=lambda p: (counts[p], -len(p)))


def load_into(module: Any, ckpt: Checkpoint, what: str, skip: tuple[str, ...] = ()) -> str:
    """Copy ``ckpt``'s tensors into ``module`` (a ``torch.nn.Module``), strictly; returns the prefix stripped.

    The checkpoint's names under the prefix found (see the module doc), except those
    starting with a ``skip`` prefix (another module's, e.g. ``action.``), must be exactly
    the module's state dict names. Tensors are cast to each parameter's dtype.

    Raises:
        ModelError: a module tensor missing from the checkpoint, one of another shape, a
            checkpoint tensor with no place in the module (each names the tensor, ``what`` and the file).
    """
    own = module.state_dict()
    names = ckpt.names()
    pre = _prefix(own, names, skip)
    mine = {n[len(pre):]: n for n in names if n.startswith(pre) and not n.startswith(skip)}
    missing = sorted(set(own) - set(mine))
    if missing:
        hint = "the names are Wan's original ones: convert with WanTransformer3DModel.from_single_file" \
            if any(".self_attn." in n for n in names) else "is it a checkpoint of this architecture and size?"
        raise ModelError(f"the checkpoint has no tensor {pre + missing[0]!r} for the {what}" + _more(missing),
                         where=str(ckpt.path), hint=hint)
    for key, name in sorted(mine.items()):
        if key not in own:
            raise ModelError(f"tensor {name!r} has no place in the {what}" + _more([k for k in mine if k not in own]),
                             where=str(ckpt.files[name]), hint="is it a checkpoint of this architecture?")
        want = tuple(own[key].shape)
        if ckpt.shapes[name] != want:
            raise ModelError(f"tensor {name!r} is {list(ckpt.shapes[name])}, the {what} needs {list(want)}",
                             where=str(ckpt.files[name]), hint="the config and the checkpoint are of other sizes")
    state: dict[str, Any] = {}
    for file in sorted(set(ckpt.files[n] for n in mine.values())):
        with _safe_open(file) as f:
            for key, name in mine.items():
                if ckpt.files[name] == file:
                    state[key] = f.get_tensor(name)
    module.load_state_dict(state, strict=True)
    return pre


def cast_like_pretrained(model: Any, dtype: Any) -> Any:
    """Cast ``model``'s parameters to ``dtype`` as diffusers' ``from_pretrained(torch_dtype=...)`` does:
    the modules it keeps in float32 (``_keep_in_fp32_modules``) stay so. Returns ``model``."""
    import torch

    if dtype == torch.float32:
        return model
    keep = tuple(getattr(model, "_keep_in_fp32_modules", None) or ())
    for name, module in model.named_modules():
        if not any(part in keep for part in name.split(".")):
            for param in module.parameters(recurse=False):
                param.data = param.data.to(dtype)
    return model

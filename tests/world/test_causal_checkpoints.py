"""Causal / action weights from checkpoint files (one .safetensors, or shards with an index), tiny random weights.

Each test builds its model (the conftest's tiny random ones), saves the architecture
folder and the weights as a checkpoint itself, and loads them back through the loader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the causal backends need torch")
pytest.importorskip("diffusers", reason="the causal backends need diffusers")
safetensors_torch = pytest.importorskip("safetensors.torch", reason="checkpoints are safetensors")

from game.errors import BackendError  # noqa: E402
from game.models.causal_arch import TINY_OPTIONS, random_model  # noqa: E402
from game.models.causal_loader import CausalComponents, load_causal_model, save_causal_model  # noqa: E402
from game.models.embedder import ModelError  # noqa: E402
from game.world.backends.action import ActionBackend  # noqa: E402
from game.world.backends.causal import CausalBackend  # noqa: E402
from game.world.protocol import ActionFrame, SessionStart, WorldRequest  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def architecture(comps: Any, folder: Path) -> Path:
    """The model folder with the transformer's weights removed: only its config.json says what it is."""
    save_causal_model(comps, folder)
    for f in (folder / "transformer").glob("*.safetensors"):
        f.unlink()
    return folder


def state(module: Any, prefix: str = "") -> dict[str, Any]:
    return {prefix + k: v.detach().clone().contiguous() for k, v in module.state_dict().items()}


def frames(backend: Any, action: bool = False) -> np.ndarray:
    backend.start(SessionStart("s", 3, "a meadow"))
    acts = (ActionFrame(("w",)),) * 8 if action else ()
    req = WorldRequest("s", 1, 16, "a meadow", "scene_cut", action_frames=acts)
    return np.concatenate([c.frames for c in backend.generate(req)])


def test_a_single_safetensors_file_loads_with_its_prefix_stripped(causal_comps: Any, tmp_path: Path) -> None:
    weights = random_model("causal", seed=5)  # other weights than the folder's config was saved with
    folder = architecture(causal_comps, tmp_path / "arch")
    file = tmp_path / "self_forcing.safetensors"
    safetensors_torch.save_file(state(weights.transformer, "generator.model."), str(file))  # a trainer's prefix
    comps = load_causal_model(folder, checkpoint=file, device="cpu")
    for k, v in weights.transformer.state_dict().items():
        assert torch.equal(comps.transformer.state_dict()[k], v), k
    direct = CausalBackend(transformer=weights.transformer, vae=causal_comps.vae, **TINY_OPTIONS)
    loaded = CausalBackend(model=str(folder), checkpoint=str(file), device="cpu", **TINY_OPTIONS)
    assert np.array_equal(frames(loaded), frames(direct))  # the checkpoint's weights make the frames


def test_shards_with_an_index_load_and_the_action_modules_come_with_them(action_comps: Any, tmp_path: Path) -> None:
    weights = random_model("action", seed=7)
    folder = architecture(action_comps, tmp_path / "arch")
    everything = {**state(weights.transformer), **state(weights.action, "action.")}
    names = sorted(everything)
    shards = tmp_path / "shards"
    shards.mkdir()
    weight_map = {}
    for i, part in enumerate((names[: len(names) // 2], names[len(names) // 2:])):
        shard = f"model-{i + 1:05d}-of-00002.safetensors"
        safetensors_torch.save_file({n: everything[n] for n in part}, str(shards / shard))
        weight_map.update(dict.fromkeys(part, shard))
    (shards / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    comps = load_causal_model(folder, checkpoint=shards, device="cpu")
    assert all(torch.equal(comps.action.state_dict()[k], v) for k, v in weights.action.state_dict().items())
    direct = ActionBackend(transformer=weights.transformer, vae=action_comps.vae, action=weights.action,
                           **TINY_OPTIONS)
    loaded = ActionBackend(model=str(folder), checkpoint=str(shards / "model.safetensors.index.json"), device="cpu",
                           **TINY_OPTIONS)
    assert np.array_equal(frames(loaded, action=True), frames(direct, action=True))


def test_a_missing_or_mismatched_tensor_is_named_with_its_file(causal_comps: Any, tmp_path: Path) -> None:
    folder = architecture(causal_comps, tmp_path / "arch")
    full = state(causal_comps.transformer)
    victim = sorted(full)[3]

    def save(name: str, tensors: dict[str, Any]) -> Path:
        path = tmp_path / name
        safetensors_torch.save_file(tensors, str(path))
        return path

    lacking = save("lacking.safetensors", {k: v for k, v in full.items() if k != victim})
    with pytest.raises(ModelError, match=f"no tensor '{victim}' for the transformer") as err:
        load_causal_model(folder, checkpoint=lacking, device="cpu")
    assert err.value.where == str(lacking)
    wrong = save("wrong.safetensors", {**full, victim: torch.zeros(*full[victim].shape, 2)})
    with pytest.raises(ModelError, match=f"tensor '{victim}' is .*, the transformer needs") as err:
        load_causal_model(folder, checkpoint=wrong, device="cpu")
    assert err.value.where == str(wrong)
    extra = save("extra.safetensors", {**full, "blocks.9.attn1.to_q.weight": torch.zeros(2, 2)})
    with pytest.raises(ModelError, match="'blocks.9.attn1.to_q.weight' has no place in the transformer"):
        load_causal_model(folder, checkpoint=extra, device="cpu")
    with pytest.raises(BackendError, match="no tensor") as berr:  # the backend says the same, as a BackendError
        CausalBackend(model=str(folder), checkpoint=str(lacking), device="cpu", **TINY_OPTIONS)
    assert berr.value.where == str(lacking)


def test_broken_shard_folders_and_pickles_are_refused_by_name(causal_comps: Any, tmp_path: Path) -> None:
    folder = architecture(causal_comps, tmp_path / "arch")
    full = state(causal_comps.transformer)
    names = sorted(full)
    shards = tmp_path / "shards"
    shards.mkdir()
    safetensors_torch.save_file({n: full[n] for n in names[1:]}, str(shards / "a.safetensors"))
    index = shards / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {**dict.fromkeys(names[1:], "a.safetensors"),
                                                names[0]: "b.safetensors"}}))
    with pytest.raises(ModelError, match="shard b.safetensors is missing"):
        load_causal_model(folder, checkpoint=shards, device="cpu")
    index.write_text(json.dumps({"weight_map": dict.fromkeys(names, "a.safetensors")}))
    with pytest.raises(ModelError, match=f"tensor '{names[0]}' is not in shard a.safetensors") as err:
        load_causal_model(folder, checkpoint=index, device="cpu")
    assert err.value.where == str(shards / "a.safetensors")
    index.write_text("{not json")
    with pytest.raises(ModelError, match="not a shard index"):
        load_causal_model(folder, checkpoint=index, device="cpu")
    pickled = tmp_path / "model.pt"
    pickled.write_bytes(b"\x80\x04.")
    with pytest.raises(ModelError, match="pickled; only safetensors"):
        load_causal_model(folder, checkpoint=pickled, device="cpu")
    single = tmp_path / "alone.safetensors"
    safetensors_torch.save_file(full, str(single))
    with pytest.raises(ModelError, match="has no architecture"):
        load_causal_model(single, device="cpu")
    assert isinstance(load_causal_model(folder, checkpoint=single, device="cpu"), CausalComponents)


def test_play_hands_the_checkpoint_to_the_backend() -> None:
    from game.cli import _backend_options, build_parser

    args = build_parser().parse_args(["play", "stories/zero_mark", "--backend", "causal", "--model", "/m/arch",
                                      "--checkpoint", "/ckpt/model.safetensors"])
    assert _backend_options(args) == {"model": "/m/arch", "checkpoint": "/ckpt/model.safetensors"}

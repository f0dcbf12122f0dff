"""The ``action`` backend (Matrix-Game 2.0 style keyboard + mouse, block-causal with a KV cache)
on a tiny random model, on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the action backend needs torch")
pytest.importorskip("diffusers", reason="the action backend needs diffusers")

from PIL import Image  # noqa: E402

from game.errors import BackendError  # noqa: E402
from game.headless import play_headless  # noqa: E402
from game.inputs.script import parse_script  # noqa: E402
from game.models.causal_arch import TINY_OPTIONS  # noqa: E402
from game.models.causal_loader import save_causal_model  # noqa: E402
from game.world.backends.action import ActionBackend, pooled_image_features  # noqa: E402
from game.world.backends.causal import CausalBackend  # noqa: E402
from game.world.protocol import (  # noqa: E402
    ActionFrame,
    Anchor,
    Interruptible,
    MemoryOp,
    Scene,
    SessionStart,
    WorldRequest,
)

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("one_torch_thread")



def make(model: Any) -> ActionBackend:
    return ActionBackend(transformer=model.transformer, vae=model.vae, action=model.action, **TINY_OPTIONS)


def moving(seq: int, keys: tuple[str, ...] = (), mouse: tuple[float, float] = (0.0, 0.0), mode: Any = None,
           location: str = "meadow") -> WorldRequest:
    return WorldRequest("s", seq, 8, "a meadow", mode, scene=Scene(location, palette=location),
                        action_frames=(ActionFrame(keys, mouse),) * 8)


def frames_of(backend: ActionBackend, request: WorldRequest) -> np.ndarray:
    return np.concatenate([c.frames for c in backend.generate(request)])


def test_keys_and_mouse_reach_the_conditioning_tensors_and_the_frames(action_comps: Any) -> None:
    backend = make(action_comps)
    backend.start(SessionStart("s", 1, "a meadow"))
    frames_of(backend, moving(1, mode="scene_cut"))
    snap = backend.memory(MemoryOp("snapshot")).handle
    out: dict[str, np.ndarray] = {}
    cond: dict[str, dict[str, Any]] = {}
    for i, (name, keys, mouse) in enumerate((("w", ("w",), (0.0, 0.0)), ("d", ("d",), (0.0, 0.0)),
                                             ("look", ("w",), (0.5, -1.0)))):
        assert backend.memory(MemoryOp("restore", handle=snap)).ok
        out[name] = frames_of(backend, moving(2 + i, keys, mouse))
        cond[name] = dict(backend.conditioning)
    assert cond["w"]["keyboard"][:, 0].tolist() == [1.0] * 8 and cond["w"]["keyboard"][:, 1:].sum() == 0
    assert cond["d"]["keyboard"][:, 3].tolist() == [1.0] * 8 and cond["d"]["keyboard"][:, :3].sum() == 0
    assert cond["look"]["mouse"][0].tolist() == pytest.approx([0.1, 0.05])  # (pitch, yaw) = (-dy, dx) * 0.1
    assert cond["w"]["mouse"].abs().sum() == 0
    assert cond["w"]["keyboard_window"].shape == (1, 2, 12, 4)  # per latent frame: the last 3 x 4 frames of keys
    assert not torch.equal(cond["w"]["keyboard_window"], cond["d"]["keyboard_window"])
    assert out["w"].tobytes() != out["d"].tobytes()  # a different key: different frames
    assert out["w"].tobytes() != out["look"].tobytes()  # the mouse: different frames
    assert backend.memory(MemoryOp("restore", handle=snap)).ok
    assert frames_of(backend, moving(5, ("d",))).tobytes() == out["d"].tobytes()  # and exactly again


def test_the_start_image_is_the_procedural_worlds_first_frame(action_comps: Any, tmp_path: Path) -> None:
    backend = make(action_comps)
    backend.start(SessionStart("s", 2, "a meadow"))
    first = list(backend.generate(moving(1, mode="scene_cut", location="meadow")))
    sess = backend._table.sessions["s"]
    assert "start image: procedural:meadow" in first[0].ignored
    assert "prompt: backend takes no text" in first[0].ignored
    drawn = backend.scene_frame(moving(1, mode="scene_cut", location="meadow"))
    assert torch.allclose(sess.extra["start.latent"], backend.stream.encode_image(drawn))
    meadow = sess.extra["start.latent"]
    cond = backend._condition(sess, 0, 2)
    assert cond is not None and cond.shape == (1, 20, 2, 2, 2)
    assert cond[:, :4, 0].eq(1).all() and cond[:, :4, 1].eq(0).all()  # the mask marks the shot's first frame
    list(backend.generate(moving(2, mode="scene_cut", location="creek")))  # a new place: a new start image
    assert not torch.equal(sess.extra["start.latent"], meadow)
    assert sess.cache.tiers[:2] == ("sink_global", "sink_current")
    assert backend.context_encodes == 2  # the image context is encoded once per start image
    red = tmp_path / "red.png"
    Image.new("RGB", (24, 24), (220, 30, 30)).save(red)
    assert backend.memory(MemoryOp("reanchor", anchors=(Anchor("loc.red", "image", "location", str(red)),))).ok
    chunks = list(backend.generate(moving(3)))
    assert "start image: loc.red" in chunks[0].ignored
    key_cache = sess.cache.extra["key_k"][0]
    assert key_cache.shape[1] == sess.cache.frames  # the action caches are evicted with the visual one
    a, b = np.zeros((16, 16, 3), np.uint8), np.full((16, 16, 3), 200, np.uint8)
    assert not torch.equal(pooled_image_features(a, 16), pooled_image_features(b, 16))


def test_a_text_model_is_refused_by_the_action_backend(action_comps: Any, causal_comps: Any, tmp_path: Path) -> None:
    text = causal_comps
    with pytest.raises(BackendError, match="image-conditioned"):
        ActionBackend(transformer=text.transformer, vae=text.vae, action=action_comps.action, **TINY_OPTIONS)
    folder = save_causal_model(text, tmp_path / "text")
    with pytest.raises(BackendError, match="no action/"):
        ActionBackend(model=str(folder), **TINY_OPTIONS)
    assert CausalBackend(model=str(folder), **TINY_OPTIONS).capabilities().text


def test_zero_mark_plays_headless_with_wasd_reaching_the_action_model(action_comps: Any, tmp_path: Path) -> None:
    folder = save_causal_model(action_comps, tmp_path / "tiny_action")
    runner = play_headless(str(ROOT / "stories" / "zero_mark"), parse_script("move a 0.5\nmove d 0.5\nmove w 0.5\n"),
                           backend="action", seed=1, save_dir=tmp_path / "a", size=(16, 16),
                           backend_options={"model": str(folder)}, errorbank=None)
    backend = runner.session.backend
    assert isinstance(backend, ActionBackend)
    per_request: dict[int, list[str]] = {}
    for seq, _, keys in backend.received:  # the keys of every frame the action layers were given
        per_request.setdefault(seq, []).extend(keys)
    assert set(per_request[min(per_request)]) == {""}  # the opening: no key held
    moves = [set(keys) for _, keys in sorted(per_request.items()) if set(keys) != {""}]
    assert moves == [{"a"}, {"d"}, {"w"}]  # each move's key, held on every frame of its request, in order
    assert backend.keys_seen["a"] == sum(keys.count("a") for keys in per_request.values()) > 0
    script = tmp_path / "inputs.txt"
    script.write_text("give stone creature\nmove a 0.5\nmove d 0.5\n")
    rows = tmp_path / "action.jsonl"
    cmd = [sys.executable, "-m", "game", "play", str(ROOT / "stories" / "zero_mark"), "--headless", "--backend",
           "action", "--model", str(folder), "--size", "16x16", "--inputs", str(script), "--transcript", str(rows),
           "--save-dir", str(tmp_path / "saves"), "--no-errorbank", "--no-voice", "--seed", "1"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    chunks = [r for r in map(json.loads, rows.read_text().splitlines()) if r["type"] == "chunk"]
    assert len(chunks) >= 3
    assert not any(i.startswith("action keys") for c in chunks for i in c["ignored"])  # WASD is read
    assert any(i.startswith("start image: procedural:") for c in chunks for i in c["ignored"])


def test_an_interrupt_abandons_the_action_block_in_flight(action_comps: Any, interrupt_at_next_call: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    backend = make(action_comps)
    backend.start(SessionStart("s", 5, "a meadow"))
    frames_of(backend, moving(1, ("w",), mode="scene_cut"))
    it = backend.generate(replace(moving(2, ("a",)), min_frames=24))
    first = next(it)
    state = backend._table.sessions["s"]
    cache, frame, held = state.cache, state.frame, state.extra["actions.keyboard"]
    received, seen = list(backend.received), dict(backend.keys_seen)
    assert isinstance(backend, Interruptible)  # Session.submit reaches it (world.protocol.interrupt)
    calls = interrupt_at_next_call(backend, backend.net)  # the player acts during block 2's first step
    assert list(it) == [] and len(calls) == 1 and first.block == 0
    assert state.cache is cache and state.frame == frame == 16  # nothing of the abandoned block kept
    assert state.extra["actions.keyboard"] is held  # nor its keys in the action history
    assert backend.received == received and dict(backend.keys_seen) == seen  # the model never finished it
    monkeypatch.undo()
    nxt = list(backend.generate(replace(moving(3, ("d",)), first_block_frames=4)))
    assert nxt[0].first_frame == 16 and [c.n_frames for c in nxt] == [4, 8]  # the reaction's block first
    assert backend.received[len(received):] == [(3, 2, ("d",) * 4), (3, 3, ("d",) * 8)]  # its keys reached it


def test_reset_starts_the_session_over_from_a_new_start_image(action_comps: Any) -> None:
    backend = make(action_comps)
    backend.start(SessionStart("s", 6, "a meadow"))
    first = frames_of(backend, moving(1, ("w",), mode="scene_cut"))
    frames_of(backend, moving(2, ("a",)))
    assert backend.memory(MemoryOp("reset")).ok
    assert frames_of(backend, moving(3, ("w",), mode="scene_cut")).tobytes() == first.tobytes()

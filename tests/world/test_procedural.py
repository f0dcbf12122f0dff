"""Tests of the embedded procedural world backend (small frames, fast)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from game.errors import BackendError
from game.world.backends import BACKENDS, make_backend
from game.world.backends.procedural import ProceduralBackend
from game.world.protocol import (
    Backend,
    Entity,
    FrameChunk,
    MemoryOp,
    Scene,
    SessionStart,
    WorldRequest,
    check_frames,
)

W, H = 192, 108


def backend(seed: int = 7, frames_per_block: int = 12) -> ProceduralBackend:
    b = ProceduralBackend(width=W, height=H, frames_per_block=frames_per_block)
    b.start(SessionStart(session_id="s", seed=seed, prompt="a dusk clearing"))
    return b


def creature(state: str = "idle", holding: tuple[str, ...] = (), x: float = 0.5) -> Entity:
    return Entity(
        id="creature", kind="character", name="Creature", look="a small horned creature",
        x=x, state=state, holding=holding,
    )


def request(seq: int = 1, min_frames: int = 12, **kwargs: Any) -> WorldRequest:
    kwargs.setdefault("scene", Scene(location="clearing"))
    return WorldRequest(session_id="s", seq=seq, min_frames=min_frames, prompt="a clearing",
                        **kwargs)


def frames_of(chunks: list[FrameChunk]) -> np.ndarray:
    return np.concatenate([c.frames for c in chunks])


def luminance(frames: np.ndarray) -> float:
    return float((frames.astype(np.float32) @ np.array([0.299, 0.587, 0.114])).mean())


def test_registry_makes_procedural_and_names_the_known_ones() -> None:
    b = make_backend("procedural", width=W, height=H)
    assert isinstance(b, Backend)
    assert "procedural" in BACKENDS
    with pytest.raises(BackendError, match="procedural"):
        make_backend("no-such-backend")


def test_capabilities() -> None:
    caps = ProceduralBackend(width=W, height=H).capabilities()
    assert caps.backend == "procedural"
    assert (caps.width, caps.height, caps.frames_per_block) == (W, H, 12)
    assert caps.switch_modes == ("recache", "scene_cut", "plain")
    assert caps.actions == ("w", "a", "s", "d")
    assert caps.ref_images == "any_chunk" and caps.audio_out and not caps.audio_in
    assert caps.structured_scene and caps.object_cache and caps.snapshot
    assert caps.window_frames == 48 and caps.sink_frames == 1


def test_min_frames_round_up_to_whole_blocks() -> None:
    chunks = list(backend().generate(request(min_frames=13)))
    assert [c.n_frames for c in chunks] == [12, 12]
    assert [c.block for c in chunks] == [0, 1]
    assert [c.last for c in chunks] == [False, True]
    assert [c.first_frame for c in chunks] == [0, 12]


def test_first_frame_counts_across_the_session() -> None:
    b = backend()
    list(b.generate(request(1, 12)))
    chunk = next(iter(b.generate(request(2, 12))))
    assert chunk.first_frame == 12


def test_frames_and_audio_shapes() -> None:
    b = backend()
    caps = b.capabilities()
    chunk = next(iter(b.generate(request())))
    assert check_frames(chunk.frames, caps) == ""
    assert chunk.frames.shape == (12, H, W, 3) and chunk.frames.dtype == np.uint8
    assert chunk.audio is not None and chunk.audio.dtype == np.float32
    assert chunk.audio.shape == (round(12 * 22050 / 24),)
    assert chunk.audio_rate == 22050 and chunk.fps == 24.0
    assert float(np.abs(chunk.audio).max()) <= 1.0


def test_audio_is_aligned_when_samples_per_block_are_fractional() -> None:
    b = backend(frames_per_block=5)
    chunks = list(b.generate(request(min_frames=10, cue="leap")))
    for c in chunks:
        assert c.audio is not None and c.audio.shape == (round(5 * 22050 / 24),)  # 4594


def test_full_size_frames() -> None:
    b = ProceduralBackend()
    b.start(SessionStart(session_id="s", seed=1, prompt=""))
    chunk = next(iter(b.generate(request(scene=Scene("clearing", entities=(creature(),))))))
    assert chunk.frames.shape == (12, 540, 960, 3)
    assert chunk.drawn == ("creature",)


def scene_with(*entities: Entity, **kwargs: str) -> Scene:
    return Scene(location="clearing", entities=entities, **kwargs)


def test_same_seed_same_requests_give_identical_bytes() -> None:
    scene = scene_with(creature("leap", ("kite",)), Entity(id="kite", kind="item", name="Kite"))
    runs = []
    for _ in range(2):
        b = backend(seed=11)
        chunks = list(b.generate(request(1, 24, scene=scene, cue="leap", camera_dx=0.01)))
        chunks += list(b.generate(request(2, 12, scene=scene, actions=("d", "w"))))
        runs.append(chunks)
    for a, b2 in zip(*runs, strict=True):
        assert a.frames.tobytes() == b2.frames.tobytes()
        assert a.audio is not None and b2.audio is not None
        assert a.audio.tobytes() == b2.audio.tobytes()


def test_other_seed_changes_ambient_details_only_deterministically() -> None:
    req = request(scene=scene_with(creature()))
    a = frames_of(list(backend(seed=1).generate(req)))
    a2 = frames_of(list(backend(seed=1).generate(req)))
    c = frames_of(list(backend(seed=2).generate(req)))
    assert a.tobytes() == a2.tobytes()
    assert a.tobytes() != c.tobytes()


def creature_box(frames: np.ndarray) -> np.ndarray:
    """Pixels around a creature standing at x = 0.5: feet at 0.88 H, about 0.22 H tall."""
    feet, h = int(0.88 * H), int(round(0.22 * H))
    return frames[:, feet - int(1.2 * h) : feet + 2, W // 2 - int(0.9 * h) : W // 2 + int(0.9 * h)]


def test_kite_leap_and_leaf_recoil_look_different_in_the_creature_box() -> None:
    kite_leap = scene_with(creature("leap", ("kite",)), Entity(id="kite", kind="item", name="Kite"))
    leaf_recoil = scene_with(
        creature("recoil", ("leaf",)), Entity(id="leaf", kind="item", name="Leaf")
    )
    a = frames_of(list(backend().generate(request(min_frames=24, scene=kite_leap, cue="leap"))))
    b = frames_of(
        list(backend().generate(request(min_frames=24, scene=leaf_recoil, cue="recoil")))
    )
    diff = np.abs(creature_box(a).astype(np.int16) - creature_box(b).astype(np.int16))
    assert float(diff.mean()) > 8.0
    assert float((diff.max(axis=-1) > 40).mean()) > 0.1
    kite_red = (a[..., 0] > 170) & (a[..., 1] < 90) & (a[..., 2] < 90)
    assert kite_red.any()


def test_night_is_darker_than_dusk() -> None:
    dusk = frames_of(list(backend().generate(request(scene=scene_with(time_of_day="dusk")))))
    night = frames_of(list(backend().generate(request(scene=scene_with(time_of_day="night")))))
    assert luminance(night) < 0.6 * luminance(dusk)


def test_unknown_palette_still_draws_and_palettes_differ() -> None:
    looks = {}
    for name in ("dusk", "creek", "hollow", "day", "night", "made-up-place"):
        looks[name] = frames_of(list(backend().generate(request(scene=scene_with(palette=name)))))
    assert len({v.tobytes() for v in looks.values()}) == len(looks)


def test_rain_changes_frames_and_moves() -> None:
    clear = frames_of(list(backend().generate(request(scene=scene_with(weather="clear")))))
    rain = frames_of(list(backend().generate(request(scene=scene_with(weather="rain")))))
    assert float(np.abs(clear.astype(np.int16) - rain.astype(np.int16)).mean()) > 5.0
    sky = rain[:, : H // 3]
    moving = np.abs(sky[1:].astype(np.int16) - sky[:-1].astype(np.int16)).max(axis=-1) > 10
    assert moving.mean() > 0.003
    for weather in ("fog", "snow"):
        other = frames_of(list(backend().generate(request(scene=scene_with(weather=weather)))))
        assert float(np.abs(clear.astype(np.int16) - other.astype(np.int16)).mean()) > 5.0


def best_shift(a: np.ndarray, b: np.ndarray, rows: slice, limit: int) -> int:
    """Columns the content of rows ``rows`` moved left from ``a`` to ``b``."""
    x, y = a[rows].astype(np.int16), b[rows].astype(np.int16)
    costs = [float(np.abs(x[:, s:] - y[:, : W - s]).mean()) for s in range(limit)]
    return int(np.argmin(costs))


def test_camera_parallax_far_layer_moves_less_than_near() -> None:
    camera = 0.3
    a = next(iter(backend().generate(request(scene=scene_with(weather="clear"))))).frames[0]
    b = next(
        iter(backend().generate(request(scene=scene_with(weather="clear"), camera_x=camera)))
    ).frames[0]
    far = best_shift(a, b, slice(int(0.51 * H), int(0.55 * H)), 80)
    near = best_shift(a, b, slice(int(0.6 * H), int(0.7 * H)), 80)
    ground = best_shift(a, b, slice(int(0.9 * H), H), 80)
    assert ground == int(camera * W)
    assert 0 < far < near < ground


def test_actions_pan_and_look() -> None:
    b = backend()
    pan = list(b.generate(request(1, 12, actions=("d",))))[-1]
    assert pan.memory["camera_x"] > 0.1
    look = list(b.generate(request(2, 12, actions=("w",))))[-1]
    assert look.memory["camera_y"] > 0.0
    odd = next(iter(b.generate(request(3, 12, actions=("jump",)))))
    assert any("jump" in note for note in odd.ignored)


def test_ignored_inputs_are_reported() -> None:
    chunk = next(iter(backend().generate(request(audio="cue.wav", cue="dance"))))
    assert "audio: backend takes no audio cues" in chunk.ignored
    assert any(note.startswith("cue dance") for note in chunk.ignored)
    clean = next(iter(backend().generate(request())))
    assert clean.ignored == ()


def test_snapshot_restore_replays_identical_frames() -> None:
    b = backend()
    scene = scene_with(creature("nuzzle"))
    list(b.generate(request(1, 12, scene=scene)))
    snap = b.memory(MemoryOp(op="snapshot"))
    assert snap.ok and snap.handle
    first = list(b.generate(request(2, 24, scene=scene, cue="nuzzle", actions=("w",))))
    assert b.memory(MemoryOp(op="restore", handle=snap.handle)).ok
    again = list(b.generate(request(2, 24, scene=scene, cue="nuzzle", actions=("w",))))
    assert [c.first_frame for c in again] == [c.first_frame for c in first]
    assert frames_of(again).tobytes() == frames_of(first).tobytes()
    assert b.memory(MemoryOp(op="restore", handle="nope")).ok is False


def test_fork_reset_and_other_memory_ops() -> None:
    b = backend()
    list(b.generate(request(1, 12)))
    snap = b.memory(MemoryOp(op="snapshot"))
    assert b.memory(MemoryOp(op="fork", handle=snap.handle, new_session_id="t")).ok
    forked = next(iter(b.generate(WorldRequest("t", 2, 12, "x", scene=Scene("clearing")))))
    assert forked.first_frame == 12
    assert b.memory(MemoryOp(op="reset_history")).ok
    assert b.memory(MemoryOp(op="reanchor", anchors=())).ok
    assert b.memory(MemoryOp(op="reset")).ok
    restarted = next(iter(b.generate(WorldRequest("t", 1, 12, "x", scene=Scene("clearing")))))
    assert restarted.first_frame == 0 and restarted.memory["window_used"] == 12


def test_png_entity_is_drawn_and_unreadable_one_is_reported(tmp_path: Path) -> None:
    img = np.zeros((60, 40, 4), dtype=np.uint8)
    img[5:55, 5:35] = (255, 0, 255, 255)
    path = tmp_path / "fox.png"
    Image.fromarray(img, "RGBA").save(path)
    fox = Entity(id="fox", kind="character", name="Fox", image=str(path), x=0.5)
    daylight = scene_with(fox, palette="day", time_of_day="day")
    chunk = next(iter(backend().generate(request(scene=daylight))))
    f = chunk.frames.astype(np.int16)
    magenta = (f[..., 0] > 230) & (f[..., 1] < 30) & (f[..., 2] > 230)
    assert magenta.sum() > 12 * 50
    assert chunk.drawn == ("fox",)
    bad = Entity(id="fox", kind="character", name="Fox", image=str(tmp_path / "missing.png"))
    chunk = next(iter(backend().generate(request(scene=scene_with(bad)))))
    assert any("cannot read" in note for note in chunk.ignored)
    assert chunk.drawn == ("fox",)


def test_object_cache_hits_on_the_second_request() -> None:
    b = backend()
    scene = scene_with(creature("idle", ("leaf",)), Entity(id="leaf", kind="item", name="Leaf"))
    one = list(b.generate(request(1, 12, scene=scene)))[-1].memory
    two = list(b.generate(request(2, 12, scene=scene)))[-1].memory
    assert two["cache_hits"] > one["cache_hits"]
    assert two["sprites_built"] == one["sprites_built"]
    assert two["backdrops_built"] == one["backdrops_built"] == 1


def test_off_screen_entities_are_not_drawn() -> None:
    far_away = creature(x=4.0)
    chunk = next(iter(backend().generate(request(scene=scene_with(far_away)))))
    assert chunk.drawn == ()


def test_reaction_cue_makes_sound() -> None:
    quiet = next(iter(backend().generate(request(scene=scene_with(creature())))))
    leap = next(iter(backend().generate(request(scene=scene_with(creature()), cue="leap"))))
    assert quiet.audio is not None and leap.audio is not None
    assert float(np.sqrt(np.mean(leap.audio**2))) > 1.5 * float(np.sqrt(np.mean(quiet.audio**2)))


def test_every_state_draws_and_unknown_state_falls_back() -> None:
    for state in ("idle", "leap", "recoil", "nuzzle", "tilt", "sleep", "flee", "dance"):
        chunk = next(iter(backend().generate(request(scene=scene_with(creature(state))))))
        assert chunk.drawn == ("creature",)
        assert any("dance" in n for n in chunk.ignored) == (state == "dance")


def test_session_and_seq_errors() -> None:
    b = backend()
    with pytest.raises(BackendError, match="unknown session"):
        b.generate(WorldRequest("other", 1, 12, ""))
    list(b.generate(request(5, 12)))
    with pytest.raises(BackendError, match="not after"):
        b.generate(request(4, 12))
    with pytest.raises(BackendError, match="different request"):
        b.generate(request(5, 24))
    with pytest.raises(BackendError):
        b.start(SessionStart(session_id="s", seed=1, prompt="", width=W + 2))
    b.close()
    with pytest.raises(BackendError, match="closed"):
        b.generate(request(6, 12))


def test_repeated_seq_replays_without_advancing() -> None:
    b = backend()
    first = list(b.generate(request(1, 12, cue="tilt", scene=scene_with(creature("tilt")))))
    again = list(b.generate(request(1, 12, cue="tilt", scene=scene_with(creature("tilt")))))
    assert frames_of(first).tobytes() == frames_of(again).tobytes()
    assert next(iter(b.generate(request(2, 12)))).first_frame == 12


def test_stopping_early_advances_only_by_the_blocks_taken() -> None:
    b = backend()
    it = b.generate(request(1, 36))
    next(it)
    del it
    assert next(iter(b.generate(request(2, 12)))).first_frame == 12


def test_scene_cut_fades_in_from_a_frame_that_already_shows_the_new_scene() -> None:
    cut = next(iter(backend().generate(request(switch_mode="scene_cut")))).frames
    plain = next(iter(backend().generate(request(switch_mode="plain")))).frames
    assert 0.45 * luminance(plain[:1]) < luminance(cut[:1]) < 0.8 * luminance(plain[:1])
    assert cut[-1].tobytes() == plain[-1].tobytes()

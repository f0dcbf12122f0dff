"""The ``diffusion`` backend on a tiny random SkyReels-V2 diffusion-forcing pipeline, on the CPU.

The components are built here as diffusers' own pipeline tests build them
(``tests/pipelines/skyreels_v2/test_skyreels_v2_df*.py``), saved with
``save_pretrained`` and loaded back through the real loader
(:mod:`game.models.diffusion_loader`). There is no text encoder (it cannot be
fetched here): prompts go through the backend's offline hashed embeddings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the diffusion backend needs torch")
diffusers = pytest.importorskip("diffusers", reason="the diffusion backend needs diffusers")

from PIL import Image  # noqa: E402

from game.errors import BackendError  # noqa: E402
from game.headless import play_headless  # noqa: E402
from game.inputs.script import parse_script, read_script  # noqa: E402
from game.models.diffusion_loader import load_diffusion_pipeline  # noqa: E402
from game.models.embedder import ModelError  # noqa: E402
from game.world.backends import BACKENDS  # noqa: E402
from game.world.backends.diffusion import DiffusionBackend, block_seed  # noqa: E402
from game.world.backends.diffusion_embed import hashed_prompt_embeds  # noqa: E402
from game.world.protocol import (  # noqa: E402
    Anchor,
    Entity,
    Interruptible,
    MemoryOp,
    Scene,
    SessionStart,
    WorldRequest,
    check_frames,
)

ROOT = Path(__file__).resolve().parents[2]
#: Small settings: 16 x 16 frames, 4 frames per block (one latent frame), 5 overlap frames, 2 steps.
TINY: dict[str, Any] = dict(fps=8.0, frames_per_block=4, overlap_frames=5, steps=2, guidance_scale=1.0)

MINI_SCRIPT = """give stone creature
move a 0.5
choose Offer the kite
save s1
choose 1
rollback
load s1
choose finish_bad
"""


def build_tiny_pipeline() -> Any:
    """A random SkyReels-V2 DF pipeline with diffusers' test dimensions (~28k transformer parameters)."""
    import diffusers

    d: Any = diffusers  # diffusers is untyped
    torch.manual_seed(0)
    vae = d.AutoencoderKLWan(base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
                           temperal_downsample=[False, True, True])
    torch.manual_seed(0)
    scheduler = d.UniPCMultistepScheduler(flow_shift=5.0, use_flow_sigmas=True, prediction_type="flow_prediction")
    torch.manual_seed(0)
    transformer = d.SkyReelsV2Transformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12, in_channels=16, out_channels=16,
        text_dim=32, freq_dim=256, ffn_dim=32, num_layers=2, cross_attn_norm=True,
        qk_norm="rms_norm_across_heads", rope_max_seq_len=32,
    )
    return d.SkyReelsV2DiffusionForcingPipeline(tokenizer=None, text_encoder=None, transformer=transformer,
                                              vae=vae, scheduler=scheduler)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny_skyreels_df")
    build_tiny_pipeline().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def pipe(tiny_dir: Path) -> Any:
    return load_diffusion_pipeline(tiny_dir, device="cpu")


def make(pipe: Any, **kw: Any) -> DiffusionBackend:
    args = {**TINY, "width": 16, "height": 16, **kw}
    return DiffusionBackend(pipeline=pipe, **args)


def req(seq: int, prompt: str, mode: str | None = "plain", n: int = 4, sid: str = "s", **kw: Any) -> WorldRequest:
    return WorldRequest(session_id=sid, seq=seq, min_frames=n, prompt=prompt, switch_mode=mode,  # type: ignore[arg-type]
                        **kw)


def frames_of(backend: Any, request: WorldRequest) -> np.ndarray:
    return np.concatenate([c.frames for c in backend.generate(request)])


def solid_png(path: Path, rgb: tuple[int, int, int]) -> Path:
    Image.new("RGB", (24, 24), rgb).save(path)
    return path


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Records ``(variant, kwargs)`` of every SkyReels-DF pipeline call, then runs it."""
    from diffusers import (
        SkyReelsV2DiffusionForcingImageToVideoPipeline,
        SkyReelsV2DiffusionForcingPipeline,
        SkyReelsV2DiffusionForcingVideoToVideoPipeline,
    )

    calls: list[tuple[str, dict[str, Any]]] = []
    for name, cls in (("t2v", SkyReelsV2DiffusionForcingPipeline),
                      ("v2v", SkyReelsV2DiffusionForcingVideoToVideoPipeline),
                      ("i2v", SkyReelsV2DiffusionForcingImageToVideoPipeline)):
        original = cls.__call__

        def spy_call(self: Any, *args: Any, _name: str = name, _orig: Callable[..., Any] = original,
                     **kwargs: Any) -> Any:
            calls.append((_name, dict(kwargs)))
            return _orig(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__call__", spy_call)
    return calls


# -- loading ---------------------------------------------------------------------------------------
def test_the_real_loader_reads_the_saved_tiny_pipeline(tiny_dir: Path, pipe: Any) -> None:
    from diffusers import SkyReelsV2DiffusionForcingPipeline

    assert isinstance(pipe, SkyReelsV2DiffusionForcingPipeline)
    loaded: Any = pipe
    assert loaded.text_encoder is None and loaded.tokenizer is None
    assert json.loads((tiny_dir / "model_index.json").read_text())["text_encoder"][0] is None
    backend = DiffusionBackend(model=tiny_dir, device="cpu", width=16, height=16, **TINY)
    assert backend._pipe is pipe  # loaded once, shared
    assert backend.info["text"] == "hashed"


def test_loader_and_backend_name_bad_models(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="no such model folder"):
        load_diffusion_pipeline(tmp_path / "missing" / "model")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelError, match="no model_index.json"):
        load_diffusion_pipeline(empty)
    other = tmp_path / "other"
    other.mkdir()
    (other / "model_index.json").write_text(json.dumps({"_class_name": "StableDiffusionPipeline"}))
    with pytest.raises(ModelError, match="not a SkyReels-V2"):
        load_diffusion_pipeline(other)
    with pytest.raises(BackendError, match="no model_index.json"):
        DiffusionBackend(model=empty)
    with pytest.raises(BackendError, match="needs a model"):
        DiffusionBackend()


def test_sizes_that_do_not_fit_the_model_are_refused(pipe: Any) -> None:
    with pytest.raises(BackendError, match="multiples of 16"):
        make(pipe, width=20)
    with pytest.raises(BackendError, match="multiple of 4"):
        make(pipe, frames_per_block=6)
    with pytest.raises(BackendError, match="1 more than a multiple of 4"):
        make(pipe, overlap_frames=8)


def test_hashed_prompt_embeddings_are_stable_and_tell_prompts_apart() -> None:
    a = hashed_prompt_embeds("A meadow at dusk", 32, 16)
    assert tuple(a.shape) == (1, 16, 32)
    assert torch.equal(a, hashed_prompt_embeds("a meadow, at dusk!", 32, 16))
    assert not torch.equal(a, hashed_prompt_embeds("a creek at night", 32, 16))
    assert a[0, :4].abs().sum() > 0 and a[0, 4:].abs().sum() == 0  # four words, then zeros


# -- streaming ---------------------------------------------------------------------------------------
def test_blocks_stream_one_pipeline_call_at_a_time(pipe: Any, spy: list[tuple[str, dict[str, Any]]]) -> None:
    backend = make(pipe)
    caps = backend.capabilities()
    assert caps.audio_out is False and caps.ref_images == "first_frame" and caps.snapshot
    backend.start(SessionStart("s", 1, "a meadow at dusk"))
    scene = Scene("meadow", entities=(Entity("creature", "character", "the creature"),))
    it: Iterator[Any] = backend.generate(req(1, "a meadow at dusk", "scene_cut", n=10, actions=("d",) * 10,
                                             scene=scene, cue="leap"))
    first = next(it)
    assert len(spy) == 1  # the second block is not made before it is asked for
    chunks = [first, *it]
    assert len(spy) == 3 and [c.block for c in chunks] == [0, 1, 2]
    assert [c.first_frame for c in chunks] == [0, 4, 8] and [c.last for c in chunks] == [False, False, True]
    for c in chunks:
        assert check_frames(c.frames, caps) == "" and c.frames.shape == (4, 16, 16, 3)
        assert c.audio is None and c.timing.total_ms > 0 and c.timing.denoise_ms > 0
    text = " | ".join(chunks[0].ignored)
    for part in ("actions", "scene", "cue leap", "hashed word embeddings"):
        assert part in text
    assert [v for v, _ in spy] == ["t2v", "v2v", "v2v"]
    assert spy[1][1]["overlap_history"] == 5 and len(spy[1][1]["video"]) == 5
    assert chunks[-1].memory["window_used"] == 5 and chunks[-1].memory["frames_total"] == 12


def test_prompt_switches_and_reanchors_reach_the_pipeline(pipe: Any, tmp_path: Path,
                                                          spy: list[tuple[str, dict[str, Any]]]) -> None:
    red = solid_png(tmp_path / "red.png", (220, 30, 30))
    blue = solid_png(tmp_path / "blue.png", (20, 40, 230))
    backend = make(pipe)
    backend.start(SessionStart("s", 5, "a meadow", anchors=(Anchor("world.anchor0", "image", "world", str(red)),
                                                          Anchor("char.c", "image", "character", str(blue)))))
    frames_of(backend, req(1, "a meadow", "scene_cut"))
    variant, kw = spy[-1]
    assert variant == "i2v" and np.asarray(kw["image"])[8, 8].tolist() == [220, 30, 30]
    embeds_a = kw["prompt_embeds"]

    frames_of(backend, req(2, "a creek at night", "plain"))
    variant, kw = spy[-1]
    assert variant == "v2v" and kw["addnoise_condition"] == 0.0
    assert not torch.equal(kw["prompt_embeds"], embeds_a)
    assert torch.equal(kw["prompt_embeds"], backend._encoder.encode("a creek at night"))

    frames_of(backend, req(3, "a creek in the rain", "recache", n=8))
    assert [k["addnoise_condition"] for _, k in spy[-2:]] == [20.0, 0.0]  # the first block after the switch
    assert backend.calls[-1].prompt == "a creek in the rain"

    frames_of(backend, req(4, "the hollow", None))  # no switch: the prompt stays
    assert backend.calls[-1].prompt == "a creek in the rain" and spy[-1][0] == "v2v"

    frames_of(backend, req(5, "the hollow", "scene_cut"))  # a cut starts from the sink again
    assert spy[-1][0] == "i2v" and backend.calls[-1].image == "world.anchor0"

    assert backend.memory(MemoryOp("reanchor", anchors=(Anchor("loc.night", "image", "location", str(blue),
                                                                  tier="sink_current"),))).ok
    frames_of(backend, req(6, "the hollow", None))
    variant, kw = spy[-1]
    assert variant == "i2v" and np.asarray(kw["image"])[8, 8].tolist() == [20, 40, 230]
    assert backend.calls[-1].image == "loc.night"

    backend.memory(MemoryOp("reanchor", anchors=(Anchor("loc.text", "text", "location", "moonlit fog",
                                                       tier="sink_current"),)))
    frames_of(backend, req(7, "the hollow", None))
    assert spy[-1][0] == "v2v" and backend.calls[-1].prompt.endswith("moonlit fog")

    assert backend.memory(MemoryOp("reset_history")).ok
    out = list(backend.generate(req(8, "the hollow", None, references=(str(red),))))
    assert spy[-1][0] == "i2v" and backend.calls[-1].image == f"reference:{red}"
    assert not any(n.startswith("references") for n in out[0].ignored)
    out = list(backend.generate(req(9, "the hollow", None, references=(str(red),))))
    assert any(n.startswith("references") for n in out[0].ignored)  # mid-shot: reported, not used
    assert any("char.c" in n for n in out[0].ignored)


def test_text_only_sessions_start_from_text(pipe: Any, spy: list[tuple[str, dict[str, Any]]]) -> None:
    backend = make(pipe)
    backend.start(SessionStart("s", 0, "fog"))
    frames_of(backend, req(1, "fog", "scene_cut"))
    assert spy[-1][0] == "t2v" and "image" not in spy[-1][1] and "video" not in spy[-1][1]


# -- determinism, snapshots, forks ---------------------------------------------------------------------
def test_a_fork_replays_its_branch_exactly(pipe: Any) -> None:
    backend = make(pipe)
    backend.start(SessionStart("s", 3, "a meadow"))
    frames_of(backend, req(1, "a meadow", "scene_cut", n=8))
    snap = backend.memory(MemoryOp("snapshot"))
    assert snap.ok and snap.handle
    branch = [req(2, "a kite in the wind", "recache", n=8), req(3, "the creature leaps", "plain", n=4)]
    original = [frames_of(backend, r) for r in branch]
    frame_after = backend._table.sessions["s"].frame

    assert backend.memory(MemoryOp("fork", handle=snap.handle, new_session_id="b")).ok
    forked = [frames_of(backend, WorldRequest(**{**r.to_json(), "session_id": "b", "scene": r.scene}))
              for r in branch]
    for a, b in zip(original, forked, strict=True):
        assert a.tobytes() == b.tobytes()
    assert backend._table.sessions["s"].frame == frame_after  # the fork did not touch the original

    assert backend.memory(MemoryOp("restore", handle=snap.handle)).ok
    again = frames_of(backend, req(4, "a kite in the wind", "recache", n=8))
    assert again.tobytes() == original[0].tobytes()

    other = make(pipe)
    other.start(SessionStart("s", 4, "a meadow"))
    assert frames_of(other, req(1, "a meadow", "scene_cut", n=8)).tobytes() != \
        frames_of(make_started(pipe, 3), req(1, "a meadow", "scene_cut", n=8)).tobytes()
    assert block_seed(3, 0) != block_seed(3, 1) != block_seed(4, 0)


def make_started(pipe: Any, seed: int) -> DiffusionBackend:
    backend = make(pipe)
    backend.start(SessionStart("s", seed, "a meadow"))
    return backend


def test_a_repeated_seq_replays_without_advancing(pipe: Any) -> None:
    backend = make_started(pipe, 9)
    frames_of(backend, req(1, "a meadow", "scene_cut"))
    r2 = req(2, "a creek", "plain", n=8)
    first = frames_of(backend, r2)
    frame = backend._table.sessions["s"].frame
    assert frames_of(backend, r2).tobytes() == first.tobytes()
    assert backend._table.sessions["s"].frame == frame
    with pytest.raises(BackendError, match="different request"):
        list(backend.generate(req(2, "elsewhere", "plain")))
    with pytest.raises(BackendError, match="not after"):
        list(backend.generate(req(0, "a meadow", "plain")))
    backend.memory(MemoryOp("reset"))
    assert frames_of(backend, req(3, "a meadow", "scene_cut")).tobytes() == \
        frames_of(make_started(pipe, 9), req(1, "a meadow", "scene_cut")).tobytes()
    backend.close()
    with pytest.raises(BackendError, match="closed"):
        backend.start(SessionStart("s", 0, ""))


def test_stopping_early_advances_only_by_the_blocks_taken(pipe: Any) -> None:
    backend = make_started(pipe, 2)
    it: Any = backend.generate(req(1, "a meadow", "scene_cut", n=12))
    next(it)
    it.close()  # a generator: the rest is discarded
    assert backend._table.sessions["s"].frame == 4 and backend._table.sessions["s"].block == 1


def test_an_interrupt_abandons_the_pipeline_call_in_flight(pipe: Any, interrupt_at_next_call: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    backend = make_started(pipe, 4)
    it = backend.generate(req(1, "a meadow", "scene_cut", n=12))
    first = next(it)
    state = backend._table.sessions["s"]
    history, frame, calls_before = state.history, state.frame, len(backend.calls)
    assert isinstance(backend, Interruptible)  # Session.submit reaches it (world.protocol.interrupt)
    steps = interrupt_at_next_call(backend, pipe.transformer)  # the player acts during block 2's first step
    assert list(it) == []  # block 2 abandoned after its first step, block 3 never started
    assert len(steps) == 1 and first.block == 0
    assert state.frame == frame == 4 and state.history is history  # nothing of the abandoned block kept
    assert len(backend.calls) == calls_before
    monkeypatch.undo()
    nxt = list(backend.generate(req(2, "a creek", "plain")))
    assert nxt[0].first_frame == 4 and nxt[0].frames.shape[0] == 4  # the next request goes on from there
    backend.interrupt("s")  # an interrupt between requests does not stop the next one
    assert len(list(backend.generate(req(3, "a creek", "plain")))) == 1


# -- whole stories, headless ----------------------------------------------------------------------------
def test_stories_play_headless_on_tiny_diffusion(pipe: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BACKENDS, "diffusion", lambda **kw: DiffusionBackend(pipeline=pipe, **{**TINY, **kw}))
    hashes = []
    for name in ("a", "b"):
        runner = play_headless(str(ROOT / "tests" / "data" / "mini"), parse_script(MINI_SCRIPT),
                               backend="diffusion", seed=7, save_dir=tmp_path / name, size=(16, 16))
        assert runner.session.caps.backend == "diffusion" and runner.session.state.frame > 0
        hashes.append(runner.frame_hash.hexdigest())
    assert hashes[0] == hashes[1]  # same story, inputs and seed: the same frames

    script = [c for c in read_script(ROOT / "stories" / "zero_mark" / "kite.txt")[:7] if c.verb != "say"]
    rows = tmp_path / "zero.jsonl"
    runner = play_headless(str(ROOT / "stories" / "zero_mark"), script, backend="diffusion", seed=1,
                           save_dir=tmp_path / "z", size=(32, 32), transcript=rows)
    chunks = [r for r in map(json.loads, rows.read_text().splitlines()) if r["type"] == "chunk"]
    assert chunks and runner.session.state.frame == sum(c["frames"] for c in chunks)
    assert any("no structured scene" in i for c in chunks for i in c["ignored"])
    backend = runner.session.backend
    assert isinstance(backend, DiffusionBackend)
    assert any(c.variant == "i2v" and c.image == "world.anchor0" for c in backend.calls)  # the story's anchor


def test_the_diffusion_backend_serves_remotely_with_the_same_frames(pipe: Any) -> None:
    pytest.importorskip("fastapi", reason="the world server needs fastapi")
    pytest.importorskip("websockets", reason="the remote backend needs websockets")
    from game.world.backends.remote import RemoteBackend
    from game.world.server import ServerConfig, ServerThread, create_app

    token = "diffusion-remote-token-0123456789abcdef"
    app = create_app(lambda options: make(pipe, **options), ServerConfig(token=token))
    srv = ServerThread(app).start()
    try:
        remote = RemoteBackend(srv.url, token=token)
        assert remote.capabilities().backend == "remote:diffusion"
        local = make(pipe)
        reqs = [req(1, "a meadow", "scene_cut", n=8), req(2, "a creek", "recache", n=8)]
        got = []
        for b in (remote, local):
            b.start(SessionStart("s", 6, "a meadow"))
            got.append(np.concatenate([frames_of(b, r) for r in reqs]))
            assert b.memory(MemoryOp("snapshot")).ok
        assert got[0].tobytes() == got[1].tobytes()
        remote.close()
    finally:
        srv.stop()

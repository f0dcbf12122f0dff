"""The ``causal`` backend (block-causal Wan with a KV cache) on a tiny random model, on the CPU.

The model is built by the ``causal_comps`` fixture (tests/world/conftest.py,
:func:`game.models.causal_arch.random_model`: a 2-layer Wan transformer and a
tiny Wan VAE), saved and loaded back through the real loader for the end-to-end runs.
Assertions are on cache sizes and tokens attended, never on time; the times are printed.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the causal backend needs torch")
pytest.importorskip("diffusers", reason="the causal backend needs diffusers")

from game.errors import BackendError  # noqa: E402
from game.models.causal_arch import TINY_OPTIONS  # noqa: E402
from game.models.causal_loader import load_causal_model, save_causal_model  # noqa: E402
from game.models.causal_model import CausalWan, KVCache  # noqa: E402
from game.models.embedder import ModelError  # noqa: E402
from game.session import Session  # noqa: E402
from game.state import Move  # noqa: E402
from game.story import load_story  # noqa: E402
from game.world.backends import make_backend  # noqa: E402
from game.world.backends.causal import CausalBackend  # noqa: E402
from game.world.backends.causal_sampler import Schedule, recache, sample_block  # noqa: E402
from game.world.backends.diffusion_embed import hashed_prompt_embeds  # noqa: E402
from game.world.protocol import Interruptible, MemoryOp, SessionStart, WorldRequest  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
#: Zero Mark inputs with no free text (no embedder needed): a gift, a choice, WASD, a choice.
ZERO_MARK_INPUTS = "give stone creature\nmove a 0.5\nmove d 0.5\n"


pytestmark = pytest.mark.usefixtures("one_torch_thread")



@pytest.fixture(scope="module")
def model_dir(causal_comps: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_causal_model(causal_comps, tmp_path_factory.mktemp("tiny_causal"))


def make(causal_comps: Any, **kw: Any) -> CausalBackend:
    return CausalBackend(transformer=causal_comps.transformer, vae=causal_comps.vae, **{**TINY_OPTIONS, **kw})


def req(seq: int, prompt: str = "a meadow", mode: str | None = "plain", n: int = 8, **kw: Any) -> WorldRequest:
    return WorldRequest("s", seq, n, prompt, mode, **kw)  # type: ignore[arg-type]


def frames_of(backend: CausalBackend, request: WorldRequest) -> np.ndarray:
    return np.concatenate([c.frames for c in backend.generate(request)])


# -- the cache ---------------------------------------------------------------------------------------------
def test_300_blocks_attend_a_flat_cache_while_the_no_cache_loop_grows(causal_comps: Any) -> None:
    net = CausalWan(causal_comps.transformer)
    ctx = net.cross_context(hashed_prompt_embeds("a meadow at dusk", 32, 16))
    one_step = Schedule(timesteps=(1000.0,))
    sink, window, shape = 1, 3, (1, 16, 1, 2, 2)

    def run(blocks: int, cached: bool) -> tuple[list[int], list[int], list[float]]:
        cache, attended, sizes, times = KVCache(), [], [], []
        for b in range(blocks):
            t0 = time.perf_counter()
            context = cache if cached else recache(net, cache, ctx, 1)  # no cache: all history, again
            gen = torch.Generator().manual_seed(b)
            x0, k, v, _ = sample_block(net, shape, gen, context, ctx, one_step)
            attended.append((context.frames + 1) * net.tokens_per_frame(2, 2))
            cache = cache.appended(k, v, x0, ["sink_global" if b < sink else "rolling"])
            if cached:
                cache = cache.evicted(window)
            sizes.append(cache.nbytes())
            times.append(time.perf_counter() - t0)
        return attended, sizes, times

    att, sizes, times = run(300, cached=True)
    flat = att[sink + window:]
    assert set(flat) == {sink + window + 1} and len(set(sizes[sink + window:])) == 1  # bounded, every block
    no_att, no_sizes, no_times = run(100, cached=False)
    assert no_att == list(range(1, 101))  # attends the whole history: grows by a frame a block
    assert no_sizes[-1] > 20 * sizes[-1]
    ms = lambda xs: 1000 * statistics.mean(xs)  # noqa: E731
    print(f"\nKV cache: block 1-10 {ms(times[:10]):.1f} ms, block 291-300 {ms(times[-10:]):.1f} ms, "
          f"{sizes[-1]} cache bytes; no cache: block 1-10 {ms(no_times[:10]):.1f} ms, "
          f"block 91-100 {ms(no_times[-10:]):.1f} ms, {no_sizes[-1]} bytes")


def test_a_single_pass_recache_equals_block_by_block_writes(causal_comps: Any) -> None:
    net = CausalWan(causal_comps.transformer)
    ctx = net.cross_context(hashed_prompt_embeds("a creek", 32, 16))
    lat = torch.randn(1, 16, 4, 2, 2, generator=torch.Generator().manual_seed(1))
    cache = KVCache()
    for b in range(2):  # two blocks of two frames, one pass each
        part = lat[:, :, 2 * b:2 * b + 2]
        _, k, v = net.forward(part, 0.0, cache, ctx, write=True)
        cache = cache.appended(k, v, part, ["rolling", "rolling"])
    again = recache(net, cache, ctx, 2)
    for a, b in zip(cache.k + cache.v, again.k + again.v, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_the_backend_pins_its_sink_and_evicts_the_window_by_age(causal_comps: Any) -> None:
    backend = make(causal_comps)
    backend.start(SessionStart("s", 1, "a meadow"))
    seen = []
    for seq in range(1, 6):
        for c in backend.generate(req(seq, mode="scene_cut" if seq == 1 else None)):
            seen.append(c.memory)
    cache = backend._table.sessions["s"].cache
    assert [m["cache_frames"] for m in seen] == [2, 3, 3, 3, 3]  # 1 sink + 2 window latent frames at most
    assert cache.tiers == ("sink_global", "rolling", "rolling")
    assert [m["tokens_attended"] for m in seen] == [2, 4, 5, 5, 5]  # at most 3 cached + 2 new frames
    first = backend.blocks[0]
    assert first.cached_frames == 0 and backend.blocks[-1].cached_frames == 3
    assert backend.memory(MemoryOp("reset_history")).ok
    assert backend._table.sessions["s"].cache.tiers == ("sink_global",)


def test_prompt_switch_modes_and_the_prompt_is_encoded_once(causal_comps: Any) -> None:
    backend = make(causal_comps)
    backend.start(SessionStart("s", 2, "a meadow"))
    out = [list(backend.generate(req(1, mode="scene_cut"))), list(backend.generate(req(2, mode=None))),
           list(backend.generate(req(3, mode="plain")))]
    assert backend.context_encodes == 1  # three requests, one prompt: encoded once
    assert all(c.timing.recache_ms == 0 for r in out for c in r)
    before = backend._table.sessions["s"].cache
    plain = list(backend.generate(req(4, "a creek at night", "plain")))
    assert backend.context_encodes == 2 and plain[0].timing.recache_ms == 0
    assert plain[0].memory["recaches"] == 0  # plain keeps the cache: no set-up cost
    mid = backend._table.sessions["s"].cache
    rc = list(backend.generate(req(5, "a creek in the rain", "recache")))
    assert rc[0].timing.recache_ms > 0 and rc[0].memory["recaches"] == 1
    assert backend.blocks[-1].prompt == "a creek in the rain"
    assert before.frames == mid.frames == 3
    cut = list(backend.generate(req(6, "the hollow", "scene_cut")))
    assert cut[0].memory["recaches"] == 2 and backend.blocks[-1].cached_frames == 1  # the global sink only
    assert backend._table.sessions["s"].cache.tiers == ("sink_global", "sink_current", "rolling")


def test_snapshot_restore_and_fork_reproduce_identical_frames(causal_comps: Any) -> None:
    backend = make(causal_comps)
    backend.start(SessionStart("s", 4, "a meadow"))
    opening = frames_of(backend, req(1, mode="scene_cut", n=16))
    snap = backend.memory(MemoryOp("snapshot"))
    branch = [req(2, "a kite in the wind", "recache"), req(3, "the creature leaps", "plain", first_block_frames=4)]
    original = [frames_of(backend, r) for r in branch]
    assert backend.memory(MemoryOp("fork", handle=snap.handle, new_session_id="b")).ok
    forked = [frames_of(backend, WorldRequest(**{**r.to_json(), "session_id": "b", "scene": r.scene})) for r in branch]
    assert all(a.tobytes() == b.tobytes() for a, b in zip(original, forked, strict=True))
    assert backend.memory(MemoryOp("restore", handle=snap.handle)).ok
    assert frames_of(backend, req(4, "a kite in the wind", "recache")).tobytes() == original[0].tobytes()
    again = frames_of(backend, req(4, "a kite in the wind", "recache"))  # the same seq again: the same frames
    assert again.tobytes() == original[0].tobytes()
    with pytest.raises(BackendError, match="different request"):
        list(backend.generate(req(4, "elsewhere")))
    with pytest.raises(BackendError, match="not after"):
        list(backend.generate(req(0)))
    assert backend.memory(MemoryOp("reset")).ok  # the same seed from block 0: the same frames
    assert frames_of(backend, req(9, mode="scene_cut", n=16)).tobytes() == opening.tobytes()


# -- pre-emption ---------------------------------------------------------------------------------------------
def test_an_interrupt_abandons_the_block_being_denoised(causal_comps: Any, interrupt_at_next_call: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    backend = make(causal_comps)
    backend.start(SessionStart("s", 5, "a meadow"))
    it = backend.generate(req(1, mode="scene_cut", n=24))
    first = next(it)
    state = backend._table.sessions["s"]
    cache, frame = state.cache, state.frame
    assert isinstance(backend, Interruptible)  # Session.submit reaches it (world.protocol.interrupt)
    calls = interrupt_at_next_call(backend, backend.net)  # the player acts during block 2's first step
    assert list(it) == []  # block 2 abandoned at its next step, block 3 never started
    assert [c.get("write", False) for c in calls] == [False] and first.block == 0  # a denoising step, no write
    assert state.cache is cache and state.frame == frame == 8  # nothing of the abandoned block was kept
    monkeypatch.undo()
    nxt = list(backend.generate(req(2, "a creek", "plain", first_block_frames=4)))
    assert nxt[0].first_frame == 8 and nxt[0].n_frames == 4  # the reaction's block is the smallest one


def test_a_new_input_drops_the_queued_blocks(causal_comps: Any, tmp_path: Path) -> None:
    backend = make(causal_comps)
    session = Session(load_story(ROOT / "tests" / "data" / "mini"), backend, seed=1, save_dir=tmp_path)
    session.start()
    opening = session.pending
    assert opening is not None and len(backend.capabilities().block_plan(opening.min_frames)) == 3
    shown = []
    for chunk in session.stream():
        shown.append(chunk)
        session.submit(Move(direction="a", seconds=0.2))
    assert len(shown) == 1 and len(backend.blocks) == 1  # the two queued blocks were never made
    nxt = session.pending
    assert nxt is not None and nxt.first_block_frames == 4
    after = list(session.stream())
    assert after[0].n_frames == 4 and backend.blocks[-1].latent_frames == 1


# -- loading and whole stories -----------------------------------------------------------------------------------
def test_the_loader_reads_a_saved_model_and_names_bad_ones(model_dir: Path, tmp_path: Path) -> None:
    causal_comps = load_causal_model(model_dir, device="cpu")
    assert causal_comps is load_causal_model(model_dir, device="cpu") and causal_comps.action is None
    backend = make_backend("causal", model=str(model_dir), device="cpu", **TINY_OPTIONS)
    assert backend.capabilities().backend == "causal"
    with pytest.raises(ModelError, match="no such model folder"):
        load_causal_model(tmp_path / "missing")
    (tmp_path / "half" / "transformer").mkdir(parents=True)
    with pytest.raises(ModelError, match="transformer/config.json"):
        load_causal_model(tmp_path / "half")
    with pytest.raises(BackendError, match="needs a model"):
        CausalBackend()
    with pytest.raises(BackendError, match="multiples of 16"):
        CausalBackend(model=str(model_dir), width=20, height=16)


def play_cli(backend: str, model: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """``python3 -m game play stories/zero_mark --headless --backend NAME`` on the tiny model; the chunks."""
    script = tmp_path / "inputs.txt"
    script.write_text(ZERO_MARK_INPUTS)
    rows = tmp_path / f"{backend}.jsonl"
    cmd = [sys.executable, "-m", "game", "play", str(ROOT / "stories" / "zero_mark"), "--headless", "--backend",
           backend, "--model", str(model), "--size", "16x16", "--inputs", str(script), "--transcript", str(rows),
           "--save-dir", str(tmp_path / "saves"), "--no-errorbank", "--no-voice", "--seed", "1"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    return [r for r in map(json.loads, rows.read_text().splitlines()) if r["type"] == "chunk"]


def test_zero_mark_plays_headless_on_the_tiny_causal_model(model_dir: Path, tmp_path: Path) -> None:
    chunks = play_cli("causal", model_dir, tmp_path)
    assert len(chunks) >= 3 and all(c["frames"] > 0 for c in chunks)
    assert any("action keys" in i for c in chunks for i in c["ignored"])  # WASD reported: a text model
    assert any("hashed word embeddings" in i for c in chunks for i in c["ignored"])


"""One contract, every registered backend (``game.world.backends.BACKENDS``).

Each backend is built small here and checked for what the game layer relies on: honest
capabilities, whole blocks of ``(T, H, W, 3)`` uint8 frames on a contiguous frame clock,
pre-emption (a caller stops after one block and the next request still streams), snapshot
and restore that reproduce the frames they left (or an honest refusal), every input it
cannot use reported in ``FrameChunk.ignored``, and a clean close. A backend added to the
registry without a builder here fails the suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np
import pytest

from game.world.backends import BACKENDS, make_backend
from game.world.protocol import (
    ActionFrame,
    Backend,
    CameraPose,
    Entity,
    MemoryOp,
    Scene,
    SessionStart,
    WorldRequest,
    check_frames,
    ignored_inputs,
)

TOKEN = "contract-token-0123456789abcdef0123"


@contextmanager
def _local(name: str, **kw: Any) -> Iterator[Backend]:
    backend = make_backend(name, **kw)
    try:
        yield backend
    finally:
        backend.close()


@contextmanager
def _remote() -> Iterator[Backend]:
    pytest.importorskip("fastapi", reason="the world server needs fastapi")
    pytest.importorskip("websockets", reason="the remote backend needs websockets")
    from game.world.server import ServerConfig, ServerThread, backend_factory, create_app

    cfg = ServerConfig(token=TOKEN)
    app = create_app(backend_factory("procedural"), cfg)
    srv = ServerThread(app, max_message_bytes=cfg.max_message_bytes).start()
    backend = make_backend("remote", url=srv.url, token=TOKEN, width=48, height=32)
    try:
        yield backend
    finally:
        backend.close()
        srv.stop()


@contextmanager
def _diffusion() -> Iterator[Backend]:
    torch = pytest.importorskip("torch")
    pytest.importorskip("diffusers")
    from game.models.diffusion_arch import random_pipeline

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with _local("diffusion", pipeline=random_pipeline("tiny"), width=16, height=16, fps=8.0,
                    frames_per_block=4, overlap_frames=5, steps=2, guidance_scale=1.0) as backend:
            yield backend
    finally:
        torch.set_num_threads(threads)


@contextmanager
def _causal(kind: str) -> Iterator[Backend]:
    torch = pytest.importorskip("torch", reason="the causal backends need torch")
    pytest.importorskip("diffusers", reason="the causal backends need diffusers")
    from game.models.causal_arch import TINY_OPTIONS, random_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    model = random_model(kind)
    extra = {"action": model.action} if kind == "action" else {}
    try:
        with _local(kind, transformer=model.transformer, vae=model.vae, **extra, **TINY_OPTIONS) as backend:
            yield backend
    finally:
        torch.set_num_threads(threads)


#: registered name -> a small instance of it (a context manager that closes it).
BUILDERS: dict[str, Callable[[], AbstractContextManager[Backend]]] = {
    "null": lambda: _local("null", width=32, height=24, frames_per_block=4),
    "procedural": lambda: _local("procedural", width=48, height=32, frames_per_block=4),
    "drifting": lambda: _local("drifting", width=48, height=32, frames_per_block=4),
    "remote": _remote,
    "diffusion": _diffusion,
    "causal": lambda: _causal("causal"),
    "action": lambda: _causal("action"),
}

SCENE = Scene(location="clearing", entities=(Entity(id="creature", kind="creature", name="the creature",
                                                     x=0.6, state="idle"),))


def request(seq: int, blocks: int, fpb: int, **kw: Any) -> WorldRequest:
    return WorldRequest(session_id="contract", seq=seq, min_frames=blocks * fpb - 1, prompt="a clearing at dusk",
                        switch_mode="plain", scene=SCENE, **kw)


def test_every_registered_backend_has_a_contract_builder() -> None:
    assert sorted(BACKENDS) == sorted(BUILDERS), "add a small builder for the new backend to BUILDERS"


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_backend_contract(name: str) -> None:
    with BUILDERS[name]() as backend:
        caps = backend.capabilities()
        assert caps.fps > 0 and caps.frames_per_block >= 1 and caps.width > 0 and caps.height > 0
        fpb = caps.frames_per_block
        backend.start(SessionStart(session_id="contract", seed=3, prompt="a clearing at dusk"))

        # whole blocks, in order, on a contiguous frame clock
        chunks = list(backend.generate(request(1, 2, fpb)))
        assert [c.block for c in chunks] == [0, 1] and [c.last for c in chunks] == [False, True]
        assert all(c.seq == 1 and check_frames(c.frames, caps) == "" and c.n_frames == fpb for c in chunks)
        assert chunks[1].first_frame == chunks[0].first_frame + fpb

        # what it cannot use is reported, never silently dropped
        probe = request(2, 1, fpb, actions=("w",) * fpb, references=("/nonexistent.png",), audio="/x.wav",
                        directives=("camera: low",))
        (one,) = list(backend.generate(probe))
        expected = ignored_inputs(caps, probe)
        assert any(w.startswith("directive camera: low") for w in expected)  # no backend here acts on it
        for why in expected:
            assert why in one.ignored, (why, one.ignored)

        # pre-emption: the caller stops after the first block; the next request streams on
        stream = backend.generate(request(3, 3, fpb))
        first = next(stream)
        stream.close()  # type: ignore[attr-defined]
        after = list(backend.generate(request(4, 1, fpb)))
        assert len(after) == 1 and after[0].first_frame >= first.first_frame + fpb
        assert check_frames(after[0].frames, caps) == ""

        # snapshot / restore give back exactly the frames that followed, or say they cannot
        snap = backend.memory(MemoryOp("snapshot"))
        if not caps.snapshot:
            assert not snap.ok or snap.note
            return
        assert snap.ok and snap.handle
        ahead = np.concatenate([c.frames for c in backend.generate(request(5, 1, fpb))])
        assert backend.memory(MemoryOp("restore", handle=snap.handle)).ok
        again = np.concatenate([c.frames for c in backend.generate(request(6, 1, fpb))])
        assert np.array_equal(ahead, again)
        assert not backend.memory(MemoryOp("restore", handle="no-such-snapshot")).ok


def frames_of(backend: Backend, request: WorldRequest) -> np.ndarray:
    return np.concatenate([c.frames for c in backend.generate(request)])


@pytest.mark.parametrize("name", ["procedural", "null", "causal", "action"])
def test_action_frames_block_plans_and_rollback(name: str) -> None:
    with BUILDERS[name]() as backend:
        _action_contract(backend, name)


def _action_contract(backend: Backend, name: str) -> None:
    caps = backend.capabilities()
    assert caps.backend == name and caps is backend.capabilities()
    backend.start(SessionStart("s", 3, "a meadow at dusk"))
    moves = tuple(ActionFrame(("w", "q"), (0.5, 0.0), CameraPose(x=0.1 * i, yaw=0.2)) for i in range(8))
    r1 = WorldRequest("s", 1, 10, "a meadow at dusk", "scene_cut", action_frames=moves)
    chunks = list(backend.generate(r1))
    plan = caps.block_plan(r1.min_frames, r1.first_block_frames)
    assert [c.n_frames for c in chunks] == list(plan) and sum(plan) >= 10
    assert [c.block for c in chunks] == list(range(len(plan))) and [c.last for c in chunks][-1]
    assert [c.first_frame for c in chunks] == list(np.cumsum([0, *plan[:-1]]))
    for c in chunks:
        assert check_frames(c.frames, caps) == "" and c.seq == 1 and c.fps == caps.fps
        assert set(ignored_inputs(caps, r1)) <= set(c.ignored)  # what it cannot use is reported, every block
    text = " | ".join(chunks[0].ignored)
    keys = next(n for n in chunks[0].ignored if n.startswith("action keys"))
    assert "q" in keys.split(":")[0] and ("w" in keys.split(":")[0]) == ("w" not in caps.actions)
    assert ("yaw" in next((n for n in chunks[0].ignored if n.startswith("action camera")), "")) == \
        ("yaw" not in caps.camera)
    assert ("action mouse" in text) == (not caps.mouse)

    snap = backend.memory(MemoryOp("snapshot"))
    assert snap.ok
    r2 = WorldRequest("s", 2, 8, "a creek at night", "recache" if "recache" in caps.switch_modes else "plain",
                      first_block_frames=4)
    first = frames_of(backend, r2)
    assert first.shape[0] == sum(caps.block_plan(8, 4))
    assert backend.memory(MemoryOp("restore", handle=snap.handle)).ok
    assert frames_of(backend, WorldRequest(**{**r2.to_json(), "seq": 3, "scene": r2.scene})).tobytes() == \
        first.tobytes()  # rollback restores exactly the frames it left

    it = backend.generate(WorldRequest("s", 4, 24, "a creek at night", None))
    next(iter(it))
    it.close()  # stopping early: the rest is never made

"""The protocol's contract, checked the same way for every in-process backend:
procedural, null, and the tiny random-weight causal (Wan, KV cache) and action
(Matrix-Game 2.0) models built here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from game.world.backends.null import NullBackend
from game.world.backends.procedural import ProceduralBackend
from game.world.protocol import (
    ActionFrame,
    Backend,
    CameraPose,
    MemoryOp,
    SessionStart,
    WorldRequest,
    check_frames,
    ignored_inputs,
)

torch = pytest.importorskip("torch", reason="the causal backends need torch")
pytest.importorskip("diffusers", reason="the causal backends need diffusers")

from game.world.backends.action import ActionBackend  # noqa: E402
from game.world.backends.causal import CausalBackend  # noqa: E402
from game.world.backends.causal_arch import random_model  # noqa: E402

#: Tiny settings: 16 x 16 frames, 2 latent frames (8 frames) a block, 2 steps, a 1 + 2 latent-frame cache.
TINY: dict[str, Any] = dict(width=16, height=16, fps=8.0, latent_frames=2, timesteps=(1000.0, 500.0),
                            sink_latents=1, window_latents=2)


@pytest.fixture(scope="module", autouse=True)
def _one_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def makers() -> dict[str, Callable[[], Backend]]:
    text, act = random_model("causal"), random_model("action")
    return {
        "procedural": lambda: ProceduralBackend(width=16, height=16, fps=8.0, frames_per_block=8),
        "null": lambda: NullBackend(width=16, height=16, fps=8.0, frames_per_block=8),
        "causal": lambda: CausalBackend(transformer=text.transformer, vae=text.vae, **TINY),
        "action": lambda: ActionBackend(transformer=act.transformer, vae=act.vae, action=act.action, **TINY),
    }


def frames_of(backend: Backend, request: WorldRequest) -> np.ndarray:
    return np.concatenate([c.frames for c in backend.generate(request)])


@pytest.mark.parametrize("name", ["procedural", "null", "causal", "action"])
def test_the_protocol_contract(makers: dict[str, Callable[[], Backend]], name: str) -> None:
    backend = makers[name]()
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
    backend.close()

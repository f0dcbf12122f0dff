"""Fixtures of the world room's model tests: one torch thread, and the tiny random causal / action models.

torch and diffusers are imported only by the fixtures that need them, so the other
world tests do not pay for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """One torch thread for a module: tiny tensors gain nothing from threads, and on a busy
    2-core machine threads make them ~10x slower."""
    torch = pytest.importorskip("torch", reason="the model backends need torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def causal_comps(one_torch_thread: None) -> Any:
    """A tiny random ``causal`` (text) model: 2-layer Wan transformer and tiny Wan VAE (seed 0)."""
    pytest.importorskip("diffusers", reason="the causal backends need diffusers")
    from game.models.causal_arch import random_model

    return random_model("causal")


@pytest.fixture(scope="module")
def action_comps(one_torch_thread: None) -> Any:
    """A tiny random ``action`` (Matrix-Game 2.0 style) model: transformer, VAE and action modules (seed 0)."""
    pytest.importorskip("diffusers", reason="the causal backends need diffusers")
    from game.models.causal_arch import random_model

    return random_model("action")


@pytest.fixture
def interrupt_at_next_call(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``arm(backend, model)``: the next call of ``model.forward`` interrupts ``backend``'s session
    ``s`` (a player acting while a block is being denoised), then runs; returns the keyword
    arguments of every call from then on. ``monkeypatch.undo()`` restores ``forward``."""
    def arm(backend: Any, model: Any, session_id: str = "s") -> list[dict[str, Any]]:
        calls: list[dict[str, Any]] = []
        original = model.forward

        def forward(*args: Any, **kw: Any) -> Any:
            calls.append(kw)
            if len(calls) == 1:
                backend.interrupt(session_id)
            return original(*args, **kw)

        monkeypatch.setattr(model, "forward", forward)
        return calls

    return arm

"""Top-p sampling looks for the nucleus among the most likely tokens first, and draws the same token from the
same seed as sorting the whole vocabulary did, for peaked and flat distributions alike."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from game.models.llm_transformers import NUCLEUS_CANDIDATES, TransformersDialogueModel  # noqa: E402


def sort_all(logits: Any, generated: list[int], temperature: float, gen: Any, top_p: float, penalty: float) -> int:
    """The sampler before: the whole vocabulary sorted for every token."""
    logits = logits.float().clone()
    if generated:
        idx = torch.tensor(sorted(set(generated)))
        vals = logits[idx]
        logits[idx] = torch.where(vals > 0, vals / penalty, vals * penalty)
    probs = torch.softmax(logits / temperature, dim=-1)
    sorted_p, order = torch.sort(probs, descending=True)
    keep = torch.cumsum(sorted_p, dim=-1) - sorted_p < top_p
    keep[0] = True
    sorted_p = sorted_p * keep
    return int(order[int(torch.multinomial(sorted_p / sorted_p.sum(), 1, generator=gen))])


@pytest.mark.parametrize("scale", [4.0, 0.05])  # peaked: the nucleus is a few tokens; flat: thousands
def test_nucleus_draws_what_sorting_the_vocabulary_drew(scale: float) -> None:
    model = SimpleNamespace(_torch=torch, repetition_penalty=1.15, top_p=0.9)
    g = torch.Generator().manual_seed(3)
    for trial in range(60):
        logits = torch.randn(49152, generator=g) * scale
        generated = [int(i) for i in torch.randint(0, 49152, (trial % 7,), generator=g)]
        temperature = (0.3, 0.8, 1.0)[trial % 3]
        a = TransformersDialogueModel._pick(model, logits, generated, temperature,  # type: ignore[arg-type]
                                            torch.Generator().manual_seed(trial))
        b = sort_all(logits, generated, temperature, torch.Generator().manual_seed(trial), 0.9, 1.15)
        assert a == b, (scale, trial)
    assert NUCLEUS_CANDIDATES < 49152


def test_a_peaked_distribution_is_not_sorted_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    sorted_sizes: list[int] = []
    real_sort = torch.sort

    def counting_sort(x: Any, *a: Any, **k: Any) -> Any:
        sorted_sizes.append(int(x.numel()))
        return real_sort(x, *a, **k)

    monkeypatch.setattr(torch, "sort", counting_sort)
    model = SimpleNamespace(_torch=torch, repetition_penalty=1.15, top_p=0.9)
    peaked = torch.randn(49152, generator=torch.Generator().manual_seed(1)) * 4.0
    TransformersDialogueModel._pick(model, peaked, [5], 0.3, torch.Generator().manual_seed(0))  # type: ignore[arg-type]
    assert sorted_sizes == []  # the nucleus was found among the most likely tokens
    flat = torch.zeros(49152)
    TransformersDialogueModel._pick(model, flat, [], 1.0, torch.Generator().manual_seed(0))  # type: ignore[arg-type]
    assert sorted_sizes == [49152]  # no nucleus among them: the whole vocabulary


def test_greedy_ignores_the_nucleus() -> None:
    model = SimpleNamespace(_torch=torch, repetition_penalty=1.0, top_p=0.9)
    logits = torch.zeros(1000)
    logits[417] = 5.0
    assert TransformersDialogueModel._pick(model, logits, [], 0.0, None) == 417  # type: ignore[arg-type]

"""Top-p sampling looks for the nucleus among the most likely tokens first: the same tokens and probabilities
as sorting the whole vocabulary, for peaked and flat distributions alike, without the sort when it can."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from game.models.llm_transformers import NUCLEUS_CANDIDATES, TransformersDialogueModel, nucleus  # noqa: E402


def sorted_nucleus(probs: Any, top_p: float) -> tuple[list[int], list[float]]:
    """The nucleus as the sampler before found it: the whole vocabulary sorted."""
    sorted_p, order = torch.sort(probs, descending=True)
    keep = torch.cumsum(sorted_p, dim=-1) - sorted_p < top_p
    keep[0] = True
    return order[keep].tolist(), sorted_p[keep].tolist()


@pytest.mark.parametrize("scale", [8.0, 4.0, 1.5, 0.05])  # a few tokens ... thousands of them
def test_the_nucleus_is_the_one_sorting_the_vocabulary_finds(scale: float) -> None:
    g = torch.Generator().manual_seed(3)
    sizes = []
    for trial in range(40):
        logits = torch.randn(49152, generator=g) * scale
        probs = torch.softmax(logits / (0.3, 0.8, 1.0)[trial % 3], dim=-1)
        kept, order = nucleus(probs, 0.9)
        want_ids, want_p = sorted_nucleus(probs, 0.9)
        assert sorted(order.tolist()) == sorted(want_ids)
        assert sorted(kept.tolist()) == pytest.approx(sorted(want_p))
        sizes.append(len(want_ids))
    assert min(sizes) >= 1 and (scale > 1 or max(sizes) > NUCLEUS_CANDIDATES)


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


def test_draws_come_from_the_nucleus_and_repeat_with_the_seed() -> None:
    model = SimpleNamespace(_torch=torch, repetition_penalty=1.0, top_p=0.9)
    logits = torch.full((1000,), -10.0)
    logits[[7, 8, 9]] = torch.tensor([3.0, 2.9, 2.8])
    draws = [TransformersDialogueModel._pick(model, logits, [], 1.0, torch.Generator().manual_seed(s))  # type: ignore[arg-type]
             for s in range(60)]
    assert set(draws) == {7, 8, 9}
    again = [TransformersDialogueModel._pick(model, logits, [], 1.0, torch.Generator().manual_seed(s))  # type: ignore[arg-type]
             for s in range(60)]
    assert again == draws


def test_greedy_ignores_the_nucleus() -> None:
    model = SimpleNamespace(_torch=torch, repetition_penalty=1.0, top_p=0.9)
    logits = torch.zeros(1000)
    logits[417] = 5.0
    assert TransformersDialogueModel._pick(model, logits, [], 0.0, None) == 417  # type: ignore[arg-type]

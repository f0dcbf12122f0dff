"""The fast retrieval path (ANN extremes + candidates rescored) ranks as the exact scan does."""

from __future__ import annotations

import numpy as np
import pytest

from game.cast import retrieval
from game.cast.retrieval import EpisodicStore

WORDS = "tide lamp kettle gull fog stars sister bees harbour bread ferry storm lantern rope boots".split()


def store_of(n: int, seed: int = 0) -> tuple[EpisodicStore, np.ndarray]:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, 64)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store = EpisodicStore(dim=64, fast=True)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(4, 10)))) for _ in range(n)]
    store.extend(texts, ["exchange"] * n, rng.integers(0, n, size=n), rng.uniform(1, 10, size=n), vecs)
    return store, vecs


def query(vecs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    q = vecs[int(rng.integers(0, len(vecs)))] * 0.5 + rng.normal(size=vecs.shape[1]).astype(np.float32) * 0.1
    return np.asarray(q / np.linalg.norm(q), np.float32)


@pytest.fixture
def small_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path from 500 memories, 200 candidates (so most memories are *not* rescored)."""
    pytest.importorskip("faiss")
    monkeypatch.setattr(retrieval, "FAST_MIN", 500)
    monkeypatch.setattr(retrieval, "FAST_CANDIDATES", 200)


@pytest.mark.usefixtures("small_fast")
def test_fast_top_is_the_exact_top_and_keeps_the_exact_scores() -> None:
    store, vecs = store_of(3000)
    rng = np.random.default_rng(1)
    for text in ("sister bees harbour", "the storm took the rope", ""):
        for _ in range(5):
            q = query(vecs, rng)
            exact = store.top(q, 3000, 10, query_text=text, exact=True)
            fast = store.top(q, 3000, 10, query_text=text)
            assert store.ann is not None and len(store.ann) == len(store)  # the index answered
            assert [s.index for s in fast] == [s.index for s in exact]
            np.testing.assert_allclose([s.score for s in fast], [s.score for s in exact], rtol=1e-9, atol=1e-9)
            assert [s.cosine for s in fast] == pytest.approx([s.cosine for s in exact], abs=1e-6)


@pytest.mark.usefixtures("small_fast")
def test_the_index_follows_memories_added_later() -> None:
    store, vecs = store_of(1000)
    assert store.build_index() and store.ann is not None and len(store.ann) == 1000
    more = store_of(1500, seed=7)[1][1000:]
    store.extend(["storm rope lantern"] * 500, ["exchange"] * 500, np.arange(1000, 1500), np.full(500, 9.0), more)
    store.add("the lamp went out", "event", 1500, 5.0)  # waits for its vector: the exact scan answers
    assert store.pending == 1 and len(store.ann) == 1500
    store.embed_pending(_Fixed(more[0]))
    assert len(store.ann) == len(store) == 1501
    rng = np.random.default_rng(3)
    all_vecs = np.vstack([vecs, more, more[:1]])
    for _ in range(5):
        q = query(all_vecs, rng)
        exact = [s.index for s in store.top(q, 1500, 10, query_text="storm rope", exact=True)]
        assert [s.index for s in store.top(q, 1500, 10, query_text="storm rope")] == exact


def test_without_the_index_the_exact_scan_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retrieval, "FAST_MIN", 500)
    monkeypatch.setattr(retrieval, "make_index", lambda dim: None)  # faiss not installed
    store, vecs = store_of(1000)
    q = query(vecs, np.random.default_rng(2))
    fast = [s.index for s in store.top(q, 1000, 10, query_text="fog")]
    assert store.ann is None and fast == [s.index for s in store.top(q, 1000, 10, query_text="fog", exact=True)]


class _Fixed:
    """An encoder that returns one given vector for every text."""

    def __init__(self, vec: np.ndarray) -> None:
        self.vec = vec

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.tile(self.vec, (len(texts), 1)).astype(np.float32)

"""The fast retrieval path (PCA-code prefilter, candidates scored exactly, an error bound) ranks as the exact scan."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from game.cast import retrieval
from game.cast.card_io import load_card
from game.cast.memory import Memory, MemoryConfig
from game.cast.retrieval import EpisodicStore, LexicalIndex, Weights, minmax, score_loop, terms

WORDS = "tide lamp kettle gull fog stars sister bees harbour bread ferry storm lantern rope boots".split()
ROOT = Path(__file__).resolve().parents[2]


def structured(n: int, dim: int = 64, seed: int = 0) -> np.ndarray:
    """``(n, dim)`` unit vectors with the shape of sentence embeddings: topics, a few shared axes, noise."""
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(24, dim))
    shared = rng.normal(size=(n, 6)) @ rng.normal(size=(6, dim))
    v = topics[rng.integers(0, 24, n)] + 0.5 * shared + 0.1 * rng.normal(size=(n, dim))
    return np.asarray(v / np.linalg.norm(v, axis=1, keepdims=True), np.float32)


def texts_of(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(4, 10)))) + f" night {i}" for i in range(n)]


def store_of(n: int, seed: int = 0) -> tuple[EpisodicStore, np.ndarray]:
    rng = np.random.default_rng(seed)
    vecs = structured(n, seed=seed)
    store = EpisodicStore(dim=64, fast=True)
    store.extend(texts_of(n, seed), ["exchange"] * n, np.arange(n) // 3, rng.choice([2.0, 4.0, 7.0], n), vecs)
    return store, vecs


def query(vecs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    q = vecs[int(rng.integers(0, len(vecs)))] + rng.normal(size=vecs.shape[1]).astype(np.float32) * 0.3
    return np.asarray(q / np.linalg.norm(q), np.float32)


@pytest.fixture
def small_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path from 500 memories, 128 candidates (so most memories are *not* scored exactly)."""
    monkeypatch.setattr(retrieval, "FAST_MIN", 500)
    monkeypatch.setattr(retrieval, "FAST_CANDIDATES", 128)
    monkeypatch.setattr(retrieval, "FAST_EXTREMES", 32)


def same_top(store: EpisodicStore, q: np.ndarray, now: int, text: str) -> list[int]:
    """The fast top 10, checked against the exact scan (same memories, order and scores); returns its ids."""
    exact = store.top(q, now, 10, query_text=text, exact=True)
    fast = store.top(q, now, 10, query_text=text)
    assert [s.index for s in fast] == [s.index for s in exact]
    # the same order; scores agree to 1e-6 (exactly when the extremes found hold the true min and max cosine)
    np.testing.assert_allclose([s.score for s in fast], [s.score for s in exact], rtol=1e-6, atol=1e-6)
    assert [s.cosine for s in fast] == pytest.approx([s.cosine for s in exact], abs=1e-6)
    return [s.index for s in fast]


@pytest.mark.usefixtures("small_fast")
def test_fast_top_is_the_exact_top_and_most_memories_are_not_scored_exactly() -> None:
    store, vecs = store_of(3000)
    rng = np.random.default_rng(1)
    scored = []
    for text in ("sister bees harbour", "the storm took the rope", ""):
        for _ in range(6):
            same_top(store, query(vecs, rng), 1000, text)
            path, count = store.last_path
            assert path == "fast"
            scored.append(count)
    assert store.prefilter is not None and len(store.prefilter) == len(store)
    assert max(scored) < len(store) // 4  # the prefilter answered: no full scan in disguise


@pytest.mark.usefixtures("small_fast")
def test_the_index_follows_memories_added_later_and_refits_when_the_store_doubles() -> None:
    store, vecs = store_of(1000)
    pre = store.build_index()
    assert len(pre) == 1000 and pre.fitted_on == 1000
    more = structured(2200)[1000:]  # later memories of the same kind
    store.extend(["storm rope lantern"] * 500, ["exchange"] * 500, np.arange(334, 834), np.full(500, 9.0), more[:500])
    assert len(pre) == 1500 and pre.fitted_on == 1000  # coded on the same axes
    store.add("the lamp went out over the harbour", "event", 834, 5.0)  # waits for its vector: not coded yet
    assert store.pending == 1 and len(pre) == 1500
    store.embed_pending(_Fixed(more[500]))
    assert len(pre) == len(store) == 1501
    rng = np.random.default_rng(3)
    paths = []
    for _ in range(4):
        same_top(store, query(np.vstack([vecs, more[:501]]), rng), 835, "storm rope")
        paths.append(store.last_path[0])
    assert paths.count("fast") >= 3  # 500 look-alike memories near the cut can still call for the scan
    # a new memory asked for by its own words and vector comes first
    assert same_top(store, more[500], 835, "the lamp went out over the harbour")[0] == 1500
    store.extend(texts_of(699, seed=9), ["line"] * 699, np.full(699, 900), np.full(699, 2.0), more[501:1200])
    assert pre.fitted_on == len(store) == 2200  # doubled: the axes were refitted on everything
    same_top(store, query(more, rng), 901, "sister")
    assert store.last_path[0] == "fast"


@pytest.mark.usefixtures("small_fast")
def test_random_vectors_fall_back_to_the_exact_scan_and_rest_it() -> None:
    rng = np.random.default_rng(4)
    vecs = rng.normal(size=(3000, 64)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store = EpisodicStore(dim=64, fast=True)
    store.extend(texts_of(3000), ["exchange"] * 3000, rng.integers(0, 1000, 3000), rng.uniform(1, 10, 3000), vecs)
    paths = []
    for _ in range(retrieval.FAST_GIVE_UP + 2):
        q = rng.normal(size=64).astype(np.float32)
        same_top(store, q / np.linalg.norm(q), 1000, "fog lamp")
        paths.append(store.last_path[0])
    assert paths.count("exact") >= retrieval.FAST_GIVE_UP  # the bound is not met: the answer stays exact
    assert store._rest > 0  # and the prefilter rests instead of costing every query


def _memory(n: int) -> Memory:
    """Eve's memory with ``n`` episodic memories over ``n // 2`` turns, a structured fixed encoder."""
    card = load_card(ROOT / "characters" / "eve.yaml")
    texts = texts_of(n)
    mem = Memory(card, MemoryConfig(fast_retrieval=True), embedder=_Table(dict(zip(texts, structured(n), strict=True))))
    for i, text in enumerate(texts):
        mem.remember(text, "exchange" if i % 3 else "gift", i // 2)
    return mem


@pytest.mark.usefixtures("small_fast")
def test_forgotten_memories_are_never_retrieved_by_the_fast_path() -> None:
    mem = _memory(2400)
    q, text = structured(2400)[2300], mem.store.texts[2300]  # a memory from after the rollback point
    before = [s.index for s in mem.retrieve(q, k=10, query_text=text)]
    assert mem.store.last_path[0] == "fast" and before[0] == 2300
    mem.forget_after(999)
    assert len(mem.store) == 2000
    after = mem.retrieve(q, now=999, k=10, query_text=text)
    assert mem.store.last_path[0] == "fast"
    assert all(s.turn <= 999 for s in after) and 2300 not in [s.index for s in after]
    assert [s.index for s in after] == same_top(mem.store, q, 999, text)


@pytest.mark.usefixtures("small_fast")
def test_a_saved_and_loaded_memory_retrieves_the_same_through_the_fast_path() -> None:
    mem = _memory(1200)
    q = structured(1200)[5]
    want = [s.index for s in mem.retrieve(q, k=10, query_text="sister bees")]
    data = json.loads(json.dumps(mem.to_json()))  # plain JSON: no vectors, no pickle
    assert "vectors" not in data
    back = Memory.from_json(data, mem.card, mem.config, embedder=mem.embedder)
    got = [s.index for s in back.retrieve(q, k=10, query_text="sister bees")]
    assert back.store.last_path[0] == "fast" and back.store.prefilter is not None
    assert got == want


def test_bm25_scores_match_the_plain_formula_with_repeated_words() -> None:
    docs = ["the bees and the bees again", "a storm over the harbour", "bees", "rope rope rope and the lamp",
            "nothing here at all", "the harbour bees harbour"]
    index = LexicalIndex()
    for d in docs:
        index.add(d)
    doc_terms = []
    for d in docs:
        counts: dict[str, int] = {}
        for t in terms(d):
            counts[t] = counts.get(t, 0) + 1
        doc_terms.append(counts)
    n = len(docs)
    for text in ("bees harbour", "rope and the lamp", "the bees"):
        plain = score_loop([[0.0]] * n, [0] * n, [1.0] * n, [0.0], 0, weights=Weights(0.0, 0.0, 1.0),
                           doc_terms=doc_terms, query_text=text, lexical=1.0)
        np.testing.assert_allclose(minmax(index.scores(text)), plain, rtol=1e-9, atol=1e-12)
        assert index.scores(text)[4] == 0.0  # no term of the query: nothing


class _Fixed:
    """An encoder that returns one given vector for every text."""

    def __init__(self, vec: np.ndarray) -> None:
        self.vec = vec

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.tile(self.vec, (len(texts), 1)).astype(np.float32)


class _Table:
    """An encoder that looks each text up in a table (64 dimensions)."""

    dim = 64

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]).astype(np.float32)

"""The fast retrieval path (every cosine estimated by a projection, the best few scored exactly) ranks as the exact
scan."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from game.cast import ann, retrieval
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
    store = EpisodicStore(dim=64)
    store.extend(texts_of(n, seed), ["exchange"] * n, np.arange(n) // 3, rng.choice([2.0, 4.0, 7.0], n), vecs)
    return store, vecs


def query(vecs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    q = vecs[int(rng.integers(0, len(vecs)))] + rng.normal(size=vecs.shape[1]).astype(np.float32) * 0.3
    return np.asarray(q / np.linalg.norm(q), np.float32)


@pytest.fixture
def small_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path from 500 memories."""
    monkeypatch.setattr(retrieval, "FAST_MIN", 500)


def same_top(store: EpisodicStore, q: np.ndarray, now: int, text: str, weights: Weights = retrieval.DEFAULT_WEIGHTS,
             k: int = 10) -> list[int]:
    """The fast top ``k``, checked against the exact scan (same memories, order and scores); returns its ids."""
    exact = store.top(q, now, k, weights=weights, query_text=text, exact=True)
    fast = store.top(q, now, k, weights=weights, query_text=text)
    assert store.last_path[0] == "fast"
    assert [s.index for s in fast] == [s.index for s in exact]
    # float32 cosines over a few rows or all of them can differ in their last bit
    np.testing.assert_allclose([s.score for s in fast], [s.score for s in exact], rtol=1e-6, atol=1e-6)
    assert [s.cosine for s in fast] == pytest.approx([s.cosine for s in exact], abs=1e-6)
    return [s.index for s in fast]


def overlap_at_k(store: EpisodicStore, q: np.ndarray, now: int, text: str,
                 weights: Weights = retrieval.DEFAULT_WEIGHTS, k: int = 10) -> float:
    """Recall@k of the fast path against the exact scan (the fast path must have answered)."""
    exact = {s.index for s in store.top(q, now, k, weights=weights, query_text=text, exact=True)}
    fast = store.top(q, now, k, weights=weights, query_text=text)
    assert store.last_path[0] == "fast" and store.last_path[1] <= retrieval.FAST_POOL + retrieval.FAST_HIGH
    return len(exact & {s.index for s in fast}) / k


@pytest.mark.usefixtures("small_fast")
@pytest.mark.parametrize("weights", [retrieval.DEFAULT_WEIGHTS, Weights(3.0, 2.0, 1.0), Weights(0.2, 0.2, 3.0)])
def test_the_projection_path_agrees_with_the_exact_scan(weights: Weights) -> None:
    store, vecs = store_of(3000)
    store.build_index()
    rng = np.random.default_rng(1)
    recall = [overlap_at_k(store, query(vecs, rng), 1000, text, weights)
              for text in ("sister bees harbour", "the storm took the rope", "", "night 2990") for _ in range(5)]
    # 20 queries, each scoring at most FAST_POOL + FAST_HIGH of the 3,000 memories exactly
    assert np.mean(recall) >= 0.95 and min(recall) >= 0.8
    # a memory the cosine alone would never pick, but recency, importance and its words lift, is found
    store.extend(["the lantern of the ferry night 9999"], ["gift"], [1000], [9.0], -vecs[:1])
    got = same_top(store, vecs[0], 1001, "lantern ferry night 9999", weights)
    if weights == retrieval.DEFAULT_WEIGHTS:
        assert 3000 in got  # its cosine is the lowest of all


@pytest.mark.usefixtures("small_fast")
def test_the_projection_is_built_on_a_thread_and_follows_memories_added_later() -> None:
    store, vecs = store_of(3000)
    q = query(vecs, np.random.default_rng(3))
    assert store.top(q, 1000, 10)  # the first query past FAST_MIN starts the build on a thread; the scan answers
    assert store.last_path == ("exact", 3000)
    built = store.build_index()  # wait for it
    assert built is not None and len(built) == 3000 and store.index is built
    assert built.nbytes == 3000 * ann.DIMS * 4
    more = structured(3200, seed=7)[3000:]
    store.extend(texts_of(199, seed=9), ["line"] * 199, np.full(199, 1001), np.full(199, 2.0), more[:199])
    store.add("the lamp went out over the harbour", "event", 1002, 5.0)  # waits for its vector
    store.embed_pending(_Fixed(more[199]))
    assert same_top(store, more[199], 1003, "the lamp went out over the harbour")[0] == 3199
    assert len(built) == len(store) == 3200  # the query added the 200 new vectors to the projection


@pytest.mark.usefixtures("small_fast")
def test_a_store_far_past_the_catch_up_answers_by_the_scan_until_the_thread_is_done(
        monkeypatch: pytest.MonkeyPatch) -> None:
    store, vecs = store_of(3000)
    store.build_index()
    monkeypatch.setattr(retrieval, "ANN_CATCH_UP", 10)
    more = structured(3100, seed=8)[3000:]
    store.extend(texts_of(100, seed=8), ["line"] * 100, np.full(100, 1001), np.full(100, 2.0), more)
    q = query(vecs, np.random.default_rng(4))
    exact = [s.index for s in store.top(q, 1002, 10, query_text="fog lamp", exact=True)]
    assert [s.index for s in store.top(q, 1002, 10, query_text="fog lamp")] == exact
    assert store.last_path == ("exact", 3100)  # 100 behind: a thread catches up; the scan answered meanwhile
    store.build_index()
    assert overlap_at_k(store, q, 1002, "fog lamp") >= 0.8 and len(store.index or ()) == 3100


@pytest.mark.usefixtures("small_fast")
def test_the_fast_path_needs_no_faiss(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if the ann extra were not installed
    store, vecs = store_of(1000)
    store.build_index()
    assert overlap_at_k(store, query(vecs, np.random.default_rng(5)), 400, "sister") >= 0.8


@pytest.mark.usefixtures("small_fast")
def test_vectors_without_structure_keep_the_exact_scan() -> None:
    rng = np.random.default_rng(8)
    vecs = rng.normal(size=(2000, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store = EpisodicStore()
    store.extend(texts_of(2000), ["line"] * 2000, np.arange(2000) // 3, np.full(2000, 3.0), vecs)
    built = store.build_index()
    assert built is not None and built.kept < ann.KEPT_MIN  # 64 of 384 random directions hold little
    q = vecs[3]
    got = [s.index for s in store.top(q, 700, 10, query_text="sister")]
    assert store.last_path == ("exact", 2000)
    assert got == [s.index for s in store.top(q, 700, 10, query_text="sister", exact=True)]


def test_the_projection_estimates_cosines_and_is_exact_with_every_dimension() -> None:
    vecs = structured(2000, dim=64, seed=2)
    full = ann.Projection(vecs[::4], dims=64)  # as many coordinates as dimensions: a rotation
    full.add(vecs)
    q = vecs[17]
    np.testing.assert_allclose(full.estimate(q), vecs @ q, atol=1e-5)
    part = ann.Projection(vecs[::4], dims=16)
    part.add(vecs[:1000])
    part.add(vecs[1000:])  # added in two steps: the rows keep their order
    est, cos = part.estimate(q), vecs @ q
    assert len(est) == 2000 and np.median(np.abs(est - cos)) < 0.1
    best = set(np.argsort(-cos)[:20].tolist())
    assert len(set(np.argsort(-est)[:100].tolist()) & best) >= 18  # a short list by the estimate holds the best


def test_ties_at_the_cut_go_to_the_newer_memory_whatever_the_path() -> None:
    store = EpisodicStore(dim=4, fast=False)
    vec = np.array([[1.0, 0.0, 0.0, 0.0]], np.float32)
    for turn in (3, 1, 7, 7, 2, 5):  # one text and vector each: the score differs by recency only
        store.extend(["the same line"], ["exchange"], [turn], [4.0], vec)
    store.extend(["the same line"] * 3, ["exchange"] * 3, [7, 7, 7], [4.0] * 3, np.repeat(vec, 3, 0))
    got = [s.index for s in store.top(vec[0], 8, 3, query_text="line")]
    assert got == [8, 7, 6]  # five memories tie at turn 7: the three latest win, newest first


def _memory(n: int) -> Memory:
    """Eve's memory with ``n`` episodic memories over ``n // 2`` turns, a structured fixed encoder."""
    card = load_card(ROOT / "characters" / "eve.yaml")
    texts = texts_of(n)
    mem = Memory(card, MemoryConfig(), embedder=_Table(dict(zip(texts, structured(n), strict=True))))
    for i, text in enumerate(texts):
        mem.remember(text, "exchange" if i % 3 else "gift", i // 2)
    return mem


@pytest.mark.usefixtures("small_fast")
def test_forgotten_memories_are_never_retrieved_by_the_fast_path() -> None:
    mem = _memory(2400)
    q, text = structured(2400)[2300], mem.store.texts[2300]  # a memory from after the rollback point
    mem.retrieve(q, k=10, query_text=text)  # embeds; the index is built on a thread meanwhile
    mem.store.build_index()
    before = [s.index for s in mem.retrieve(q, k=10, query_text=text)]
    assert mem.store.last_path[0] == "fast" and before[0] == 2300
    mem.forget_after(999)
    assert len(mem.store) == 2000 and mem.store.index is None  # a new store: the old index is dropped with it
    mem.store.build_index()
    after = mem.retrieve(q, now=999, k=10, query_text=text)
    assert mem.store.last_path[0] == "fast"
    assert all(s.turn <= 999 for s in after) and 2300 not in [s.index for s in after]
    assert [s.index for s in after] == same_top(mem.store, q, 999, text)


@pytest.mark.usefixtures("small_fast")
def test_a_saved_and_loaded_memory_retrieves_the_same_through_the_fast_path() -> None:
    mem = _memory(1200)
    q = structured(1200)[5]
    mem.retrieve(q, k=10)
    mem.store.build_index()
    want = [s.index for s in mem.retrieve(q, k=10, query_text="sister bees")]
    data = json.loads(json.dumps(mem.to_json()))  # plain JSON: no vectors, no index, no pickle
    assert "vectors" not in data
    back = Memory.from_json(data, mem.card, mem.config, embedder=mem.embedder)
    back.retrieve(q, k=10)
    back.store.build_index()
    got = [s.index for s in back.retrieve(q, k=10, query_text="sister bees")]
    assert back.store.last_path[0] == "fast"
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


def _loop_top(store: EpisodicStore, q: np.ndarray, now: int, text: str, decay: float, k: int = 10) -> list[int]:
    """The top ``k`` by :func:`score_loop` (plain Python over every memory), ties to the newer memory."""
    doc_terms = [{t: terms(x).count(t) for t in terms(x)} for x in store.texts]
    plain = score_loop(store.vectors.tolist(), store.turns.tolist(), store.importance.tolist(), q.tolist(), now,
                       decay=decay, doc_terms=doc_terms, query_text=text)
    return sorted(range(len(plain)), key=lambda j: (-round(plain[j], 9), -int(store.turns[j]), -j))[:k]


@pytest.mark.parametrize("decay", [retrieval.DEFAULT_DECAY, 0.9, 1.0, 1.05])
def test_the_kept_recency_and_importance_columns_follow_new_memories_and_turns(decay: float) -> None:
    """The recency/importance part is kept between queries; it must score as a fresh plain-Python computation
    after memories are added (also out of turn order, as summaries are), at later turns, and at a turn older
    than the newest memory (ages below 0 count as 0)."""
    rng = np.random.default_rng(6)
    vecs = structured(900, seed=6)
    store = EpisodicStore(dim=64)
    texts = texts_of(900, seed=6)
    turns = np.arange(900) // 3
    turns[::7] = np.maximum(turns[::7] - 5, 0)  # a summary keeps the turn its exchange began
    imp = rng.choice([2.0, 4.0, 7.0, 9.5], 900)
    store.extend(texts[:600], ["exchange"] * 600, turns[:600], imp[:600], vecs[:600])
    for now, upto in ((200, 600), (260, 600), (150, 600), (300, 601), (305, 750), (305, 900), (400, 900)):
        if upto > len(store):
            store.extend(texts[len(store):upto], ["line"] * (upto - len(store)), turns[len(store):upto],
                         imp[len(store):upto], vecs[len(store):upto])
        q = query(vecs, rng)
        text = " ".join(rng.choice(WORDS, size=3))
        got = [s.index for s in store.top(q, now, 10, query_text=text, decay=decay, exact=True)]
        assert got == _loop_top(store, q, now, text, decay), (now, upto)
        parts = store.top(q, now, 1, query_text=text, decay=decay, exact=True)[0]
        score, r, i, v, _ = store.scores(q, now, query_text=text, decay=decay)
        assert parts.recency == pytest.approx(r[parts.index]) and parts.score == pytest.approx(score[parts.index])


def test_the_rest_of_the_score_is_the_score_less_its_cosine_part() -> None:
    store, vecs = store_of(800)
    q = vecs[40]
    for text, lexical in (("sister bees harbour", 0.5), ("", 0.5), ("fog lamp", 0.0), ("fog lamp", 1.0)):
        score, _, _, _, cos = store.scores(q, 300, query_text=text, lexical=lexical)
        share = lexical if text and lexical > 0 else 0.0
        cosine_part = retrieval.DEFAULT_WEIGHTS.relevance * (1.0 - share) * minmax(cos)
        np.testing.assert_allclose(store.rest(300, query_text=text, lexical=lexical), score - cosine_part,
                                   rtol=1e-9, atol=1e-9)

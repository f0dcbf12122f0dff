"""Sorted and random access behind the fast retrieval path: each agrees with the full computation it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from game.cast import ann, retrieval
from game.cast.by_importance import ByImportance
from game.cast.retrieval import EpisodicStore, LexicalIndex, Weights

WORDS = "the a you my tide lamp kettle gull fog stars sister bees harbour bread ferry storm lantern rope".split()
needs_faiss = pytest.mark.skipif(not ann.available(), reason="faiss (the ann extra) is not installed")


def test_by_importance_gives_every_memory_from_a_turn_on_also_when_they_arrive_late() -> None:
    rng = np.random.default_rng(0)
    by = ByImportance()
    turns, imps = [], []
    for _ in range(40):  # batches, some of them older than what came before (summaries carry their first turn)
        m = int(rng.integers(1, 30))
        t = rng.integers(0, 400, m) if rng.random() < 0.3 else np.full(m, len(turns) // 3 + 400)
        imp = rng.choice(np.array([2.0, 4.0, 4.75, 7.0], np.float32), m)
        by.add(np.arange(len(turns), len(turns) + m), t, imp)
        turns += t.tolist()
        imps += imp.tolist()
    turns_a, imps_a = np.array(turns), np.array(imps, np.float32)
    assert len(by) == len(turns) and sorted(by.values()) == sorted(set(imps_a.tolist()))
    for value in by.values():
        for since in (-1, 0, 137, 399, 400, 410, 10_000):
            want = np.flatnonzero((imps_a == np.float32(value)) & (turns_a >= since))
            assert sorted(by.since(value, since).tolist()) == want.tolist()
        newest = by.newest(value, 5)
        mine = np.flatnonzero(imps_a == np.float32(value))
        assert len(newest) == min(5, len(mine))
        assert turns_a[newest].min() >= np.sort(turns_a[mine])[-len(newest)]
    assert by.since(9.5, 0).size == 0


def _lexical(n: int, seed: int = 0) -> tuple[LexicalIndex, list[str]]:
    rng = np.random.default_rng(seed)
    index = LexicalIndex()
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 12)))) for _ in range(n)]
    for text in texts:
        index.add(text)
    return index, texts


@pytest.mark.parametrize("query", ["the sister", "sister bees harbour", "you my you the a", "lantern", "nothing"])
def test_random_access_bm25_equals_the_full_scores_and_the_term_bounds_hold(query: str) -> None:
    index, _ = _lexical(3000)
    n = 2500  # the first n documents: as a store whose last memories wait for their vectors
    full = index.scores(query, n)
    qts = index.query_terms(query, n)
    docs = np.arange(n)
    np.testing.assert_allclose(index.of(qts, docs), full, rtol=1e-12, atol=1e-12)
    got_docs, got = index.of_postings(qts)
    assert got_docs.tolist() == np.flatnonzero(full > 0).tolist()
    np.testing.assert_allclose(got, full[got_docs], rtol=1e-12)
    assert all(t.postings <= index.df(t.term) for t in qts)  # postings past n left out, df counts them all
    for t in qts:  # no document gets more from a term than its bound
        alone = index.of([t], docs)
        assert alone.max() <= index.upper(t)
    assert [t.postings for t in qts] == sorted(t.postings for t in qts)


def _store(n: int, seed: int, late: bool) -> tuple[EpisodicStore, np.ndarray]:
    rng = np.random.default_rng(seed)
    dim = 32
    topics = rng.normal(size=(12, dim))
    v = topics[rng.integers(0, 12, n)] + 0.4 * rng.normal(size=(n, dim))
    vecs = np.asarray(v / np.linalg.norm(v, axis=1, keepdims=True), np.float32)
    turns = np.arange(n) // 2
    if late:  # summaries of old exchanges arrive after newer memories
        old = rng.random(n) < 0.2
        turns[old] = np.maximum(0, turns[old] - rng.integers(1, 40, int(old.sum())))
    imp = rng.choice(np.array([2.0, 3.0, 4.0, 4.6, 5.0, 7.0, 7.9, 10.0]), n)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 9)))) for _ in range(n)]
    store = EpisodicStore(dim=dim)
    store.extend(texts, ["exchange"] * n, turns, imp, vecs)
    return store, vecs


class _TrueLists:
    """A cosine index whose lists are the true nearest (the bound's premise holds): the rest of the path decides."""

    def __init__(self, store: EpisodicStore) -> None:
        self.store = store

    def __len__(self) -> int:
        return len(self.store.vectors)

    def add(self, vectors: np.ndarray) -> None:
        pass

    def search(self, q: np.ndarray, k: int, ef: int) -> tuple[np.ndarray, np.ndarray]:
        cos = self.store.vectors @ q
        ids = np.argsort(-cos, kind="stable")[:k]
        return ids, cos[ids]

    def code_error(self, q: np.ndarray) -> float:
        return 0.0


@pytest.mark.parametrize("late", [False, True])
@pytest.mark.parametrize("weights", [retrieval.DEFAULT_WEIGHTS, Weights(2.0, 0.5, 1.0), Weights(0.0, 1.0, 3.0),
                                     Weights(1.0, 0.0, 3.0)])
def test_the_fast_path_by_sorted_access_ranks_as_the_exact_scan(monkeypatch: pytest.MonkeyPatch, late: bool,
                                                                 weights: Weights) -> None:
    monkeypatch.setattr(retrieval, "FAST_MIN", 500)
    monkeypatch.setattr(retrieval, "LEXICAL_POSTINGS", 64)  # the common terms by random access and a bound
    store, vecs = _store(4000, seed=int(late), late=late)
    store.index = _TrueLists(store)  # type: ignore[assignment]  # a stand-in with the same methods
    rng = np.random.default_rng(7)
    fast = 0
    for text in ("sister bees", "the a you my", "you", "", "nothing matches", "harbour harbour ferry the"):
        for decay in (0.995, 0.9, 1.0):
            q = vecs[int(rng.integers(0, len(vecs)))] + 0.3 * rng.normal(size=vecs.shape[1]).astype(np.float32)
            q = np.asarray(q / np.linalg.norm(q), np.float32)
            now = int(store.turns.max()) + int(rng.integers(0, 3))
            exact = store.top(q, now, 10, weights=weights, decay=decay, query_text=text, exact=True)
            got = store.top(q, now, 10, weights=weights, decay=decay, query_text=text)
            fast += store.last_path[0] == "fast"
            assert [s.index for s in got] == [s.index for s in exact], (text, decay)
            np.testing.assert_allclose([s.score for s in got], [s.score for s in exact], rtol=1e-6, atol=1e-6)
    assert fast >= 12  # the bound answered most of them; the rest went to the scan, with the same answer


@needs_faiss
def test_the_codes_error_bound_holds_for_every_vector_the_index_returns() -> None:
    rng = np.random.default_rng(3)
    v = rng.normal(size=(3000, 48)) + 0.8 * rng.normal(size=48)  # off-centre, as sentence vectors are
    vecs = np.asarray(v / np.linalg.norm(v, axis=1, keepdims=True), np.float32)
    index = ann.CosineIndex(48, vecs[:500])  # ranges fitted on a sample: later vectors fall outside them
    index.add(vecs)
    for _ in range(20):
        q = np.asarray(rng.normal(size=48), np.float32)
        q /= np.linalg.norm(q)
        ids, ip = index.search(q, 200, 256)
        err = index.code_error(q)
        assert np.all(np.abs(vecs[ids] @ q - ip) <= err)
        assert err <= float(np.abs(q) @ index.error) + 1e-6  # never looser than the per-component bound

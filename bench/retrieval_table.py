"""The retrieval table of ``bench/memory.py --only retrieval``: ways to rank the same score, one run.

Every way returns the top 10 of N episodic memories by the score of
:meth:`game.cast.retrieval.EpisodicStore.scores` (recency + importance + relevance, relevance
= MiniLM cosine mixed with BM25), for the same store and queries:

* ``exact numpy scan`` (the baseline): ``EpisodicStore.top(exact=True)``, every cosine by one
  BLAS matrix-vector product, the rest from the columns the store keeps between queries.
* ``faiss flat + BM25`` (the library peer, retrieve then rerank): faiss ``IndexFlatIP`` (exact
  inner-product search) gives the :data:`PEER_POOL` nearest memories by cosine and the nearest
  of ``-q`` (so the cosine's min-max is exact), BM25 its :data:`PEER_POOL` best; those are
  scored exactly and ranked.
* ``faiss HNSW + top by the rest`` (a library ANN peer): recency, importance and BM25 for every
  memory (``EpisodicStore.rest``), the :data:`PREV_CANDIDATES` best by them plus the
  :data:`PREV_EXTREMES` faiss-HNSW neighbours of ``q`` and ``-q``, rescored.
* ``projection + rerank (new default)``: ``EpisodicStore.top()`` from ``FAST_MIN`` memories
  (every cosine estimated from a 64-dimensional projection, the best by the whole score scored
  exactly: ``game/cast/retrieval.py``), and the same with the kept columns dropped before each
  query (``after an add``: what the first query after a new memory pays).

The faiss rows need faiss (the ``ann`` extra); without it they are left out.

Per way: CPU ms p50/p95 (``time.process_time``, the whole process: BLAS and faiss run on one
thread) over the in-sample and the held-out queries, recall@10 against the exact scan (mean
over queries), the memory it holds beyond the store's columns (MB: the vector matrix for the
scan; the way's own index for the others) and the CPU cost of adding one memory whose vector
is known (µs: the store's append, BM25 postings included, plus the way's index update).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from game.cast.retrieval import DEFAULT_LEXICAL, DEFAULT_WEIGHTS, EpisodicStore, minmax

#: Nearest memories by cosine, and best by BM25, the faiss flat peer rescores.
PEER_POOL = 256
#: The previous fast path's candidates by recency, importance and BM25, and its HNSW extremes.
PREV_CANDIDATES = 2048
PREV_EXTREMES = 16
#: The previous fast path's HNSW sizes (faiss ``M``, ``efConstruction``, ``efSearch``).
HNSW = (32, 40, 48)

Query = tuple[np.ndarray, str]


def cpu_ms(fn: Callable[[], object]) -> tuple[float, object]:
    """CPU ms of the whole process for one call, and its result."""
    t0 = time.process_time()
    out = fn()
    return (time.process_time() - t0) * 1000, out


def exact_rescore(store: EpisodicStore, cand: np.ndarray, q: np.ndarray, now: int, text: str,
                  cos_range: tuple[float, float], k: int) -> list[int]:
    """The top ``k`` of ``cand`` by the store's score, the cosine scaled over ``cos_range``."""
    w = DEFAULT_WEIGHTS
    lo, hi = cos_range
    cos = (store.vectors[cand] @ q).astype(np.float64)
    c = (cos - lo) / (hi - lo) if hi - lo > 1e-12 else np.full(len(cand), 0.5)
    score = store.rest(now, query_text=text)[cand] + w.relevance * (1.0 - DEFAULT_LEXICAL) * c
    return [int(x) for x in cand[np.argsort(-score)[:k]]]


@dataclass
class Way:
    """One way of ranking: its name, a ``top(q, now, text) -> ids`` and what adding one costs."""

    name: str
    top: Callable[[np.ndarray, int, str], list[int]]
    extra_bytes: int
    add_one: Callable[[np.ndarray], object] = field(default=lambda v: None)


def exact_way(store: EpisodicStore) -> Way:
    return Way("exact numpy scan (baseline)",
               lambda q, now, text: [s.index for s in store.top(q, now, 10, query_text=text, exact=True)],
               int(store.vectors.nbytes))


def projection_way(store: EpisodicStore) -> Way:
    index = store.build_index()
    assert index is not None, "the store has no embedded memories"
    return Way("projection + rerank (new default)",
               lambda q, now, text: [s.index for s in store.top(q, now, 10, query_text=text)],
               index.nbytes, lambda v: index.add(v.reshape(1, -1)))


def after_add_way(store: EpisodicStore) -> Way:
    """The new default with the kept columns dropped first, as the first query after a new memory finds them."""
    index = store.index
    assert index is not None, "build the projection first (projection_way)"

    def top(q: np.ndarray, now: int, text: str) -> list[int]:
        store.drop_kept()
        return [s.index for s in store.top(q, now, 10, query_text=text)]

    return Way("  same, first query after an add", top, index.nbytes)


def faiss_flat_way(store: EpisodicStore) -> Way:
    import faiss

    index: Any = faiss.IndexFlatIP(store.dim)
    index.add(np.ascontiguousarray(store.vectors))

    def top(q: np.ndarray, now: int, text: str) -> list[int]:
        qq = np.stack([q, -q]).astype(np.float32)
        dist, ids = index.search(qq, PEER_POOL)
        bm = store.lexical.scores(text, len(store))
        cand = np.unique(np.concatenate([ids[0], np.argpartition(-bm, PEER_POOL)[:PEER_POOL]]))
        return exact_rescore(store, cand, q, now, text, (float(-dist[1][0]), float(dist[0][0])), 10)

    return Way("faiss flat + BM25 (peer)", top, int(index.ntotal) * store.dim * 4,
               lambda v: index.add(v.reshape(1, -1)))


def previous_way(store: EpisodicStore) -> Way:
    import faiss

    links, ef_construction, ef_search = HNSW
    index: Any = faiss.IndexHNSWFlat(store.dim, links, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = ef_construction
    index.hnsw.efSearch = ef_search
    index.add(np.ascontiguousarray(store.vectors))
    w = DEFAULT_WEIGHTS

    def top(q: np.ndarray, now: int, text: str) -> list[int]:
        other = store.rest(now, query_text=text)
        best = np.argpartition(-other, PREV_CANDIDATES - 1)[:PREV_CANDIDATES]
        _, ids = index.search(np.stack([q, -q]).astype(np.float32), PREV_EXTREMES)
        cand = np.unique(np.concatenate([best, ids[ids >= 0]]))
        cos = (store.vectors[cand] @ q).astype(np.float64)
        score = other[cand] + w.relevance * 0.5 * minmax(cos)
        return [int(x) for x in cand[np.argsort(-score)[:10]]]

    extra = int(index.ntotal) * (store.dim * 4 + links * 2 * 4)  # its own copy of the vectors, level-0 links
    return Way("faiss HNSW + top by the rest (peer)", top, extra, lambda v: index.add(v.reshape(1, -1)))


def pct(values: Sequence[float], p: float) -> float:
    return float(np.percentile(values, p)) if values else float("nan")


def measure(ways: list[Way], sets: dict[str, list[Query]], now: int) -> dict[str, dict[str, tuple[float, ...]]]:
    """Per way and query set: ``(p50 ms, p95 ms, recall@10)`` against the first way (the exact scan)."""
    out: dict[str, dict[str, tuple[float, ...]]] = {w.name: {} for w in ways}
    for set_name, queries in sets.items():
        times: dict[str, list[float]] = {w.name: [] for w in ways}
        recall: dict[str, list[float]] = {w.name: [] for w in ways}
        for q, text in queries:
            truth: set[int] = set()
            for way in ways:
                ms, got = cpu_ms(lambda way=way, q=q, text=text: way.top(q, now, text))  # type: ignore[misc]
                ids = set(got) if isinstance(got, list) else set()
                if not truth:
                    truth = ids
                times[way.name].append(ms)
                recall[way.name].append(len(ids & truth) / max(1, len(truth)))
        for way in ways:
            out[way.name][set_name] = (pct(times[way.name], 50), pct(times[way.name], 95),
                                       statistics.mean(recall[way.name]))
    return out


def append_us(store: EpisodicStore, vec: np.ndarray, repeat: int = 20) -> float:
    """Median CPU µs to append one memory with its vector to ``store`` (columns, vector row, BM25 postings,
    no index update)."""
    times = []
    for i in range(repeat):
        t0 = time.process_time()
        store.extend([f"Ada gave me the lantern on night {i}."], ["gift"], [int(store.turns.max()) + 1], [7.0],
                     vec.reshape(1, -1))
        times.append((time.process_time() - t0) * 1e6)
    return statistics.median(times)


def index_add_us(way: Way, vec: np.ndarray, repeat: int = 20) -> float:
    """Median CPU µs of ``way``'s own index update for one vector (after the queries: it changes the index)."""
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        way.add_one(vec)
        times.append((time.process_time() - t0) * 1e6)
    return statistics.median(times)


def print_rows(label: str, n: int, ways: list[Way], figures: dict[str, dict[str, tuple[float, ...]]],
               adds: dict[str, float], sets: Sequence[str]) -> None:
    for way in ways:
        f = figures[way.name]
        cols = "   ".join(f"{a[0]:>7.2f}{a[1]:>7.2f}{a[2]:>7.3f}" for a in (f.get(s, (np.nan,) * 3) for s in sets))
        print(f"  {label:<13}{n:>8,}  {way.name:<36}{cols}  {way.extra_bytes / 2**20:>7.1f}  "
              f"{adds.get(way.name, 0):>8.0f}")


def header(sets: Sequence[str]) -> str:
    """The table's header for query sets named ``sets`` (their first letters head the columns)."""
    cols = "   ".join(f"{s[0] + ' p50':>7}{'p95':>7}{'recall':>7}" for s in sets)
    return f"  {'vectors':<13}{'memories':>8}  {'way':<36}{cols}  {'MB':>7}  {'add µs':>8}"


__all__ = ["Way", "after_add_way", "append_us", "exact_way", "faiss_flat_way", "index_add_us", "measure",
           "header", "previous_way", "print_rows", "projection_way"]

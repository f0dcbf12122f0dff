"""Episodic memory storage and scoring: recency, importance, relevance (Park et al. 2023).

Score of memory ``i`` for a query ``q`` at game turn ``now``::

    score_i     = w_r * mm(recency)_i + w_i * mm(importance)_i + w_v * relevance_i
    recency_i   = decay ** (now - turn_i)                       # exponential over game turns
    relevance_i = (1 - L) * mm(e_i . q)_i + L * mm(bm25)_i      # cosine of unit vectors, and BM25
    mm(x)       = (x - min x) / (max x - min x)                  # over the candidates; 0.5 when all equal

This is the retrieval function of Generative Agents (Park, O'Brien, Cai, Morris,
Liang, Bernstein, "Generative Agents: Interactive Simulacra of Human Behavior",
UIST 2023, arXiv:2304.03442, section 4.1; code:
joonspk-research/generative_agents ``persona/cognitive_modules/retrieve.py``; see
``shared/reference/character-engines.md`` section (b)):

- The paper uses decay 0.995 per game hour since last access, and all three weights
  1. Its code multiplies them by global weights 0.5 (recency), 3 (relevance) and 2
  (importance), and min-max scales each component (0.5 when all are equal).
- Ours: recency counts *game turns since the memory was made* (one turn = one player
  intent), with decay :data:`DEFAULT_DECAY` = 0.995 per turn (the paper's number,
  turns for hours). Retrieval has no side effect (no "last accessed" update), so a
  replay from a transcript retrieves the same memories. Recency is computed in
  float64 and so stays strictly decreasing with age up to ~140,000 turns (0.995**age
  underflows near age 148,000; all older memories then tie at 0).
- Weights :data:`DEFAULT_WEIGHTS`: recency 1, importance 1, relevance 3. Relevance is
  weighted as in the code's global weights (3); importance is 1 rather than 2
  because ours comes from an authored table by event kind (coarse, see
  :mod:`game.cast.memory`), not from an LLM's 1-10 rating of each memory.
  :data:`PAPER_WEIGHTS` and :data:`GA_CODE_WEIGHTS` are the presets.
- Relevance mixes the MiniLM cosine with Okapi BM25 over words and word pairs
  (:class:`LexicalIndex`), half and half (:data:`DEFAULT_LEXICAL`). The paper uses
  the cosine alone. Measured on the test in ``tests/cast/test_memory.py`` (a fact told
  once, 24 near-paraphrases told after it, 500 turns of small talk): MiniLM alone
  ranks "My sister's name is Maren..." 4th to 12th among the paraphrases for
  "what's my sister's name?" and the fact falls out of the top 40 overall; with the
  BM25 half it ranks first, and within the top 10 for 9 of 11 phrasings tried. With
  the paper's equal weights it is not retrieved at all (recency and importance of
  recent small talk win), hence relevance 3.

:class:`EpisodicStore` holds the memories in numpy arrays grown in chunks: vectors
``(capacity, dim)`` float32, turns int64, importance float32; scoring is three
vector operations and an ``argpartition``. :func:`score_loop` is the same score in
plain Python, for the tests.

From :data:`FAST_MIN` memories on, in a store made with ``fast=True`` (opt-in, see
:class:`EpisodicStore`) and faiss installed (the ``ann`` extra),
:meth:`EpisodicStore.top` ranks the same score without computing every cosine: the
other three parts are exact for every memory, the best :data:`FAST_CANDIDATES` by them
and the HNSW neighbours of ``q`` and ``-q`` (the cosine's extremes, :mod:`game.cast.ann`)
are rescored exactly. The cosine's min-max then comes from those candidates, so the
ranking is exact whenever the index finds the largest and smallest cosine.
"""

from __future__ import annotations

import hashlib
import math
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from game.cast.ann import AnnIndex, make_index

#: Recency decay per game turn (Park et al. 2023 use 0.995 per game hour).
DEFAULT_DECAY = 0.995
#: Rows added to the vector matrix each time it fills.
CHUNK_ROWS = 1024
#: Share of relevance that comes from BM25 word matching (the rest from MiniLM cosine).
DEFAULT_LEXICAL = 0.5
#: Memories from which :meth:`EpisodicStore.top` ranks through the ANN index (when faiss is installed).
FAST_MIN = 20_000
#: Memories rescored exactly by the fast path: the best by recency, importance and BM25 (see ``top``).
FAST_CANDIDATES = 2048
#: Nearest neighbours of ``q`` and of ``-q`` the fast path asks the ANN index for (the cosine's extremes).
FAST_EXTREMES = 16


@dataclass(frozen=True)
class Weights:
    """Weights of the three min-max-scaled components of a memory's score."""

    recency: float = 1.0
    importance: float = 1.0
    relevance: float = 3.0


DEFAULT_WEIGHTS = Weights()
#: Park et al. 2023, section 4.1: all alphas 1.
PAPER_WEIGHTS = Weights(1.0, 1.0, 1.0)
#: generative_agents ``retrieve.py`` global weights: recency 0.5, relevance 3, importance 2.
GA_CODE_WEIGHTS = Weights(0.5, 2.0, 3.0)


class TextEncoder(Protocol):
    """Anything that embeds texts to unit vectors: ``encode(texts) -> (N, dim) float32``.

    :class:`game.models.embedder.Embedder` (MiniLM, 384 dimensions) is the real one;
    :class:`HashEmbedder` is a cheap stand-in with no model.
    """

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Feature-hashing bag of words and word pairs, L2-normalised: ``(N, dim)`` float32.

    No model and no meaning: two texts are close when they share words. For tests and
    benchmarks that measure sizes and times rather than meaning, and as a fallback
    when the model extras are not installed. Deterministic across runs (BLAKE2b).
    """

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.model_id = f"hash-{dim}"

    def _index(self, token: str) -> tuple[int, float]:
        h = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
        return h % self.dim, 1.0 if (h >> 40) & 1 else -1.0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for row, text in enumerate(texts):
            words = [w.lower() for w in _WORD.findall(text)]
            for token in (*words, *(f"{a} {b}" for a, b in zip(words, words[1:], strict=False))):
                i, sign = self._index(token)
                out[row, i] += sign
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out


def minmax(x: np.ndarray) -> np.ndarray:
    """Scale ``x`` to [0, 1] over its entries; all 0.5 when they are all equal (as GA's code)."""
    if x.size == 0:
        return x.astype(np.float64)
    lo, hi = float(x.min()), float(x.max())
    if hi - lo <= 1e-12:
        return np.full(x.shape, 0.5, np.float64)
    return (x.astype(np.float64) - lo) / (hi - lo)


def recency(turns: np.ndarray, now: int, decay: float = DEFAULT_DECAY) -> np.ndarray:
    """``decay ** (now - turn)``, float64, ages below 0 counted as 0: strictly decreasing with age."""
    age = np.maximum(now - turns.astype(np.int64), 0).astype(np.float64)
    return np.power(float(decay), age)


_TERM = re.compile(r"[^\W_]+(?:['-][^\W_]+)*", re.UNICODE)


_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b", re.IGNORECASE)


def terms(text: str) -> list[str]:
    """Lower-cased words and adjacent word pairs.

    A possessive ``'s`` is dropped (``sister's`` -> ``sister``); hyphenated words stay
    whole (``sister-in-law`` is not ``sister``).
    """
    words = [w.lower() for w in _TERM.findall(_POSSESSIVE.sub("", text.replace("’", "'")))]
    return words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]


class LexicalIndex:
    """An inverted index scored with Okapi BM25 (Robertson & Zaragoza 2009), k1 = 1.2, b = 0.75.

    Postings are stdlib ``array('i')`` lists (document ids, term counts) read as numpy
    views at query time, so scoring a query costs the postings of its terms, not the
    number of documents.
    """

    K1 = 1.2
    B = 0.75

    def __init__(self) -> None:
        self._docs: dict[str, array[int]] = {}
        self._tf: dict[str, array[int]] = {}
        self._lengths: array[float] = array("f")

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, text: str) -> int:
        """Index the next document; returns its id (0, 1, 2...)."""
        doc = len(self._lengths)
        counts: dict[str, int] = {}
        for t in terms(text):
            counts[t] = counts.get(t, 0) + 1
        for t, c in counts.items():
            if t not in self._docs:
                self._docs[t], self._tf[t] = array("i"), array("i")
            self._docs[t].append(doc)
            self._tf[t].append(c)
        self._lengths.append(float(sum(counts.values())))
        return doc

    def scores(self, query: str, n: int | None = None) -> np.ndarray:
        """BM25 score of every document (the first ``n``) for ``query``: ``(n,)`` float64, 0 where no term matches."""
        total = len(self._lengths)
        n = total if n is None else min(n, total)
        out = np.zeros(n, np.float64)
        if n == 0:
            return out
        lengths = np.frombuffer(self._lengths, np.float32)[:total].astype(np.float64)
        avgdl = max(float(lengths.mean()), 1e-9)
        norm = self.K1 * (1.0 - self.B + self.B * lengths / avgdl)
        for t in set(terms(query)):
            docs_a = self._docs.get(t)
            if docs_a is None:
                continue
            docs = np.frombuffer(docs_a, np.int32)
            tf = np.frombuffer(self._tf[t], np.int32).astype(np.float64)
            df = len(docs)
            idf = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
            keep = docs < n
            d = docs[keep]
            out[d] += idf * tf[keep] * (self.K1 + 1.0) / (tf[keep] + norm[d])
        return out


@dataclass(frozen=True)
class Scored:
    """One retrieved memory and the parts of its score (each part min-max scaled, in [0, 1])."""

    index: int
    text: str
    kind: str
    turn: int
    importance: float
    score: float
    recency: float
    relevance: float
    importance_scaled: float
    cosine: float


class EpisodicStore:
    """Episodic memories as columns: texts, kinds, turns, importances, unit vectors.

    Vectors live in a ``(capacity, dim)`` float32 matrix grown by ``chunk`` rows; a
    memory added without a vector is embedded later, in one batch
    (:meth:`embed_pending`), so recording a turn costs no model call.

    Args:
        dim: vector dimension (384 for MiniLM).
        chunk: rows added each time the matrix fills.
        fast: rank through an ANN index from :data:`FAST_MIN` memories on, when faiss is
            installed (see :meth:`top`); ``False`` (default): always the exact scan. Off by
            default: at 100,000 random vectors its recall@10 is 0.79-0.89 (``bench/memory.py``),
            under the 0.95 it must reach to replace the exact ranking.
    """

    def __init__(self, dim: int = 384, chunk: int = CHUNK_ROWS, fast: bool = False) -> None:
        self.dim = dim
        self.fast = fast
        #: the ANN index of the embedded vectors (built at :data:`FAST_MIN` memories; ``None`` before, or without faiss)
        self.ann: AnnIndex | None = None
        self.chunk = max(1, chunk)
        self.texts: list[str] = []
        self.kinds: list[str] = []
        self._turns = np.zeros(self.chunk, np.int64)
        self._importance = np.zeros(self.chunk, np.float32)
        self._vectors = np.zeros((self.chunk, dim), np.float32)
        self._embedded = 0  # rows [0, _embedded) have vectors
        self.lexical = LexicalIndex()

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def capacity(self) -> int:
        """Rows allocated in the vector matrix."""
        return int(self._vectors.shape[0])

    @property
    def turns(self) -> np.ndarray:
        """``(N,)`` int64 game turns."""
        return self._turns[: len(self)]

    @property
    def importance(self) -> np.ndarray:
        """``(N,)`` float32 importances (1-10)."""
        return self._importance[: len(self)]

    @property
    def vectors(self) -> np.ndarray:
        """``(N_embedded, dim)`` float32 unit vectors of the embedded memories."""
        return self._vectors[: self._embedded]

    @property
    def pending(self) -> int:
        """How many memories still wait for a vector."""
        return len(self) - self._embedded

    def _grow(self, need: int) -> None:
        cap = self.capacity
        if need <= cap:
            return
        new = cap + self.chunk * math.ceil((need - cap) / self.chunk)
        turns = np.zeros(new, np.int64)
        turns[:cap] = self._turns
        imp = np.zeros(new, np.float32)
        imp[:cap] = self._importance
        vec = np.zeros((new, self.dim), np.float32)
        vec[:cap] = self._vectors
        self._turns, self._importance, self._vectors = turns, imp, vec

    def add(self, text: str, kind: str, turn: int, importance: float) -> int:
        """Append one memory (its vector comes later); returns its index."""
        i = len(self)
        self._grow(i + 1)
        self.texts.append(text)
        self.kinds.append(kind)
        self._turns[i] = turn
        self._importance[i] = importance
        self.lexical.add(text)
        return i

    def extend(self, texts: Sequence[str], kinds: Sequence[str], turns: Sequence[int] | np.ndarray,
               importance: Sequence[float] | np.ndarray, vectors: np.ndarray | None = None) -> None:
        """Append many memories at once; ``vectors`` ``(n, dim)`` unit rows when already known.

        Raises:
            ValueError: lengths differ, or vectors are given while others wait for theirs.
        """
        n = len(texts)
        if not (len(kinds) == len(turns) == len(importance) == n):
            raise ValueError("texts, kinds, turns and importance must have the same length")
        if vectors is not None and (vectors.shape != (n, self.dim) or self.pending):
            raise ValueError(f"vectors must be ({n}, {self.dim}) and no memory may be waiting for one")
        start = len(self)
        self._grow(start + n)
        self.texts.extend(texts)
        self.kinds.extend(kinds)
        for text in texts:
            self.lexical.add(text)
        self._turns[start:start + n] = np.asarray(turns, np.int64)
        self._importance[start:start + n] = np.asarray(importance, np.float32)
        if vectors is not None:
            self._vectors[start:start + n] = vectors
            self._embedded = start + n
            if self.ann is not None:
                self.ann.add(self._vectors[start:start + n])

    def embed_pending(self, encoder: TextEncoder) -> int:
        """Embed every memory still without a vector, in one batch; returns how many."""
        n = self.pending
        if n:
            start = self._embedded
            vecs = np.asarray(encoder.encode(self.texts[start:]), np.float32)
            self._vectors[start:start + n] = vecs
            self._embedded = start + n
            if self.ann is not None:
                self.ann.add(vecs)
        return n

    def build_index(self) -> bool:
        """Build the ANN index over the embedded vectors now (else it is built on the first
        :meth:`top` from :data:`FAST_MIN` memories); ``False`` when faiss is not installed."""
        if self.ann is None:
            self.ann = make_index(self.dim)
            if self.ann is not None:
                self.ann.add(self.vectors)
        return self.ann is not None

    def scores(self, query: np.ndarray, now: int, weights: Weights = DEFAULT_WEIGHTS,
               decay: float = DEFAULT_DECAY, mask: np.ndarray | None = None, query_text: str = "",
               lexical: float = DEFAULT_LEXICAL) -> tuple[np.ndarray, ...]:
        """Scores of every embedded memory (vectorised).

        Args:
            query: ``(dim,)`` unit vector.
            now: the current game turn.
            weights, decay: see the module docstring.
            mask: ``(N,)`` bool, the candidates (min-max runs over these only).
            query_text: the query's text, for the BM25 half of relevance (none: cosine only).
            lexical: the BM25 share of relevance, in [0, 1].

        Returns:
            ``(score, recency, importance, relevance, cosine)``, each ``(N,)`` float64;
            the three parts are min-max scaled over the candidates (relevance is the
            ``lexical`` mix of the scaled cosine and the scaled BM25); non-candidates
            score ``-inf``.
        """
        n = self._embedded
        cos = self._vectors[:n] @ np.asarray(query, np.float32)
        rec = recency(self._turns[:n], now, decay)
        imp = self._importance[:n].astype(np.float64)
        bm25 = self.lexical.scores(query_text, n) if query_text and lexical > 0 else None
        m = np.ones(n, bool) if mask is None else mask[:n]
        r, i, v = (np.zeros(n), np.zeros(n), np.zeros(n))
        r[m], i[m], v[m] = minmax(rec[m]), minmax(imp[m]), minmax(cos[m])
        if bm25 is not None:
            v[m] = (1.0 - lexical) * v[m] + lexical * minmax(bm25[m])
        score = weights.recency * r + weights.importance * i + weights.relevance * v
        if mask is not None:
            score = np.where(mask[:n], score, -np.inf)
        return score, r, i, v, cos.astype(np.float64)

    def top(self, query: np.ndarray, now: int, k: int, weights: Weights = DEFAULT_WEIGHTS,
            decay: float = DEFAULT_DECAY, mask: np.ndarray | None = None, query_text: str = "",
            lexical: float = DEFAULT_LEXICAL, exact: bool = False) -> list[Scored]:
        """The ``k`` best-scoring embedded memories, best first (ties: newer first); see :meth:`scores`.

        From :data:`FAST_MIN` memories on (no ``mask``, a ``fast`` store, faiss installed,
        ``exact`` false) the same score is ranked without computing every cosine:

        1. recency, importance and BM25 are computed for every memory (cheap: columns and
           postings) and min-max scaled exactly, as in :meth:`scores`;
        2. the :data:`FAST_CANDIDATES` best by those three parts alone are kept, with the
           :data:`FAST_EXTREMES` nearest neighbours of ``q`` and of ``-q`` from the ANN index;
        3. their cosines are computed exactly; the largest and smallest of them stand for the
           min and max of the cosine over all memories (exact when the index found the
           extremes), and the candidates are scored and ranked exactly.

        A memory outside the candidates can only be missed when its cosine lifts it past
        memories far better on the other three parts, or when the index misses an extreme
        (the cosine is then scaled over a narrower range); ``bench/memory.py`` measures
        recall@10 against the exact ranking.
        """
        n = self._embedded
        if n == 0 or k <= 0:
            return []
        if (not exact and mask is None and self.fast and n >= FAST_MIN and k < FAST_CANDIDATES
                and (self.ann is not None or self.build_index()) and self.ann is not None and len(self.ann) == n):
            return self._top_fast(query, now, k, weights, decay, query_text, lexical)
        score, r, imp, v, cos = self.scores(query, now, weights, decay, mask, query_text, lexical)
        k = min(k, n)
        idx = np.argpartition(-score, k - 1)[:k] if k < n else np.arange(n)
        idx = idx[np.isfinite(score[idx])]
        return self._scored(idx, score, r, imp, v, cos)

    def _scored(self, idx: np.ndarray, score: np.ndarray, r: np.ndarray, imp: np.ndarray, v: np.ndarray,
                cos: np.ndarray, at: np.ndarray | None = None) -> list[Scored]:
        """:class:`Scored` rows for memories ``idx``, best first; ``at``: their rows in the part arrays."""
        rows = dict(zip(idx.tolist(), (at if at is not None else idx).tolist(), strict=True))
        order = sorted(rows, key=lambda j: (-score[rows[j]], -int(self._turns[j]), -j))
        return [Scored(j, self.texts[j], self.kinds[j], int(self._turns[j]), float(self._importance[j]),
                       float(score[rows[j]]), float(r[rows[j]]), float(v[rows[j]]), float(imp[rows[j]]),
                       float(cos[rows[j]])) for j in order]

    def _top_fast(self, query: np.ndarray, now: int, k: int, weights: Weights, decay: float, query_text: str,
                  lexical: float) -> list[Scored]:
        """Step 1-3 of :meth:`top`'s fast path."""
        assert self.ann is not None
        n = self._embedded
        q = np.asarray(query, np.float32)
        r = minmax(recency(self._turns[:n], now, decay))
        imp = minmax(self._importance[:n])
        bm25 = self.lexical.scores(query_text, n) if query_text and lexical > 0 else None
        share = lexical if bm25 is not None else 0.0
        other = weights.recency * r + weights.importance * imp
        b = minmax(bm25) if bm25 is not None else None
        if b is not None:
            other += weights.relevance * share * b
        best = np.argpartition(-other, FAST_CANDIDATES - 1)[:FAST_CANDIDATES]
        near = np.concatenate([self.ann.nearest(q, FAST_EXTREMES), self.ann.nearest(-q, FAST_EXTREMES)])
        cand = np.unique(np.concatenate([best, near[near < n]]))
        cos = (self._vectors[cand] @ q).astype(np.float64)
        c = minmax(cos)
        score = other[cand] + weights.relevance * (1.0 - share) * c
        v = (1.0 - share) * c + share * b[cand] if b is not None else c
        top = np.argpartition(-score, k - 1)[:k] if k < len(cand) else np.arange(len(cand))
        return self._scored(cand[top], score, r[cand], imp[cand], v, cos, at=top)

def score_loop(vectors: list[list[float]], turns: list[int], importance: list[float], query: list[float],
               now: int, weights: Weights = DEFAULT_WEIGHTS, decay: float = DEFAULT_DECAY,
               doc_terms: list[dict[str, int]] | None = None, query_text: str = "",
               lexical: float = DEFAULT_LEXICAL) -> list[float]:
    """The same score as :meth:`EpisodicStore.scores`, in plain Python (the benchmark's baseline).

    Args:
        vectors: one vector (a list of floats) per memory.
        turns, importance: per memory.
        query: the query vector.
        now, weights, decay, query_text, lexical: as :meth:`EpisodicStore.scores`.
        doc_terms: per memory, term -> count (:func:`terms`); needed for the BM25 half.

    Returns:
        One score per memory.
    """
    rec = [decay ** max(now - t, 0) for t in turns]
    rel = [sum(a * b for a, b in zip(vec, query, strict=True)) for vec in vectors]

    def mm(xs: list[float]) -> list[float]:
        lo, hi = min(xs), max(xs)
        if hi - lo <= 1e-12:
            return [0.5] * len(xs)
        return [(x - lo) / (hi - lo) for x in xs]

    r, i, v = mm(rec), mm([float(x) for x in importance]), mm(rel)
    if doc_terms is not None and query_text and lexical > 0:
        n = len(doc_terms)
        lengths = [float(sum(d.values())) for d in doc_terms]
        avgdl = max(sum(lengths) / n, 1e-9)
        qterms = set(terms(query_text))
        df = {t: sum(1 for d in doc_terms if t in d) for t in qterms}
        k1, b = LexicalIndex.K1, LexicalIndex.B
        bm25 = []
        for d, length in zip(doc_terms, lengths, strict=True):
            total = 0.0
            for t in qterms:
                tf = d.get(t, 0)
                if tf:
                    idf = math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    total += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * length / avgdl))
            bm25.append(total)
        v = [(1.0 - lexical) * a + lexical * c for a, c in zip(v, mm(bm25), strict=True)]
    return [weights.recency * a + weights.importance * b_ + weights.relevance * c
            for a, b_, c in zip(r, i, v, strict=True)]


__all__ = [
    "DEFAULT_DECAY",
    "DEFAULT_LEXICAL",
    "DEFAULT_WEIGHTS",
    "FAST_CANDIDATES",
    "FAST_EXTREMES",
    "FAST_MIN",
    "GA_CODE_WEIGHTS",
    "PAPER_WEIGHTS",
    "EpisodicStore",
    "HashEmbedder",
    "LexicalIndex",
    "Scored",
    "TextEncoder",
    "Weights",
    "minmax",
    "recency",
    "score_loop",
    "terms",
]

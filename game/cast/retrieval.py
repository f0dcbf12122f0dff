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
  replay from a transcript retrieves the same memories. Min-max scaling removes any
  common factor, so recency is kept between queries as ``decay ** (anchor - turn)``
  (``anchor``: the newest turn when the column was made), float64, extended as memories
  are added: a query at a later turn scales the same column (only a memory newer than
  the query's turn changes it: its age counts as 0). It stays strictly decreasing with
  age up to ~140,000 turns before the anchor (0.995**age underflows near 148,000; all
  older memories then tie at 0).
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

From :data:`FAST_MIN` memories on (a store made with ``fast=True``, the default),
:meth:`EpisodicStore.top` ranks the same score without computing every cosine: the rest of
the score (recency, importance and BM25) is exact for every memory (kept columns, a few
vector passes and the query's BM25 postings), every cosine is estimated from a 64-dimensional
projection of the vectors (:mod:`game.cast.ann`, a sixth of the scan's bytes), and only the
:data:`FAST_POOL` memories best by the score with the estimated cosine are scored exactly.
The cosine's min-max range comes from the exact cosines of the lowest and highest estimates.
This is a retrieve-then-rerank over the whole score, not a proof: the estimate's error bound
(Cauchy-Schwarz on the discarded coordinates, median 0.40) is too loose to prove the top
(a threshold-algorithm bound over it, Fagin, Lotem & Naor 2003, would leave about a thousand
memories to score at 53,900), while its actual error is small (median 0.016); ``bench/memory.py``
measures the recall@10 against the exact scan on held-out queries. The answer differs from
the scan's mostly when the cosine's true minimum is missed (it rescales every cosine).
Below :data:`FAST_MIN`, or with ``fast=False``, the exact scan answers.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from game.cast import ann

#: Recency decay per game turn (Park et al. 2023 use 0.995 per game hour).
DEFAULT_DECAY = 0.995
#: Rows added to the vector matrix each time it fills.
CHUNK_ROWS = 1024
#: Share of relevance that comes from BM25 word matching (the rest from MiniLM cosine).
DEFAULT_LEXICAL = 0.5
#: Memories from which :meth:`EpisodicStore.top` ranks through the projection (below it the exact scan is as
#: fast: ``bench/memory.py --only retrieval --sizes 10000,20000``).
FAST_MIN = 20_000
#: Memories the fast path scores exactly: the best by the score with the estimated cosine (chosen on the bench's
#: in-sample queries A; recall on the held-out B is printed by ``bench/memory.py``).
FAST_POOL = 200
#: Memories of the smallest and of the largest estimated cosine whose cosine is computed for the cosine's min-max
#: range (a wrong minimum rescales every cosine and costs recall: at 53,900 real memories the bottom 128 by the
#: estimate held the true minimum for 61 of 80 queries, the bottom 512 for 73, 2,048 for 77).
FAST_LOW = 512
FAST_HIGH = 32
#: The projection lags the store by at most this many memories before a thread catches it up (the scan answers
#: meanwhile); fewer are added at once, in the query.
ANN_CATCH_UP = 2048
#: Rows the projection's basis is fitted on (evenly spaced over the memories).
ANN_TRAIN_ROWS = 8192


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
    return scaled(x, float(x.min()), float(x.max()))


def scaled(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``(x - lo) / (hi - lo)`` in float64, all 0.5 when ``hi - lo <= 1e-12``: :func:`minmax` with a given range."""
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

    Postings are stdlib ``array('i')`` lists of document ids, read as numpy views at query
    time, kept apart for the documents where a term occurs once (most of them) and more than
    once (with their counts). A term occurring once adds ``idf * (k1 + 1) / (1 + norm_d)``, so
    those postings are summed per document by one ``numpy.bincount`` of the idfs and
    multiplied by ``(k1 + 1) / (1 + norm)`` once: scoring costs the postings of the query's
    terms plus a few passes over the documents. ``norm`` and that factor depend on the mean
    length only, so they are kept between queries until a document is added (the running
    total of the lengths gives the mean without a pass).
    """

    K1 = 1.2
    B = 0.75

    def __init__(self) -> None:
        self._ones: dict[str, array[int]] = {}  # documents where the term occurs once
        self._many: dict[str, array[int]] = {}  # documents where it occurs more than once
        self._many_tf: dict[str, array[int]] = {}  # and how often
        self._lengths: array[float] = array("d")  # whole numbers: their running sum is exact
        self._total_length = 0.0
        self._norms: tuple[int, np.ndarray, np.ndarray] | None = None  # (documents, norm, (k1 + 1) / (1 + norm))

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, text: str) -> int:
        """Index the next document; returns its id (0, 1, 2...)."""
        doc = len(self._lengths)
        counts: dict[str, int] = {}
        for t in terms(text):
            counts[t] = counts.get(t, 0) + 1
        for t, c in counts.items():
            if c == 1:
                docs = self._ones.get(t)
                if docs is None:
                    docs = self._ones[t] = array("i")
                docs.append(doc)
            else:
                if t not in self._many:
                    self._many[t], self._many_tf[t] = array("i"), array("i")
                self._many[t].append(doc)
                self._many_tf[t].append(c)
        length = float(sum(counts.values()))
        self._lengths.append(length)
        self._total_length += length
        return doc

    def df(self, term: str) -> int:
        """How many documents hold ``term``."""
        return len(self._ones.get(term, ())) + len(self._many.get(term, ()))

    def drop_kept(self) -> None:
        """Forget the kept length norms (as an added document does): for benchmarks."""
        self._norms = None

    def _norm(self) -> tuple[np.ndarray, np.ndarray]:
        """``norm = k1 * (1 - b + b * length / mean length)`` and ``(k1 + 1) / (1 + norm)``, ``(documents,)``
        float64, kept until a document is added."""
        total = len(self._lengths)
        if self._norms is None or self._norms[0] != total:
            lengths = np.frombuffer(self._lengths, np.float64, total)
            avgdl = max(self._total_length / total, 1e-9)
            norm = self.K1 * (1.0 - self.B + self.B * lengths / avgdl)
            self._norms = (total, norm, (self.K1 + 1.0) / (1.0 + norm))
        return self._norms[1], self._norms[2]

    def scores(self, query: str, n: int | None = None) -> np.ndarray:
        """BM25 score of every document (the first ``n``) for ``query``: ``(n,)`` float64, 0 where no term matches.

        Document frequencies and the mean length count every document, also those past ``n``.
        """
        return self.ranged(query, n)[0]

    def ranged(self, query: str, n: int | None = None) -> tuple[np.ndarray, float, float]:
        """:meth:`scores` and their smallest and largest value (0 and 0 with no document): ``(scores, lo, hi)``.

        The smallest is 0 without a pass when the query's postings are fewer than the documents.
        """
        total = len(self._lengths)
        n = total if n is None else min(n, total)
        if n == 0:
            return np.zeros(n, np.float64), 0.0, 0.0
        once: list[np.ndarray] = []
        idfs: list[float] = []
        more: list[np.ndarray] = []
        tfs: list[np.ndarray] = []
        more_idfs: list[float] = []
        for t in set(terms(query)):
            df = self.df(t)
            if df == 0:
                continue
            idf = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
            if t in self._ones:
                once.append(np.frombuffer(self._ones[t], np.int32))
                idfs.append(idf)
            if t in self._many:
                more.append(np.frombuffer(self._many[t], np.int32))
                tfs.append(np.frombuffer(self._many_tf[t], np.int32).astype(np.float64))
                more_idfs.append(idf)
        postings = sum(map(len, once)) + sum(map(len, more))
        if not postings:
            return np.zeros(n, np.float64), 0.0, 0.0
        norm, factor = self._norm()
        out: np.ndarray = np.zeros(total, np.float64)
        if once:
            sizes = [len(d) for d in once]
            out = np.bincount(np.concatenate(once), np.repeat(idfs, sizes), total) * factor
        if more:
            weights = [idf * tf * (self.K1 + 1.0) / (tf + norm[docs]) for idf, tf, docs in zip(more_idfs, tfs, more,
                                                                                             strict=True)]
            out += np.bincount(np.concatenate(more), np.concatenate(weights), total)
        out = out[:n]
        lo = 0.0 if postings < n else float(out.min())
        return out, lo, float(out.max())


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
        fast: rank through the cosine index from :data:`FAST_MIN` memories on (see :meth:`top`), when
            numpy only); ``False``: always the exact scan.
    """

    def __init__(self, dim: int = 384, chunk: int = CHUNK_ROWS, fast: bool = True) -> None:
        self.dim = dim
        self.fast = fast
        #: the projection of the first ``len(index)`` vectors (built from :data:`FAST_MIN` memories on, on a thread;
        #: ``None`` before)
        self.index: ann.Projection | None = None
        #: how the last :meth:`top` ranked: ``"exact"``, or ``"fast"`` with the count scored exactly
        self.last_path: tuple[str, int] = ("exact", 0)
        #: the cosine's min-max range the last fast :meth:`top` scaled by (``None`` before one)
        self.last_range: tuple[float, float] | None = None
        self._builder: threading.Thread | None = None  # the thread building or catching up the index
        self.chunk = max(1, chunk)
        self.texts: list[str] = []
        self.kinds: list[str] = []
        self._turns = np.zeros(self.chunk, np.int64)
        self._importance = np.zeros(self.chunk, np.float32)
        self._vectors = np.zeros((self.chunk, dim), np.float32)
        self._embedded = 0  # rows [0, _embedded) have vectors
        self.lexical = LexicalIndex()
        # kept between queries (rows are only ever appended): see _prior
        self._ends: tuple[int, int, int, float, float] = (0, -1, -1, 0.0, 0.0)  # rows, oldest, newest, imp lo, hi
        self._decayed: dict[float, tuple[int, np.ndarray, int]] = {}  # decay -> (anchor, g, rows with g)
        self._prior_sum: tuple[tuple[object, ...], np.ndarray] | None = None

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

    def embed_pending(self, encoder: TextEncoder) -> int:
        """Embed every memory still without a vector, in one batch; returns how many."""
        n = self.pending
        if n:
            start = self._embedded
            self._vectors[start:start + n] = np.asarray(encoder.encode(self.texts[start:]), np.float32)
            self._embedded = start + n
        return n

    def build_index(self, wait: bool = True) -> ann.Projection | None:
        """Build the cosine index of the embedded vectors, or add to it those it lacks.

        ``wait``: here and now (else on a thread; :meth:`top` answers by the exact scan until it is done).
        Returns the index (``None``: faiss is not installed, or the thread has not finished).
        """
        if self._embedded == 0:
            return None
        builder = self._builder
        if builder is not None and builder.is_alive():
            if not wait:
                return None
            builder.join()
        n = self._embedded
        vectors = self._vectors[:n]  # rows below n never change; a grown matrix is a new array, this one stays
        if wait:
            self._extend_index(vectors)
        else:
            self._builder = threading.Thread(target=self._extend_index, args=(vectors,), name="memory-index",
                                             daemon=True)
            self._builder.start()
        return self.index if wait else None

    def _extend_index(self, vectors: np.ndarray) -> None:
        """Build the index of ``vectors`` (the first rows of the store), or add the rows past its end."""
        index = self.index
        if index is None:
            step = max(1, len(vectors) // ANN_TRAIN_ROWS)
            index = ann.Projection(vectors[::step])
        index.add(vectors[len(index):])
        self.index = index

    def _ready_index(self) -> ann.Projection | None:
        """The index with every embedded vector, adding a few here; ``None`` while a thread builds or catches up."""
        index = self.index
        if index is not None and self._embedded - len(index) <= ANN_CATCH_UP:
            builder = self._builder
            if builder is None or not builder.is_alive():
                index.add(self._vectors[len(index):self._embedded])
                return index
            return None
        self.build_index(wait=False)
        return None

    def drop_kept(self) -> None:
        """Forget what is kept between queries and changes when a memory is added (the recency/importance sum,
        BM25's length norms), as the first query after an add finds it: for benchmarks."""
        self._prior_sum = None
        self.lexical.drop_kept()

    def _extremes(self, n: int) -> tuple[int, int, float, float]:
        """Rows of the oldest and the newest turn among the first ``n``, and their smallest and largest importance;
        updated from the rows added since the last call."""
        done, old, new, ilo, ihi = self._ends
        if n < done or done == 0:
            done, old, new, ilo, ihi = 0, -1, -1, math.inf, -math.inf
        if n > done:
            turns, imp = self._turns[done:n], self._importance[done:n]
            lo, hi = done + int(np.argmin(turns)), done + int(np.argmax(turns))
            if old < 0 or self._turns[lo] < self._turns[old]:
                old = lo
            if new < 0 or self._turns[hi] > self._turns[new]:
                new = hi
            ilo, ihi = min(ilo, float(imp.min())), max(ihi, float(imp.max()))
            self._ends = (n, old, new, ilo, ihi)
        return old, new, ilo, ihi

    def _decay_column(self, n: int, decay: float) -> np.ndarray:
        """``g = decay ** (anchor - turn)`` float64 of the first ``n`` rows, ``0 < decay <= 1``, kept per decay and
        extended for rows added since; ``anchor`` is the newest turn when first computed, and is moved (every row
        recomputed) before a newer row's ``g`` could overflow."""
        got = self._decayed.get(decay)
        newest = int(self._turns[self._extremes(n)[1]])
        span = 600.0 / -math.log(decay) if decay < 1.0 else math.inf  # turns past the anchor before g nears overflow
        if got is None or got[2] > n or newest - got[0] > span:
            if len(self._decayed) >= 4:
                self._decayed.clear()
            anchor, g, done = newest, np.empty(max(n, self.capacity), np.float64), 0
        else:
            anchor, g, done = got
            if len(g) < n:
                g = np.concatenate([g[:done], np.empty(max(n, self.capacity) - done, np.float64)])
        if n > done:
            g[done:n] = np.power(decay, (anchor - self._turns[done:n]).astype(np.float64))
        self._decayed[decay] = (anchor, g, n)
        return g[:n]

    def _prior(self, n: int, now: int, decay: float) -> _Prior:
        """The recency and importance columns of the first ``n`` rows at turn ``now`` and their scaling (see
        :class:`_Prior`)."""
        old, new, ilo, ihi = self._extremes(n)
        turns = self._turns[:n]
        if 0.0 < decay <= 1.0:
            g = self._decay_column(n, decay)
            anchor = self._decayed[decay][0]
            clip = float(np.power(decay, np.float64(anchor - now))) if self._turns[new] > now else None
            ends = [g[old], g[new]] if clip is None else [min(g[old], clip), min(g[new], clip)]
            return _Prior(g, clip, float(min(ends)), float(max(ends)), self._importance[:n], ilo, ihi,
                          (n, decay, anchor))
        rec = recency(turns, now, decay)  # any other decay: the plain column, not kept
        return _Prior(rec, None, float(rec.min()), float(rec.max()), self._importance[:n], ilo, ihi, None)

    def _prior_score(self, prior: _Prior, weights: Weights) -> np.ndarray:
        """``w_r * recency + w_i * importance``, both scaled, of every row of ``prior``: kept while the rows and
        their scaling stay the same (a query at a later turn changes neither, unless a row is newer than it)."""
        key = (prior.source, weights.recency, weights.importance, prior.clip, prior.glo, prior.ghi, prior.ilo,
               prior.ihi)
        if prior.source is None or self._prior_sum is None or self._prior_sum[0] != key:
            self._prior_sum = (key, weights.recency * prior.recency() + weights.importance * prior.importance())
        return self._prior_sum[1]

    def rest(self, now: int, weights: Weights = DEFAULT_WEIGHTS, decay: float = DEFAULT_DECAY, query_text: str = "",
             lexical: float = DEFAULT_LEXICAL) -> np.ndarray:
        """The score of every embedded memory less its cosine part: ``w_r * recency + w_i * importance + w_v *
        lexical * bm25``, each scaled as in :meth:`scores`, ``(N,)`` float64 (for rankers that add the cosine)."""
        n = self._embedded
        bm = self.lexical.ranged(query_text, n) if query_text and lexical > 0 else None
        return self._rest(self._prior(n, now, decay), bm, weights, lexical if bm is not None else 0.0)

    def _rest(self, prior: _Prior, bm: tuple[np.ndarray, float, float] | None, weights: Weights,
              share: float) -> np.ndarray:
        """:meth:`rest` from the parts: ``prior``, the BM25 scores with their range, the BM25 share."""
        other = self._prior_score(prior, weights)
        if bm is None:
            return other
        scores, blo, bhi = bm
        if bhi - blo <= 1e-12:
            return other + (weights.relevance * share) * 0.5
        other = other + ((weights.relevance * share) / (bhi - blo)) * scores
        if blo != 0.0:
            other -= (weights.relevance * share) * blo / (bhi - blo)
        return other

    def scores(self, query: np.ndarray, now: int, weights: Weights = DEFAULT_WEIGHTS,
               decay: float = DEFAULT_DECAY, mask: np.ndarray | None = None, query_text: str = "",
               lexical: float = DEFAULT_LEXICAL) -> tuple[np.ndarray, ...]:
        """Scores of every embedded memory (vectorised): the exact scan.

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
        prior = self._prior(n, now, decay)
        bm = self.lexical.ranged(query_text, n) if query_text and lexical > 0 else None
        if mask is None:
            r, i, v = prior.recency(), prior.importance(), minmax(cos)
            if bm is not None:
                v = (1.0 - lexical) * v + lexical * scaled(*bm)
            score = self._prior_score(prior, weights) + weights.relevance * v
            return score, r, i, v, cos.astype(np.float64)
        m = mask[:n]
        r, i, v = (np.zeros(n), np.zeros(n), np.zeros(n))
        r[m], i[m], v[m] = minmax(prior.recency_column()[m]), minmax(prior.imp[m].astype(np.float64)), minmax(cos[m])
        if bm is not None:
            v[m] = (1.0 - lexical) * v[m] + lexical * minmax(bm[0][m])
        score = weights.recency * r + weights.importance * i + weights.relevance * v
        return np.where(m, score, -np.inf), r, i, v, cos.astype(np.float64)

    def top(self, query: np.ndarray, now: int, k: int, weights: Weights = DEFAULT_WEIGHTS,
            decay: float = DEFAULT_DECAY, mask: np.ndarray | None = None, query_text: str = "",
            lexical: float = DEFAULT_LEXICAL, exact: bool = False) -> list[Scored]:
        """The ``k`` best-scoring embedded memories, best first (ties: newer first, then the later index); see
        :meth:`scores`.

        From :data:`FAST_MIN` memories on (a ``fast`` store, no ``mask``, ``exact`` false, ``k`` under
        :data:`FAST_POOL`, ``0 < decay <= 1``) the same score is ranked with every cosine estimated by the
        projection (:mod:`game.cast.ann`), and only the :data:`FAST_POOL` best by that estimate are scored exactly:

        1. ``other`` (recency, importance and BM25, scaled and weighted as in :meth:`scores`) for every memory;
        2. the estimated cosine of every memory; the cosines of the :data:`FAST_LOW` lowest and :data:`FAST_HIGH`
           highest estimates give the cosine's min-max range;
        3. ``other + alpha * estimate`` (``alpha``: the cosine's weight over its range) for every memory; its
           :data:`FAST_POOL` best (and the highest estimates) are scored exactly, the range widened by any cosine
           they hold beyond it, and the best ``k`` of them are the answer.

        The answer is not proven to be the exact scan's (the estimate's error bound is too loose to prove it, see
        :mod:`game.cast.ann`): ``bench/memory.py`` measures its recall against the scan.
        :attr:`last_path` says which path answered and how many memories it scored exactly.
        """
        n = self._embedded
        if n == 0 or k <= 0:
            return []
        if not exact and mask is None and self.fast and n >= FAST_MIN and k < FAST_POOL and 0.0 < decay <= 1.0:
            got = self._top_fast(query, now, k, weights, decay, query_text, lexical)
            if got is not None:
                return got
        self.last_path = ("exact", n)
        if mask is not None:
            score, r, imp, v, cos = self.scores(query, now, weights, decay, mask, query_text, lexical)
            return self._scored(_best(score, k, self._turns[:n], np.arange(n)), score, r, imp, v, cos)
        # the scan without the per-memory parts: only the k answers need them
        q = np.asarray(query, np.float32)
        cos32 = self._vectors[:n] @ q
        prior = self._prior(n, now, decay)
        bm = self.lexical.ranged(query_text, n) if query_text and lexical > 0 else None
        lo, hi = float(cos32.min()), float(cos32.max())
        v = scaled(cos32, lo, hi)
        if bm is not None:
            v = (1.0 - lexical) * v + lexical * scaled(*bm)
        score = self._prior_score(prior, weights) + weights.relevance * v
        best = _best(score, k, self._turns[:n], np.arange(n))
        return self._scored(best, score[best], prior.recency(best), prior.importance(best), v[best],
                            cos32[best].astype(np.float64), at=np.arange(len(best)))

    def _scored(self, idx: np.ndarray, score: np.ndarray, r: np.ndarray, imp: np.ndarray, v: np.ndarray,
                cos: np.ndarray, at: np.ndarray | None = None) -> list[Scored]:
        """:class:`Scored` rows for memories ``idx``, best first; ``at``: their rows in the part arrays."""
        rows = dict(zip(idx.tolist(), (at if at is not None else idx).tolist(), strict=True))
        order = sorted(rows, key=lambda j: (-score[rows[j]], -int(self._turns[j]), -j))
        return [Scored(j, self.texts[j], self.kinds[j], int(self._turns[j]), float(self._importance[j]),
                       float(score[rows[j]]), float(r[rows[j]]), float(v[rows[j]]), float(imp[rows[j]]),
                       float(cos[rows[j]])) for j in order]

    def _top_fast(self, query: np.ndarray, now: int, k: int, weights: Weights, decay: float, query_text: str,
                  lexical: float) -> list[Scored] | None:
        """Steps 1-3 of :meth:`top`'s fast path; ``None`` when the exact scan must answer."""
        index = self._ready_index()
        if index is None or index.kept < ann.KEPT_MIN:
            return None  # not ready, or vectors the projection does not describe (no shared structure): the scan
        n = self._embedded
        q = np.asarray(query, np.float32)
        turns = self._turns[:n]
        # step 1: the rest of the score, exact, as scores() computes it
        prior = self._prior(n, now, decay)
        bm = self.lexical.ranged(query_text, n) if query_text and lexical > 0 else None
        share = lexical if bm is not None else 0.0
        other = self._rest(prior, bm, weights, share)
        w_cos = weights.relevance * (1.0 - share)
        est = index.estimate(q)  # every row: _ready_index caught the projection up
        ends = np.concatenate([_about_extreme(est, min(FAST_LOW, n), low=True), _about_extreme(est, min(FAST_HIGH, n))])
        cos_ends = self._vectors[ends] @ q
        lo, hi = float(cos_ends.min()), float(cos_ends.max())
        approx = other + (w_cos / (hi - lo) if hi - lo > 1e-12 else 0.0) * est
        cand = np.union1d(_about_extreme(approx, min(FAST_POOL, n)), ends[-min(FAST_HIGH, n):])
        score, rc, ic, vc, cos_c = self._exact_part(cand, q, prior, bm, share, weights, lo, hi)
        if cos_c.min() < lo or cos_c.max() > hi:  # a scored memory widens the cosine's range: rescale
            lo, hi = min(lo, float(cos_c.min())), max(hi, float(cos_c.max()))
            score, rc, ic, vc, cos_c = self._exact_part(cand, q, prior, bm, share, weights, lo, hi)
        self.last_path, self.last_range = ("fast", len(cand)), (lo, hi)
        top = _best(score, k, turns[cand], cand)
        return self._scored(cand[top], score, rc, ic, vc, cos_c, at=top)

    def _exact_part(self, cand: np.ndarray, q: np.ndarray, prior: _Prior, bm: tuple[np.ndarray, float, float] | None,
                    share: float, weights: Weights, lo: float, hi: float) -> tuple[np.ndarray, ...]:
        """:meth:`scores` of memories ``cand`` (the cosine scaled over ``[lo, hi]``): ``(score, recency, importance,
        relevance, cosine)``, each ``(len(cand),)``."""
        cos = self._vectors[cand] @ q
        v = scaled(cos, lo, hi)
        if bm is not None:
            v = (1.0 - share) * v + share * scaled(bm[0][cand], bm[1], bm[2])
        rc, ic = prior.recency(cand), prior.importance(cand)
        score = (weights.recency * rc + weights.importance * ic) + weights.relevance * v
        return score, rc, ic, v, cos.astype(np.float64)


@dataclass(frozen=True)
class _Prior:
    """The recency and importance columns of a store's first rows at one turn, and their min-max ranges.

    ``g`` is recency up to a positive factor (``decay ** (anchor - turn)``: min-max scaling removes the factor,
    so the column holds for every later turn), ``clip`` the value of a row made at the query's turn when some row
    is newer than it (their age counts as 0), ``glo``/``ghi`` the range of the clipped column; ``imp`` the
    importances, ``ilo``/``ihi`` their range.
    """

    g: np.ndarray
    clip: float | None
    glo: float
    ghi: float
    imp: np.ndarray
    ilo: float
    ihi: float
    #: what ``g`` was made from, ``(rows, decay, anchor)``; ``None``: made for this query only
    source: tuple[int, float, int] | None

    def recency_column(self, rows: np.ndarray | None = None) -> np.ndarray:
        g = self.g if rows is None else self.g[rows]
        return g if self.clip is None else np.minimum(g, self.clip)

    def recency(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Min-max scaled recency of ``rows`` (all: ``None``), float64."""
        return scaled(self.recency_column(rows), self.glo, self.ghi)

    def importance(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Min-max scaled importance of ``rows`` (all: ``None``), float64."""
        return scaled(self.imp if rows is None else self.imp[rows], self.ilo, self.ihi)


def _best(score: np.ndarray, k: int, turns: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions of the ``k`` best of ``score`` (``-inf``: not a candidate); a tie at the ``k``-th score goes to the
    newer turn, then the larger id (``turns``, ``ids``: per position), so the choice does not depend on the order."""
    n = len(score)
    if k >= n:
        pos = np.arange(n)
    else:
        pos = np.argpartition(-score, k - 1)[:k]
        kth = score[pos].min()
        if np.count_nonzero(score >= kth) > k:  # ties at the boundary: decide them by the key, not by the partition
            pos = np.flatnonzero(score >= kth)
            pos = pos[np.lexsort((-ids[pos], -turns[pos], -score[pos]))[:k]]
    best: np.ndarray = pos[np.isfinite(score[pos])]
    return best


def _about_extreme(x: np.ndarray, t: int, low: bool = False) -> np.ndarray:
    """Indices of about the ``t`` largest entries of ``x`` (``low``: smallest), at least ``min(t, len(x))``: those
    past the threshold read from every 16th entry (two passes over ``x`` instead of an ``argpartition``)."""
    n = len(x)
    if t <= 0:
        return np.zeros(0, np.int64)
    if n <= 32 * t:
        if t >= n:
            return np.arange(n)
        return np.argpartition(x, t - 1)[:t] if low else np.argpartition(x, n - t)[n - t:]
    sample = x[::16]
    m = len(sample)
    if low:
        got = np.flatnonzero(x <= np.partition(sample, t // 16)[t // 16])
    else:
        got = np.flatnonzero(x >= np.partition(sample, m - 1 - t // 16)[m - 1 - t // 16])
    if len(got) >= t:
        return got
    return np.argpartition(x, t - 1)[:t] if low else np.argpartition(x, n - t)[n - t:]


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
    "ANN_CATCH_UP",
    "ANN_TRAIN_ROWS",
    "DEFAULT_DECAY",
    "DEFAULT_LEXICAL",
    "DEFAULT_WEIGHTS",
    "FAST_HIGH",
    "FAST_LOW",
    "FAST_MIN",
    "FAST_POOL",
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
    "scaled",
    "score_loop",
    "terms",
]

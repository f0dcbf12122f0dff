"""A compressed prefilter of the cosine for episodic retrieval: PCA codes of the memory vectors.

:meth:`game.cast.retrieval.EpisodicStore.top` needs, for a query ``q``, a cheap estimate of
every memory's cosine ``q . e`` to pick the few memories worth scoring exactly. With ``mu``
the mean of the memory vectors and ``P`` (``dims x dim``) their top ``dims`` principal axes
(Pearson 1901; Jolliffe, *Principal Component Analysis*, 2nd ed. 2002, ch. 1-3)::

    q . e  =  q . mu + (P q) . (P (e - mu)) + (q_res . e_res)
    approx =  q . mu + (P q) . z,    z = P (e - mu)  (a ``dims``-float code per memory)

where ``q_res`` and ``e_res`` are the parts of ``q`` and ``e - mu`` outside the axes (their norms
are kept: :attr:`CosinePrefilter.residual`, :meth:`CosinePrefilter.query_residual`). Sentence
embeddings concentrate their variance in few axes, so the error ``q_res . e_res`` is small
next to the spread of the cosines; random vectors have no such axes, and the error is then as
large as the cosine itself (the store's error check then widens its candidate set, see
:meth:`~game.cast.retrieval.EpisodicStore.top`).

The axes are the eigenvectors of the covariance of up to :data:`FIT_ROWS` evenly spaced memory
vectors (``numpy.linalg.eigh``; deterministic, no random sample). Codes of later memories are
projected on the same axes as they are embedded (one ``(n, dim) @ (dim, dims)`` product); the
store refits when it has grown to :data:`REFIT_GROWTH` times the count it was fitted on
(amortised: each memory is projected a bounded number of times).
"""

from __future__ import annotations

import math

import numpy as np

#: Code length (principal axes kept). 32 of MiniLM's 384 dimensions; tuned on the bench's
#: in-sample queries (``bench/memory.py --only retrieval``): fewer rows scanned beat a closer estimate.
DIMS = 32
#: Most rows the axes are fitted on (evenly spaced over the memories).
FIT_ROWS = 8192
#: Refit once the memories number this many times those the axes were fitted on.
REFIT_GROWTH = 2.0
#: Rows added to the code matrix each time it fills.
CHUNK_ROWS = 4096


class CosinePrefilter:
    """PCA codes ``(n, dims)`` float32 of unit memory vectors, and the approximate cosine of a query with each.

    Args:
        dim: vector dimension (384 for MiniLM).
        dims: code length (at most ``dim``).
    """

    def __init__(self, dim: int, dims: int = DIMS) -> None:
        self.dim = dim
        self.dims = max(1, min(dims, dim))
        self.mean = np.zeros(dim, np.float32)
        #: ``(dims, dim)`` float32 principal axes (rows)
        self.axes = np.zeros((self.dims, dim), np.float32)
        #: how many memories the axes were fitted on (0: not fitted)
        self.fitted_on = 0
        self._codes = np.zeros((0, self.dims), np.float32)
        self._residual = np.zeros(0, np.float32)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    @property
    def codes(self) -> np.ndarray:
        """``(n, dims)`` float32 codes of the memories, in the store's order."""
        return self._codes[: self._n]

    @property
    def residual(self) -> np.ndarray:
        """``(n,)`` float32 norms ``|e_res|`` of the parts of the memories outside the axes."""
        return self._residual[: self._n]

    @property
    def nbytes(self) -> int:
        """Bytes held (codes and residual norms allocated, axes, mean)."""
        return int(self._codes.nbytes + self._residual.nbytes + self.axes.nbytes + self.mean.nbytes)

    def fit(self, vectors: np.ndarray) -> None:
        """Fit the axes on ``vectors`` ``(n, dim)`` (up to :data:`FIT_ROWS` evenly spaced rows) and code them all."""
        n = len(vectors)
        rows = vectors if n <= FIT_ROWS else vectors[np.linspace(0, n - 1, FIT_ROWS).astype(np.int64)]
        x = np.asarray(rows, np.float64)
        mean = x.mean(axis=0)
        x -= mean
        _, vecs = np.linalg.eigh(x.T @ x)  # ascending eigenvalues
        self.mean = mean.astype(np.float32)
        self.axes = np.ascontiguousarray(vecs[:, ::-1][:, : self.dims].T, np.float32)
        self.fitted_on = n
        self._n = 0
        self._codes = np.zeros((max(CHUNK_ROWS, n), self.dims), np.float32)
        self._residual = np.zeros(len(self._codes), np.float32)
        self.add(vectors)

    def refit_due(self, n: int) -> bool:
        """Whether a store of ``n`` memories should refit (:data:`REFIT_GROWTH`)."""
        return self.fitted_on == 0 or n >= REFIT_GROWTH * self.fitted_on

    def add(self, vectors: np.ndarray) -> None:
        """Append the codes of ``vectors`` ``(m, dim)`` (the next memories), on the current axes."""
        m = len(vectors)
        if m == 0:
            return
        need = self._n + m
        if need > len(self._codes):
            rows = CHUNK_ROWS * math.ceil(need / CHUNK_ROWS)
            grown = np.zeros((rows, self.dims), np.float32)
            grown[: self._n] = self._codes[: self._n]
            norms = np.zeros(rows, np.float32)
            norms[: self._n] = self._residual[: self._n]
            self._codes, self._residual = grown, norms
        centred = np.asarray(vectors, np.float32) - self.mean
        codes = centred @ self.axes.T
        self._codes[self._n:need] = codes
        self._residual[self._n:need] = np.linalg.norm(centred - codes @ self.axes, axis=1)
        self._n = need

    def query_residual(self, query: np.ndarray) -> float:
        """``|q_res|`` of unit ``query``: ``sqrt(1 - |P q|^2)``."""
        pq = self.axes @ np.asarray(query, np.float32)
        return math.sqrt(max(0.0, 1.0 - float(pq @ pq)))

    def approx(self, query: np.ndarray) -> np.ndarray:
        """Estimated cosines ``q . mu + (P q) . z`` of unit ``query`` ``(dim,)`` with each memory: ``(n,)`` float32."""
        q = np.asarray(query, np.float32)
        out: np.ndarray = self.codes @ (self.axes @ q)
        out += np.float32(q @ self.mean)
        return out


__all__ = ["CHUNK_ROWS", "DIMS", "FIT_ROWS", "REFIT_GROWTH", "CosinePrefilter"]

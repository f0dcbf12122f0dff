"""A low-dimensional projection of the memory vectors: every memory's cosine to a query, estimated cheaply.

:meth:`game.cast.retrieval.EpisodicStore.top` estimates the cosine of every memory from
:data:`DIMS` coordinates instead of all 384, ranks the whole score with the estimate, and
scores only the best few exactly (see :mod:`game.cast.retrieval`). The basis is the top
:data:`DIMS` eigenvectors of the vectors' uncentred second moment ``X^T X`` over a sample of
the memories (principal component analysis without centring, so the vectors' shared mean
direction is kept: Jolliffe, "Principal Component Analysis", 2nd ed., Springer 2002, section
14.2.3): for unit vectors ``x`` and ``q`` with projections ``p = B^T x``, ``s = B^T q``::

    x . q  =  p . s  +  x_perp . q_perp,    |x_perp . q_perp| <= |x_perp| |q_perp|

The estimate is ``p . s``. Measured on 53,900 memories of the bench's real corpus embedded with
MiniLM (``bench/retrieval_corpus.py``) and 20 held-out player lines: 64 coordinates keep 73% of
the second moment; the estimate's median error is 0.016 while the Cauchy-Schwarz bound's median
is 0.40, against a cosine range of 0.64, so the bound is too loose to prove a ranking and the
projection is used as an estimate only (``bench/memory.py`` measures recall against the exact
scan).

Vectors without such structure (random directions: 64 of 384 coordinates keep about a fifth)
make a poor estimate; the store then keeps the exact scan (``KEPT_MIN``).

numpy only: the projected rows are a ``(capacity, DIMS)`` float32 matrix grown like the store's
own, a sixth of its bytes at 64 of 384 dimensions (25.6 MB at 100,000 memories).
"""

from __future__ import annotations

import threading

import numpy as np

#: Coordinates kept (the estimate's median error on the bench's MiniLM corpus: 0.022 at 32, 0.016 at 64, 0.013
#: at 96; the scan costs grow with them).
DIMS = 64
#: Below this share of the sample's second moment kept the estimate is not used: the exact scan answers
#: (MiniLM corpus: 0.73; random unit vectors: 0.22. A query keeps less than the memories: the bench's player
#: lines 0.13-0.8, median 0.44, and are still ranked well, so queries are not gated).
KEPT_MIN = 0.4


class Projection:
    """The first ``len(self)`` memory vectors projected on a basis fitted to a sample of them.

    Args:
        train: ``(m, dim)`` float32 unit vectors the basis is fitted on (a sample of the memories).
        dims: coordinates kept (at most ``dim``).

    Thread-safe: rows are appended under a lock; :meth:`estimate` reads the rows added before it.
    """

    def __init__(self, train: np.ndarray, dims: int = DIMS) -> None:
        x = np.asarray(train, np.float64)
        dim = x.shape[1]
        dims = max(1, min(dims, dim))
        vals, vecs = np.linalg.eigh(x.T @ x)  # eigenvalues ascending
        self.dim = dim
        self.dims = dims
        #: share of the sample's second moment the kept coordinates hold (1: the estimate is exact on it)
        self.kept = float(vals[::-1][:dims].sum() / max(float(vals.sum()), 1e-30))
        #: ``(dim, dims)`` float32, orthonormal columns: the basis, largest eigenvalue first
        self.basis = np.ascontiguousarray(vecs[:, ::-1][:, :dims], np.float32)
        self._rows = np.zeros((0, dims), np.float32)
        self._n = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """Bytes of the projected rows in use."""
        return self._n * self.dims * 4

    def add(self, vectors: np.ndarray) -> None:
        """Append rows ``(m, dim)`` float32 (memories ``len(self)`` .. ``len(self) + m - 1``)."""
        if not len(vectors):
            return
        p = np.asarray(vectors, np.float32) @ self.basis
        with self._lock:
            n, m = self._n, len(p)
            if n + m > len(self._rows):
                grown = np.zeros((max(n + m, 2 * len(self._rows), 1024), self.dims), np.float32)
                grown[:n] = self._rows[:n]
                self._rows = grown
            self._rows[n:n + m] = p
            self._n = n + m

    def kept_of(self, query: np.ndarray) -> float:
        """Share of the unit vector ``query``'s squared length its kept coordinates hold."""
        s = np.asarray(query, np.float32) @ self.basis
        return float(s @ s)

    def estimate(self, query: np.ndarray) -> np.ndarray:
        """``(len(self),)`` float32: the estimated cosine of every row with the unit vector ``query`` ``(dim,)``."""
        s = np.asarray(query, np.float32) @ self.basis
        rows, n = self._rows, self._n
        return rows[:n] @ s


__all__ = ["DIMS", "KEPT_MIN", "Projection"]

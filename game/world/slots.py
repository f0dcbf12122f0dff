"""One world-server session held in memory: its backend, the request in flight, the replay buffer.

Shared by the single-process server (:mod:`game.world.server`) and the Ray Serve world
replicas (:mod:`game.world.ray_serve`), which rebuild a slot from its journal
(:mod:`game.world.journal`) when a session moves to them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
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


class Worker:
    """One session's own thread for its backend calls, in order (the slot's lock already serialises them).

    A hop to it and back costs a quarter of ``asyncio.to_thread``'s CPU (no executor, no
    chained futures; measured ~27 vs ~108 us here), paid on every block. The thread starts
    on the first :meth:`run`.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[tuple[asyncio.Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on this thread; its result, or its exception raised here."""
        with self._start:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=f"worldloom-session-{self.name}",
                                                daemon=True)
                self._thread.start()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._jobs.put((future, functools.partial(fn, *args)))
        return await future

    def stop(self) -> None:
        """End the thread after the jobs already given (idempotent)."""
        self._jobs.put(None)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, call = job
            try:
                ok, value = True, call()
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
                ok, value = False, exc
            with contextlib.suppress(RuntimeError):  # the loop is gone (the server stopped)
                future.get_loop().call_soon_threadsafe(_settle_future, future, ok, value)


def _settle_future(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if not future.done():  # not cancelled meanwhile (the client went away)
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


@dataclass
class Slot:
    """One client's session: its own backend, its worker thread, the request in flight and a small
    replay buffer (each sent block as the one binary message it went out as)."""

    key: str
    backend: Backend
    caps: Capabilities
    encoding: Encoding
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    ws: Any = None
    detached_at: float = 0.0
    started: bool = False
    cur: Current | None = None
    sent: OrderedDict[tuple[int, int], bytes] = field(default_factory=OrderedDict)
    sent_bytes: int = 0
    fps: OrderedDict[int, str] = field(default_factory=OrderedDict)
    memory_results: OrderedDict[int, dict[str, Any]] = field(default_factory=OrderedDict)
    blocks_served: int = 0
    finished: Iterator[FrameChunk] | None = None  # the request that sent its last block, not yet run to its end
    worker: Worker = field(default_factory=lambda: Worker("slot"))


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

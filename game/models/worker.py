"""`ModelWorker`: dialogue models loaded once in a separate process, streaming replies back.

The window's thread must keep its frame rate while a character thinks, and a CPU
model holds the GIL for most of a forward pass; so models run in a child process
(``multiprocessing`` *spawn*, one torch thread) that loads them once and serves
requests over two queues. Everything on the queues is JSON text (the
multiprocessing machinery moves ``str`` objects; no object of ours is pickled),
one message per item:

parent -> worker::

    {"op": "generate", "id": 7, "model": "eve", "messages": [...], "max_new_tokens": 96,
     "temperature": 0.7, "seed": 3}
    {"op": "count", "id": 8, "model": "eve", "text": "..."}
    {"op": "cancel", "id": 7}          # stop a generation early
    {"op": "preencode", "id": 10, "model": "eve", "messages": [...]}  # idle: no reply
    {"op": "ping", "id": 9}
    {"op": "stop"}

worker -> parent::

    {"type": "progress", "model": "eve", "stage": "...", "fraction": 0.4}
    {"type": "ready", "models": {"eve": {"name": "...", "context_size": 8192}}}
    {"type": "failed", "why": "...", "where": "..."}          # loading failed; the worker exits
    {"type": "delta", "id": 7, "text": "Hel"}
    {"type": "done", "id": 7, "stats": {...}}                  # with idle_* of the pre-encoding before it
    {"type": "error", "id": 7, "why": "...", "where": "..."}  # a bad request; the worker lives on
    {"type": "count", "id": 8, "n": 12}
    {"type": "pong", "id": 9}
    {"type": "preencoded", "id": 10, "stats": {...}}          # after each stretch of idle pre-encoding

**Idle pre-encoding**: a ``preencode`` request (the known start of a character's next
prompt, sent when her reply has been delivered) is worked on only while no other
request waits: the model feeds it in chunks and the worker looks at its queue between
two chunks; anything that arrives is served first (a reply waits for one chunk at
most), and the pre-encoding resumes afterwards from where it stopped unless a reply
or a newer ``preencode`` has made it stale. Its CPU time and tokens are reported with
the next reply's stats (``idle_cpu_s``, ``idle_tokens``): work moved, not removed.

A request that fails (unknown model, malformed prompt, an exception inside the
model) gets an ``error`` reply and the worker serves the next one. If the worker
dies, every open stream raises :class:`~game.models.llm.ModelError` and
:attr:`ModelWorker.alive` turns false.

:class:`WorkerDialogueModel` is the :class:`~game.models.llm.DialogueModel` the
dialogue pipeline sees; an in-process model is a drop-in replacement in tests.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import multiprocessing as mp
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from game.models.llm import DialogueModel, Message, ModelError
from game.models.registry import ModelRegistry, ModelSpec, Progress, ProgressDisplay
from game.work import process_cpu

#: Most CPU seconds the worker may spend on a reply without sending its next delta before it
#: is declared stuck (a loaded machine slows the worker's wall clock, not its CPU: a reply
#: that takes ten minutes of wall time on a busy machine is not given up).
DELTA_TIMEOUT_S = 300.0
#: Wall seconds the worker may use no CPU at all while a reply is open before it is declared
#: hung (blocked on a lock or a pipe); a busy machine still gives it some CPU every few seconds.
IDLE_TIMEOUT_S = 60.0
#: How often the parent checks that the worker still lives while waiting, seconds.
POLL_S = 0.2


def _send(q: Any, msg: Mapping[str, Any]) -> None:
    q.put(json.dumps(msg))


# -- the child process ------------------------------------------------------------------

def _serve(requests: Any, replies: Any, specs_json: str, torch_threads: int) -> None:
    """The worker's main loop (runs in the child process)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("OMP_NUM_THREADS", str(torch_threads))
    specs = {name: ModelSpec.from_json(s) for name, s in json.loads(specs_json).items()}
    if any(s.kind == "transformers" for s in specs.values()):
        import torch

        torch.set_num_threads(torch_threads)

    def progress(name: str, stage: str, fraction: float) -> None:
        _send(replies, {"type": "progress", "model": name, "stage": stage, "fraction": fraction})

    registry = ModelRegistry(progress)
    try:
        models = {name: registry.load(name, spec) for name, spec in specs.items()}
    except Exception as exc:  # report any load failure instead of dying silently
        _send(replies, {"type": "failed", "why": getattr(exc, "why", str(exc)), "where": getattr(exc, "where", "")})
        return
    _send(replies, {"type": "ready", "models": {n: {"name": m.name, "context_size": m.context_size}
                                                for n, m in models.items()}})
    backlog: deque[dict[str, Any]] = deque()
    cancelled: set[int] = set()
    parent = mp.parent_process()
    pending: dict[str, Any] | None = None  # the preencode request still to finish while idle
    idle = {"idle_cpu_s": 0.0, "idle_tokens": 0.0}  # pre-encoding since the last reply

    def waiting() -> bool:
        """Whether another request has come (it goes to the backlog): pre-encoding stops."""
        if backlog:
            return True
        other = _read(requests, block=False)
        if other is not None:
            backlog.append(other)
        return bool(backlog)

    while True:
        if backlog:
            req: dict[str, Any] | None = backlog.popleft()
        elif pending is not None:
            req = _read(requests, block=False)
            if req is None:
                with contextlib.suppress(Exception):  # pre-encoding is an optimisation: never fatal
                    model = _model(models, pending)
                    pre = getattr(model, "preencode", None)
                    if pre is not None:
                        stats = pre(pending.get("messages") or [], should_stop=waiting)
                        idle["idle_cpu_s"] += float(stats.get("cpu_s", 0.0))
                        idle["idle_tokens"] += float(stats.get("encoded_tokens", 0.0))
                        _send(replies, {"type": "preencoded", "id": pending.get("id", -1), "stats": stats})
                        if stats.get("stopped"):
                            continue  # served later, after what came
                pending = None
                continue
        else:
            req = _read(requests)
        if req is None:
            if parent is not None and not parent.is_alive():
                return  # the game is gone: do not linger
            continue
        op, rid = req.get("op"), req.get("id", -1)
        if op == "stop":
            return
        if op == "cancel":
            cancelled.add(int(rid))
            continue
        if op == "preencode":
            pending = req  # a newer one replaces the one in progress (the cache keeps what both share)
            continue
        try:
            if op == "ping":
                _send(replies, {"type": "pong", "id": rid})
            elif op == "count":
                n = _model(models, req).count_tokens(str(req.get("text", "")))
                _send(replies, {"type": "count", "id": rid, "n": n})
            elif op == "generate":
                if int(rid) in cancelled:
                    cancelled.discard(int(rid))
                    _send(replies, {"type": "done", "id": rid, "stats": {"cancelled": True}})
                    continue
                pending = None  # the reply's prompt supersedes it; the next preencode follows her reply
                stopped = _generate(_model(models, req), req, requests, replies, backlog, dict(idle))
                idle = {"idle_cpu_s": 0.0, "idle_tokens": 0.0}
                if stopped:
                    return
            else:
                raise ModelError(f"unknown request {op!r}")
        except Exception as exc:  # a bad request must not kill the worker
            why = getattr(exc, "why", None) or f"{type(exc).__name__}: {exc}"
            _send(replies, {"type": "error", "id": rid, "why": why, "where": getattr(exc, "where", "")})


def _read(requests: Any, block: bool = True) -> dict[str, Any] | None:
    """The next request; ``None`` when none came (within 1 s when ``block``)."""
    try:
        raw = requests.get(block=block, timeout=1.0 if block else 0)
    except queue.Empty:
        return None
    try:
        msg = json.loads(raw)
    except (TypeError, ValueError):
        return {"op": "bad", "id": -1}
    return msg if isinstance(msg, dict) else {"op": "bad", "id": -1}


def _model(models: Mapping[str, DialogueModel], req: Mapping[str, Any]) -> DialogueModel:
    name = req.get("model")
    if not isinstance(name, str) or name not in models:
        raise ModelError(f"no model named {name!r} in the worker", hint="loaded: " + ", ".join(models))
    return models[name]


def _generate(model: DialogueModel, req: Mapping[str, Any], requests: Any, replies: Any,
              backlog: deque[dict[str, Any]], idle: Mapping[str, float] | None = None) -> bool:
    """Stream one reply; between deltas, take a ``cancel`` for it (others wait in ``backlog``).
    ``idle``: the pre-encoding done since the last reply, reported with this one's stats.

    Returns:
        True when a ``stop`` arrived meanwhile (the worker should exit).
    """
    rid = req["id"]
    messages = req.get("messages")
    stream = model.stream(messages if isinstance(messages, list) else [],  # check_messages rejects []
                          max_new_tokens=int(req.get("max_new_tokens", 128)),
                          temperature=float(req.get("temperature", 0.0)), seed=int(req.get("seed", 0)))
    t0 = time.perf_counter()
    first = 0.0
    try:
        for delta in stream:
            if not first:
                first = time.perf_counter() - t0
            _send(replies, {"type": "delta", "id": rid, "text": delta})
            while (other := _read(requests, block=False)) is not None:
                if other.get("op") == "cancel" and other.get("id") == rid:
                    _send(replies, {"type": "done", "id": rid, "stats": {"cancelled": True, "first_delta_s": first}})
                    return False
                if other.get("op") == "stop":
                    return True
                backlog.append(other)
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    stats: dict[str, Any] = {"first_delta_s": first, "total_s": time.perf_counter() - t0, **(idle or {})}
    stats.update(getattr(model, "last_stats", {}) or {})
    _send(replies, {"type": "done", "id": rid, "stats": stats})
    return False


# -- the parent side ----------------------------------------------------------------------

def next_reply(q: queue.Queue[dict[str, Any]], pid: int | None, cpu_limit_s: float,
               idle_s: float = IDLE_TIMEOUT_S) -> dict[str, Any]:
    """The next message of ``q``, timed by the CPU of the process that answers it (``pid``).

    Gives up (:class:`~game.models.llm.ModelError`) when that process has used ``cpu_limit_s``
    CPU seconds (:func:`game.work.process_cpu`) since the wait began without a message (a
    loop that never answers), or when it has used no CPU at all for ``idle_s`` wall seconds
    (hung). Where its CPU cannot be read (``pid`` ``None``, no ``/proc``), ``cpu_limit_s``
    counts wall seconds instead.
    """
    start = now = time.monotonic()
    cpu0 = last = process_cpu(pid) if pid is not None else -1.0
    busy_at = now
    while True:
        try:
            return q.get(timeout=POLL_S)
        except queue.Empty:
            pass
        now = time.monotonic()
        cpu = process_cpu(pid) if pid is not None else -1.0
        if cpu < 0 or cpu0 < 0:
            if now - start >= cpu_limit_s:
                raise ModelError(f"the model worker sent nothing for {cpu_limit_s:.0f} s")
            continue
        if cpu - cpu0 >= cpu_limit_s:
            raise ModelError(f"the model worker used {cpu - cpu0:.0f} s of CPU without sending anything "
                             f"(limit {cpu_limit_s:.0f} s)")
        if cpu > last:
            last, busy_at = cpu, now
        elif now - busy_at >= idle_s:
            raise ModelError(f"the model worker used no CPU for {idle_s:.0f} s while a reply was due: it hangs")


class ModelWorker:
    """A child process that loads dialogue models once and streams their replies.

    Args:
        specs: model name -> :class:`ModelSpec`.
        torch_threads: torch threads in the worker (1: the window keeps the other cores).
        show_progress: show a ``rich`` progress bar while :meth:`start` waits.
        on_progress: also called with ``(model, stage, fraction)`` (for the window's loading screen).

    Use as a context manager, or call :meth:`start` and :meth:`close`.
    """

    def __init__(self, specs: Mapping[str, ModelSpec], *, torch_threads: int = 1, show_progress: bool = True,
                 on_progress: Progress | None = None) -> None:
        self.specs = dict(specs)
        self.torch_threads = torch_threads
        self.show_progress = show_progress
        self.on_progress = on_progress
        #: model name -> ``{"name", "context_size"}`` once ready.
        self.info: dict[str, dict[str, Any]] = {}
        #: model name -> ``(stage, fraction)``: the latest loading progress.
        self.progress: dict[str, tuple[str, float]] = {}
        self._ctx = mp.get_context("spawn")
        self._requests: Any = None
        self._replies: Any = None
        self._proc: Any = None
        self._ids = itertools.count(1)
        self._streams: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._failed: dict[str, Any] | None = None
        self._dispatcher: threading.Thread | None = None
        self._closing = False
        self._display: ProgressDisplay | None = None
        #: stats of the last finished generation (``first_delta_s``, ``total_s``, the model's own).
        self.last_stats: dict[str, Any] = {}
        #: stats of the last stretch of idle pre-encoding (the model's ``last_preencode``), and how many ran.
        self.last_preencode: dict[str, Any] = {}
        self.preencode_runs = 0

    # -- life ----------------------------------------------------------------------------
    def start(self, wait: bool = True, timeout: float = 900.0) -> ModelWorker:
        """Spawn the worker; with ``wait``, block until every model is loaded (progress shown).

        Raises:
            ModelError: a model failed to load, the worker died, or ``timeout`` seconds passed.
        """
        if self._proc is not None:
            return self
        self._requests = self._ctx.Queue()
        self._replies = self._ctx.Queue()
        specs_json = json.dumps({n: s.to_json() for n, s in self.specs.items()})
        self._proc = self._ctx.Process(target=_serve, args=(self._requests, self._replies, specs_json,
                                                           self.torch_threads),
                                       name="worldloom-models", daemon=True)
        self._proc.start()
        self._dispatcher = threading.Thread(target=self._dispatch, name="worldloom-models-replies", daemon=True)
        self._dispatcher.start()
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 900.0) -> None:
        """Block until the models are loaded, showing progress.

        Raises:
            ModelError: a model failed to load, the worker died, or ``timeout`` passed.
        """
        if self.show_progress and not self._ready.is_set() and self._display is None:
            with ProgressDisplay(list(self.specs)) as display:
                self._display = display
                try:
                    self._wait(timeout)
                finally:
                    self._display = None
        else:
            self._wait(timeout)

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self._ready.wait(POLL_S):
            if self._failed is not None or not self.alive:
                break
            if time.monotonic() > deadline:
                raise ModelError(f"the model worker did not load its models in {timeout:.0f} s")
        if self._failed is not None:
            raise ModelError(f"the model worker could not load its models: {self._failed.get('why', '')}",
                             where=str(self._failed.get("where", "")))
        if not self._ready.is_set():
            raise ModelError("the model worker died while loading its models")

    @property
    def ready(self) -> bool:
        """Whether every model is loaded and the worker is serving."""
        return self._ready.is_set() and self.alive

    @property
    def alive(self) -> bool:
        """Whether the worker process is running."""
        return self._proc is not None and self._proc.is_alive()

    def close(self, timeout: float = 10.0) -> None:
        """Stop the worker (asks it to stop, then terminates it after ``timeout`` seconds)."""
        if self._proc is None:
            return
        self._closing = True
        with contextlib.suppress(Exception):
            _send(self._requests, {"op": "stop"})
        self._proc.join(timeout)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(5)
        if self._dispatcher is not None:
            self._dispatcher.join(2 * POLL_S + 1)
        self._fail_open_streams("the model worker was closed")
        for q in (self._requests, self._replies):
            with contextlib.suppress(Exception):
                q.close()
                q.join_thread()
        self._proc = None

    def __enter__(self) -> ModelWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- replies -------------------------------------------------------------------------
    def _dispatch(self) -> None:
        while True:
            try:
                raw = self._replies.get(timeout=POLL_S)
            except queue.Empty:
                if self._proc is None or not self._proc.is_alive():
                    why = "the model worker was closed" if self._closing else "the model worker died"
                    self._fail_open_streams(why)
                    return
                continue
            except (OSError, ValueError, EOFError):
                self._fail_open_streams("the model worker's queue closed")
                return
            msg = json.loads(raw)
            kind = msg.get("type")
            if kind == "progress":
                name, stage, fraction = str(msg["model"]), str(msg["stage"]), float(msg["fraction"])
                self.progress[name] = (stage, fraction)
                if self._display is not None:
                    self._display(name, stage, fraction)
                if self.on_progress is not None:
                    self.on_progress(name, stage, fraction)
            elif kind == "ready":
                self.info = dict(msg["models"])
                self._ready.set()
            elif kind == "failed":
                self._failed = msg
            elif kind == "preencoded":
                self.last_preencode = dict(msg.get("stats", {}))
                self.preencode_runs += 1
            else:
                with self._lock:
                    q = self._streams.get(int(msg.get("id", -1)))
                if q is not None:
                    q.put(msg)

    def _fail_open_streams(self, why: str) -> None:
        with self._lock:
            streams = list(self._streams.values())
        for q in streams:
            q.put({"type": "error", "why": why})

    def _open(self, request: dict[str, Any]) -> tuple[int, queue.Queue[dict[str, Any]]]:
        if not self.ready:
            raise ModelError("the model worker is not running" if not self.alive else "the models are still loading")
        rid = next(self._ids)
        q: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._streams[rid] = q
        _send(self._requests, {**request, "id": rid})
        return rid, q

    def _close(self, rid: int) -> None:
        with self._lock:
            self._streams.pop(rid, None)

    def _next(self, q: queue.Queue[dict[str, Any]], timeout: float) -> dict[str, Any]:
        pid = getattr(self._proc, "pid", None)
        msg = next_reply(q, pid, timeout)
        if msg.get("type") == "error":
            raise ModelError(str(msg.get("why", "the model failed")), where=str(msg.get("where", "")))
        return msg

    def generate(self, model: str, messages: list[Message], max_new_tokens: int = 128, temperature: float = 0.0,
                 seed: int = 0, timeout: float = DELTA_TIMEOUT_S) -> Iterator[str]:
        """Stream a reply of ``model`` as text deltas. Closing the iterator early cancels the generation.

        Raises:
            ModelError: the worker is not ready, the request was bad, the model failed,
                the worker died, or it used ``timeout`` CPU seconds without sending the next
                delta, or no CPU for :data:`IDLE_TIMEOUT_S` wall seconds (:func:`next_reply`).
        """
        rid, q = self._open({"op": "generate", "model": model, "messages": messages,
                             "max_new_tokens": max_new_tokens, "temperature": temperature, "seed": seed})
        finished = False
        try:
            while True:
                msg = self._next(q, timeout)
                if msg["type"] == "delta":
                    yield str(msg["text"])
                elif msg["type"] == "done":
                    finished = True
                    self.last_stats = dict(msg.get("stats", {}))
                    return
        except ModelError:
            finished = True
            raise
        finally:
            if not finished and self.alive:
                with contextlib.suppress(Exception):
                    _send(self._requests, {"op": "cancel", "id": rid})
            self._close(rid)

    def preencode(self, model: str, messages: list[Message]) -> None:
        """Ask the worker to encode ``messages`` (the known start of ``model``'s next prompt) while
        it is idle; returns at once, sends nothing back (see the module docstring). Does nothing
        when the worker is not ready."""
        if not self.ready:
            return
        with contextlib.suppress(Exception):
            _send(self._requests, {"op": "preencode", "id": next(self._ids), "model": model, "messages": messages})

    def count_tokens(self, model: str, text: str, timeout: float = 60.0) -> int:
        """Tokens of ``text`` in ``model``'s tokenizer.

        Raises:
            ModelError: as :meth:`generate`.
        """
        rid, q = self._open({"op": "count", "model": model, "text": text})
        try:
            return int(self._next(q, timeout)["n"])
        finally:
            self._close(rid)

    def ping(self, timeout: float = 10.0) -> float:
        """Round-trip time to the worker, seconds.

        Raises:
            ModelError: the worker is not ready or did not answer.
        """
        t0 = time.perf_counter()
        rid, q = self._open({"op": "ping"})
        try:
            self._next(q, timeout)
        finally:
            self._close(rid)
        return time.perf_counter() - t0

    def model(self, name: str) -> WorkerDialogueModel:
        """The :class:`~game.models.llm.DialogueModel` for the worker's model ``name``.

        Raises:
            ModelError: the worker is not ready or has no such model.
        """
        if not self.ready:
            self.wait_ready()
        if name not in self.info:
            raise ModelError(f"the model worker has no model {name!r}", hint="loaded: " + ", ".join(self.info))
        return WorkerDialogueModel(self, name)


class WorkerDialogueModel:
    """A :class:`~game.models.llm.DialogueModel` whose work happens in a :class:`ModelWorker`.

    Token counts are cached per text (prompt assembly asks for the same blocks every turn).
    """

    def __init__(self, worker: ModelWorker, key: str) -> None:
        self.worker = worker
        self.key = key
        info = worker.info[key]
        self.name = str(info["name"])
        self.context_size = int(info["context_size"])
        self._counts: dict[str, int] = {}

    def stream(self, messages: list[Message], max_new_tokens: int = 128, temperature: float = 0.0,
               seed: int = 0) -> Iterator[str]:
        """See :meth:`ModelWorker.generate`."""
        return self.worker.generate(self.key, messages, max_new_tokens, temperature, seed)

    def preencode(self, messages: list[Message]) -> None:
        """See :meth:`ModelWorker.preencode` (returns at once)."""
        self.worker.preencode(self.key, messages)

    def count_tokens(self, text: str) -> int:
        """See :meth:`ModelWorker.count_tokens` (cached, at most 4096 texts)."""
        n = self._counts.get(text)
        if n is None:
            n = self.worker.count_tokens(self.key, text)
            if len(self._counts) >= 4096:
                self._counts.clear()
            self._counts[text] = n
        return n


def start_worker(specs: Mapping[str, ModelSpec], show_progress: bool = True,
                 on_progress: Callable[[str, str, float], None] | None = None) -> ModelWorker:
    """Start a :class:`ModelWorker` and wait until its models are loaded.

    Raises:
        ModelError: see :meth:`ModelWorker.start`.
    """
    return ModelWorker(specs, show_progress=show_progress, on_progress=on_progress).start()

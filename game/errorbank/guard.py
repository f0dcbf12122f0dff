"""`GuardedBackend`: a backend wrapper that watches every block and corrects failures.

It implements :class:`game.world.protocol.Backend` itself, so a :class:`~game.session.Session`
uses it like any backend::

    guard = GuardedBackend(make_backend("procedural"), store=ErrorStore("errors.db"))
    session = Session(story, guard)

What it does with each request:

* runs the inner ``generate`` in a worker thread, one block per ask, with a timeout on
  the guard's :mod:`clock <game.errorbank.clock>` (the backend's own progress for an
  in-process backend, real time for a remote one, frame time headless; never the wall
  clock of a busy machine): ``deadline_ms`` plus one block's play time (at least
  ``min_timeout_s``; ``timeout_s`` when the request has no deadline), so a hang shows the
  fallback within one block of the missed deadline;
* checks every block (:class:`~game.errorbank.monitors.FrameMonitor`: shape, dtype,
  empty, black, frozen, late); an exception, a disconnect or a bad block is retried
  with exponential back-off (``backoff_s * 2**k``, at most ``backoff_max_s``), from
  the last good block (a snapshot taken before each block where the backend has
  snapshots, plus a continuation request for the frames still owed);
* after ``retries`` failures, or at once on a hang, switches to the fallback
  (the procedural backend at the inner backend's size) for the rest of the request
  and the following ones, sets :attr:`notice`, and probes the inner backend every
  ``probe_every_s`` seconds of frame time, even while a hung call is still alive (a
  probe waits at most one deadline; one still out is looked at again on the next
  request); the first good block switches back;
* validates each block's audio (dtype, shape, length for its frames, NaN, range) and
  repairs it before it is passed on (:class:`~game.errorbank.monitors.AudioMonitor`);
* renders the same request with a clean procedural backend at 96 x 54 (the
  *reference*: the current sink, with the camera, night and rain the request asks
  for) and runs the drift and story monitors against it; on drift or a story fault
  it restores the snapshot before the block, sends ``MemoryOp("reanchor",
  anchors=<the request's sink_current anchors>)`` and ``MemoryOp("reset_history")``,
  regenerates the block, checks it again and shows it;
* records every case (fault, drift, correction, whether it worked) in the store, and
  one drift sample per checked block.

A backend whose frames are placeholders by design (``Capabilities.placeholder_frames``, the
``null`` backend) gets no reference and no drift check, and its still blocks are not frozen.

The story state is never touched: the guard only ever changes which frames are shown.
Sequence numbers: the inner backend sees ``seq * SEQ_STRIDE`` for a request's first
attempt (a repeat of the same request replays it) and higher numbers for retries and
continuations; blocks come back restamped with the request's ``seq``, the guard's
block index and its own frame clock, and carry ``errorbank.*`` probes.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from game.errorbank.clock import Clock, Watch, Worker, default_clock
from game.errorbank.metrics import U8, thumbnail
from game.errorbank.monitors import Finding, Monitors
from game.errorbank.store import Case, ErrorStore, Sample, Severity
from game.errors import BackendError
from game.world.protocol import (
    Backend,
    Capabilities,
    FrameChunk,
    MemoryOp,
    MemoryResult,
    SessionStart,
    WorldRequest,
    interrupt,
)

#: Inner sequence numbers per request: ``seq * SEQ_STRIDE + attempt``.
SEQ_STRIDE = 1000
#: What the player is told while the fallback is showing.
NOTICE_DOWN = "world model unreachable \u2014 showing the procedural world"
#: Finding kinds that make a block unusable (retry / fall back).
FAULT_KINDS = ("frame.shape", "frame.black", "frame.frozen")
#: Finding kinds corrected by re-anchoring and regenerating.
CORRECTABLE_KINDS = ("drift", "story.missing", "story.extra")
#: Frame indices of corrections kept in :attr:`GuardStats.correction_frames`.
KEEP_CORRECTIONS = 1024
#: Snapshot handle pairs (inner -> reference) kept for :meth:`GuardedBackend.memory` restores.
KEEP_SNAPSHOTS = 256

BackendFactory = Callable[[Capabilities], Backend]


def procedural_factory(caps: Capabilities) -> Backend:
    """A procedural backend at ``caps``' size, fps and block length (the default fallback)."""
    from game.world.backends.procedural import ProceduralBackend

    return ProceduralBackend(width=caps.width, height=caps.height, fps=caps.fps,
                             frames_per_block=caps.frames_per_block)


#: Sample rate of the reference renderer's sound, Hz: its frames are compared, its sound is
#: thrown away, and ambience at the game's 22,050 Hz cost as much as its frames.
REFERENCE_AUDIO_RATE = 1000


def reference_factory(caps: Capabilities) -> Backend:
    """The clean reference renderer: a procedural backend at ``caps``' size, fps and block
    length, its (unused) sound at :data:`REFERENCE_AUDIO_RATE` (the default ``reference_factory``)."""
    from game.world.backends.procedural import ProceduralBackend

    return ProceduralBackend(width=caps.width, height=caps.height, fps=caps.fps,
                             frames_per_block=caps.frames_per_block, audio_rate=REFERENCE_AUDIO_RATE)


def reference_size(caps: Capabilities, width: int = 96) -> tuple[int, int]:
    """Reference frame size ``(w, h)``: ``width`` wide with ``caps``' aspect ratio, at least 16 x 16."""
    h = max(16, round(width * caps.height / max(1, caps.width)))
    return max(16, width), h


class _Hang(Exception):
    """A call did not return within its timeout."""


_END = object()


class _Pump:
    """Runs ``make()`` (an iterator of blocks) in a daemon thread and hands over one block per :meth:`next`."""

    def __init__(self, make: Callable[[], Iterator[FrameChunk]]) -> None:
        self._make = make
        self._ask: queue.Queue[str] = queue.Queue()
        self._out: queue.Queue[tuple[str, Any]] = queue.Queue()
        #: set when the block asked for (or an error, or the end) is there to take
        self.ready = threading.Event()
        self.worker = Worker()
        self.thread = threading.Thread(target=self._run, name="errorbank-pump", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.worker.enter()
        it: Iterator[FrameChunk] | None = None
        try:
            while self._ask.get() == "next":
                try:
                    if it is None:
                        it = iter(self._make())
                    self._put("chunk", next(it))
                except StopIteration:
                    self._put("end", None)
                    return
                except BaseException as exc:  # noqa: BLE001 - handed to the guard
                    self._put("error", exc)
                    return
        finally:
            close = getattr(it, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - a backend's cleanup must not escape its thread
                    pass

    def _put(self, kind: str, value: Any) -> None:
        self._out.put((kind, value))
        self.ready.set()

    def ask(self, clock: Clock) -> Watch:
        """Ask for the next block (the worker starts on it at once); returns the watch timing it."""
        self.ready.clear()
        watch = clock.watch(self.worker)
        self._ask.put("next")
        return watch

    def take(self, watch: Watch, timeout: float) -> Any:
        """The block asked for, or ``_END``.

        Raises:
            _Hang: nothing came within ``timeout`` seconds of ``watch``'s clock.
            BaseException: whatever the backend raised.
        """
        if not watch.wait(self.ready, timeout):
            raise _Hang(f"no block within {timeout:.2f} s")
        return self.take_now()

    def take_now(self) -> Any:
        """What came for the last ask (call once :attr:`ready` is set), or ``_END``.

        Raises:
            BaseException: whatever the backend raised.
        """
        kind, value = self._out.get_nowait()
        if kind == "error":
            raise value
        return _END if kind == "end" else value

    def close(self, wait: float = 0.0) -> None:
        """Ask the worker to stop (it closes the inner iterator) and wait up to ``wait`` real seconds
        for it (a backend's cleanup; nothing is decided on it)."""
        self._ask.put("close")
        if wait > 0 and self.thread.is_alive():
            self.thread.join(wait)


@dataclass
class GuardStats:
    """Counters of one guard (for benches and the window's debug overlay).

    Attributes:
        blocks: blocks shown; ``frames``: frames shown.
        checked: blocks drift-checked; ``alarms``: blocks a monitor flagged.
        corrections: re-anchor + regenerate corrections; ``corrections_worked``: of those, passed.
        regenerated_frames: frames generated again by corrections and retries.
        retries: retries after a fault; ``fallback_frames``: frames shown from the fallback.
        downs, backs: switches to and from the fallback.
        hangs, errors, faults, late: inner failures by kind.
        probes: probes of a down inner backend started.
        audio_fixed: blocks whose audio was repaired or replaced by silence.
        stalls: blocks whose wall time exceeded their play time (T / fps); a figure for
            benches, never a decision.
        correction_frames: frame index of each block a correction replaced (the last
            :data:`KEEP_CORRECTIONS`).
    """

    blocks: int = 0
    frames: int = 0
    checked: int = 0
    alarms: int = 0
    corrections: int = 0
    corrections_worked: int = 0
    regenerated_frames: int = 0
    retries: int = 0
    fallback_frames: int = 0
    downs: int = 0
    backs: int = 0
    hangs: int = 0
    errors: int = 0
    faults: int = 0
    late: int = 0
    probes: int = 0
    audio_fixed: int = 0
    stalls: int = 0
    correction_frames: deque[int] = field(default_factory=lambda: deque(maxlen=KEEP_CORRECTIONS))


@dataclass
class _Req:
    """Progress of one outer request."""

    request: WorldRequest
    total: int
    t0: float
    done: int = 0
    out_block: int = 0
    finished: bool = False
    camera: float | None = None
    pending: list[int] = field(default_factory=list)
    block_t0: float = 0.0
    opens: int = 0
    audio_cased: bool = False
    interrupted: bool = False


@dataclass
class _Run:
    """One inner ``generate`` call (a sub-request) and its reference twin."""

    sub: WorldRequest
    pump: _Pump
    ref: Iterator[FrameChunk] | None
    watch: Watch | None = None
    frame: int = 0


@dataclass
class _Block:
    chunk: FrameChunk
    ref: FrameChunk | None
    findings: list[Finding]
    drift: float | None = None
    drift_key: str = ""


@dataclass
class _Failure:
    kind: str
    note: str
    findings: list[Finding] = field(default_factory=list)
    frames: U8 | None = None
    metrics: dict[str, Any] = field(default_factory=dict)


class GuardedBackend:
    """A :class:`~game.world.protocol.Backend` that guards ``inner`` (see the module doc).

    Args:
        inner: the backend to guard.
        fallback_factory: builds the fallback from the inner capabilities (default:
            :func:`procedural_factory`).
        store: where cases and drift samples go, or ``None`` (nothing recorded).
        monitors: the monitors (default: all, with the store's calibrated thresholds).
        reference_factory: builds the clean reference renderer from capabilities
            sized by :func:`reference_size` (default: :func:`reference_factory`, procedural
            with its unused sound at a low rate), or ``None`` to run
            without a reference (no drift monitor; story and frozen checks fall back
            to the request alone).
        session, story: ids written into each case.
        scene_of: request -> scene id for cases (default: the location id).
        timeout_s: block timeout without a deadline, s of ``clock``; ``grace_blocks``,
            ``min_timeout_s``: the timeout with one, ``max(min_timeout_s, deadline_ms / 1000
            + grace_blocks * frames_per_block / fps)``: a hang costs at most that many blocks
            past the deadline.
        retries: retries after a fault before falling back; ``backoff_s``, ``backoff_max_s``:
            their back-off, s of ``clock``.
        probe_every_s: frame-time seconds between probes of a down inner backend.
        restart_on_recover: call ``inner.start`` again before a probe (a reconnect).
        clock: what timeouts and lateness are measured on (:mod:`game.errorbank.clock`);
            default :func:`~game.errorbank.clock.default_clock`: the backend's own progress
            (:class:`~game.errorbank.clock.WorkClock`) in this process, real time for a remote
            backend. Headless play (:func:`game.headless.play_headless`) passes a
            :class:`~game.errorbank.clock.FrameClock` of the session's frame time for a
            backend outside this process, and keeps the default for one in it.
        rewind: snapshot before each block and restore it before a retry or a
            correction, where the inner backend has snapshots.
        check_every: drift-check every n-th block (frame checks run on all).
        on_notice: called with the new :attr:`notice` whenever it changes.

    Attributes:
        notice: ``""``, or :data:`NOTICE_DOWN` while the fallback shows (for the player).
        down_reason: why the inner backend was last given up (for logs), or ``""``.
        frame: frames yielded so far (the guard's frame clock, = the session's).
        stats: :class:`GuardStats`.
        caps: the inner backend's capabilities.

    Raises:
        BackendError: neither the inner backend nor the fallback can say its capabilities.
    """

    def __init__(self, inner: Backend, fallback_factory: BackendFactory | None = None,
                 store: ErrorStore | None = None, monitors: Monitors | None = None, *,
                 reference_factory: BackendFactory | None = reference_factory,
                 session: str = "", story: str = "", scene_of: Callable[[WorldRequest], str] | None = None,
                 timeout_s: float = 10.0, grace_blocks: float = 1.0, min_timeout_s: float = 0.1,
                 retries: int = 2, backoff_s: float = 0.05, backoff_max_s: float = 1.0,
                 probe_every_s: float = 5.0, restart_on_recover: bool = True, rewind: bool = True,
                 check_every: int = 1, on_notice: Callable[[str], None] | None = None,
                 clock: Clock | None = None) -> None:
        self.inner = inner
        self.fallback_factory = fallback_factory or procedural_factory
        self.store = store
        self.monitors = monitors or Monitors.default(store.thresholds() if store else None)
        self.reference_factory = reference_factory
        self.session = session
        self.story = story
        self.scene_of = scene_of or (lambda r: r.scene.location)
        self.timeout_s = timeout_s
        self.grace_blocks = grace_blocks
        self.clock: Clock = clock if clock is not None else default_clock(inner)
        self.min_timeout_s = min_timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.probe_every_s = probe_every_s
        self.restart_on_recover = restart_on_recover
        self.check_every = max(1, check_every)
        self.on_notice = on_notice
        self.stats = GuardStats()
        self.notice = ""
        self._inner_notice = ""
        self.down_reason = ""
        self.frame = 0
        self._start: SessionStart | None = None
        self._down = False
        self._live: _Req | None = None  # the outer request being served
        self._down_frame = 0
        self._last_probe = 0
        self._hung: list[threading.Thread] = []
        self._probe: _Run | None = None
        self._fallback: Backend | None = None
        self._fallback_started = False
        self._ref: Backend | None = None
        self._ref_start: SessionStart | None = None
        self._attempts: OrderedDict[int, int] = OrderedDict()
        self._snap_map: OrderedDict[str, str] = OrderedDict()
        try:
            self.caps = inner.capabilities()
        except Exception as exc:  # noqa: BLE001 - a dead backend must not stop the game
            self.caps = self.fallback_factory(Capabilities("procedural", 12, 24.0, 960, 540)).capabilities()
            self._go_down(None, f"capabilities() failed: {exc}")
        self.rewind = rewind and self.caps.snapshot

    # -- the protocol -------------------------------------------------------------------
    def capabilities(self) -> Capabilities:
        """The inner backend's capabilities (the guard is transparent)."""
        return self.caps

    @property
    def down(self) -> bool:
        """Whether the fallback is showing instead of the inner backend."""
        return self._down

    def start(self, start: SessionStart) -> None:
        """Start the inner backend (and the reference); a failure switches to the fallback
        instead of raising."""
        self._start = start
        self._start_reference(start)
        if self._down:
            self._ensure_fallback()
            return
        try:
            self._call(lambda: self.inner.start(start), self.timeout_s)
        except Exception as exc:  # noqa: BLE001
            self._fault_case("backend.hang" if isinstance(exc, _Hang) else "backend.error", "error",
                             None, f"start failed: {type(exc).__name__}: {exc}", "fallback")
            self._go_down(None, f"start failed: {exc}")
            self._ensure_fallback()
            return
        self._relay_inner_notice()

    def generate(self, request: WorldRequest) -> Generator[FrameChunk, None, None]:
        """Yield the request's blocks: the inner backend's, checked and corrected, or the
        fallback's while it is down. Never raises for an inner failure.

        Raises:
            BackendError: the fallback itself failed (nothing left to show).
        """
        return self._generate(request)

    def memory(self, op: MemoryOp) -> MemoryResult:
        """Apply ``op`` to the inner backend (the fallback while down); mirrored on the reference."""
        if self._down:
            return self._ensure_fallback().memory(op)
        try:
            result: MemoryResult = self._call(lambda: self.inner.memory(op), self.timeout_s)
        except Exception as exc:  # noqa: BLE001
            self._fault_case("backend.error", "error", None, f"memory {op.op} failed: {exc}", "fallback")
            self._go_down(None, f"memory {op.op} failed: {exc}")
            return MemoryResult(False, note=f"world model unreachable: {exc}")
        ref_result = self._ref_memory(op)
        if op.op == "snapshot" and result.handle and ref_result is not None:
            self._snap_map[result.handle] = ref_result.handle
            while len(self._snap_map) > KEEP_SNAPSHOTS:
                self._snap_map.popitem(last=False)
        return result

    def close(self) -> None:
        """Close the inner backend, the fallback and the reference; flush the store (not closed)."""
        if self._probe is not None:
            self._abandon(self._probe)
            self._probe = None
        for b in (self.inner, self._fallback, self._ref):
            if b is None:
                continue
            try:
                self._call(b.close, min(self.timeout_s, 2.0))
            except Exception:  # noqa: BLE001 - closing a dead backend is not an error
                pass
        if self.store is not None:
            self.store.flush()

    # -- the request loop ---------------------------------------------------------------------
    def interrupt(self, session_id: str = "") -> None:
        """Abandon the block in flight (:class:`~game.world.protocol.Interruptible`): the
        request being served ends without it, and its early end is not a failure (no
        retry, no fallback, no case). Forwarded to the inner backend when it has one."""
        live = self._live
        if live is not None and (not session_id or live.request.session_id == session_id):
            live.interrupted = True
        interrupt(self.inner, session_id)

    def _generate(self, request: WorldRequest) -> Generator[FrameChunk, None, None]:
        st = _Req(request, self.caps.round_up(request.min_frames), time.perf_counter())
        st.block_t0 = st.t0
        self._live = st
        try:
            if self._down:
                yield from self._serve_probe(st)
            else:
                yield from self._serve_inner(st)
            if not st.finished and not st.interrupted:
                yield from self._serve_fallback(st)
            self._relay_inner_notice()
        finally:
            if self._live is st:
                self._live = None

    def _serve_probe(self, st: _Req) -> Iterator[FrameChunk]:
        """While down: look at a probe still out, start one when due; serve the inner backend
        again as soon as one answers with a good block."""
        p = self._probe
        if p is not None:
            self._probe = None
            answered = p.pump.ready.is_set() or (  # has it answered by now (no wait on real clocks)
                p.watch is not None and p.watch.wait(p.pump.ready, p.watch.elapsed()))
            if answered:
                good = self._answer_ok(p)
                self._close(p)
                if good:
                    self._come_back(st)
                    yield from self._serve_inner(st)
                    return
            elif self.frame - p.frame < self.probe_every_s * self.caps.fps:
                self._probe = p  # still out: looked at again on the next request
                return
            else:
                self._abandon(p)  # out too long: a fresh probe below
        if not self._probe_due():
            return
        self._last_probe = self.frame
        self.stats.probes += 1
        if self.restart_on_recover and self._start is not None:
            self._start_reference(self._start)
        run = self._open(st, restart=self.restart_on_recover)
        got = self._pull(run, st, self._probe_wait(st.request), probe=True)
        if isinstance(got, _Block):
            self._come_back(st)
            yield from self._serve_inner(st, run, got)
        elif got.kind == "backend.hang":
            self._probe = run  # still alive: its answer, when it comes, switches back
        else:
            self._close(run)

    def _answer_ok(self, run: _Run) -> bool:
        """Whether a probe that was still out has since answered with a usable block."""
        try:
            item = run.pump.take_now()
        except Exception:  # noqa: BLE001 - still down
            return False
        if item is _END:
            return False
        findings = self.monitors.frame.check(item, run.sub, self.caps)
        return not any(f.kind in FAULT_KINDS for f in findings)

    def _serve_inner(self, st: _Req, run: _Run | None = None, first: _Block | None = None) -> Iterator[FrameChunk]:
        failures = 0
        run = run if run is not None else self._open(st)
        try:
            while not st.finished:
                got: _Block | _Failure
                snaps: tuple[str, str] | None = None
                if first is not None:
                    got, first = first, None
                else:
                    snaps = self._snapshot() if self.rewind else None
                    got = self._pull(run, st)
                if isinstance(got, _Failure) and got.kind == "end":
                    if st.interrupted:
                        break
                    if st.done == 0:
                        why = "the backend yielded no blocks"
                        got = _Failure("frame.shape", why, [Finding("frame.shape", "error", why)])
                    else:
                        st.finished = True
                        break
                if isinstance(got, _Failure):
                    self._close(run)
                    failures += 1
                    give_up = got.kind == "backend.hang" or failures > self.retries
                    self._resolve(st, False)
                    st.pending.append(self._failure_case(st, got, "fallback" if give_up else "retry"))
                    if give_up:
                        self._go_down(st, got.note)
                        return
                    self.stats.retries += 1
                    self.clock.sleep(min(self.backoff_max_s, self.backoff_s * 2 ** (failures - 1)))
                    if snaps is not None:
                        self._restore(snaps)
                    run = self._open(st)
                    continue
                block = got
                correctable = [f for f in block.findings if f.kind in CORRECTABLE_KINDS]
                if correctable:
                    self._close(run)
                    fixed = self._correct(st, snaps, block, correctable)
                    if isinstance(fixed, _Failure):
                        failures += 1
                        self._resolve(st, False)
                        st.pending.append(self._failure_case(st, fixed, "fallback"))
                        self._go_down(st, fixed.note)
                        return
                    run, block = fixed
                failures = 0
                yield self._emit(st, block.chunk, block, fallback=False)
                st.block_t0 = time.perf_counter()
        finally:
            self._close(run)

    def _serve_fallback(self, st: _Req) -> Iterator[FrameChunk]:
        fb = self._ensure_fallback()
        sub = self._subrequest(st)
        it = iter(fb.generate(sub))
        try:
            for chunk in it:
                yield self._emit(st, chunk, None, fallback=True)
                st.block_t0 = time.perf_counter()
                if st.finished:
                    break
        except BackendError:
            raise
        except Exception as exc:
            raise BackendError(f"fallback backend failed too: {exc}") from exc
        finally:
            close = getattr(it, "close", None)
            if callable(close):
                close()
        st.finished = True

    # -- one block -----------------------------------------------------------------------------
    def _open(self, st: _Req, restart: bool = False) -> _Run:
        """A worker for the frames still owed; with ``restart`` it calls ``inner.start`` first (a reconnect)."""
        sub = self._subrequest(st)
        inner = self.inner
        start = self._start if restart else None

        def make() -> Iterator[FrameChunk]:
            if start is not None:
                inner.start(start)
            return iter(inner.generate(sub))

        ref: Iterator[FrameChunk] | None = None
        if self._ref is not None:
            try:
                ref = iter(self._ref.generate(sub))
            except Exception:  # noqa: BLE001 - no reference for this run
                ref = None
        return _Run(sub, _Pump(make), ref, frame=self.frame)

    def _close(self, run: _Run) -> None:
        hung = run.pump.thread in self._hung
        run.pump.close(0.0 if hung else min(self.timeout_s, 1.0))
        close = getattr(run.ref, "close", None)
        if callable(close):
            close()
        run.ref = None

    def _abandon(self, run: _Run) -> None:
        """Give up on a run whose call is still out (its thread ends if the call ever returns)."""
        self._keep_hung(run.pump.thread)
        self._close(run)

    def _keep_hung(self, thread: threading.Thread) -> None:
        self._hung = [t for t in self._hung if t.is_alive()]
        if thread not in self._hung:
            self._hung.append(thread)

    def _pull(self, run: _Run, st: _Req, timeout: float | None = None, probe: bool = False) -> _Block | _Failure:
        watch = run.pump.ask(self.clock)
        run.watch = watch
        ref_chunk: FrameChunk | None = None
        if run.ref is not None:  # rendered while the inner backend works on its block
            try:
                ref_chunk = next(run.ref, None)
            except Exception:  # noqa: BLE001 - the reference is best effort
                run.ref = None
        until = self._timeout(st.request) if timeout is None else timeout
        try:
            item = run.pump.take(watch, until)
        except _Hang as exc:
            self._keep_hung(run.pump.thread)
            if not probe:
                self.stats.hangs += 1
            return _Failure("backend.hang", f"backend hung: {exc}",
                            metrics={"key": "backend.hang", "timeout_s": round(until, 6),
                                     "deadline_ms": st.request.deadline_ms, "block": st.out_block})
        except Exception as exc:  # noqa: BLE001 - any backend failure is a case, not a crash
            self.stats.errors += 1
            return _Failure("backend.error", f"{type(exc).__name__}: {exc}")
        if item is _END:
            return _Failure("end", "the backend ended the request")
        elapsed_ms = watch.spent() * 1000.0
        ref_frames = ref_chunk.frames if ref_chunk is not None else None
        findings = self.monitors.frame.check(item, run.sub, self.caps, ref_frames, elapsed_ms)
        faults = [f for f in findings if f.kind in FAULT_KINDS]
        if faults:
            self.stats.faults += 1
            frames = item.frames if isinstance(item, FrameChunk) else None
            return _Failure(faults[0].kind, faults[0].note, faults, frames)
        chunk: FrameChunk = item
        if any(f.kind == "frame.late" for f in findings):
            self.stats.late += 1
        block = _Block(chunk, ref_chunk, findings)
        if self.monitors.drift is not None and ref_chunk is not None and st.out_block % self.check_every == 0:
            score, key, finding = self.monitors.drift.check(chunk.frames, ref_chunk.frames, run.sub, st.out_block)
            self.stats.checked += 1
            block.drift, block.drift_key = score.score, key
            if finding is not None:
                block.findings.append(finding)
        if self.monitors.story is not None:
            block.findings += self.monitors.story.check(
                chunk, run.sub, self.caps, ref_chunk.drawn if ref_chunk is not None else None, st.camera)
        return block

    def _correct(self, st: _Req, snaps: tuple[str, str] | None, block: _Block,
                 findings: list[Finding]) -> tuple[_Run, _Block] | _Failure:
        """Re-anchor to the request's current sink, drop the history, regenerate the block."""
        self.stats.alarms += 1
        self.stats.corrections += 1
        self.stats.correction_frames.append(self.frame)
        anchors = tuple(a for a in st.request.anchors if a.tier == "sink_current")
        try:
            if snaps is not None:
                self._restore(snaps)
            for op in (MemoryOp("reanchor", anchors=anchors), MemoryOp("reset_history")):
                self._inner_memory(op, self._timeout(st.request))
                self._ref_memory(op)
        except Exception as exc:  # noqa: BLE001
            self._record_findings(st, block, findings, None, "reanchor+reset_history", False)
            return _Failure("backend.hang" if isinstance(exc, _Hang) else "backend.error",
                            f"correction failed: {exc}")
        run = self._open(st)
        got = self._pull(run, st)
        correction = "reanchor+reset_history+regenerate"
        if isinstance(got, _Failure):
            self._close(run)
            self._record_findings(st, block, findings, None, correction, False)
            return got if got.kind != "end" else _Failure("frame.shape", "regenerated block missing")
        self.stats.regenerated_frames += got.chunk.n_frames
        still = [f for f in got.findings if f.kind in CORRECTABLE_KINDS]
        worked = not still
        if worked:
            self.stats.corrections_worked += 1
        self._record_findings(st, block, findings, got, correction, worked)
        got.findings = [f for f in got.findings if f.kind not in CORRECTABLE_KINDS]
        return run, got

    def _emit(self, st: _Req, chunk: FrameChunk, block: _Block | None, fallback: bool) -> FrameChunk:
        chunk = self._check_audio(st, chunk)
        if st.done + chunk.n_frames >= st.total:
            st.finished = True
        last = chunk.last or st.finished
        st.finished = last
        probes = dict(chunk.probes)
        if block is not None and block.drift is not None:
            probes["errorbank.drift"] = block.drift
            self._sample(st, block)
        if block is not None and self.stats.correction_frames and self.stats.correction_frames[-1] == self.frame:
            probes["errorbank.corrected"] = 1.0
        if fallback:
            probes["errorbank.fallback"] = 1.0
            self.stats.fallback_frames += chunk.n_frames
        for f in block.findings if block is not None else ():
            if f.kind == "frame.late":
                self._record(st, f.kind, f.severity, f.note, f.metrics, chunk.frames, None, "none", None)
        if time.perf_counter() - st.block_t0 > chunk.n_frames / max(1e-6, self.caps.fps):
            self.stats.stalls += 1
        out = replace(chunk, seq=st.request.seq, block=st.out_block, last=last, first_frame=self.frame,
                      probes=probes)
        self._resolve(st, True, chunk.frames)
        st.camera = float(chunk.memory["camera_x"]) if "camera_x" in chunk.memory else None
        st.done += chunk.n_frames
        st.out_block += 1
        self.frame += chunk.n_frames
        self.stats.blocks += 1
        self.stats.frames += chunk.n_frames
        return out

    def _check_audio(self, st: _Req, chunk: FrameChunk) -> FrameChunk:
        """The block with its audio validated (repaired or silenced); the first repair of a
        request is recorded as a case."""
        if self.monitors.audio is None:
            return chunk
        fixed, finding = self.monitors.audio.check(chunk, self.caps)
        if finding is None:
            return chunk
        self.stats.audio_fixed += 1
        if not st.audio_cased:
            st.audio_cased = True
            self._record(st, finding.kind, finding.severity, finding.note, finding.metrics, None, None,
                         str(finding.metrics.get("correction", "audio.repaired")), True)
        return fixed

    # -- sub-requests, snapshots, the reference -------------------------------------------------------
    def _subrequest(self, st: _Req) -> WorldRequest:
        """The request for the frames still owed: the request itself first, then continuations."""
        r = st.request
        known = self._attempts.get(r.seq, -1)
        k = 0 if st.opens == 0 and st.done == 0 else known + 1
        self._attempts[r.seq] = max(k, known)
        self._attempts.move_to_end(r.seq)
        while len(self._attempts) > 256:
            self._attempts.popitem(last=False)
        st.opens += 1
        seq = r.seq * SEQ_STRIDE + min(k, SEQ_STRIDE - 1)
        if st.done == 0:
            return replace(r, seq=seq)
        acts = r.actions[st.done:] if len(r.actions) > st.done else r.actions[-1:]
        cam = st.camera if st.camera is not None else r.camera_x + r.camera_dx * st.done
        return replace(r, seq=seq, min_frames=max(1, st.total - st.done), actions=acts, camera_x=cam,
                       switch_mode=None)

    def _inner_memory(self, op: MemoryOp, timeout: float) -> MemoryResult:
        inner = self.inner
        result: MemoryResult = self._call(lambda: inner.memory(op), timeout)
        return result

    def _snapshot(self) -> tuple[str, str] | None:
        try:
            res = self._inner_memory(MemoryOp("snapshot"), self.timeout_s)
        except Exception:  # noqa: BLE001 - no rewind for this block
            return None
        if not res.ok or not res.handle:
            return None
        ref = self._ref_memory(MemoryOp("snapshot"))
        return res.handle, ref.handle if ref is not None and ref.ok else ""

    def _restore(self, snaps: tuple[str, str]) -> None:
        inner_handle, ref_handle = snaps
        self._inner_memory(MemoryOp("restore", handle=inner_handle), self.timeout_s)
        if ref_handle:
            self._ref_memory(MemoryOp("restore", handle=ref_handle))

    def _start_reference(self, start: SessionStart) -> None:
        if self.reference_factory is None or self.caps.placeholder_frames:
            return  # no reference: nothing to compare placeholder frames with
        try:
            if self._ref is None:
                w, h = reference_size(self.caps)
                self._ref = self.reference_factory(replace(self.caps, width=w, height=h))
            self._ref_start = replace(start, width=None, height=None)
            self._ref.start(self._ref_start)
        except Exception:  # noqa: BLE001 - run without a reference
            self._ref = None

    def _ref_memory(self, op: MemoryOp) -> MemoryResult | None:
        if self._ref is None:
            return None
        if op.op == "restore" and op.handle in self._snap_map:
            op = replace(op, handle=self._snap_map[op.handle])
        try:
            return self._ref.memory(op)
        except Exception:  # noqa: BLE001 - the reference is best effort
            return None

    # -- up and down -------------------------------------------------------------------------
    def _ensure_fallback(self) -> Backend:
        if self._fallback is None:
            self._fallback = self.fallback_factory(self.caps)
        if not self._fallback_started and self._start is not None:
            self._fallback.start(replace(self._start, width=None, height=None))
            self._fallback_started = True
        return self._fallback

    def _go_down(self, st: _Req | None, why: str) -> None:
        if not self._down:
            self.stats.downs += 1
            self._down_frame = self.frame
        self._down = True
        self.down_reason = why
        self._last_probe = self.frame
        self._set_notice(NOTICE_DOWN)

    def _come_back(self, st: _Req) -> None:
        self._down = False
        self.down_reason = ""
        self.stats.backs += 1
        self._record(st, "backend.back", "info", "the world model answers again; switched back",
                     {"down_frames": self.frame - self._down_frame,
                      "down_s": round((self.frame - self._down_frame) / self.caps.fps, 3)},
                     None, None, "switch_back", True)
        self._set_notice("")

    def _probe_due(self) -> bool:
        return self.frame - self._last_probe >= self.probe_every_s * self.caps.fps

    def _relay_inner_notice(self) -> None:
        """Show a new sentence the inner backend has for the player (its ``notice``, if it has
        one: a remote world server that restarted, or that announces capabilities this client
        does not know) unless the fallback's own notice is showing."""
        text = str(getattr(self.inner, "notice", "") or "")
        if text != self._inner_notice and not self._down:
            self._inner_notice = text  # said once; a sentence that came while down is said on coming back
            if text:
                self._set_notice(text)

    def _set_notice(self, text: str) -> None:
        if text != self.notice:
            self.notice = text
            if self.on_notice is not None:
                self.on_notice(text)

    def _block_s(self) -> float:
        """Play time of one block, s."""
        return self.caps.frames_per_block / max(1e-6, self.caps.fps)

    def _timeout(self, request: WorldRequest) -> float:
        """How long a block may take on :attr:`clock` before it is a hang: the deadline plus
        ``grace_blocks`` blocks, at least ``min_timeout_s``; ``timeout_s`` without a deadline."""
        if request.deadline_ms > 0:
            return max(self.min_timeout_s, request.deadline_ms / 1000.0 + self.grace_blocks * self._block_s())
        return self.timeout_s

    def _probe_wait(self, request: WorldRequest) -> float:
        """How long a probe is waited for before the fallback serves: the deadline (one block without one)."""
        wait = request.deadline_ms / 1000.0 if request.deadline_ms > 0 else self._block_s()
        return max(self.min_timeout_s, wait)

    def _call(self, fn: Callable[[], Any], timeout: float) -> Any:
        """``fn()`` in a daemon thread; its result, or its exception re-raised.

        Raises:
            _Hang: it did not return within ``timeout`` seconds of :attr:`clock` (the thread
                is kept in the hung list).
        """
        box: dict[str, Any] = {}
        done = threading.Event()
        worker = Worker()

        def run() -> None:
            worker.enter()
            try:
                box["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                box["error"] = exc
            finally:
                done.set()

        t = threading.Thread(target=run, name="errorbank-call", daemon=True)
        watch = self.clock.watch(worker)
        t.start()
        if not watch.wait(done, timeout):
            self._keep_hung(t)
            raise _Hang(f"no answer within {timeout:.2f} s")
        if "error" in box:
            raise box["error"]
        return box.get("value")

    # -- the store ---------------------------------------------------------------------------------
    def _record(self, st: _Req | None, kind: str, severity: Severity, note: str, metrics: dict[str, Any],
                bad: U8 | None, fixed: U8 | None, correction: str, worked: bool | None) -> int:
        if self.store is None:
            return 0
        req = st.request if st is not None else None
        return self.store.add(Case(
            kind=kind, severity=severity, session=self.session or (req.session_id if req else ""),
            story=self.story, scene=self.scene_of(req) if req is not None else "",
            frame=self.frame, frame_time=round(self.frame / self.caps.fps, 4),
            request=req.to_json() if req is not None else {}, bad_png=_thumb(bad), fixed_png=_thumb(fixed),
            metrics=metrics, correction=correction, worked=worked, note=note))

    def _fault_case(self, kind: str, severity: Severity, st: _Req | None, note: str, correction: str) -> int:
        return self._record(st, kind, severity, note, {"key": kind}, None, None, correction, None)

    def _failure_case(self, st: _Req, f: _Failure, correction: str) -> int:
        finding = f.findings[0] if f.findings else None
        metrics = dict(finding.metrics) if finding is not None else (dict(f.metrics) or {"key": f.kind})
        return self._record(st, f.kind, "error", f.note, metrics, f.frames, None, correction, None)

    def _resolve(self, st: _Req, worked: bool, frames: U8 | None = None) -> None:
        """Close the open failure cases of this request: the next block shown fixed them, or not."""
        if not st.pending or self.store is None:
            st.pending.clear()
            return
        png = _thumb(frames) if worked else None
        changes: dict[str, Any] = {"worked": worked}
        if png is not None:
            changes["fixed_png"] = png
        self.store.update_many(list(st.pending), **changes)
        st.pending.clear()

    def _record_findings(self, st: _Req, block: _Block, findings: list[Finding], fixed: _Block | None,
                         correction: str, worked: bool) -> None:
        for f in findings:
            metrics = dict(f.metrics)
            if fixed is not None and fixed.drift is not None:
                metrics["score_after"] = round(fixed.drift, 6)
            self._record(st, f.kind, f.severity, f.note, metrics, block.chunk.frames,
                         fixed.chunk.frames if fixed is not None else None, correction, worked)

    def _sample(self, st: _Req, block: _Block) -> None:
        if self.store is None or block.drift is None:
            return
        t = self.monitors.drift.thresholds if self.monitors.drift is not None else None
        threshold = t.get(block.drift_key) if t is not None else math.nan
        corrected = bool(self.stats.correction_frames) and self.stats.correction_frames[-1] == self.frame
        self.store.add_sample(Sample(self.session or st.request.session_id, self.frame,
                                     round(self.frame / self.caps.fps, 4), block.drift_key, float(block.drift),
                                     threshold, corrected))


def _thumb(frames: U8 | None) -> bytes | None:
    """PNG thumbnail of the middle frame of a block, if it is a usable ``(T, H, W, 3)`` uint8 array."""
    if not isinstance(frames, np.ndarray) or frames.ndim != 4 or frames.shape[-1] != 3 or not len(frames):
        return None
    if frames.dtype != np.uint8 or min(frames.shape[1:3]) < 1:
        return None
    return thumbnail(frames[len(frames) // 2])

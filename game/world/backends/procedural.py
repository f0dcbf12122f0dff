"""The embedded default world backend: draws the structured scene, synthesises its sound.

``ProceduralBackend`` implements :class:`game.world.protocol.Backend` without any
model: the painter draws sky, parallax landscape and the entities (sprites from
their pictures or drawn placeholders, posed by their reaction states) straight
from the request, and :mod:`game.audio.synth` makes ambience and reaction
sounds. It is fast (far above 60 frames/s at 960x540 on one core) and
deterministic: the frames and sound of a request are a function of the session
seed, the request, the frame index within the session and the vertical look
carried over from the previous request (``w``/``s``), all of which snapshots keep.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from game.audio.synth import REACTIONS, ambience, ambience_for, mix, reaction
from game.errors import BackendError
from game.words import counted
from game.world.backends.cache import ObjectCache
from game.world.backends.landscape import LOOK_MAX
from game.world.backends.layout import Layout
from game.world.backends.painter import Painter, Plan
from game.world.backends.palette import palette_for, resolve_time
from game.world.backends.raster import U8
from game.world.backends.scenery import Embed
from game.world.backends.sessions import SessionTable, check_start_size
from game.world.backends.sprites import Sprite
from game.world.protocol import (
    Anchor,
    Capabilities,
    FrameChunk,
    MemoryOp,
    MemoryResult,
    Scene,
    SessionStart,
    Timing,
    WorldRequest,
    ignored_inputs,
)

#: Camera pan per frame while ``a``/``d`` is held, world units (a screen in 2.5 s at 24 fps).
PAN_SPEED = 1.0 / 60.0
#: Vertical look change per frame while ``w``/``s`` is held, screen heights.
LOOK_SPEED = 0.004
#: Share of the vertical look kept per frame once ``w``/``s`` is released.
LOOK_RELAX = 0.88
#: The times of day in the order they come (a step back is refused, see ``_keep_time``).
DAY = ("dawn", "day", "golden", "dusk", "night")
#: Request events after which the time of day may be anything.
RESET_CLOCK = frozenset({"load", "rollback", "start", "edit", "reset", ""})
#: Requests remembered per session for idempotent replays of the same ``seq``: a fingerprint and
#: three numbers each (``sessions.SEQ_MEMORY`` counts whole copies of a model's state), so more are kept.
SEQ_MEMORY = 64


@dataclass
class _Session:
    """Everything a backend session carries between requests (snapshots copy it)."""

    session_id: str
    seed: int
    prompt: str
    anchors_global: tuple[Anchor, ...]
    anchors_current: tuple[Anchor, ...] = ()
    frame: int = 0
    camera_x: float = 0.0
    camera_y: float = 0.0
    window: int = 0
    last_seq: int = -1
    scene: Scene | None = None
    seen: dict[int, tuple[str, int, float, str]] = field(default_factory=dict)
    clock: str = ""
    notes: tuple[str, ...] = ()

    def copy(self, session_id: str | None = None) -> _Session:
        """An independent copy, optionally under another session id."""
        return replace(self, session_id=session_id or self.session_id, seen=dict(self.seen))


@dataclass(frozen=True)
class CameraPath:
    """Camera per frame of a request: ``x`` in world units, ``y`` (look) in screen heights."""

    x: list[float]
    y: list[float]


def camera_path(request: WorldRequest, frames: int, start_y: float) -> CameraPath:
    """Where the camera is at each of ``frames`` frames of ``request``.

    ``x`` starts at ``request.camera_x`` and moves ``camera_dx`` per frame (the
    director's pan, which follows the story state); a request with no ``camera_dx``
    pans :data:`PAN_SPEED` per frame while ``d`` (right) or ``a`` (left) is held, as
    an action-driven world model would; ``y`` starts at
    ``start_y`` and rises with ``w`` / falls with ``s``, relaxing back when released.
    The last action is held past the end of ``request.actions``.
    """
    xs: list[float] = []
    ys: list[float] = []
    x, y = request.camera_x, start_y
    acts = [a if set(a) <= set("wasd") else "" for a in request.actions]
    for i in range(frames):
        xs.append(x)
        ys.append(y)
        a = acts[min(i, len(acts) - 1)] if acts else ""
        x += request.camera_dx if request.camera_dx else PAN_SPEED * (("d" in a) - ("a" in a))
        look = ("w" in a) - ("s" in a)
        y = max(-LOOK_MAX, min(LOOK_MAX, y + LOOK_SPEED * look)) if look else y * LOOK_RELAX
    return CameraPath(xs, ys)


def _inside(box: tuple[int, int, int, int], width: int, height: int) -> bool:
    return box[0] < width and box[1] < height and box[2] > 0 and box[3] > 0


def _fingerprint(request: WorldRequest) -> str:
    text = json.dumps(request.to_json(), sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


class ProceduralBackend:
    """Draws the scene of each request and synthesises its sound (see the module doc).

    Args:
        width, height: frame size in pixels.
        fps: frames per second.
        frames_per_block: frames per yielded :class:`FrameChunk`.
        audio_rate: sample rate of the sound, Hz.
        embed: sentence embedder (``texts -> (N, D)`` unit vectors, e.g. MiniLM's
            ``encode``) that maps words the scene vocabulary does not know to the
            nearest thing it draws; ``None`` matches by words only.

    Attributes:
        layout: the layout record of the first frame of the last block drawn (what
            was drawn where and whether it shows), or ``None`` before any.
    """

    def __init__(
        self,
        width: int = 960,
        height: int = 540,
        fps: float = 24.0,
        frames_per_block: int = 12,
        audio_rate: int = 22050,
        embed: Embed | None = None,
    ) -> None:
        if width < 16 or height < 16 or frames_per_block < 1 or fps <= 0 or audio_rate <= 0:
            raise BackendError(
                f"procedural backend cannot draw {width}x{height} at {fps} fps, "
                f"{frames_per_block} frames per block, {audio_rate} Hz"
            )
        self._caps = Capabilities(
            backend="procedural",
            frames_per_block=frames_per_block,
            fps=fps,
            width=width,
            height=height,
            text=True,
            switch_modes=("recache", "scene_cut", "plain"),
            actions=("w", "a", "s", "d"),
            mouse=False,
            camera=("x",),
            ref_images="any_chunk",
            audio_in=False,
            audio_out=True,
            audio_rate=audio_rate,
            structured_scene=True,
            sink_frames=1,
            window_frames=frames_per_block * 4,
            object_cache=True,
            snapshot=True,
        )
        self._cache: ObjectCache[Sprite] = ObjectCache()
        self._painter = Painter(width, height, fps, self._cache, embed)
        self.layout: Layout | None = None
        self._table: SessionTable[_Session] = SessionTable()
        self._closed = False

    def capabilities(self) -> Capabilities:
        """What this backend does (announced once; the same object every call)."""
        return self._caps

    def start(self, start: SessionStart) -> None:
        """Open (or reopen from scratch) session ``start.session_id`` with its seed and anchors.

        Raises:
            BackendError: the backend is closed, or a frame size other than its own is asked for.
        """
        self._check_open()
        check_start_size(self._caps, start)
        self._table.sessions[start.session_id] = _Session(
            session_id=start.session_id,
            seed=int(start.seed),
            prompt=start.prompt,
            anchors_global=tuple(start.anchors),
        )
        self._table.current = start.session_id

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        """Yield the request's frames one block at a time.

        ``round_up(min_frames)`` frames in blocks of ``frames_per_block``; each block
        carries ``round(T * audio_rate / fps)`` samples of sound. A repeated ``seq``
        with the identical request replays the same frames without advancing the
        session; stopping early discards the rest (the session advances only by
        the blocks taken). Once the first block is drawn, the stages of ``request.ahead``
        (the scenes one choice away) are painted in a background thread.

        Raises:
            BackendError: closed backend, unknown session, or a ``seq`` that goes
                backwards or is reused for a different request.
        """
        self._check_open()
        sess = self._table.sessions.get(request.session_id)
        if sess is None:
            raise BackendError(
                f"unknown session {request.session_id!r}", hint="call start() before generate()"
            )
        fp = _fingerprint(request)
        seen = sess.seen.get(request.seq)
        if seen is not None:
            if seen[0] != fp:
                raise BackendError(
                    f"seq {request.seq} was already used for a different request",
                    where=f"session {sess.session_id}",
                )
            request = replace(request, scene=replace(request.scene, time_of_day=seen[3]))
            return self._blocks(sess, request, seen[1], seen[2], advance=False)
        if request.seq <= sess.last_seq:
            raise BackendError(
                f"seq {request.seq} is not after the last one ({sess.last_seq})",
                where=f"session {sess.session_id}",
            )
        request = self._keep_time(sess, request)
        sess.last_seq = request.seq
        sess.seen[request.seq] = (fp, sess.frame, sess.camera_y, request.scene.time_of_day)
        while len(sess.seen) > SEQ_MEMORY:
            del sess.seen[min(sess.seen)]
        self._table.current = sess.session_id
        return self._blocks(sess, request, sess.frame, sess.camera_y, advance=True)

    def _blocks(
        self, sess: _Session, request: WorldRequest, first: int, start_y: float, advance: bool
    ) -> Iterator[FrameChunk]:
        caps = self._caps
        fpb, width, height, rate = caps.frames_per_block, caps.width, caps.height, caps.audio_rate
        t_start = time.perf_counter()
        anchors = sess.anchors_global + request.anchors + sess.anchors_current
        plan = self._painter.plan(request, sess.seed, anchors)
        total = caps.round_up(request.min_frames)
        cams = camera_path(request, total + 1, start_y)
        ignored = ignored_inputs(caps, request) + self._notes(request) + plan.notes + sess.notes
        voices = self._voices(request, plan)
        amb = ambience_for(plan.look.time, plan.look.weather, plan.look.water is not None)
        n_audio = int(round(fpb * rate / caps.fps))
        encode_ms = (time.perf_counter() - t_start) * 1000.0
        for b in range(total // fpb):
            t0 = time.perf_counter()
            block_first = first + b * fpb
            frames: U8 = np.empty((fpb, height, width, 3), dtype=np.uint8)
            shown: set[str] = set()
            ids = {e.id for e in request.scene.entities}
            for i in range(fpb):
                k = b * fpb + i
                layout = self._painter.paint(frames[i], plan, k, block_first + i, cams.x[k], cams.y[k])
                if i == 0:
                    self.layout = layout.finish()
                shown |= {name for name, _, box in layout.drawn() if name in ids and _inside(box, width, height)}
            t1 = time.perf_counter()
            start = (block_first // fpb) * n_audio
            tracks = [ambience(amb, sess.seed, start, n_audio, rate)]
            tracks += [reaction(kind, sess.seed, pitch, b * n_audio, n_audio, rate)
                       for kind, pitch in voices]
            audio = mix(*tracks)
            t2 = time.perf_counter()
            end = (b + 1) * fpb
            if advance:
                sess.frame = block_first + fpb
                sess.camera_x, sess.camera_y = cams.x[end], cams.y[end]
                sess.window = min(caps.window_frames, sess.window + fpb)
                sess.scene = request.scene
            if b == 0 and advance:
                for ahead in request.ahead:  # paint the scenes one choice away while the player reads
                    self._painter.prepare(ahead, sess.seed)
            small = frames[:, :: max(1, height // 32), :: max(1, width // 32)].astype(np.float32)
            luma = float((small @ np.array([0.299, 0.587, 0.114], np.float32)).mean() / 255.0)
            drawn = tuple(sorted(shown, key=lambda i: plan.order.get(i, len(plan.order))))
            yield FrameChunk(
                seq=request.seq,
                block=b,
                last=end >= total,
                first_frame=block_first,
                frames=frames,
                fps=caps.fps,
                audio=audio,
                audio_rate=rate,
                ignored=ignored,
                drawn=drawn,
                memory=self._stats(sess, cams.x[end], cams.y[end]),
                probes={"luma": luma, "entities_drawn": float(len(drawn))},
                timing=Timing(
                    encode_ms=encode_ms if b == 0 else 0.0,
                    denoise_ms=(t1 - t0) * 1000.0,
                    decode_ms=(t2 - t1) * 1000.0,
                    total_ms=(t2 - t0) * 1000.0 + (encode_ms if b == 0 else 0.0),
                ),
            )

    @staticmethod
    def _keep_time(sess: _Session, request: WorldRequest) -> WorldRequest:
        """Time only runs forward: a request whose time of day is one step *before* the session's
        (dusk after night: a place's default time after the story moved on) keeps the session's
        time, unless it comes from a load, rollback, start or world edit (which may set any time).
        The kept time is reported in ``ignored``."""
        scene = request.scene
        now = resolve_time(scene.time_of_day, palette_for(scene.palette))
        if sess.clock and request.event not in RESET_CLOCK and now in DAY and sess.clock in DAY:
            if (DAY.index(now) - DAY.index(sess.clock)) % len(DAY) == len(DAY) - 1:
                note = f"time_of_day {now} after {sess.clock}: kept {sess.clock} (time does not run back)"
                kept = replace(scene, time_of_day=sess.clock)
                sess.notes = (note,)
                return replace(request, scene=kept)
        sess.notes = ()
        sess.clock = now
        return request

    def _notes(self, request: WorldRequest) -> tuple[str, ...]:
        notes = []
        odd = sorted({a for a in request.actions if a and not set(a) <= set("wasd")})
        if odd:
            notes.append(f"actions {', '.join(odd)}: this backend reads only w, a, s, d")
        if request.cue and request.cue not in REACTIONS:
            notes.append(f"cue {request.cue}: no sound for it")
        notes += [f"sound {c}: no sound for it" for c in request.sounds if c != request.cue]
        return tuple(notes)

    @staticmethod
    def _voices(request: WorldRequest, plan: Plan) -> list[tuple[str, float]]:
        """Reaction sounds of the request: its cue, else its characters' reaction states."""
        chars = [a for a in plan.actors if a.entity.kind == "character"]

        def pitch(phase: float, kind: str) -> float:
            return (0.85 + 0.4 * phase) * (1.12 if kind == "creature" else 1.0)

        if request.cue in REACTIONS:
            who = next((a for a in chars if a.state == request.cue), chars[0] if chars else None)
            return [(request.cue, pitch(who.phase, who.kind) if who else 1.0)]
        voices: list[tuple[str, float]] = []
        for a in chars:
            if a.state in REACTIONS and all(v[0] != a.state for v in voices):
                voices.append((a.state, pitch(a.phase, a.kind)))
        return voices[:2]

    def _stats(self, sess: _Session, camera_x: float, camera_y: float) -> dict[str, float]:
        caps = self._caps
        return {
            "sink_frames": float(caps.sink_frames),
            "window_frames": float(caps.window_frames),
            "window_used": float(sess.window),
            "sink_anchors": float(len(sess.anchors_global) + len(sess.anchors_current)),
            "cache_hits": float(self._cache.hits),
            "cache_misses": float(self._cache.misses),
            "cache_entries": float(len(self._cache)),
            "sprites_built": float(self._painter.sprites_built),
            "backdrops_built": float(self._painter.backdrops_built),
            "frames_total": float(sess.frame),
            "camera_x": float(camera_x),
            "camera_y": float(camera_y),
        }

    def memory(self, op: MemoryOp) -> MemoryResult:
        """Apply a memory operation to the current session (the last one started or used).

        ``snapshot`` returns a handle; ``restore`` puts its session back to it (and
        makes it current); ``fork`` copies a snapshot (or, without a handle, the
        current session) to ``new_session_id``; ``reset`` starts the session over;
        ``reset_history`` empties the rolling window; ``reanchor`` replaces the
        current-level sink with ``op.anchors``.
        """
        self._check_open()
        sess = self._table.target(op)
        if isinstance(sess, MemoryResult):
            return sess
        if op.op == "reset":
            self._table.sessions[sess.session_id] = _Session(
                session_id=sess.session_id,
                seed=sess.seed,
                prompt=sess.prompt,
                anchors_global=sess.anchors_global,
            )
            return MemoryResult(ok=True, note="session started over")
        if op.op == "reset_history":
            sess.window = 0
            return MemoryResult(ok=True, note="rolling window emptied; sinks kept")
        if op.op == "reanchor":
            sess.anchors_current = tuple(op.anchors)
            return MemoryResult(ok=True, note=f"current sink: {counted(len(op.anchors), 'anchor')}")
        return MemoryResult(ok=False, note=f"unknown memory op {op.op!r}")

    def prepare(self, scenes: tuple[Scene, ...], seed: int) -> None:
        """Paint the static stages of ``scenes`` for sessions of ``seed`` in a background thread
        (see :class:`game.world.protocol.PaintsAhead`); the first request there then finds them."""
        self._check_open()
        for scene in scenes:
            self._painter.prepare(scene, seed)

    def settle(self) -> None:
        """Wait for the scenes being painted ahead (see :meth:`generate`); for benchmarks and tests."""
        self._painter.settle()

    def close(self) -> None:
        """Drop all sessions, snapshots and caches; later calls raise :class:`BackendError`."""
        self._painter.close()
        self._table.clear()
        self._cache.clear()
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise BackendError("procedural backend is closed")

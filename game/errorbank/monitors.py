"""Monitors of the world stream: frame faults, visual drift, story faults, chunk audio.

Each monitor is a pure function of a block, its request and (where there is one)
the *reference* block: the same request rendered by a clean procedural backend
at 96 x 54 with the same camera, i.e. the current sink level as the state says it
is now (the night, the rain, the pan the player asked for). Comparing against it,
never against the session's first frames, is what keeps a correction from undoing
the player's choices. Findings are data (:class:`Finding`); the guard decides the
correction and the store records the case.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from game.errorbank.metrics import U8, DriftScore, bright_fraction, drift_score, motion
from game.errorbank.store import Severity
from game.errorbank.thresholds import Thresholds, direction
from game.world.protocol import Capabilities, FrameChunk, WorldRequest, check_frames

#: Weathers that share the plain ``drift`` threshold.
CLEAR_WEATHER = ("", "clear")
#: Reference motion (mean abs grey levels to the block's first frame) above which a
#: still block counts as frozen.
REFERENCE_MOTION = 0.5
#: Entity states in which a character may legitimately leave the picture.
LEAVING_STATES = ("flee",)


@dataclass(frozen=True)
class Finding:
    """One thing a monitor found wrong.

    Attributes:
        kind: case kind (``frame.shape``, ``frame.black``, ``frame.frozen``,
            ``frame.late``, ``drift``, ``story.missing``, ``story.extra``).
        severity: ``info``, ``warning`` or ``error``.
        note: one sentence saying what is wrong.
        metrics: the values behind it (``key``, ``score``, ``threshold``, ``direction``...).
    """

    kind: str
    severity: Severity
    note: str
    metrics: dict[str, Any] = field(default_factory=dict)


def _metric(key: str, score: float, thresholds: Thresholds, **extra: Any) -> dict[str, Any]:
    return {"key": key, "score": round(float(score), 6), "threshold": thresholds.get(key),
            "direction": direction(key), **extra}


def motion_expected(request: WorldRequest, caps: Capabilities, frames: int) -> bool:
    """Whether ``request`` asks for visible motion over ``frames`` frames without a reference:
    a camera pan of at least 2 pixels, or pan / look actions."""
    pan_px = abs(request.camera_dx) * frames * caps.width
    return pan_px >= 2.0 or any(a for a in request.actions)


class FrameMonitor:
    """Frame faults of one block: wrong shape or dtype, empty, black, frozen, late.

    A backend with ``Capabilities.placeholder_frames`` (still by design) is never frozen.

    Args:
        thresholds: ``black`` and ``frozen`` thresholds.
    """

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds or Thresholds()

    def check(self, chunk: object, request: WorldRequest, caps: Capabilities, reference: U8 | None = None,
              elapsed_ms: float = 0.0) -> list[Finding]:
        """Findings for ``chunk`` (anything a backend yielded) of ``request``.

        Args:
            chunk: what the backend yielded (should be a :class:`FrameChunk`).
            request: the request it answers.
            caps: the backend's capabilities (frame size, ``placeholder_frames``).
            reference: the reference block ``(T, h, w, 3)`` uint8, or ``None``.
            elapsed_ms: time the block took since it was asked for, ms of the guard's clock
                (:mod:`game.errorbank.clock`; 0 = not measured).

        Returns:
            Empty when the block is good. A shape finding stops the other checks.
        """
        if not isinstance(chunk, FrameChunk):
            return [Finding("frame.shape", "error", f"backend yielded {type(chunk).__name__}, not FrameChunk")]
        why = check_frames(chunk.frames, caps)
        if not why and chunk.frames.shape[0] == 0:
            why = "the block has no frames"
        if why:
            return [Finding("frame.shape", "error", why)]
        t = self.thresholds
        out: list[Finding] = []
        frames: U8 = chunk.frames
        bright = bright_fraction(frames)
        if t.alarm("black", bright) and (reference is None or not t.alarm("black", bright_fraction(reference))):
            out.append(Finding("frame.black", "error", f"black block: {bright:.2%} of pixels lit",
                               _metric("black", bright, t)))
        moved = motion(frames)
        if len(frames) > 1 and not caps.placeholder_frames and t.alarm("frozen", moved):
            expected = (motion(reference) > REFERENCE_MOTION if reference is not None
                        else motion_expected(request, caps, len(frames)))
            if expected:
                out.append(Finding("frame.frozen", "error",
                                   f"frozen block: {len(frames)} identical frames while the request moves",
                                   _metric("frozen", moved, t)))
        if request.deadline_ms > 0 and elapsed_ms > request.deadline_ms:
            out.append(Finding("frame.late", "warning",
                               f"block came {elapsed_ms:.0f} ms after the request (deadline {request.deadline_ms} ms)",
                               {"key": "late", "score": round(elapsed_ms, 1), "threshold": request.deadline_ms,
                                "direction": "above"}))
        return out


def drift_key(request: WorldRequest, block: int = 1) -> str:
    """Threshold key of a block of ``request``: ``drift``, ``drift.<weather>``, or
    ``drift.cut`` for the first block after a scene cut (its fade-in)."""
    if block == 0 and request.switch_mode == "scene_cut":
        return "drift.cut"
    weather = request.scene.weather.lower()
    return "drift" if weather in CLEAR_WEATHER else f"drift.{weather}"


class DriftMonitor:
    """Visual drift of a block against the current sink's reference block.

    Score: :func:`game.errorbank.metrics.drift_score` (SSIM on grey 96 x 54 plus the
    RGB histogram distance); alarm above the threshold of :func:`drift_key`.

    Args:
        thresholds: ``drift`` and ``drift.<weather>`` thresholds.
        samples: frames compared per block.
    """

    def __init__(self, thresholds: Thresholds | None = None, samples: int = 3) -> None:
        self.thresholds = thresholds or Thresholds()
        self.samples = samples

    def score(self, frames: U8, reference: U8) -> DriftScore:
        """The drift score of ``frames`` ``(T, H, W, 3)`` against ``reference`` ``(T', h, w, 3)``."""
        return drift_score(frames, reference, samples=self.samples)

    def check(self, frames: U8, reference: U8, request: WorldRequest,
              block: int = 1) -> tuple[DriftScore, str, Finding | None]:
        """``(score, threshold key, finding or None)`` for one block."""
        s = self.score(frames, reference)
        key = drift_key(request, block)
        if not self.thresholds.alarm(key, s.score):
            return s, key, None
        return s, key, Finding("drift", "warning",
                               f"visual drift {s.score:.3f} above {self.thresholds.get(key):.3f} ({key})",
                               _metric(key, s.score, self.thresholds, ssim=round(s.ssim, 6),
                                       hist=round(s.hist, 6)))


def _in_view(x: float, cameras: Iterable[float], margin: float) -> bool:
    return all(margin <= x - c <= 1.0 - margin for c in cameras)


class StoryMonitor:
    """Story faults: the world shows an entity the state says is gone, or misses one present.

    Works only where the backend reports what it drew (``FrameChunk.drawn``): a
    backend that never reported a drawn entity in this session is not judged by an
    empty list. *Missing* means: in view (its ``x`` at least ``margin`` screens inside
    the picture at the block's start and end camera), not leaving (``flee``), and,
    when a reference block's ``drawn`` is given, drawn there too.

    Args:
        margin: screen fraction an entity must be inside the picture to be expected.
    """

    def __init__(self, margin: float = 0.12) -> None:
        self.margin = margin
        self.reports_drawn = False

    def check(self, chunk: FrameChunk, request: WorldRequest, caps: Capabilities,
              reference_drawn: tuple[str, ...] | None = None, camera_start: float | None = None) -> list[Finding]:
        """Findings for one block.

        Args:
            chunk: the block (its ``drawn``, and ``memory["camera_x"]`` at its end if reported).
            request: the request (its scene is the state's truth).
            caps: capabilities (``structured_scene`` must be true to judge).
            reference_drawn: what the clean reference drew for the same block, or ``None``.
            camera_start: camera x at the block's start, world units (default ``request.camera_x``).
        """
        if not caps.structured_scene:
            return []
        if chunk.drawn:
            self.reports_drawn = True
        if not self.reports_drawn:
            return []
        scene_ids = {e.id for e in request.scene.entities}
        drawn = set(chunk.drawn)
        out: list[Finding] = []
        extra = sorted(drawn - scene_ids)
        if extra:
            out.append(Finding("story.extra", "error", f"the world shows {', '.join(extra)}, not in the scene",
                               {"key": "story", "extra": extra, "score": float(len(extra))}))
        start = request.camera_x if camera_start is None else camera_start
        end = float(chunk.memory.get("camera_x", start + request.camera_dx * chunk.n_frames))
        expected = {e.id for e in request.scene.entities
                    if e.state not in LEAVING_STATES and not e.state.startswith("held:")
                    and _in_view(e.x, (start, end), self.margin)}
        if reference_drawn is not None:
            expected &= set(reference_drawn)
        missing = sorted(expected - drawn)
        if missing:
            out.append(Finding("story.missing", "error", f"the world misses {', '.join(missing)}, present in the scene",
                               {"key": "story", "missing": missing, "score": float(len(missing))}))
        return out


#: Highest audio sample rate taken as plausible, Hz (above it the rate is wrong).
MAX_AUDIO_RATE = 384_000


def expected_samples(n_frames: int, fps: float, rate: int) -> int:
    """Audio samples that go with ``n_frames`` frames: ``round(n_frames * rate / fps)``
    (the protocol's rule, :mod:`game.world.protocol`)."""
    return int(round(n_frames * rate / fps)) if fps > 0 else 0


def repair_audio(audio: object, n: int) -> tuple[np.ndarray, list[str]]:
    """``audio`` made a valid block track: ``(n,)`` float32 mono, finite, in [-1, 1].

    What is repaired (each named in the returned reasons): a ``(n, 1)`` / ``(1, n)`` shape
    (flattened), several channels (averaged to mono), integer PCM (scaled by its dtype's
    largest value), another float dtype (cast), NaN or infinite samples (0), samples
    outside [-1, 1] (clipped), a wrong length (trimmed, or padded with silence). Anything
    else (not an array, not numbers, more than 2 dimensions) becomes ``n`` samples of silence.

    Returns:
        ``(track, reasons)``; ``reasons`` is empty when ``audio`` was already valid.
    """
    silence = np.zeros(max(0, n), np.float32)
    if not isinstance(audio, np.ndarray):
        return silence, [f"audio is {type(audio).__name__}, not a numpy array: silenced"]
    a = audio
    if a.dtype.kind not in "fiub" or a.dtype.kind == "b" or a.ndim == 0 or a.ndim > 2:
        return silence, [f"audio of dtype {a.dtype} and shape {a.shape} cannot be played: silenced"]
    reasons: list[str] = []
    if a.dtype.kind in "iu":
        info = np.iinfo(a.dtype)
        half = (float(info.max) - float(info.min) + 1.0) / 2.0
        reasons.append(f"audio dtype {a.dtype}: scaled to float32")
        a = (a.astype(np.float64) - (float(info.min) + half)) / half
    elif a.dtype != np.float32:
        reasons.append(f"audio dtype {a.dtype}: cast to float32")
    if a.ndim == 2:
        axis = 1 if a.shape[0] >= a.shape[1] else 0
        if a.shape[axis] > 1:
            reasons.append(f"audio has {a.shape[axis]} channels: mixed to mono")
        else:
            reasons.append(f"audio shape {audio.shape}: flattened")
        a = a.astype(np.float64).mean(axis=axis)
    out = np.asarray(a, dtype=np.float32)
    bad = ~np.isfinite(out)
    if bad.any():
        reasons.append(f"{int(bad.sum())} NaN or infinite audio samples: set to 0")
        out = np.where(bad, np.float32(0.0), out)
    if out.size and float(np.abs(out).max()) > 1.0:
        reasons.append("audio outside [-1, 1]: clipped")
        out = np.clip(out, -1.0, 1.0)
    if out.shape[0] != n:
        reasons.append(f"audio has {out.shape[0]} samples, not {n} for its frames: "
                       + ("trimmed" if out.shape[0] > n else "padded with silence"))
        out = out[:n] if out.shape[0] > n else np.concatenate([out, np.zeros(n - out.shape[0], np.float32)])
    if reasons and out is audio:
        out = out.copy()
    return np.ascontiguousarray(out, dtype=np.float32), reasons


class AudioMonitor:
    """Chunk audio checked like frames: a bad track is repaired (:func:`repair_audio`) or
    silenced, never passed on.

    The track's length must be :func:`expected_samples` of the block's frames at the
    chunk's ``audio_rate`` (when that rate is not a plausible positive integer, the
    backend's ``caps.audio_rate`` is used and the chunk restamped with it).
    """

    def check(self, chunk: FrameChunk, caps: Capabilities) -> tuple[FrameChunk, Finding | None]:
        """``(chunk, None)`` when its audio is valid or absent, else ``(repaired chunk, finding)``.

        The finding's kind is ``audio.bad`` (severity warning); its metrics hold ``key``
        (``audio``), ``score`` (how many things were wrong), ``reasons`` and ``correction``
        (``audio.repaired`` or ``audio.silenced``).
        """
        if chunk.audio is None:
            return chunk, None
        reasons: list[str] = []
        rate = chunk.audio_rate
        if not isinstance(rate, (int, np.integer)) or isinstance(rate, bool) or not 0 < int(rate) <= MAX_AUDIO_RATE:
            reasons.append(f"audio rate {rate!r} is not a sample rate: {caps.audio_rate} Hz used")
            rate = caps.audio_rate
        n = expected_samples(chunk.n_frames, chunk.fps if chunk.fps > 0 else caps.fps, int(rate))
        track, fixes = repair_audio(chunk.audio, n)
        reasons += fixes
        if not reasons:
            return chunk, None
        silenced = any("silenced" in r for r in reasons)
        correction = "audio.silenced" if silenced else "audio.repaired"
        finding = Finding("audio.bad", "warning", "; ".join(reasons),
                          {"key": "audio", "score": float(len(reasons)), "reasons": reasons,
                           "correction": correction})
        return replace(chunk, audio=track, audio_rate=int(rate)), finding


def frozen_against(previous: U8 | None, frames: U8) -> bool:
    """Whether ``frames`` repeats ``previous`` (the last block) exactly: a stuck stream."""
    return previous is not None and previous.shape == frames.shape and bool(np.array_equal(previous, frames))


@dataclass
class Monitors:
    """The world-stream monitors a guard runs, sharing one set of thresholds.

    Attributes:
        frame: frame faults (always on).
        drift: visual drift, or ``None`` to skip it.
        story: story faults, or ``None`` to skip them.
        audio: chunk audio (repaired, never passed on bad), or ``None`` to pass it as it is.
    """

    frame: FrameMonitor
    drift: DriftMonitor | None
    story: StoryMonitor | None
    audio: AudioMonitor | None = field(default_factory=AudioMonitor)

    @classmethod
    def default(cls, thresholds: Thresholds | None = None) -> Monitors:
        """All four monitors with ``thresholds`` (default: built-in)."""
        t = thresholds or Thresholds()
        return cls(FrameMonitor(t), DriftMonitor(t), StoryMonitor(), AudioMonitor())

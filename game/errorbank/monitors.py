"""Monitors of the world stream: frame faults, visual drift, story faults.

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
from dataclasses import dataclass, field
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
            caps: the backend's capabilities (frame size).
            reference: the reference block ``(T, h, w, 3)`` uint8, or ``None``.
            elapsed_ms: wall time since the request went out, ms (0 = not measured).

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
        if len(frames) > 1 and t.alarm("frozen", moved):
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
    """

    frame: FrameMonitor
    drift: DriftMonitor | None
    story: StoryMonitor | None

    @classmethod
    def default(cls, thresholds: Thresholds | None = None) -> Monitors:
        """All three monitors with ``thresholds`` (default: built-in)."""
        t = thresholds or Thresholds()
        return cls(FrameMonitor(t), DriftMonitor(t), StoryMonitor())

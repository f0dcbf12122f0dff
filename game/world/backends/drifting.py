"""The ``drifting-sim`` backend: a SIMULATION of autoregressive drift, for measuring corrections.

**This is a simulation, not a world model.** It wraps a clean backend (by default
the procedural one) and imitates how a model that generates each chunk from its own
past accumulates error: every block continues from its own last frame (a feedback
share of the previous output frame is mixed into the next: trails on a pan) and
carries compounding perturbations:

* **colour shift**: a per-channel RGB offset that walks in one direction and grows;
* **blur**: a Gaussian blur whose sigma grows (detail melts);
* **warp**: a wobbling sinusoidal displacement field whose amplitude grows (shapes bend);
* **identity swap**: at random moments a character's region starts to take another
  character's colours (a channel rotation mixed in), growing from then on.

Each accumulated value ``v`` grows per block as ``v <- v * (1 + growth) + step *
(direction + jitter * noise)``, capped at ``max``; magnitudes come from a committed
config (``game/errorbank/drift_config.json``) at three strengths, ``low``, ``medium``
and ``high``. A ``reanchor``, ``reset_history`` or ``reset`` memory operation sets
the accumulated error back to zero (and is passed on to the clean backend);
``snapshot`` / ``restore`` keep it. Deterministic: the perturbations draw from a
generator seeded by the session seed (the same draws at every strength, so the
strengths differ only in magnitude).

Figures made with it are simulated and not comparable to any in-house figure of
another system; its capabilities name it ``drifting-sim`` so that every report
says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageFilter

from game.errors import BackendError
from game.world.protocol import (
    Backend,
    Capabilities,
    FrameChunk,
    MemoryOp,
    MemoryResult,
    SessionStart,
    WorldRequest,
)

Strength = Literal["low", "medium", "high"]
STRENGTHS: tuple[Strength, ...] = ("low", "medium", "high")
#: Backend name in the capabilities (the word "sim" is the point).
NAME = "drifting-sim"
#: Row (fraction of the height) where characters stand, and the box around them (procedural layout).
FEET_ROW = 0.88
SWAP_BOX = (0.1, 0.34)

U8 = npt.NDArray[np.uint8]
F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class DriftParams:
    """Per-block magnitudes of one strength (units in ``drift_config.json``'s note)."""

    colour_step: float
    colour_growth: float
    colour_max: float
    colour_jitter: float
    blur_step: float
    blur_growth: float
    blur_max: float
    warp_step: float
    warp_growth: float
    warp_max: float
    swap_chance: float
    swap_step: float
    swap_max: float
    feedback_step: float
    feedback_max: float


def default_config_path() -> Path:
    """The committed config, ``game/errorbank/drift_config.json``."""
    return Path(str(resources.files("game.errorbank").joinpath("drift_config.json")))


def load_drift_config(path: str | Path | None = None) -> dict[str, DriftParams]:
    """Strength name -> :class:`DriftParams` from a JSON config (default: the committed one).

    Raises:
        BackendError: the file is missing, not JSON, or lacks a strength or a field.
    """
    p = Path(path) if path else default_config_path()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        table = data["strengths"]
        names = [f.name for f in fields(DriftParams)]
        return {s: DriftParams(**{n: float(table[s][n]) for n in names}) for s in STRENGTHS}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BackendError(f"bad drift config: {exc}", where=str(p)) from exc


@dataclass
class _Error:
    """The accumulated error of one session (reset by reanchor / reset_history / reset)."""

    colour: F32
    blur: float = 0.0
    warp: float = 0.0
    swap: float = 0.0
    swapping: bool = False
    feedback: float = 0.0
    phase: float = 0.0
    blocks: int = 0
    last: U8 | None = None

    @classmethod
    def zero(cls) -> _Error:
        return cls(colour=np.zeros(3, np.float32))

    def copy(self) -> _Error:
        return replace(self, colour=self.colour.copy(), last=None if self.last is None else self.last.copy())

    def level(self) -> float:
        """One number for how far it has drifted (for the ``sim.error`` probe), roughly 0..1."""
        return float(np.abs(self.colour).max() / 100.0 + self.blur / 3.0 + self.warp / 4.0 + self.swap
                     + self.feedback) / 5.0


def _grow(v: float, step: float, growth: float, cap: float, push: float) -> float:
    return float(min(cap, max(0.0, v * (1.0 + growth) + step * push)))


class DriftingBackend:
    """SIMULATION of autoregressive drift on top of a clean backend (see the module doc).

    Args:
        inner_factory: builds the clean backend; default ``ProceduralBackend(width,
            height, fps, frames_per_block)``.
        strength: ``low``, ``medium`` or ``high``.
        config: path of a drift config (default: the committed one).
        width, height, fps, frames_per_block: the default clean backend's parameters.

    Raises:
        BackendError: unknown strength or a bad config.
    """

    def __init__(self, inner_factory: Callable[[], Backend] | None = None, strength: str = "medium",
                 config: str | Path | None = None, *, width: int = 960, height: int = 540, fps: float = 24.0,
                 frames_per_block: int = 12) -> None:
        if strength not in STRENGTHS:
            raise BackendError(f"unknown drift strength {strength!r}", hint="low, medium or high")
        self.strength: Strength = strength
        self.params = load_drift_config(config)[strength]
        if inner_factory is None:
            from game.world.backends.procedural import ProceduralBackend

            self.inner: Backend = ProceduralBackend(width=width, height=height, fps=fps,
                                                    frames_per_block=frames_per_block)
        else:
            self.inner = inner_factory()
        self.caps = replace(self.inner.capabilities(), backend=NAME)
        self._err = _Error.zero()
        self._rng = np.random.default_rng(0)
        self._dir = np.zeros(3, np.float32)
        self._snaps: dict[str, tuple[_Error, dict[str, Any]]] = {}

    def capabilities(self) -> Capabilities:
        """The clean backend's capabilities, named ``drifting-sim``."""
        return self.caps

    def start(self, start: SessionStart) -> None:
        """Start the clean backend and zero the error; the perturbations are seeded by ``start.seed``."""
        self.inner.start(start)
        self._rng = np.random.default_rng(int(start.seed) & 0xFFFFFFFF)
        d = self._rng.normal(size=3).astype(np.float32)
        self._dir = d / max(1e-6, float(np.abs(d).max()))
        self._err = _Error.zero()

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        """The clean backend's blocks with the accumulated error applied (frames ``(T, H, W, 3)`` uint8).

        Each block carries probes ``sim.error`` (the error level, ~0..1) and
        ``sim.blocks`` (blocks since the last reset).
        """
        clean = self.inner.generate(request)
        return self._drift(clean, request)

    def _drift(self, clean: Iterator[FrameChunk], request: WorldRequest) -> Iterator[FrameChunk]:
        local = 0
        for chunk in clean:
            before = self._err.copy()
            self._advance()
            frames = self._apply(chunk.frames, before, self._err, request, local)
            local += chunk.n_frames
            yield replace(chunk, frames=frames,
                          probes={**chunk.probes, "sim.error": self._err.level(), "sim.blocks": self._err.blocks})

    def memory(self, op: MemoryOp) -> MemoryResult:
        """Pass ``op`` on; ``reanchor`` / ``reset_history`` / ``reset`` zero the error;
        ``snapshot`` / ``restore`` keep it with the clean backend's state."""
        result = self.inner.memory(op)
        if op.op in ("reanchor", "reset_history", "reset") and result.ok:
            self._err = _Error.zero()
        elif op.op == "snapshot" and result.ok:
            self._snaps[result.handle] = (self._err.copy(), dict(self._rng.bit_generator.state))
            while len(self._snaps) > 256:
                del self._snaps[next(iter(self._snaps))]
        elif op.op == "restore" and result.ok and op.handle in self._snaps:
            err, rng_state = self._snaps[op.handle]
            self._err = err.copy()
            self._rng.bit_generator.state = dict(rng_state)
        return result

    def close(self) -> None:
        """Close the clean backend."""
        self.inner.close()

    # -- the simulation -------------------------------------------------------------------
    def _advance(self) -> None:
        p, e, g = self.params, self._err, self._rng
        push = self._dir + p.colour_jitter * g.normal(size=3).astype(np.float32)
        e.colour = np.clip(e.colour * (1.0 + p.colour_growth) + p.colour_step * push,
                           -p.colour_max, p.colour_max).astype(np.float32)
        e.blur = _grow(e.blur, p.blur_step, p.blur_growth, p.blur_max, 1.0 + 0.3 * float(g.normal()))
        e.warp = _grow(e.warp, p.warp_step, p.warp_growth, p.warp_max, 1.0 + 0.3 * float(g.normal()))
        if not e.swapping and float(g.random()) < p.swap_chance:
            e.swapping = True
        if e.swapping:
            e.swap = _grow(e.swap, p.swap_step, 0.0, p.swap_max, 1.0)
        e.feedback = _grow(e.feedback, p.feedback_step, 0.0, p.feedback_max, 1.0)
        e.phase += 0.35 + 0.1 * float(g.normal())
        e.blocks += 1

    def _apply(self, frames: U8, a: _Error, b: _Error, request: WorldRequest, local: int) -> U8:
        t, h, w = frames.shape[:3]
        scale = w / 96.0
        out = np.empty_like(frames)
        prev = b.last
        for i in range(t):
            s = (i + 1) / t
            f = frames[i]
            warp = (a.warp + (b.warp - a.warp) * s) * scale
            if warp >= 0.5:
                f = _warp(f, warp, a.phase + (b.phase - a.phase) * s)
            blur = (a.blur + (b.blur - a.blur) * s) * scale
            if blur >= 0.2:
                f = np.asarray(Image.fromarray(f).filter(ImageFilter.GaussianBlur(blur)), dtype=np.uint8)
            x = f.astype(np.float32)
            x += a.colour + (b.colour - a.colour) * s
            swap = a.swap + (b.swap - a.swap) * s
            if swap > 0.0:
                self._swap(x, swap, request, local + i, w, h)
            fb = a.feedback + (b.feedback - a.feedback) * s
            if prev is not None and fb > 0.0 and prev.shape == f.shape:
                x = (1.0 - fb) * x + fb * prev.astype(np.float32)
            out[i] = np.clip(x, 0, 255).astype(np.uint8)
            prev = out[i]
        b.last = out[-1].copy()
        return out

    @staticmethod
    def _swap(x: F32, share: float, request: WorldRequest, k: int, w: int, h: int) -> None:
        """Mix a channel rotation (R, G, B) -> (B, R, G) into each character's box, in place."""
        cam = request.camera_x + request.camera_dx * k
        top, bottom = int((FEET_ROW - SWAP_BOX[1]) * h), int(min(h, (FEET_ROW + 0.02) * h))
        for e in request.scene.entities:
            if e.kind != "character":
                continue
            cx = (e.x - cam) * w
            x0, x1 = int(max(0, cx - SWAP_BOX[0] * w)), int(min(w, cx + SWAP_BOX[0] * w))
            if x1 <= x0 or bottom <= top:
                continue
            box = x[top:bottom, x0:x1]
            box[...] = (1.0 - share) * box + share * box[..., [2, 0, 1]]


def _warp(frame: U8, amplitude: float, phase: float) -> U8:
    """Displace rows and columns of ``frame`` ``(H, W, 3)`` by sinusoids of ``amplitude`` pixels."""
    h, w = frame.shape[:2]
    ys, xs = np.arange(h), np.arange(w)
    dx = np.round(amplitude * np.sin(2 * np.pi * ys / max(1, h) * 2.0 + phase)).astype(np.int64)
    dy = np.round(amplitude * np.sin(2 * np.pi * xs / max(1, w) * 1.5 + 0.7 * phase)).astype(np.int64)
    rows = np.clip(ys[:, None] + dy[None, :], 0, h - 1)
    cols = np.clip(xs[None, :] + dx[:, None], 0, w - 1)
    out: U8 = frame[rows, cols]
    return out

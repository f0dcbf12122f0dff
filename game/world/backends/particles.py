"""Moving points drawn over the frame: rain streaks, snowflakes, petals and fireflies.

Each system is a fixed set of particles built once from the seed; a frame moves
them by pure functions of the session frame index (fall speed, sway, pulse) and
blends their pixels in with a few thousand indexed writes, so weather costs well
under a millisecond per frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from game.world.backends.palette import Look
from game.world.backends.raster import I64, RGB, U8, blend_points, lerp_rgb
from game.world.backends.seeds import rng

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Particles:
    """``n`` particles, each drawn as the same small pattern of ``m`` pixels.

    Attributes:
        rows, cols: base position of each particle, frame pixels, ``(n,)``.
        vy, vx: velocity, pixels per frame, ``(n,)``.
        sway, sway_w, sway_phase: horizontal wobble amplitude (px), speed (rad/frame),
            phase, ``(n,)``; ``bob``, ``bob_w``, ``bob_phase``: vertical wobble, likewise.
        alpha: opacity 0..255 of each particle's pixels, ``(n, m)``.
        pulse_w, pulse_phase: opacity pulse (rad/frame) per particle; all zero = steady.
        dr, dc: the pattern's pixel offsets, ``(m,)`` int.
        colour: RGB 0..255, ``(3,)``.
        rate: parallax rate (how much the points move with the camera).
    """

    rows: F64
    cols: F64
    vy: F64
    vx: F64
    sway: F64
    sway_w: F64
    sway_phase: F64
    bob: F64
    bob_w: F64
    bob_phase: F64
    alpha: F64
    pulse_w: F64
    pulse_phase: F64
    dr: I64
    dc: I64
    colour: U8
    rate: float

    def draw(self, out: U8, frame: int, camera_x: float) -> None:
        """Blend the particles into ``out`` (``(H, W, 3)`` uint8) as they are at ``frame``."""
        if self.rows.size == 0:
            return
        height, width = out.shape[:2]
        t = float(frame)
        r = self.rows + self.vy * t
        c = self.cols + self.vx * t - camera_x * width * self.rate
        if self.bob.any():
            r = r + self.bob * np.sin(self.bob_w * t + self.bob_phase)
        if self.sway.any():
            c = c + self.sway * np.sin(self.sway_w * t + self.sway_phase)
        ri = (np.floor(r).astype(np.int64)[:, None] + self.dr[None, :]) % height
        ci = (np.floor(c).astype(np.int64)[:, None] + self.dc[None, :]) % width
        a = self.alpha
        if self.pulse_w.any():
            a = a * (np.clip(np.sin(self.pulse_w * t + self.pulse_phase), 0.0, 1.0) ** 2)[:, None]
        keep = a >= 1.0
        blend_points(out, ri[keep], ci[keep], self.colour, a[keep].astype(np.uint8))


def _make(
    gen: np.random.Generator,
    n: int,
    height: int,
    width: int,
    *,
    rows: tuple[float, float],
    vy: tuple[float, float],
    vx: tuple[float, float],
    sway: float,
    sway_w: tuple[float, float],
    bob: float = 0.0,
    pulse: tuple[float, float] = (0.0, 0.0),
    alpha: float,
    colour: RGB,
    rate: float,
    shape: tuple[tuple[int, int, float], ...],
    trail: int = 0,
) -> Particles:
    """Build ``n`` particles, each drawn as ``shape`` (row, col, opacity share) pixels, or
    as a streak ``trail`` pixels long behind its mean velocity. Speeds are in frame
    heights per frame, sizes in fractions of the frame."""
    v_y = gen.uniform(vy[0], vy[1], n) * height
    v_x = gen.uniform(vx[0], vx[1], n) * height
    if trail > 0:
        my, mx = float(np.mean(v_y)) if n else 1.0, float(np.mean(v_x)) if n else 0.0
        norm = max(math.hypot(mx, my), 1e-6)
        k = np.arange(trail, dtype=np.float64)
        dr = np.round(-k * my / norm).astype(np.int64)
        dc = np.round(-k * mx / norm).astype(np.int64)
        share = 1.0 - k / trail
    else:
        dr = np.array([p[0] for p in shape], dtype=np.int64)
        dc = np.array([p[1] for p in shape], dtype=np.int64)
        share = np.array([p[2] for p in shape], dtype=np.float64)
    return Particles(
        rows=gen.uniform(rows[0], rows[1], n) * height,
        cols=gen.uniform(0.0, 1.0, n) * width,
        vy=v_y,
        vx=v_x,
        sway=gen.uniform(0.3, 1.0, n) * sway * width,
        sway_w=gen.uniform(sway_w[0], sway_w[1], n),
        sway_phase=gen.uniform(0.0, 2 * math.pi, n),
        bob=gen.uniform(0.3, 1.0, n) * bob * height,
        bob_w=gen.uniform(sway_w[0], sway_w[1], n),
        bob_phase=gen.uniform(0.0, 2 * math.pi, n),
        alpha=gen.uniform(0.6, 1.0, n)[:, None] * alpha * share[None, :],
        pulse_w=gen.uniform(pulse[0], pulse[1], n),
        pulse_phase=gen.uniform(0.0, 2 * math.pi, n),
        dr=dr,
        dc=dc,
        colour=np.array([int(round(x)) for x in colour], dtype=np.uint8),
        rate=rate,
    )


DOT = ((0, 0, 1.0),)
FLAKE = ((0, 0, 1.0), (0, 1, 0.8), (1, 0, 0.8), (1, 1, 0.6))
PETAL = ((0, 0, 0.8), (0, 1, 1.0), (0, 2, 0.6), (1, 1, 0.9), (1, 2, 1.0))


def _blob(radius: float) -> tuple[tuple[int, int, float], ...]:
    """A soft round pattern: pixel offsets within ``radius`` + 1, fading outwards."""
    reach = int(math.ceil(radius)) + 1
    return tuple(
        (dy, dx, math.exp(-(dy * dy + dx * dx) / (radius * radius)))
        for dy in range(-reach, reach + 1)
        for dx in range(-reach, reach + 1)
        if dy * dy + dx * dx <= reach * reach
    )


def build_particles(look: Look, width: int, height: int, seed: int) -> tuple[
    tuple[Particles, ...], tuple[Particles, ...]
]:
    """Particle systems for ``look``: ``(behind the characters, in front of them)``."""
    gen = rng("particles", seed, look.weather, look.time)
    area = width * height / (960 * 540)
    glow = _blob(max(0.8, height / 300.0))
    behind: list[Particles] = []
    front: list[Particles] = []
    if look.fireflies:
        n = max(6, int(round(18 * area)))
        behind.append(_make(
            gen, n, height, width, rows=(0.56, 0.84), vy=(0, 0), vx=(-0.0004, 0.0004),
            sway=0.03, sway_w=(0.01, 0.04), bob=0.02, pulse=(0.05, 0.16), alpha=250,
            colour=(226, 255, 150), rate=0.8, shape=glow,
        ))
    if look.rain > 0.0:
        colour = lerp_rgb(look.sky.horizon, (235, 240, 250), 0.55)
        far_colour = lerp_rgb(look.sky.horizon, (235, 240, 250), 0.3)
        behind.append(_make(
            gen, int(1100 * area * look.rain), height, width, rows=(0, 1), vy=(0.02, 0.026),
            vx=(0.004, 0.005), sway=0, sway_w=(0, 0), alpha=110, colour=far_colour, rate=0.3,
            shape=DOT, trail=max(2, int(0.012 * height)),
        ))
        front.append(_make(
            gen, int(420 * area * look.rain), height, width, rows=(0, 1), vy=(0.04, 0.05),
            vx=(0.007, 0.009), sway=0, sway_w=(0, 0), alpha=170, colour=colour, rate=1.2,
            shape=DOT, trail=max(3, int(0.03 * height)),
        ))
    if look.snow > 0.0:
        white = lerp_rgb((250, 252, 255), look.sky.horizon, 0.15)
        behind.append(_make(
            gen, int(700 * area), height, width, rows=(0, 1), vy=(0.0018, 0.0028),
            vx=(0.0, 0.0006), sway=0.006, sway_w=(0.02, 0.06), alpha=170, colour=white, rate=0.4,
            shape=DOT,
        ))
        front.append(_make(
            gen, int(260 * area), height, width, rows=(0, 1), vy=(0.0035, 0.005),
            vx=(0.0, 0.001), sway=0.012, sway_w=(0.03, 0.08), alpha=235, colour=white, rate=1.1,
            shape=FLAKE,
        ))
    if look.petals is not None:
        front.append(_make(
            gen, int(70 * area), height, width, rows=(0, 1), vy=(0.002, 0.0035),
            vx=(0.002, 0.004), sway=0.015, sway_w=(0.03, 0.07), alpha=235, colour=look.petals,
            rate=1.0, shape=PETAL,
        ))
    return tuple(behind), tuple(front)

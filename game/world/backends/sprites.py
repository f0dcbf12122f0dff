"""Sprites: characters, items and small effects, drawn once with Pillow (supersampled).

A :class:`Sprite` is a small RGB image with coverage and two reference points in
its own pixels: ``foot`` (where it stands, bottom centre) and ``hold`` (where a
held item goes). Placeholders face right; :func:`transform` scales (squash and
stretch about the feet) and mirrors them. Heights are frame pixels.
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
from PIL import Image, ImageDraw

from game.world.backends.raster import RGB, U8
from game.world.backends.seeds import unit

#: Supersampling factor for drawn placeholders (drawn this much larger, then reduced).
SUPERSAMPLE = 3

COLOUR_WORDS: dict[str, RGB] = {
    "teal": (70, 150, 150),
    "blue": (92, 132, 204),
    "green": (104, 164, 92),
    "moss": (112, 146, 92),
    "red": (204, 80, 70),
    "orange": (232, 142, 64),
    "golden": (232, 192, 84),
    "gold": (232, 192, 84),
    "yellow": (236, 206, 90),
    "purple": (146, 104, 184),
    "violet": (146, 104, 184),
    "lilac": (184, 150, 214),
    "pink": (232, 152, 172),
    "white": (236, 236, 230),
    "grey": (150, 150, 162),
    "gray": (150, 150, 162),
    "silver": (192, 196, 208),
    "black": (54, 54, 64),
    "brown": (144, 102, 72),
    "russet": (170, 96, 64),
}

DARK_TINT: RGB = (0.6, 0.6, 0.74)


@dataclass(frozen=True)
class Sprite:
    """A drawn thing.

    Attributes:
        rgb: ``(h, w, 3)`` uint8 colours.
        alpha: ``(h, w)`` uint8 coverage.
        foot: ``(x, y)`` sprite pixels of the point that stands on the ground.
        hold: ``(x, y)`` sprite pixels of the point where a held item goes (or the
            item's own grip point, for items).
    """

    rgb: U8
    alpha: U8
    foot: tuple[float, float]
    hold: tuple[float, float]

    @property
    def width(self) -> int:
        return int(self.alpha.shape[1])

    @cached_property
    def bbox(self) -> tuple[int, int, int, int]:
        """``(x0, y0, x1, y1)`` sprite pixels of its clearly visible part (coverage > 1/8)."""
        solid = self.alpha > 32
        rows, cols = np.nonzero(solid.any(axis=1))[0], np.nonzero(solid.any(axis=0))[0]
        if rows.size == 0:
            return (0, 0, 0, 0)
        return (int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1)

    @property
    def height(self) -> int:
        return int(self.alpha.shape[0])


def colour_word(text: str) -> RGB | None:
    """The colour named first in ``text`` (``"a teal creature"`` -> teal), or ``None``."""
    low = text.lower()
    hits = [(low.find(w), c) for w, c in COLOUR_WORDS.items() if w in low]
    return min(hits, key=lambda h: h[0])[1] if hits else None


def colour_from_text(text: str, key: str) -> RGB:
    """The first colour word in ``text``, else a soft colour hashed from ``key``."""
    named = colour_word(text)
    if named is not None:
        return named
    r, g, b = colorsys.hsv_to_rgb(unit("colour", key), 0.38, 0.78)
    return (r * 255.0, g * 255.0, b * 255.0)


def _rgb(c: RGB, scale: float = 1.0, alpha: int = 255) -> tuple[int, int, int, int]:
    return (
        int(max(0, min(255, c[0] * scale))),
        int(max(0, min(255, c[1] * scale))),
        int(max(0, min(255, c[2] * scale))),
        alpha,
    )


def _mix(a: RGB, b: RGB, t: float) -> RGB:
    return (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t)


class Pen:
    """Draws in units of the sprite's height on a supersampled RGBA canvas."""

    def __init__(self, height: int, width_units: float, height_units: float) -> None:
        self.unit = height * SUPERSAMPLE
        self.size = (
            max(1, int(round(width_units * height))),
            max(1, int(round(height_units * height))),
        )
        self.image = Image.new(
            "RGBA", (self.size[0] * SUPERSAMPLE, self.size[1] * SUPERSAMPLE), (0, 0, 0, 0)
        )
        self.draw = ImageDraw.Draw(self.image)

    def layer(self) -> Pen:
        """A blank pen of the same size (for parts that rotate on their own)."""
        pen = Pen.__new__(Pen)
        pen.unit, pen.size = self.unit, self.size
        pen.image = Image.new("RGBA", self.image.size, (0, 0, 0, 0))
        pen.draw = ImageDraw.Draw(pen.image)
        return pen

    def p(self, x: float, y: float) -> tuple[float, float]:
        return (x * self.unit, y * self.unit)

    def ellipse(
        self, box: tuple[float, float, float, float], fill: RGB, outline: RGB | None = None,
        width: float = 0.0, alpha: int = 255,
    ) -> None:
        x0, y0 = self.p(box[0], box[1])
        x1, y1 = self.p(box[2], box[3])
        self.draw.ellipse(
            (x0, y0, x1, y1),
            fill=_rgb(fill, alpha=alpha),
            outline=_rgb(outline) if outline else None,
            width=max(1, int(width * self.unit)) if outline else 0,
        )

    def circle(self, cx: float, cy: float, r: float, fill: RGB, alpha: int = 255) -> None:
        self.ellipse((cx - r, cy - r, cx + r, cy + r), fill, alpha=alpha)

    def polygon(
        self, pts: Sequence[tuple[float, float]], fill: RGB, outline: RGB | None = None,
        width: float = 0.0,
    ) -> None:
        self.draw.polygon(
            [self.p(x, y) for x, y in pts],
            fill=_rgb(fill),
            outline=_rgb(outline) if outline else None,
            width=max(1, int(width * self.unit)) if outline else 0,
        )

    def line(self, pts: Sequence[tuple[float, float]], fill: RGB, width: float) -> None:
        self.draw.line([self.p(x, y) for x, y in pts], fill=_rgb(fill),
                       width=max(1, int(width * self.unit)), joint="curve")

    def arc(
        self, box: tuple[float, float, float, float], start: float, end: float, fill: RGB,
        width: float,
    ) -> None:
        x0, y0 = self.p(box[0], box[1])
        x1, y1 = self.p(box[2], box[3])
        self.draw.arc((x0, y0, x1, y1), start, end, fill=_rgb(fill),
                      width=max(1, int(width * self.unit)))

    def paste_rotated(self, other: Pen, degrees: float, pivot: tuple[float, float]) -> None:
        """Composite ``other`` over this canvas, rotated by ``degrees`` (clockwise) about ``pivot``."""
        part = other.image
        if abs(degrees) > 0.01:
            part = (
                part.convert("RGBa")
                .rotate(-degrees, resample=Image.Resampling.BICUBIC, center=self.p(*pivot))
                .convert("RGBA")
            )
        self.image = Image.alpha_composite(self.image, part)
        self.draw = ImageDraw.Draw(self.image)

    def finish(
        self, foot: tuple[float, float], hold: tuple[float, float], tint: RGB | None = None,
        light: float = 0.0,
    ) -> Sprite:
        """Reduce to the final size; ``foot``/``hold`` in height units; ``light`` shades top to bottom."""
        small = self.image.resize(self.size, Image.Resampling.LANCZOS)
        arr = np.asarray(small, dtype=np.uint8)
        rgb = arr[:, :, :3].astype(np.float32)
        if light:
            v = np.linspace(0.0, 1.0, rgb.shape[0], dtype=np.float32)[:, None, None]
            rgb *= 1.0 + light * (0.5 - v)
        if tint is not None:
            rgb *= np.array(tint, dtype=np.float32)
        h = self.unit / SUPERSAMPLE
        return Sprite(
            rgb=np.clip(rgb + 0.5, 0, 255).astype(np.uint8),
            alpha=np.ascontiguousarray(arr[:, :, 3]),
            foot=(foot[0] * h, foot[1] * h),
            hold=(hold[0] * h, hold[1] * h),
        )


def creature(height: int, colour: RGB, eyes: str = "open", tint: str = "", head: float = 0.0,
             expression: str = "neutral") -> Sprite:
    """A small horned creature facing right, ``height`` px tall (box 1.5 x 1.1 heights).

    Args:
        height: body height in frame pixels.
        colour: body colour.
        eyes: ``open``, ``closed`` or ``wide``.
        tint: ``""`` or ``"dark"`` (shrinking back, afraid).
        head: head tilt in degrees (positive tips the head forward).
        expression: ``neutral``, ``smile``, ``frown``, ``surprised``, ``sad`` or ``sleeping`` (the
            mouth, and closed eyes for ``sleeping``).
    """
    if expression == "sleeping":
        eyes = "closed"
    elif expression == "surprised":
        eyes = "wide"
    top = 0.1
    pen = Pen(height, 1.5, 1.0 + top)
    dark = _mix(colour, (20, 20, 40), 0.35)
    line = _mix(colour, (20, 16, 30), 0.6)
    belly = _mix(colour, (255, 250, 236), 0.45)
    w = 0.014
    pen.ellipse((0.08, 0.46 + top, 0.34, 0.64 + top), dark, line, w)  # tail curl
    pen.ellipse((0.14, 0.5 + top, 0.28, 0.6 + top), colour)
    for x0 in (0.36, 0.52):
        pen.ellipse((x0, 0.74 + top, x0 + 0.11, 1.0 + top), dark, line, w)
    pen.ellipse((0.26, 0.44 + top, 1.02, 0.9 + top), colour, line, w)  # body
    pen.ellipse((0.48, 0.63 + top, 0.94, 0.88 + top), belly)
    for x0 in (0.72, 0.86):
        pen.ellipse((x0, 0.76 + top, x0 + 0.11, 1.0 + top), colour, line, w)
    face = pen.layer()
    horn = (238, 224, 192)
    horn_line = (150, 126, 96)
    face.polygon(((0.9, 0.3 + top), (0.84, 0.14 + top), (0.86, 0.02 + top),
                  (0.93, 0.15 + top), (1.0, 0.26 + top)), horn, horn_line, w)
    face.polygon(((1.1, 0.25 + top), (1.17, 0.12 + top), (1.24, 0.03 + top),
                  (1.23, 0.17 + top), (1.18, 0.3 + top)), horn, horn_line, w)
    face.ellipse((0.84, 0.21 + top, 1.26, 0.63 + top), colour, line, w)  # head
    face.ellipse((0.8, 0.3 + top, 0.9, 0.42 + top), dark, line, w)  # ear
    face.ellipse((0.94, 0.47 + top, 1.02, 0.53 + top), (240, 140, 150), alpha=150)
    face.ellipse((1.15, 0.47 + top, 1.23, 0.53 + top), (240, 140, 150), alpha=150)
    for ex in (1.0, 1.14):
        ey = 0.41 + top
        if eyes == "closed":
            face.arc((ex - 0.045, ey - 0.03, ex + 0.045, ey + 0.03), 10, 170, (30, 24, 40), 0.014)
            continue
        r = 0.056 if eyes == "wide" else 0.05
        face.circle(ex, ey, r, (250, 250, 246))
        pr = 0.022 if eyes == "wide" else 0.034
        face.circle(ex + 0.01, ey + 0.004, pr, (28, 24, 40))
        face.circle(ex - 0.006, ey - 0.014, 0.012, (255, 255, 255))
    mouth = (60, 30, 40)
    if eyes == "wide":
        face.ellipse((1.06, 0.52 + top, 1.11, 0.58 + top), mouth)
    elif expression == "smile":
        face.arc((1.02, 0.46 + top, 1.14, 0.57 + top), 15, 165, mouth, 0.016)
    elif expression in ("frown", "sad"):
        face.arc((1.04, 0.53 + top, 1.12, 0.59 + top), 200, 340, mouth, 0.014)
        if expression == "frown":
            for ex in (1.0, 1.14):
                face.line(((ex - 0.05, 0.33 + top), (ex + 0.03, 0.355 + top)), mouth, 0.012)
    else:
        face.arc((1.04, 0.49 + top, 1.12, 0.55 + top), 20, 160, mouth, 0.012)
    pen.paste_rotated(face, head, (0.96, 0.56 + top))
    return pen.finish(
        foot=(0.66, 1.0 + top), hold=(1.22, 0.56 + top),
        tint=DARK_TINT if tint == "dark" else None, light=0.22,
    )


def figure(height: int, colour: RGB, eyes: str = "open", tint: str = "", head: float = 0.0) -> Sprite:
    """A hooded, cloaked figure facing right, ``height`` px tall (box 0.75 x 1.1 heights)."""
    top = 0.1
    pen = Pen(height, 0.75, 1.0 + top)
    line = _mix(colour, (20, 16, 30), 0.6)
    scarf = colour_from_text("", f"scarf{colour}")
    skin = (238, 204, 176)
    pen.ellipse((0.2, 0.94 + top, 0.34, 1.0 + top), (50, 40, 40))
    pen.ellipse((0.38, 0.94 + top, 0.52, 1.0 + top), (50, 40, 40))
    pen.polygon(((0.16, 0.97 + top), (0.58, 0.97 + top), (0.49, 0.4 + top), (0.25, 0.4 + top)),
                colour, line, 0.012)
    pen.ellipse((0.22, 0.32 + top, 0.52, 0.52 + top), colour, line, 0.012)
    pen.line(((0.46, 0.44 + top), (0.56, 0.56 + top), (0.64, 0.6 + top)),
             _mix(colour, (0, 0, 0), 0.2), 0.055)
    pen.circle(0.65, 0.6 + top, 0.032, skin)
    pen.polygon(((0.24, 0.36 + top), (0.5, 0.36 + top), (0.48, 0.43 + top), (0.26, 0.43 + top)),
                scarf)
    face = pen.layer()
    face.circle(0.37, 0.22 + top, 0.145, _mix(colour, (0, 0, 0), 0.15))
    face.circle(0.41, 0.24 + top, 0.1, skin)
    for ex in (0.39, 0.46):
        if eyes == "closed":
            face.line(((ex - 0.015, 0.235 + top), (ex + 0.015, 0.235 + top)), (40, 30, 30), 0.01)
        else:
            face.circle(ex, 0.235 + top, 0.017 if eyes == "wide" else 0.014, (40, 30, 30))
    face.arc((0.4, 0.26 + top, 0.47, 0.3 + top), 20, 160, (120, 60, 60), 0.01)
    pen.paste_rotated(face, head, (0.37, 0.36 + top))
    return pen.finish(
        foot=(0.37, 1.0 + top), hold=(0.66, 0.6 + top),
        tint=DARK_TINT if tint == "dark" else None, light=0.18,
    )


def kite(height: int, colour: RGB = (222, 52, 48)) -> Sprite:
    """A diamond kite with a bowed tail, ``height`` px tall; ``hold`` is where the string ties on."""
    pen = Pen(height, 0.62, 1.0)
    light, dark = _mix(colour, (255, 236, 210), 0.35), _mix(colour, (40, 0, 10), 0.3)
    top, right, bottom, left = (0.31, 0.02), (0.58, 0.28), (0.31, 0.62), (0.04, 0.28)
    centre = (0.31, 0.28)
    pen.polygon((top, right, bottom, left), colour, _mix(colour, (30, 0, 0), 0.55), 0.012)
    pen.polygon((top, centre, left), light)
    pen.polygon((centre, right, bottom), dark)
    pen.line((top, bottom), (80, 52, 40), 0.014)
    pen.line((left, right), (80, 52, 40), 0.014)
    tail = [(0.31 + 0.06 * math.sin(k * 0.9), 0.62 + 0.036 * k) for k in range(11)]
    pen.line(tail, (70, 50, 44), 0.012)
    for k, c in ((3, (250, 212, 64)), (6, (84, 146, 226)), (9, (250, 212, 64))):
        x, y = tail[k]
        pen.polygon(((x - 0.06, y - 0.03), (x + 0.06, y + 0.03), (x + 0.06, y - 0.03),
                     (x - 0.06, y + 0.03)), c)
    return pen.finish(foot=(0.31, 1.0), hold=bottom, light=0.1)


def leaf(height: int, colour: RGB = (94, 174, 74)) -> Sprite:
    """A broad green leaf on a short stem, ``height`` px tall; ``hold`` is the stem's end."""
    pen = Pen(height, 0.72, 1.0)
    base, tip = (0.16, 0.86), (0.64, 0.06)
    ax, ay = tip[0] - base[0], tip[1] - base[1]
    length = math.hypot(ax, ay)
    nx, ny = -ay / length, ax / length
    left, right = [], []
    for k in range(21):
        s = k / 20
        half = 0.2 * math.sin(math.pi * s) ** 0.8 * (1.0 - 0.25 * s)
        px, py = base[0] + ax * s, base[1] + ay * s
        left.append((px + nx * half, py + ny * half))
        right.append((px - nx * half, py - ny * half))
    outline = _mix(colour, (10, 40, 10), 0.5)
    pen.polygon(left + right[::-1], colour, outline, 0.014)
    pen.polygon(left, _mix(colour, (230, 255, 200), 0.25))
    vein = _mix(colour, (20, 60, 20), 0.45)
    pen.line((base, tip), vein, 0.014)
    for s in (0.3, 0.5, 0.7):
        px, py = base[0] + ax * s, base[1] + ay * s
        for sign in (1, -1):
            pen.line(((px, py), (px + 0.1 * (ax / length) + sign * nx * 0.12,
                                 py + 0.1 * (ay / length) + sign * ny * 0.12)), vein, 0.008)
    pen.line((base, (0.08, 0.98)), (104, 120, 60), 0.02)
    return pen.finish(foot=(0.36, 1.0), hold=(0.08, 0.98), light=0.1)


def lantern(height: int, colour: RGB = (246, 196, 92)) -> Sprite:
    """A hand lantern lit from inside, with a soft halo, ``height`` px tall; ``hold`` is its handle."""
    pen = Pen(height, 0.9, 1.0)
    for r, a in ((0.44, 34), (0.32, 56), (0.22, 90)):  # the halo, brightest at the flame
        pen.circle(0.45, 0.58, r, _mix(colour, (255, 250, 220), 0.5), alpha=a)
    metal, dark = (58, 52, 48), (30, 26, 24)
    pen.arc((0.3, 0.04, 0.6, 0.3), 180, 360, metal, 0.03)
    pen.polygon(((0.28, 0.2), (0.62, 0.2), (0.56, 0.3), (0.34, 0.3)), metal, dark, 0.015)
    pen.polygon(((0.32, 0.3), (0.58, 0.3), (0.58, 0.84), (0.32, 0.84)), _mix(colour, (255, 255, 255), 0.25),
                dark, 0.02)
    pen.ellipse((0.39, 0.5, 0.51, 0.74), (255, 244, 200))
    pen.ellipse((0.42, 0.58, 0.48, 0.72), (255, 255, 240))
    pen.line(((0.45, 0.3), (0.45, 0.84)), metal, 0.02)
    pen.polygon(((0.26, 0.84), (0.64, 0.84), (0.6, 0.96), (0.3, 0.96)), metal, dark, 0.015)
    return pen.finish(foot=(0.45, 1.0), hold=(0.45, 0.06))


def scarf(height: int, colour: RGB = (200, 48, 52)) -> Sprite:
    """A knitted scarf looped once with two fringed ends, ``height`` px tall; ``hold`` is the knot."""
    pen = Pen(height, 1.2, 1.0)
    light, dark = _mix(colour, (255, 255, 255), 0.3), _mix(colour, (10, 0, 20), 0.35)
    pen.ellipse((0.08, 0.05, 1.12, 0.45), colour, dark, 0.03)
    pen.ellipse((0.24, 0.15, 0.96, 0.35), (0, 0, 0), alpha=0)
    for k in range(6):  # knit stripes across the loop
        x = 0.2 + 0.16 * k
        pen.line(((x, 0.1), (x + 0.04, 0.4)), light, 0.02)
    pen.polygon(((0.42, 0.3), (0.62, 0.3), (0.58, 0.92), (0.4, 0.9)), colour, dark, 0.02)
    pen.polygon(((0.6, 0.32), (0.78, 0.34), (0.8, 0.86), (0.64, 0.88)), dark, dark, 0.02)
    for x in (0.43, 0.49, 0.55, 0.66, 0.72, 0.78):
        pen.line(((x, 0.88), (x, 0.99)), light, 0.015)
    return pen.finish(foot=(0.6, 1.0), hold=(0.6, 0.25))


def campfire(height: int, colour: RGB = (250, 150, 60), flicker: int = 0) -> Sprite:
    """A campfire: crossed logs in a ring of stones and flames; ``flicker`` (0-3) picks the flames'
    shape, so cycling it animates them. ``height`` px tall; ``hold`` is the flames' base."""
    pen = Pen(height, 1.2, 1.0)
    for k in range(7):
        x = 0.12 + 0.16 * k
        pen.ellipse((x - 0.08, 0.86, x + 0.08, 1.0), (120, 116, 110), (60, 58, 56), 0.01)
    pen.line(((0.2, 0.9), (1.0, 0.78)), (96, 64, 40), 0.08)
    pen.line(((0.2, 0.78), (1.0, 0.9)), (110, 74, 46), 0.08)
    sway = (0.0, 0.04, -0.03, 0.02)[flicker % 4]
    tall = (1.0, 0.9, 1.06, 0.95)[flicker % 4]
    outer = _mix(colour, (230, 60, 30), 0.3)
    inner = _mix(colour, (255, 240, 160), 0.6)
    pen.polygon(((0.28, 0.86), (0.92, 0.86), (0.74, 0.5), (0.62 + sway, 0.86 - 0.8 * tall),
                 (0.5, 0.46), (0.4, 0.6)), outer)
    pen.polygon(((0.4, 0.86), (0.8, 0.86), (0.66, 0.6), (0.6 - sway, 0.86 - 0.55 * tall), (0.48, 0.64)), inner)
    return pen.finish(foot=(0.6, 1.0), hold=(0.6, 0.8))


def trinket(height: int, colour: RGB, box: bool) -> Sprite:
    """A faceted gem (or, with ``box``, a ribboned box) in ``colour``, ``height`` px tall."""
    pen = Pen(height, 0.9, 1.0)
    light, dark = _mix(colour, (255, 255, 255), 0.45), _mix(colour, (0, 0, 20), 0.35)
    outline = _mix(colour, (10, 10, 20), 0.6)
    if box:
        pen.polygon(((0.1, 0.3), (0.8, 0.3), (0.8, 0.98), (0.1, 0.98)), colour, outline, 0.02)
        pen.polygon(((0.06, 0.2), (0.84, 0.2), (0.84, 0.36), (0.06, 0.36)), light, outline, 0.02)
        ribbon = colour_from_text("", f"ribbon{colour}")
        pen.polygon(((0.39, 0.2), (0.51, 0.2), (0.51, 0.98), (0.39, 0.98)), ribbon)
        pen.ellipse((0.26, 0.04, 0.45, 0.2), ribbon)
        pen.ellipse((0.45, 0.04, 0.64, 0.2), ribbon)
    else:
        pen.polygon(((0.2, 0.3), (0.7, 0.3), (0.88, 0.46), (0.45, 0.98), (0.02, 0.46)),
                    colour, outline, 0.02)
        pen.polygon(((0.2, 0.3), (0.7, 0.3), (0.6, 0.46), (0.3, 0.46)), light)
        pen.polygon(((0.3, 0.46), (0.6, 0.46), (0.45, 0.98)), dark)
        pen.circle(0.3, 0.36, 0.03, (255, 255, 255))
    return pen.finish(foot=(0.45, 1.0), hold=(0.45, 0.98), light=0.1)


def thing(kind: str, height: int, colour: RGB) -> Sprite:
    """An everyday thing ``height`` px tall, in ``colour``: ``lemon``, ``tin`` (a can or flask
    with a brass cap), ``key``, ``bottle`` or ``book``; ``hold`` is where a hand takes it."""
    light, dark = _mix(colour, (255, 255, 255), 0.4), _mix(colour, (10, 10, 20), 0.45)
    outline = _mix(colour, (10, 10, 20), 0.65)
    brass = (196, 158, 74)
    if kind == "lemon":
        pen = Pen(height, 1.3, 1.0)
        pen.ellipse((0.1, 0.12, 1.2, 0.96), colour, outline, 0.03)
        pen.ellipse((0.0, 0.44, 0.16, 0.64), colour, outline, 0.02)
        pen.ellipse((1.14, 0.44, 1.3, 0.64), colour, outline, 0.02)
        pen.ellipse((0.34, 0.24, 0.7, 0.46), light)
        return pen.finish(foot=(0.65, 1.0), hold=(0.65, 0.5), light=0.1)
    if kind == "tin":
        pen = Pen(height, 0.7, 1.0)
        pen.polygon(((0.06, 0.2), (0.64, 0.2), (0.64, 0.98), (0.06, 0.98)), colour, outline, 0.025)
        pen.polygon(((0.12, 0.26), (0.22, 0.26), (0.22, 0.92), (0.12, 0.92)), light)
        pen.polygon(((0.06, 0.5), (0.64, 0.5), (0.64, 0.56), (0.06, 0.56)), dark)
        pen.polygon(((0.24, 0.04), (0.46, 0.04), (0.46, 0.2), (0.24, 0.2)), brass, outline, 0.02)
        return pen.finish(foot=(0.35, 1.0), hold=(0.35, 0.1), light=0.1)
    if kind == "key":
        pen = Pen(height, 0.5, 1.0)
        pen.circle(0.25, 0.16, 0.14, colour)
        pen.circle(0.25, 0.16, 0.07, (0, 0, 0), alpha=0)
        pen.line(((0.25, 0.28), (0.25, 0.98)), colour, 0.07)
        pen.line(((0.25, 0.8), (0.42, 0.8)), colour, 0.07)
        pen.line(((0.25, 0.92), (0.4, 0.92)), colour, 0.07)
        return pen.finish(foot=(0.25, 1.0), hold=(0.25, 0.16), light=0.1)
    if kind == "bottle":
        pen = Pen(height, 0.5, 1.0)
        pen.polygon(((0.04, 0.42), (0.14, 0.32), (0.36, 0.32), (0.46, 0.42), (0.46, 0.98), (0.04, 0.98)),
                    colour, outline, 0.02)
        pen.polygon(((0.18, 0.06), (0.32, 0.06), (0.32, 0.34), (0.18, 0.34)), colour, outline, 0.02)
        pen.polygon(((0.16, 0.0), (0.34, 0.0), (0.34, 0.08), (0.16, 0.08)), (150, 40, 36))
        pen.polygon(((0.1, 0.46), (0.16, 0.46), (0.16, 0.9), (0.1, 0.9)), light)
        return pen.finish(foot=(0.25, 1.0), hold=(0.25, 0.2), light=0.1)
    pen = Pen(height, 1.2, 1.0)  # a book, lying closed
    pen.polygon(((0.04, 0.14), (1.16, 0.14), (1.16, 0.92), (0.04, 0.92)), colour, outline, 0.03)
    pen.polygon(((0.12, 0.92), (1.16, 0.92), (1.16, 0.98), (0.12, 0.98)), (236, 228, 206))
    pen.polygon(((0.04, 0.14), (0.16, 0.14), (0.16, 0.92), (0.04, 0.92)), dark)
    return pen.finish(foot=(0.6, 1.0), hold=(0.6, 0.5), light=0.1)


def from_image(
    image: Image.Image, height: int, tint: str = "", angle: float = 0.0, recolour: RGB | None = None
) -> Sprite:
    """A sprite from a (cropped RGBA) picture scaled to ``height`` px, tinted and tilted;
    ``recolour`` (a look edit: "turn it blue") moves its colours toward that colour, keeping
    their shading (each pixel's luma times the colour, mixed 70 %)."""
    w = max(1, int(round(image.width * height / max(1, image.height))))
    img = image.resize((w, max(1, height)), Image.Resampling.LANCZOS)
    if abs(angle) > 0.01:
        img = (
            img.convert("RGBa")
            .rotate(-angle, resample=Image.Resampling.BICUBIC, expand=True)
            .convert("RGBA")
        )
    arr = np.asarray(img.convert("RGBA"), dtype=np.uint8)
    rgb = shade(arr[:, :, :3], recolour, tint == "dark")
    h, w = arr.shape[:2]
    return Sprite(
        rgb=np.ascontiguousarray(rgb),
        alpha=np.ascontiguousarray(arr[:, :, 3]),
        foot=(w / 2.0, float(h)),
        hold=(w * 0.9, h * 0.5),
    )


def shade(rgb: U8, recolour: RGB | None, dark: bool) -> U8:
    """Picture colours after a look edit and a reaction: ``recolour`` moves them toward that colour
    keeping their shading (each pixel's luma times the colour, mixed 70 %); ``dark`` shrinks them
    back (:data:`DARK_TINT`)."""
    if recolour is None and not dark:
        return rgb
    f = rgb.astype(np.float32)
    if recolour is not None:
        lum = (f @ np.array([0.299, 0.587, 0.114], np.float32))[:, :, None] / 160.0
        f += (lum * np.array(recolour, np.float32) - f) * 0.7
    if dark:
        f *= np.array(DARK_TINT, np.float32)
    out: U8 = np.clip(f + 0.5, 0, 255).astype(np.uint8)
    return out


def transform(sprite: Sprite, sx: float, sy: float, mirror: bool) -> Sprite:
    """Scale ``sprite`` by ``sx`` x ``sy`` about its feet and optionally mirror it left-right."""
    rgb, alpha = sprite.rgb, sprite.alpha
    w, h = sprite.width, sprite.height
    if abs(sx - 1.0) > 1e-3 or abs(sy - 1.0) > 1e-3:
        nw, nh = max(1, int(round(w * sx))), max(1, int(round(h * sy)))
        rgba = np.concatenate([rgb, alpha[:, :, None]], axis=2)
        arr = np.asarray(
            Image.fromarray(rgba, "RGBA").resize((nw, nh), Image.Resampling.BILINEAR),
            dtype=np.uint8,
        )
        rgb, alpha = np.ascontiguousarray(arr[:, :, :3]), np.ascontiguousarray(arr[:, :, 3])
        fx, fy = sprite.foot[0] * nw / w, sprite.foot[1] * nh / h
        hx, hy = sprite.hold[0] * nw / w, sprite.hold[1] * nh / h
        w, h = nw, nh
    else:
        (fx, fy), (hx, hy) = sprite.foot, sprite.hold
    if mirror:
        rgb, alpha = np.ascontiguousarray(rgb[:, ::-1]), np.ascontiguousarray(alpha[:, ::-1])
        fx, hx = w - fx, w - hx
    return Sprite(rgb=rgb, alpha=alpha, foot=(fx, fy), hold=(hx, hy))


@lru_cache(maxsize=128)
def effect(kind: str, size: int) -> Sprite:
    """A small effect sprite ``size`` px across: ``sparkle``, ``heart``, ``z``, ``drop``, ``dust``,
    ``question``, ``smoke``, ``pool`` (warm light), ``glow`` or ``shadow`` (a flat ellipse,
    ``size`` px wide)."""
    if kind == "shadow":
        flat = Pen(max(3, size), 1.0, 0.3)
        flat.ellipse((0.0, 0.0, 1.0, 0.3), (0, 0, 0), alpha=200)
        flat.ellipse((0.12, 0.05, 0.88, 0.25), (0, 0, 0), alpha=255)
        return flat.finish(foot=(0.5, 0.15), hold=(0.5, 0.15))
    pen = Pen(max(3, size), 1.0, 1.0)
    if kind == "sparkle":
        pts = ((0.5, 0.0), (0.61, 0.39), (1.0, 0.5), (0.61, 0.61), (0.5, 1.0), (0.39, 0.61),
               (0.0, 0.5), (0.39, 0.39))
        pen.polygon(pts, (255, 236, 150))
        pen.circle(0.5, 0.5, 0.12, (255, 255, 240))
    elif kind == "heart":
        pen.circle(0.3, 0.35, 0.22, (240, 104, 146))
        pen.circle(0.7, 0.35, 0.22, (240, 104, 146))
        pen.polygon(((0.1, 0.45), (0.9, 0.45), (0.5, 0.92)), (240, 104, 146))
        pen.circle(0.3, 0.3, 0.07, (255, 200, 214))
    elif kind == "z":
        pen.line(((0.18, 0.2), (0.82, 0.2), (0.18, 0.8), (0.82, 0.8)), (214, 226, 255), 0.13)
    elif kind == "drop":
        pen.circle(0.5, 0.64, 0.26, (166, 212, 255))
        pen.polygon(((0.26, 0.58), (0.74, 0.58), (0.5, 0.06)), (166, 212, 255))
        pen.circle(0.42, 0.6, 0.07, (240, 250, 255))
    elif kind == "dust":
        pen.circle(0.5, 0.55, 0.4, (206, 194, 172), alpha=150)
        pen.circle(0.35, 0.45, 0.22, (226, 216, 196), alpha=150)
    elif kind == "question":
        pen.arc((0.22, 0.04, 0.78, 0.56), 180, 405, (255, 240, 196), 0.14)
        pen.line(((0.56, 0.5), (0.5, 0.62), (0.5, 0.7)), (255, 240, 196), 0.14)
        pen.circle(0.5, 0.88, 0.08, (255, 240, 196))
    elif kind == "smoke":
        pen.circle(0.5, 0.55, 0.42, (150, 148, 150), alpha=110)
        pen.circle(0.38, 0.45, 0.26, (176, 174, 176), alpha=110)
    elif kind == "pool":  # warm light falling around a lantern or fire
        for k in range(8):
            r = 0.5 * (1.0 - k / 8.0)
            pen.circle(0.5, 0.5, r, (255, 214, 140), alpha=18 + 6 * k)
    else:  # glow
        for r, a in ((0.5, 60), (0.32, 120), (0.16, 255)):
            pen.circle(0.5, 0.5, r, (236, 255, 150), alpha=a)
    return pen.finish(foot=(0.5, 0.5), hold=(0.5, 0.5))

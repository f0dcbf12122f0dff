"""A plate stage: one painted picture (a room, or an author's background) with parallax layers.

A :class:`Plate` is what an interior or an author's background art becomes: a
base image a little wider and taller than the frame (so the camera can pan and
look up without showing an edge), optional parallax layers in front of it (each a
masked image moving at its own rate) and the :class:`~game.world.backends.layout.Mark`
of each thing painted on it. :meth:`Plate.compose` fills a frame with slices and
masked copies only. Animated parts (the lens's wheeling light, a stove's flicker)
are :class:`Shine` bands brightened per frame. Units as in
:mod:`game.world.backends.landscape`: ``camera_x`` in world units, ``camera_y`` in
screen heights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import Image

from game.world.backends.layout import Box, Mark, mark_box
from game.world.backends.raster import RGB, U8, Bool

#: Columns the camera moves over a plate per world unit, as a share of the width.
PLATE_RATE = 0.3
#: Row (share of the height) where an entity with ``y = 0`` stands on a plate.
PLATE_FEET = 0.9


@dataclass(frozen=True)
class PlateLayer:
    """A parallax layer over a plate: ``image``/``mask`` as wide as the base, moving at ``rate``."""

    image: U8
    mask: Bool
    rate: float
    top: int


@dataclass(frozen=True)
class Shine:
    """A band of light that sweeps across ``box`` (plate pixels) every ``period`` frames.

    ``strength`` is the added share of white at the band's centre (0..1); ``width`` the
    band's width as a share of the box; ``flicker`` makes it pulse in place instead.
    """

    box: Box
    period: float
    strength: float
    width: float = 0.18
    flicker: bool = False


@dataclass(frozen=True)
class Plate:
    """A painted stage (see the module doc).

    Attributes:
        width, height: frame size.
        image: ``(H + 2 * margin, W + pan, 3)`` uint8 base picture.
        margin: rows above and below the frame for looking up and down.
        pan: extra columns the camera can pan over.
        layers: parallax layers in front, back to front.
        marks: what is painted where (plate pixels, rows of the frame before the look shift).
        shines: animated light bands.
        feet: frame row (share of the height) where characters stand.
    """

    width: int
    height: int
    image: U8
    margin: int
    pan: int
    layers: tuple[PlateLayer, ...] = ()
    marks: tuple[Mark, ...] = ()
    shines: tuple[Shine, ...] = ()
    feet: float = PLATE_FEET

    def offset(self, camera_x: float, rate: float = PLATE_RATE) -> int:
        """First plate column shown for ``camera_x``: pans ``rate`` widths per world unit, bouncing
        at the plate's edges (so a long walk never runs off the picture)."""
        if self.pan <= 0:
            return 0
        x = camera_x * self.width * rate + self.pan / 2.0
        k = x % (2 * self.pan)
        return int(k if k <= self.pan else 2 * self.pan - k)

    def shift(self, camera_y: float) -> int:
        """Rows the picture moves down when the camera looks up by ``camera_y``."""
        return max(-self.margin, min(self.margin, int(round(camera_y * self.height * 0.5))))

    def feet_row(self, camera_y: float) -> float:
        """Frame row where an entity with ``y = 0`` stands."""
        return self.feet * self.height + self.shift(camera_y)

    def compose(self, out: U8, camera_x: float, camera_y: float, frame: int) -> None:
        """Paint the plate, its layers and its shines into ``out`` (``(H, W, 3)`` uint8), every pixel."""
        h, w = self.height, self.width
        dy = self.shift(camera_y)
        off = self.offset(camera_x)
        r0 = self.margin - dy
        out[...] = self.image[r0 : r0 + h, off : off + w]
        for layer in self.layers:
            lo = min(self.pan, max(0, self.offset(camera_x, layer.rate)))
            a = max(0, layer.top - r0)
            b = min(h, layer.top + layer.mask.shape[0] - r0)
            if b > a:
                m0 = a + r0 - layer.top
                np.copyto(out[a:b], layer.image[m0 : m0 + b - a, lo : lo + w],
                          where=layer.mask[m0 : m0 + b - a, lo : lo + w])
        for s in self.shines:
            self._shine(out, s, off, dy, frame)

    def _shine(self, out: U8, s: Shine, off: int, dy: int, frame: int) -> None:
        x0, y0, x1, y1 = s.box
        bw = x1 - x0
        if s.flicker:
            k = 0.5 + 0.5 * math.sin(frame * 0.9) * math.sin(frame * 0.37 + 1.0)
            c0, c1, gain = x0, x1, s.strength * (0.4 + 0.6 * k)
        else:
            t = (frame % s.period) / s.period
            centre = x0 + (t * 1.4 - 0.2) * bw
            half = 0.5 * s.width * bw
            c0, c1, gain = int(centre - half), int(centre + half), s.strength
        c0, c1 = max(c0 - off, 0), min(c1 - off, self.width)
        r0, r1 = max(0, y0 + dy), min(self.height, y1 + dy)
        if c1 <= c0 or r1 <= r0 or gain <= 0:
            return
        region = out[r0:r1, c0:c1].astype(np.uint16)
        g = int(256 * min(1.0, gain))
        out[r0:r1, c0:c1] = ((region * (256 - g) + 255 * g) >> 8).astype(np.uint8)

    def boxes(self, camera_x: float, camera_y: float) -> list[tuple[str, str, Box]]:
        """``(name, kind, frame box)`` of every mark for this camera."""
        dy = self.shift(camera_y)
        out = []
        for m in self.marks:
            pan = self.offset(camera_x, m.rate) if m.rate != PLATE_RATE else self.offset(camera_x)
            out.append((m.name, str(m.kind), mark_box(m, camera_x, self.width, dy, min(self.pan, pan))))
        return out


#: Extra width of an author's plate the camera pans over, as a share of the frame width.
ART_PAN = 0.12


def plate_from_art(base: Image.Image, layers: list[Image.Image], width: int, height: int, light: RGB,
                   margin: int) -> Plate:
    """An author's background ``base`` and parallax ``layers`` as a :class:`Plate`.

    Each picture is scaled to cover ``(width * (1 + ART_PAN), height + 2 * margin)`` (cropped at the
    centre), graded by ``light`` (the scene's time of day: a multiplier per channel) and the layers
    masked where they are at least half opaque; layer ``k`` moves ``1.6 + 0.6 k`` times as fast as
    the plate. Marks: ``plate`` and ``layer<k>`` (kind ``art``).
    """
    pan = int(ART_PAN * width)
    size = (width + pan, height + 2 * margin)

    def cover(im: Image.Image) -> np.ndarray:
        scale = max(size[0] / im.width, size[1] / im.height)
        w, h = max(size[0], round(im.width * scale)), max(size[1], round(im.height * scale))
        big = im.convert("RGBA").resize((w, h), Image.Resampling.LANCZOS)
        x0, y0 = (w - size[0]) // 2, (h - size[1]) // 2
        return np.asarray(big.crop((x0, y0, x0 + size[0], y0 + size[1])), dtype=np.uint8)

    grade = np.array(light, np.float32)

    def lit(rgb: np.ndarray) -> U8:
        out: U8 = np.clip(rgb.astype(np.float32) * grade + 0.5, 0, 255).astype(np.uint8)
        return np.ascontiguousarray(out)

    image = lit(cover(base)[:, :, :3])
    marks = [Mark("plate", "art", (0, 0, size[0], height), PLATE_RATE, 0)]
    parts = []
    for k, layer in enumerate(layers):
        arr = cover(layer)
        solid = arr[:, :, 3] > 127
        rows = np.nonzero(solid.any(axis=1))[0]
        if rows.size == 0:
            continue
        top, bottom = int(rows[0]), int(rows[-1]) + 1
        mask = np.ascontiguousarray(np.repeat(solid[top:bottom, :, None], 3, axis=2))
        rate = PLATE_RATE * (1.6 + 0.6 * k)
        parts.append(PlateLayer(lit(arr[top:bottom, :, :3]), mask, rate, top))
        cols = np.nonzero(solid.any(axis=0))[0]
        marks.append(Mark(f"layer{k}", "art", (int(cols[0]), top - margin, int(cols[-1]) + 1, bottom - margin),
                          rate, 0))
    return Plate(width, height, image, margin, pan, tuple(parts), tuple(marks))

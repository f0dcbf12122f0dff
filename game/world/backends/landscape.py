"""The backdrop: a painted sky and three parallax landscape layers, built once, composed per frame.

A :class:`Backdrop` is pre-rendered for one (location, look, size, seed): the sky
is a screen-sized image; each layer (far hills, near hills with trees, the
ground with grass, flowers, rocks and water) is a wide periodic image with a
coverage mask. :meth:`Backdrop.compose` then builds a frame from slices only: a
masked copy for the band where a layer's edge wanders, a plain copy below it, and
nothing for rows the next layer covers entirely.

Shapes come from a hash of the location id (the same place looks the same in
every session); clouds and stars come from the session seed. Units: ``camera_x``
in world units (1.0 = one screen width), ``camera_y`` in screen heights (positive
= looking up); all rows/columns are frame pixels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from game.world.backends.landmarks import DRAW, PLACES, Place, lamp_lit
from game.world.backends.layout import Box, Mark, PartKind, mark_box
from game.world.backends.palette import Look
from game.world.backends.raster import (
    F32,
    I64,
    RGB,
    U8,
    Bool,
    lerp_rgb,
    smoothstep,
    to_u8,
    value_noise,
)
from game.world.backends.scenery import Setting
from game.world.backends.seeds import rng
from game.world.backends.sprites import Sprite

#: Parallax rates of the far hills, near hills and ground (the ground moves with the camera).
RATES = (0.25, 0.55, 1.0)
#: Row (fraction of the height) where an entity with ``y = 0`` stands.
FEET_ROW = 0.88
#: How far the camera can look up or down, in screen heights.
LOOK_MAX = 0.05
#: Landscape period in screen widths (the ground repeats after this many screens).
PERIOD_SCREENS = 3
#: Row (share of the height) of the sea's horizon.
HORIZON = 0.55
#: Parts of a landmark's picture that the layout record names, as boxes in its own
#: height units ``(x0, y0, x1, y1)`` (see :func:`game.world.backends.landmarks.oak`).
SUBPARTS: dict[str, dict[str, tuple[float, float, float, float]]] = {
    "oak": {"hollow": (0.43, 0.74, 0.58, 1.0), "leaf_bed": (0.44, 0.9, 0.58, 0.99)},
    "lighthouse": {"lit_lamp": (0.4, 0.12, 0.54, 0.23)},  # recorded only while the lamp burns
}
#: How fast water moves, columns per frame, as a share of the width (creek, sea).
FLOW_SPEED = {"creek": 0.0035, "sea": 0.0012}


@dataclass(frozen=True)
class Flow:
    """Moving water in a layer: where it is, and how fast its texture slides.

    Attributes:
        top: first layer row of the water; ``mask``: ``(rows, P + W, 3)`` bool, the water's
            pixels from ``top`` (three channels, as :class:`Layer` masks).
        speed: columns per frame the water's texture moves.
        image: ``(rows, P + W, 3)`` uint8, the water alone from ``top`` (painted before the
            landmarks, so that what stands in the water does not slide with it).
    """

    top: int
    mask: Bool
    speed: float
    image: U8 | None = None


@dataclass(frozen=True)
class Span:
    """A landmark's part above its layer's band: copied (masked) only where it stands.

    Attributes:
        top: first layer row; ``col``: first layer column (``0 .. period``).
        image: ``(rows, cols, 3)`` uint8 pixels; ``mask``: ``(rows, cols, 3)`` bool coverage.
    """

    top: int
    col: int
    image: U8
    mask: Bool


@dataclass(frozen=True)
class Layer:
    """One pre-rendered landscape layer.

    Attributes:
        image: ``(H + M, P + W, 3)`` uint8; columns ``P..P+W`` repeat ``0..W`` so any
            window of ``W`` columns starting below ``P`` is one slice.
        mask: ``(solid - top, P + W, 3)`` bool coverage of the rows ``top..solid`` where
            the edge wanders (above ``top`` nothing is covered, below ``solid``
            everything); three channels because ``np.copyto`` is an order of
            magnitude slower with a broadcast mask.
        rate: parallax rate (columns move ``rate * W`` per world unit of camera).
        top: first row with any coverage; ``solid``: first row from which every
            column is covered to the bottom (layer rows, before the look shift).
    """

    image: U8
    mask: Bool
    rate: float
    top: int
    solid: int
    flow: Flow | None = None
    spans: tuple[Span, ...] = ()


@dataclass(frozen=True)
class Stars:
    """Twinkling stars: pixel ``(rows[i], cols[i])`` goes between ``base[i]`` and ``peak[i]``."""

    rows: I64
    cols: I64
    base: F32
    peak: F32
    speed: F32
    phase: F32


@dataclass(frozen=True)
class Backdrop:
    """A pre-rendered sky and landscape for one place and look (see the module doc)."""

    width: int
    height: int
    period: int
    margin: int
    sky: U8
    layers: tuple[Layer, ...]
    stars: Stars
    marks: tuple[Mark, ...] = ()

    def shift(self, camera_y: float, rate: float) -> int:
        """Rows a layer of parallax ``rate`` moves down when the camera looks up by ``camera_y``."""
        dy = int(round(camera_y * self.height * rate))
        return max(-self.margin, min(self.margin, dy))

    def feet_row(self, camera_y: float) -> float:
        """Frame row where an entity with ``y = 0`` stands, for this camera."""
        return FEET_ROW * self.height + self.shift(camera_y, 1.0)

    def boxes(self, camera_x: float, camera_y: float) -> list[tuple[str, str, Box]]:
        """``(name, kind, frame box)`` of every landmark painted into the layers, for this camera."""
        return [(m.name, str(m.kind), mark_box(m, camera_x, self.width, self.shift(camera_y, m.rate)))
                for m in self.marks]

    def compose(self, out: U8, camera_x: float, camera_y: float, frame: int) -> None:
        """Paint sky and landscape into ``out`` (``(H, W, 3)`` uint8), in place.

        Args:
            out: the frame to fill; every pixel is written.
            camera_x: camera position in world units.
            camera_y: vertical look in screen heights.
            frame: session frame index (stars twinkle with it).
        """
        height, width = self.height, self.width
        shifts = [self.shift(camera_y, layer.rate) for layer in self.layers]
        sky_end = min(height, max(0, self.layers[0].solid + shifts[0]))
        out[:sky_end] = self.sky[:sky_end]
        st = self.stars
        if st.rows.size:
            f = 0.6 + 0.4 * np.sin(st.speed * np.float32(frame) + st.phase)
            out[st.rows, st.cols] = (st.base + (st.peak - st.base) * f[:, None]).astype(np.uint8)
        last = len(self.layers) - 1
        for k, layer in enumerate(self.layers):
            dy = shifts[k]
            end = height if k == last else self.layers[k + 1].solid + shifts[k + 1]
            end = max(0, min(height, end))
            off = int(math.floor(camera_x * width * layer.rate)) % self.period
            r0 = max(0, layer.top + dy)
            r1 = min(end, layer.solid + dy)
            if r1 > r0:
                m0 = r0 - dy - layer.top
                np.copyto(
                    out[r0:r1],
                    layer.image[r0 - dy : r1 - dy, off : off + width],
                    where=layer.mask[m0 : m0 + r1 - r0, off : off + width],
                )
            s0 = max(0, layer.solid + dy)
            if end > s0:
                out[s0:end] = layer.image[s0 - dy : end - dy, off : off + width]
            for span in layer.spans:
                self._span(out, span, dy, end, off)
            if layer.flow is not None:
                later = [self.layers[j].solid + shifts[j] for j in range(k + 1, len(self.layers))]
                self._flow(out, layer, layer.flow, dy, min([end, *later]), off, frame)

    def _span(self, out: U8, span: Span, dy: int, end: int, off: int) -> None:
        """Copy a landmark's top into the frame where it stands (each periodic copy in view)."""
        rows, cols = span.mask.shape[:2]
        r0, r1 = max(0, span.top + dy), min(end, span.top + rows + dy)
        if r1 <= r0:
            return
        for c in (span.col - off, span.col - off + self.period, span.col - off - self.period):
            a, b = max(0, c), min(self.width, c + cols)
            if b > a:
                m0 = r0 - dy - span.top
                np.copyto(out[r0:r1, a:b], span.image[m0 : m0 + r1 - r0, a - c : b - c],
                          where=span.mask[m0 : m0 + r1 - r0, a - c : b - c])

    def _flow(self, out: U8, layer: Layer, flow: Flow, dy: int, end: int, off: int, frame: int) -> None:
        """Slide the water's own texture under its fixed outline (the water moves, its banks do not)."""
        width = self.width
        r0 = max(0, flow.top + dy)
        r1 = min(end, flow.top + flow.mask.shape[0] + dy)
        if r1 <= r0:
            return
        src = (off + int(frame * flow.speed)) % self.period
        m0 = r0 - dy - flow.top
        texture = flow.image[m0 : m0 + r1 - r0] if flow.image is not None else layer.image[r0 - dy : r1 - dy]
        np.copyto(out[r0:r1], texture[:, src : src + width], where=flow.mask[m0 : m0 + r1 - r0, off : off + width])


def build_backdrop(
    location: str, look: Look, width: int, height: int, seed: int, setting: Setting | None = None
) -> Backdrop:
    """Paint the sky and the three layers for ``location`` in ``look`` at ``width`` x ``height``.

    ``setting`` (what the place shows) adds its landmarks: a sea instead of far hills
    (with the lighthouse on it), a creek across the ground, the oak with its hollow and
    leaf bed, trees, stump, bracken, reeds, stepping stones, causeway and railing, each
    recorded as a :class:`~game.world.backends.layout.Mark`. Takes a fraction of a
    second at 960x540; the result is meant to be cached.
    """
    names = frozenset(setting.things) if setting is not None else frozenset()
    period = PERIOD_SCREENS * width
    margin = int(math.ceil(LOOK_MAX * height)) + 1
    rows = height + margin
    sea = "sea" in names
    painters = (_paint_sea if sea else _paint_far, _paint_none if sea else _paint_near, _paint_ground)
    creek = "creek" in names or (look.water is not None and not sea)
    far = painters[0](look, rng("layer", location, 0), width, height, period, rows, creek)
    moon_mark, sky_look = _moon(look, far, width, height)
    sky, stars = _paint_sky(sky_look, width, height, seed)
    dither = rng("dither", location, seed)
    sky_u8 = to_u8(sky, dither)
    behind = np.concatenate(
        [sky.mean(axis=1), np.repeat(sky[-1:].mean(axis=1), margin, axis=0)], axis=0
    )
    stamps = _stamps(look, names, width, height)
    marks: list[Mark] = [moon_mark] if moon_mark is not None else []
    layers: list[Layer] = []
    for k, paint in enumerate(painters):
        gen = rng("layer", location, k)
        canvas = far if k == 0 else paint(look, gen, width, height, period, rows, creek)
        layer_name = ("far", "near", "ground")[k]
        surface = np.argmax(canvas.alpha > 0.5, axis=0)  # before any landmark stands on it
        covered = (canvas.alpha > 0.04).any(axis=1)
        base_top = int(np.argmax(covered)) if covered.any() else rows
        first_mark = len(marks)
        bare = canvas.colour.copy() if canvas.water.any() else None  # the water before landmarks stand in it
        for name, spr, place in stamps:
            if place.layer != layer_name:
                continue
            marks += _stamp_landmark(canvas, surface, name, spr, place, width, height, period, RATES[k], sea,
                                     frozenset() if lamp_lit(look, names) else frozenset({"lit_lamp"}))
        flow_mask = (canvas.water > 0.5) & (canvas.occluded < 0.5)
        colour, alpha = canvas.colour, canvas.alpha
        a3 = alpha[:, :, None]
        baked = colour * a3 + behind[:, None, :] * (1.0 - a3)
        water = bare * a3 + behind[:, None, :] * (1.0 - a3) if bare is not None else None
        cover = alpha.mean(axis=1)[:, None]
        weight = np.maximum(alpha.sum(axis=1), 1e-3)[:, None]
        layer_mean = (colour * a3).sum(axis=1) / weight
        behind = behind * (1.0 - cover) + layer_mean * cover
        mask = alpha > 0.04
        image = to_u8(baked, dither)
        image = np.concatenate([image, image[:, :width]], axis=1)
        mask = np.concatenate([mask, mask[:, :width]], axis=1)
        full_row = mask.all(axis=1)
        not_full = np.nonzero(~full_row)[0]
        solid = int(not_full[-1]) + 1 if not_full.size else 0
        top = min(base_top, solid)
        band = np.ascontiguousarray(np.repeat(mask[top:solid, :, None], 3, axis=2))
        spans = tuple(_span(image, mask, m, top, period) for m in marks[first_mark:]
                      if m.period and m.box[1] < top)
        flow = None
        wet = np.nonzero(flow_mask.any(axis=1))[0]
        if wet.size:
            f0, f1 = int(wet[0]), int(wet[-1]) + 1
            fm = np.concatenate([flow_mask[f0:f1], flow_mask[f0:f1, :width]], axis=1)
            speed = FLOW_SPEED["sea" if k == 0 else "creek"] * width
            texture = None
            if water is not None and len(marks) > first_mark:
                wu8 = to_u8(water[f0:f1], rng("dither-water", location, seed, k))
                texture = np.ascontiguousarray(np.concatenate([wu8, wu8[:, :width]], axis=1))
            flow = Flow(f0, np.ascontiguousarray(np.repeat(fm[:, :, None], 3, axis=2)), speed, texture)
        layers.append(Layer(image, band, RATES[k], top, solid, flow, spans))
    if creek:
        water_top = int(layers[2].flow.top) if layers[2].flow is not None else int(0.8 * height)
        marks.append(Mark("creek", "landmark", (0, water_top, width, water_top + int(0.05 * height)), 1.0, 0))
    if sea:
        marks.append(Mark("sea", "landmark", (0, int(HORIZON * height), width, int(0.76 * height)), 0.25, 0))
    return Backdrop(width, height, period, margin, sky_u8, tuple(layers), stars, tuple(marks))


def _moon(look: Look, far: _Canvas, width: int, height: int) -> tuple[Mark | None, Look]:
    """The moon's mark (the part of its disc above the far layer's crest, in the fixed sky) and
    the look to paint the sky with: a rising moon's centre moved onto the crest at its column."""
    sky = look.sky
    if not sky.moon or sky.light_r <= 0.0:
        return None, look
    col = int(sky.light_pos[0] * width)
    crest = int(np.argmax(far.alpha[:, col] > 0.5)) if (far.alpha[:, col] > 0.5).any() else height
    if sky.rising:
        sky = replace(sky, light_pos=(sky.light_pos[0], crest / height))
        look = replace(look, sky=sky)
    r = sky.light_r * height
    cx, cy = sky.light_pos[0] * width, sky.light_pos[1] * height
    box = (int(cx - r), int(cy - r), int(math.ceil(cx + r)), int(min(math.ceil(cy + r), crest)))
    return Mark("moon", "landmark", box, 0.0, 0), look


def _span(image: U8, mask: Bool, mark: Mark, top: int, period: int) -> Span:
    """The part of a landmark that rises above its layer's band (rows ``mark.y0 .. top``)."""
    x0, y0, x1, _ = mark.box
    r0, r1 = max(0, y0), top
    cols = np.arange(x0, x1) % period
    piece = np.ascontiguousarray(image[r0:r1][:, cols])
    where = np.ascontiguousarray(np.repeat(mask[r0:r1][:, cols][:, :, None], 3, axis=2))
    return Span(r0, x0 % period, piece, where)


def _stamps(look: Look, names: frozenset[str], width: int, height: int) -> list[tuple[str, Sprite, Place]]:
    """The landmark pictures ``names`` call for, with where they stand."""
    out = []
    for name, place in PLACES.items():
        if name in names and name in DRAW:
            out.append((name, DRAW[name](max(8, int(place.size * height)), look, names), place))
    return out


def _stamp_landmark(
    canvas: _Canvas, surface: I64, name: str, spr: Sprite, place: Place, width: int, height: int,
    period: int, rate: float, sea: bool, skip: frozenset[str] = frozenset(),
) -> list[Mark]:
    """Paint a landmark into ``canvas`` standing on the layer's ``surface`` (first covered row per
    column) and return its marks (without the :data:`SUBPARTS` named in ``skip``)."""
    x = place.x * width
    col = int(x) % period
    if place.layer == "far":
        foot = HORIZON * height + 0.01 * height if sea else float(surface[col])
    else:
        foot = float(surface[col]) + place.sink * height
    x0, y0 = int(round(x - spr.foot[0])), int(round(foot - spr.foot[1]))
    canvas.stamp(x0, y0, spr.alpha.astype(np.float32) / 255.0, spr.rgb.astype(np.float32), occlude=True)
    kind: PartKind = "landmark"
    marks = [Mark(name, kind, (x0, y0, x0 + spr.width, y0 + spr.height), rate, period)]
    h = spr.height
    for sub, (a, b, c, d) in SUBPARTS.get(name, {}).items():
        if sub in skip:
            continue
        sub_kind: PartKind = "prop" if sub == "leaf_bed" else kind
        marks.append(Mark(sub, sub_kind,
                          (x0 + int(a * h), y0 + int(b * h), x0 + int(c * h), y0 + int(d * h)), rate, period))
    return marks


# --------------------------------------------------------------------------- sky


def _paint_sky(look: Look, width: int, height: int, seed: int) -> tuple[F32, Stars]:
    """The sky, ``(H, W, 3)`` float32 0..255, and its twinkling stars."""
    sky = look.sky
    rows = np.arange(height, dtype=np.float32)[:, None]
    cols = np.arange(width, dtype=np.float32)[None, :]
    t = np.clip(rows / (0.64 * height), 0.0, 1.0)
    a = smoothstep(0.0, 0.62, t)[:, :, None]
    b = smoothstep(0.45, 1.0, t)[:, :, None]
    top, mid, hor = (np.array(c, dtype=np.float32) for c in (sky.top, sky.mid, sky.horizon))
    grad = (top * (1.0 - a) + mid * a) * (1.0 - b) + hor * b
    img = np.broadcast_to(grad, (height, width, 3)).astype(np.float32)
    light = np.array(sky.light, dtype=np.float32)
    sx, sy = sky.light_pos[0] * width, sky.light_pos[1] * height
    dx, dy = cols - sx, rows - sy
    wide = np.exp(-1.2 * ((dx / (0.5 * width)) ** 2 + (dy / (0.3 * height)) ** 2))
    tight = np.exp(-(dx**2 + dy**2) / (0.1 * height) ** 2)
    glow = np.clip(sky.glow * (0.5 * wide + 0.5 * tight), 0.0, 1.0)[:, :, None]
    img += (light - img) * glow
    if sky.light_r > 0.0:
        r = sky.light_r * height
        dist = np.sqrt(dx**2 + dy**2)
        disc = np.clip(r - dist + 0.5, 0.0, 1.0)
        if sky.moon:
            cut = np.sqrt((cols - sx - 0.4 * r) ** 2 + (rows - sy + 0.25 * r) ** 2)
            disc = disc * (1.0 - 0.92 * np.clip(r * 0.92 - cut + 0.5, 0.0, 1.0))
        core = np.array(lerp_rgb(sky.light, (255.0, 255.0, 250.0), 0.35), dtype=np.float32)
        img += (core - img) * disc[:, :, None]
    gen = rng("sky", seed, look.time, look.weather)
    cloud_a, cloud_c = _clouds(look, gen, width, height)
    img += (cloud_c - img) * cloud_a[:, :, None]
    stars = _stars(look, gen, img, cloud_a)
    return img, stars


def _clouds(look: Look, gen: np.random.Generator, width: int, height: int) -> tuple[F32, F32]:
    """Cloud coverage ``(H, W)`` 0..1 and colour ``(H, W, 3)`` for the sky."""
    sky = look.sky
    density = np.zeros((height, width), dtype=np.float32)
    lit = np.zeros((height, width), dtype=np.float32)
    overcast = look.rain > 0.0 or look.snow > 0.0
    count = int(round(sky.clouds * (16 if overcast else 10)))
    light_below = sky.light_pos[1] > 0.35
    for _ in range(count):
        if sky.streaks:
            cw, ch = gen.uniform(0.12, 0.26) * width, gen.uniform(0.012, 0.026) * height
            cx, cy = gen.uniform(0, width), gen.uniform(0.12, 0.5) * height
        else:
            cw = gen.uniform(0.05, 0.09) * width * (1.9 if overcast else 1.0)
            ch = cw * 0.5
            cx, cy = gen.uniform(0, width), gen.uniform(0.04, 0.4) * height
        for _ in range(int(gen.integers(4, 9))):
            bx = cx + gen.uniform(-1.0, 1.0) * cw
            by = cy + gen.uniform(-0.35, 0.35) * ch
            rx, ry = cw * gen.uniform(0.3, 0.6), ch * gen.uniform(0.55, 1.0)
            x0, x1 = int(max(0, bx - 3 * rx)), int(min(width, bx + 3 * rx + 1))
            y0, y1 = int(max(0, by - 3 * ry)), int(min(height, by + 3 * ry + 1))
            if x1 <= x0 or y1 <= y0:
                continue
            xs = (np.arange(x0, x1, dtype=np.float32) - bx) / rx
            ys = (np.arange(y0, y1, dtype=np.float32) - by) / ry
            g = np.exp(-(ys[:, None] ** 2) - xs[None, :] ** 2)
            side = ys[:, None] if light_below else -ys[:, None]
            density[y0:y1, x0:x1] += g
            lit[y0:y1, x0:x1] += g * np.clip(0.45 + 0.6 * side, 0.0, 1.0)
    strength = min(1.0, 0.6 + 0.4 * sky.clouds)
    alpha = smoothstep(0.3, 1.1, density) * strength
    texture = value_noise(height, width, 18, 8, gen)
    alpha = np.clip(alpha * (0.88 + 0.12 * texture), 0.0, 1.0).astype(np.float32)
    share = (lit / np.maximum(density, 1e-3))[:, :, None]
    shade, bright = np.array(sky.cloud_shade, np.float32), np.array(sky.cloud_lit, np.float32)
    colour = shade + (bright - shade) * share
    return alpha, colour.astype(np.float32)


def _stars(look: Look, gen: np.random.Generator, img: F32, cloud_a: F32) -> Stars:
    """Draw stars into ``img`` (in place) and return the brightest as twinkling stars."""
    height, width = img.shape[:2]
    n = int(look.sky.stars * 0.0006 * width * height)
    empty_i = np.zeros(0, dtype=np.int64)
    empty_f = np.zeros((0, 3), dtype=np.float32)
    if n <= 0:
        return Stars(empty_i, empty_i, empty_f, empty_f, np.zeros(0, np.float32), np.zeros(0, np.float32))
    top_share = 0.6 if look.sky.stars >= 0.5 else 0.3
    rs = (gen.uniform(0, 1, n) ** 1.6 * top_share * height).astype(np.int64)
    cs = gen.integers(0, width, n).astype(np.int64)
    bright = (gen.uniform(0.25, 1.0, n) ** 2).astype(np.float32)
    bright *= 1.0 - cloud_a[rs, cs]
    white = np.array((255.0, 250.0, 236.0), dtype=np.float32)
    base = img[rs, cs].copy()
    peak = base + (white - base) * bright[:, None]
    img[rs, cs] = peak
    big = bright > 0.55
    for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0)):
        r2 = np.clip(rs[big] + dr, 0, height - 1)
        c2 = np.clip(cs[big] + dc, 0, width - 1)
        img[r2, c2] += (white - img[r2, c2]) * (0.35 * bright[big])[:, None]
    order = np.argsort(-bright, kind="stable")[: min(40, n)]
    return Stars(
        rows=rs[order],
        cols=cs[order],
        base=np.clip(base[order] + 0.5, 0, 255).astype(np.float32),
        peak=np.clip(peak[order] + 0.5, 0, 255).astype(np.float32),
        speed=gen.uniform(0.08, 0.3, order.size).astype(np.float32),
        phase=gen.uniform(0, 2 * math.pi, order.size).astype(np.float32),
    )


# --------------------------------------------------------------------------- layers


def _contour(
    gen: np.random.Generator, period: int, base: float, waves: tuple[tuple[int, float], ...]
) -> F32:
    """A periodic crest line: row of the surface at each of ``period`` columns."""
    x = np.arange(period, dtype=np.float64) * (2.0 * math.pi / period)
    y = np.full(period, base, dtype=np.float64)
    for k, amp in waves:
        y += amp * gen.uniform(0.6, 1.0) * np.sin(k * x + gen.uniform(0.0, 2.0 * math.pi))
    return y.astype(np.float32)


def _brush(gen: np.random.Generator, rows: int, period: int, height: int) -> F32:
    """Painterly brush texture in about ``[-1, 1]``: horizontal streaks plus finer grain."""
    screens = max(1, period // max(1, int(height * 16 / 9)))
    streaks = value_noise(rows, period, 36, 14 * screens, gen)
    grain = value_noise(rows, period, 90, 70 * screens, gen)
    return (0.7 * streaks + 0.3 * grain).astype(np.float32)


class _Canvas:
    """A layer being painted: colour ``(rows, P, 3)``, coverage ``(rows, P)``, column wrap-around."""

    def __init__(self, colour: F32, alpha: F32) -> None:
        self.colour = colour
        self.alpha = alpha
        self.period = alpha.shape[1]
        self.occluded = np.zeros(alpha.shape, dtype=np.float32)
        self.water = np.zeros(alpha.shape, dtype=np.float32)

    def stamp(self, x0: int, y0: int, cover: F32, colour: RGB | F32, occlude: bool = False) -> None:
        """Paint ``colour`` with coverage ``cover`` (``(h, w)``) at top-left ``(x0, y0)``;
        ``occlude`` marks it as standing in front of any water there."""
        rows = self.alpha.shape[0]
        h, w = cover.shape
        r0, r1 = max(0, y0), min(rows, y0 + h)
        if r1 <= r0:
            return
        cover = cover[r0 - y0 : r1 - y0]
        cols = np.arange(x0, x0 + w) % self.period
        c = np.asarray(colour, dtype=np.float32)
        if c.ndim == 3:
            c = c[r0 - y0 : r1 - y0]
        old = self.colour[r0:r1, cols]
        a = cover[:, :, None]
        self.colour[r0:r1, cols] = old + (c - old) * a
        self.alpha[r0:r1, cols] = np.maximum(self.alpha[r0:r1, cols], cover)
        if occlude:
            self.occluded[r0:r1, cols] = np.maximum(self.occluded[r0:r1, cols], cover)


def _disc(rx: float, ry: float) -> F32:
    """Anti-aliased ellipse coverage in a ``(2*ry+3, 2*rx+3)`` box centred in it."""
    w, h = int(2 * rx) + 3, int(2 * ry) + 3
    xs = (np.arange(w, dtype=np.float32) - (w - 1) / 2) / max(rx, 0.5)
    ys = (np.arange(h, dtype=np.float32) - (h - 1) / 2) / max(ry, 0.5)
    d = np.sqrt(ys[:, None] ** 2 + xs[None, :] ** 2)
    return np.clip((1.0 - d) * min(rx, ry) + 0.5, 0.0, 1.0).astype(np.float32)


def _conifer(h: float, w: float, tiers: int) -> F32:
    """Coverage of a tiered conifer ``h`` rows tall and ``w`` wide at the base (box ``(h+2, w+2)``)."""
    bw, bh = int(w) + 3, int(h) + 2
    xs = np.abs(np.arange(bw, dtype=np.float32) - (bw - 1) / 2)[None, :]
    v = (bh - 1 - np.arange(bh, dtype=np.float32))[:, None] / max(h, 1.0)
    frac = (v * tiers) % 1.0
    half = 0.5 * w * (1.0 - v) * (0.55 + 0.45 * (1.0 - frac))
    cover = np.clip(half - xs + 0.5, 0.0, 1.0) * (v <= 1.0)
    trunk = (xs < max(1.0, 0.06 * w)) & (v < 0.12)
    out: F32 = np.maximum(cover, trunk.astype(np.float32)).astype(np.float32)
    return out


def _round_tree(gen: np.random.Generator, h: float, w: float) -> F32:
    """Coverage of a round-canopied tree ``h`` rows tall (box ``(h+2, w+2)``), trunk at the bottom centre."""
    bw, bh = int(w) + 3, int(h) + 2
    xs = np.arange(bw, dtype=np.float32) - (bw - 1) / 2
    ys = np.arange(bh, dtype=np.float32)
    cover = np.zeros((bh, bw), dtype=np.float32)
    trunk = (np.abs(xs)[None, :] < max(1.0, 0.045 * w)) & (ys[:, None] > 0.5 * h)
    cover[trunk] = 1.0
    for _ in range(7):
        r = gen.uniform(0.24, 0.34) * w
        cx = gen.uniform(-1.0, 1.0) * max(0.0, 0.5 * w - r - 1.0)
        cy = max(gen.uniform(0.25, 0.55) * h, r + 1.0)
        d = np.sqrt((xs[None, :] - cx) ** 2 + (ys[:, None] - cy) ** 2)
        cover = np.maximum(cover, np.clip(r - d + 0.5, 0.0, 1.0))
    return cover


def _hills(
    look: Look,
    gen: np.random.Generator,
    base_colour: RGB,
    crest: F32,
    height: int,
    rows: int,
) -> tuple[F32, F32]:
    """Colour and coverage of a hill layer under ``crest``, with rim light and brush texture."""
    period = crest.shape[0]
    r = np.arange(rows, dtype=np.float32)[:, None]
    depth = r - crest[None, :]
    alpha = np.clip(depth + 0.5, 0.0, 1.0).astype(np.float32)
    brush = _brush(gen, rows, period, height)
    colour = np.array(base_colour, np.float32) * (1.0 + 0.07 * brush)[:, :, None]
    slope = np.gradient(crest.astype(np.float64))
    towards = 1.0 if look.sky.light_pos[0] >= 0.5 else -1.0
    scale = float(np.std(slope)) + 1e-6
    facing = np.clip(0.45 + 0.45 * np.tanh(slope * towards / scale), 0.05, 1.0).astype(np.float32)
    rim_w = np.exp(-np.clip(depth, 0.0, None) / (0.014 * height)) * facing[None, :] * look.sky.rim
    rim = np.array(look.rim, np.float32)
    colour += (rim - colour) * (0.75 * rim_w)[:, :, None]
    return colour.astype(np.float32), alpha


def _atmosphere(
    look: Look,
    canvas: _Canvas,
    crest: F32,
    height: int,
    haze: float,
    fog: float,
    snow: float = 0.2,
) -> None:
    """Fade a painted layer into the valley haze and the fog, and lay snow on it, in place."""
    rows = canvas.alpha.shape[0]
    r = np.arange(rows, dtype=np.float32)[:, None]
    mean = float(crest.mean())
    t = np.clip((r - mean) / (0.28 * height), 0.0, 1.0) ** 1.3
    valley = (haze + 0.55 * look.fog) * t
    hz = np.array(look.haze, np.float32)
    canvas.colour += (hz - canvas.colour) * np.clip(valley, 0.0, 0.95)[:, :, None]
    if fog * look.fog > 0.0:
        fc = np.array(look.fog_colour, np.float32)
        canvas.colour += (fc - canvas.colour) * (fog * look.fog)
    if look.snow > 0.0:
        depth = r - crest[None, :]
        cap = np.where(depth >= -1.0, np.exp(-np.clip(depth, 0.0, None) / (0.02 * height)), 0.0)
        snow_w = look.snow * (snow + 0.55 * cap)
        white = np.array(lerp_rgb((244, 246, 252), look.sky.horizon, 0.3), np.float32)
        white *= np.array(look.sky.grade, np.float32) ** 0.5
        canvas.colour += (white - canvas.colour) * np.clip(snow_w, 0.0, 0.9)[:, :, None]


def _paint_far(
    look: Look, gen: np.random.Generator, width: int, height: int, period: int, rows: int,
    creek: bool = False,
) -> _Canvas:
    """Far hills: broad pale ridges with a fringe of tiny distant conifers."""
    crest = _contour(
        gen, period, 0.5 * height,
        ((2, 0.05 * height), (3, 0.045 * height), (5, 0.025 * height), (9, 0.01 * height),
         (23, 0.004 * height), (41, 0.002 * height)),
    )
    base = lerp_rgb(look.far, look.sky.horizon, 0.22)
    colour, alpha = _hills(look, gen, base, crest, height, rows)
    canvas = _Canvas(colour, alpha)
    tree_c = lerp_rgb(look.tree, base, 0.55)
    n = int(round(9 * look.trees * period / width))
    for _ in range(n):
        cx = gen.uniform(0, period)
        cluster = int(gen.integers(2, 6))
        for j in range(cluster):
            x = cx + j * gen.uniform(0.004, 0.01) * width
            h = gen.uniform(0.02, 0.045) * height
            w = h * gen.uniform(0.4, 0.55)
            cover = _conifer(h, w, 3)
            bh, bw = cover.shape
            foot = crest[int(x) % period] + 0.15 * h
            canvas.stamp(int(x - bw / 2), int(foot - bh), cover, tree_c)
    _atmosphere(look, canvas, crest, height, haze=0.5, fog=0.7)
    return canvas


def _paint_sea(
    look: Look, gen: np.random.Generator, width: int, height: int, period: int, rows: int,
    creek: bool = False,
) -> _Canvas:
    """The sea to a flat horizon: darker toward the shore, glints of the sky's light on it."""
    horizon = HORIZON * height
    r = np.arange(rows, dtype=np.float32)[:, None]
    alpha = np.broadcast_to(np.clip(r - horizon + 0.5, 0.0, 1.0), (rows, period)).astype(np.float32)
    base = look.water if look.water is not None else lerp_rgb(look.far, (70, 100, 130), 0.6)
    deep = np.array(lerp_rgb(base, (10, 14, 24), 0.35), np.float32)
    far = np.array(lerp_rgb(base, look.sky.horizon, 0.55), np.float32)
    t = np.clip((r - horizon) / (0.3 * height), 0.0, 1.0)[:, :, None]
    colour = far + (deep - far) * t
    colour = np.broadcast_to(colour, (rows, period, 3)).astype(np.float32).copy()
    ripples = value_noise(rows, period, rows // 2, 12 * period // max(1, width), gen)
    glint = np.clip((ripples - 0.35) * 3.0, 0.0, 1.0)[:, :, None]
    light = np.array(lerp_rgb(look.sky.horizon, look.sky.light, 0.6), np.float32)
    band = np.exp(-(((r - horizon) / (0.12 * height)) ** 2))[:, :, None]
    colour += (light - colour) * glint * (0.25 + 0.5 * band)
    canvas = _Canvas(colour, alpha)
    canvas.water = alpha.copy()
    return canvas


def _paint_none(
    look: Look, gen: np.random.Generator, width: int, height: int, period: int, rows: int,
    creek: bool = False,
) -> _Canvas:
    """An empty layer (no near hills over the sea)."""
    return _Canvas(np.zeros((rows, period, 3), np.float32), np.zeros((rows, period), np.float32))


def _paint_near(
    look: Look, gen: np.random.Generator, width: int, height: int, period: int, rows: int,
    creek: bool = False,
) -> _Canvas:
    """Near hills: rolling slopes with conifers and round trees along the crest."""
    crest = _contour(
        gen, period, 0.62 * height,
        ((3, 0.05 * height), (5, 0.035 * height), (7, 0.02 * height), (11, 0.01 * height),
         (31, 0.004 * height), (53, 0.002 * height)),
    )
    base = lerp_rgb(look.near, look.sky.horizon, 0.07)
    colour, alpha = _hills(look, gen, base, crest, height, rows)
    canvas = _Canvas(colour, alpha)
    n = int(round(4 * look.trees * period / width))
    rim = np.array(look.rim, np.float32)
    for _ in range(n):
        x = gen.uniform(0, period)
        h = gen.uniform(0.08, 0.17) * height
        if gen.uniform() < 0.55:
            w = h * gen.uniform(0.42, 0.58)
            cover = _conifer(h, w, int(gen.integers(3, 5)))
        else:
            w = h * gen.uniform(0.6, 0.8)
            cover = _round_tree(gen, h, w)
        bh, bw = cover.shape
        shade = gen.uniform(0.85, 1.1)
        tc = np.array(look.tree, np.float32) * shade
        v = np.linspace(1.0, 0.0, bh, dtype=np.float32)[:, None, None]
        xs = np.linspace(-1.0, 1.0, bw, dtype=np.float32)[None, :, None]
        towards = 1.0 if look.sky.light_pos[0] >= 0.5 else -1.0
        light = np.clip(0.25 * v + 0.25 * xs * towards, 0.0, 0.5) * look.sky.rim
        tree_colour = tc + (rim - tc) * light
        foot = crest[int(x) % period] + 0.1 * h
        canvas.stamp(int(x - bw / 2), int(foot - bh), cover, tree_colour.astype(np.float32))
    _atmosphere(look, canvas, crest, height, haze=0.3, fog=0.5)
    return canvas


def _paint_ground(
    look: Look, gen: np.random.Generator, width: int, height: int, period: int, rows: int,
    creek: bool = False,
) -> _Canvas:
    """The ground: a grass fringe, a creek (``creek``), flowers, rocks, bushes."""
    crest = _contour(
        gen, period, 0.765 * height,
        ((2, 0.012 * height), (5, 0.006 * height), (11, 0.003 * height)),
    )
    spacing = max(2.0, width / 320.0)
    n_blades = int(period / spacing) + 1
    centres = (np.arange(n_blades) + gen.uniform(-0.3, 0.3, n_blades)) * spacing
    tall = gen.uniform(0.35, 1.0, n_blades) ** 1.5 * 0.03 * height
    cols = np.arange(period, dtype=np.float32)
    nearest = np.round(cols / spacing).astype(np.int64)
    lift = np.zeros(period, dtype=np.float32)
    for d in (-1, 0, 1):
        j = (nearest + d) % n_blades
        dist = np.abs(cols - centres[j])
        dist = np.minimum(dist, period - dist)
        lift = np.maximum(lift, tall[j] * (1.0 - dist / (1.1 * spacing)))
    top = crest - lift
    r = np.arange(rows, dtype=np.float32)[:, None]
    alpha = np.clip(r - top[None, :] + 0.5, 0.0, 1.0).astype(np.float32)
    depth = r - crest[None, :]
    brush = _brush(gen, rows, period, height)
    grass = np.array(look.grass, np.float32)
    tips = np.array(lerp_rgb(look.grass, look.rim, 0.35 * look.sky.rim), np.float32)
    ground = np.array(look.ground, np.float32)
    t_tip = np.clip(-depth / (0.03 * height), 0.0, 1.0)[:, :, None]
    t_soil = smoothstep(0.0, 0.06 * height, depth)[:, :, None]
    colour = grass + (tips - grass) * t_tip
    colour = colour + (ground - colour) * t_soil
    dark = np.clip((r - 0.8 * height) / (0.25 * height), 0.0, 1.0) * 0.38
    colour *= ((1.0 - dark) * (1.0 + 0.08 * brush))[:, :, None]
    canvas = _Canvas(colour.astype(np.float32), alpha)
    water_rows: tuple[float, float] = (-1.0, -1.0)
    if creek:
        water_rows = _creek(look, gen, canvas, crest, height)
    _flowers_rocks_bushes(look, gen, canvas, crest, width, height, water_rows)
    _atmosphere(look, canvas, crest, height, haze=0.0, fog=0.22, snow=0.6)
    return canvas


def _creek(
    look: Look, gen: np.random.Generator, canvas: _Canvas, crest: F32, height: int
) -> tuple[float, float]:
    """Paint a creek band across the ground (its coverage into ``canvas.water``); returns its
    (top, bottom) rows."""
    rows, period = canvas.alpha.shape
    x = np.arange(period, dtype=np.float32) * (2 * math.pi / period)
    top_row = float(crest.mean()) + 0.035 * height
    top = top_row + 0.008 * height * np.sin(4 * x + gen.uniform(0, 6.28))
    bottom = top + 0.045 * height + 0.006 * height * np.sin(7 * x + gen.uniform(0, 6.28))
    r = np.arange(rows, dtype=np.float32)[:, None]
    inside = np.clip(r - top[None, :] + 0.5, 0, 1) * np.clip(bottom[None, :] - r + 0.5, 0, 1)
    canvas.water = np.maximum(canvas.water, inside).astype(np.float32)
    base = look.water if look.water is not None else lerp_rgb(look.grass, (96, 162, 204), 0.7)
    water = np.array(lerp_rgb(base, look.sky.horizon, 0.4), np.float32)
    glint = value_noise(rows, period, rows // 3, period // 10, gen)
    sparkle = np.clip((glint - 0.45) * 4.0, 0.0, 1.0)[:, :, None]
    light = np.array(lerp_rgb(look.sky.horizon, look.sky.light, 0.4), np.float32)
    shaded = water + (light - water) * (0.6 * sparkle)
    bank = np.clip(1.5 - np.abs(r - top[None, :] + 1.0), 0.0, 1.0)[:, :, None] * 0.5
    shaded = shaded * (1.0 - bank)
    a = inside[:, :, None]
    canvas.colour += (shaded - canvas.colour) * a
    return float(top.min()) - 2.0, float(bottom.max()) + 2.0


def _flowers_rocks_bushes(
    look: Look,
    gen: np.random.Generator,
    canvas: _Canvas,
    crest: F32,
    width: int,
    height: int,
    water_rows: tuple[float, float],
) -> None:
    """Scatter bushes on the crest, rocks and flowers in the grass (not in the water)."""
    period = crest.shape[0]
    screens = period / width
    for _ in range(int(round(2 * screens * look.trees))):
        x = gen.uniform(0, period)
        rx = gen.uniform(0.03, 0.06) * height
        cover = _disc(rx, rx * 0.7)
        bh, bw = cover.shape
        v = np.linspace(1.0, 0.0, bh, dtype=np.float32)[:, None, None]
        tone = np.array(look.grass, np.float32) * gen.uniform(0.62, 0.78)
        lit = np.array(look.rim, np.float32)
        bush = np.broadcast_to(tone + (lit - tone) * (0.3 * look.sky.rim * v**2), (bh, bw, 3))
        canvas.stamp(
            int(x - bw / 2), int(crest[int(x) % period] - bh * 0.55), cover, bush.astype(np.float32)
        )
    stone = lerp_rgb((150, 150, 162), look.ground, 0.45)
    stone = lerp_rgb(stone, (stone[0] * look.sky.grade[0], stone[1] * look.sky.grade[1],
                             stone[2] * look.sky.grade[2]), 0.7)
    for _ in range(int(round(5 * screens))):
        x = gen.uniform(0, period)
        y = crest[int(x) % period] + gen.uniform(0.03, 0.18) * height
        if water_rows[0] - 0.03 * height <= y <= water_rows[1] + 0.02 * height:
            continue
        rx = gen.uniform(0.015, 0.035) * height
        cover = _disc(rx, rx * 0.55)
        bh, bw = cover.shape
        v = np.linspace(0.0, 1.0, bh, dtype=np.float32)[:, None, None]
        sc = np.array(stone, np.float32) * (1.25 - 0.5 * v)
        sc = np.broadcast_to(sc, (bh, bw, 3)).astype(np.float32)
        canvas.stamp(int(x - bw / 2), int(y - bh / 2), cover, sc)
    hues = (look.accent, lerp_rgb(look.accent, (255, 255, 255), 0.6),
            lerp_rgb(look.accent, (230, 120, 160), 0.5))
    for _ in range(int(round(45 * screens))):
        x = gen.uniform(0, period)
        y = crest[int(x) % period] + gen.uniform(0.006, 0.08) * height
        colour = hues[int(gen.integers(0, len(hues)))]
        if water_rows[0] <= y <= water_rows[1]:
            continue
        size = 0.0045 * height * gen.uniform(0.7, 1.3)
        r = max(0.8, size)
        cover = _disc(r, r) * min(1.0, (size / r) ** 2)  # below a pixel: fainter, not larger
        bh, bw = cover.shape
        canvas.stamp(int(x - bw / 2), int(y - bh / 2), cover, colour)

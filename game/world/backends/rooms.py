"""Interiors: rooms painted once into a :class:`~game.world.backends.stage.Plate`.

:func:`build_room` paints the named interior of the vocabulary (``kitchen``,
``lantern_room``, ``watch_room``, ``hut``, ``glasshouse``) with Pillow: walls and
floor, a window that shows the scene's sky (its time of day and weather), and the
furniture the setting names (stove, table, the great lens, chart, desk, plants),
each recorded as a mark for the layout. Lamps and the lens get a :class:`Shine`.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from PIL import Image, ImageDraw

from game.world.backends.landscape import LOOK_MAX
from game.world.backends.layout import Box, Mark
from game.world.backends.palette import Look
from game.world.backends.raster import RGB, lerp_rgb, mul_rgb
from game.world.backends.stage import PLATE_RATE, Plate, Shine

#: Extra plate width the camera can pan over, as a share of the frame width.
PAN = 0.25
#: Rows at which the rooms' line widths are authored: a width of ``n`` is ``n`` pixels at
#: 540 rows and scales with the height painted.
WIDTH_ROWS = 540
#: A room is painted at least this many rows high and area-averaged down to the frame's size
#: (supersampling), so that lines and thin shapes keep their share of the picture at any size: the
#: error bank's 96 x 54 reference must look like a 960 x 540 frame reduced to 96 x 54.
MIN_PAINT_ROWS = 270

#: Wall, floor and trim colours per room (daylight, before the time-of-day grade).
ROOMS: dict[str, tuple[RGB, RGB, RGB]] = {
    "kitchen": ((196, 170, 132), (120, 84, 58), (232, 222, 200)),
    "lantern_room": ((60, 70, 86), (92, 86, 78), (176, 146, 84)),
    "watch_room": ((176, 160, 136), (104, 80, 60), (140, 110, 70)),
    "hut": ((150, 112, 78), (98, 72, 52), (120, 88, 60)),
    "glasshouse": ((150, 176, 160), (110, 96, 80), (214, 220, 212)),
}


def _c(c: RGB) -> tuple[int, int, int]:
    return (int(max(0, min(255, c[0]))), int(max(0, min(255, c[1]))), int(max(0, min(255, c[2]))))


class _Room:
    """Pillow drawing on the plate picture, with marks recorded in frame rows."""

    def __init__(self, look: Look, width: int, height: int, margin: int, pan: int,
                 names: frozenset[str] = frozenset()) -> None:
        self.look = look
        #: rain runs down the glass: the weather's, or the setting's "rain on the windows"
        self.rain = look.rain > 0 or "rain_on_glass" in names
        self.w, self.h, self.margin = width, height, margin
        self.full_w = width + pan
        self.image = Image.new("RGB", (self.full_w, height + 2 * margin))
        self.draw = ImageDraw.Draw(self.image)
        self.marks: list[Mark] = []
        self.shines: list[Shine] = []
        self.moon_drawn = False
        # Indoor light: warm lamplight, a little of the sky's grade through the windows.
        grade = look.sky.grade
        self.indoor: RGB = (0.62 + 0.38 * grade[0], 0.58 + 0.38 * grade[1], 0.52 + 0.4 * grade[2])

    def lit(self, c: RGB) -> tuple[int, int, int]:
        return _c(mul_rgb(c, self.indoor))

    def px(self, x: float, y: float) -> tuple[float, float]:
        """Plate pixels of ``(x, y)`` given as shares of the (full) width and of the frame height."""
        return (x * self.full_w, y * self.h + self.margin)

    def lw(self, width: float) -> int:
        """Pixels of a line ``width`` pixels wide at :data:`WIDTH_ROWS` rows (at least 1)."""
        return max(1, round(width * self.h / WIDTH_ROWS))

    def rect(self, x0: float, y0: float, x1: float, y1: float, fill: RGB, outline: RGB | None = None,
             width: int = 2, raw: bool = False) -> None:
        f = _c(fill) if raw else self.lit(fill)
        o = (_c(outline) if raw else self.lit(outline)) if outline else None
        self.draw.rectangle((*self.px(x0, y0), *self.px(x1, y1)), fill=f, outline=o, width=self.lw(width))

    def ellipse(self, x0: float, y0: float, x1: float, y1: float, fill: RGB, raw: bool = False) -> None:
        self.draw.ellipse((*self.px(x0, y0), *self.px(x1, y1)), fill=_c(fill) if raw else self.lit(fill))

    def poly(self, pts: list[tuple[float, float]], fill: RGB, raw: bool = False) -> None:
        self.draw.polygon([self.px(x, y) for x, y in pts], fill=_c(fill) if raw else self.lit(fill))

    def mark(self, name: str, x0: float, y0: float, x1: float, y1: float, kind: str = "prop") -> Box:
        a, b = self.px(x0, y0)
        c, d = self.px(x1, y1)
        box = (int(a), int(b) - self.margin, int(math.ceil(c)), int(math.ceil(d)) - self.margin)
        self.marks.append(Mark(name, kind, box, PLATE_RATE, 0))  # type: ignore[arg-type]
        return box

    def window(self, x0: float, y0: float, x1: float, y1: float, frame: RGB, panes: int = 2) -> None:
        """A window showing the scene's sky (gradient, moon or sun, stars, rain streaks)."""
        sky = self.look.sky
        ax, ay = self.px(x0, y0)
        bx, by = self.px(x1, y1)
        for k in range(int(by - ay)):
            t = k / max(1.0, by - ay)
            c = lerp_rgb(sky.top, sky.horizon, t)
            self.draw.line((ax, ay + k, bx, ay + k), fill=_c(c))
        if sky.stars > 0.3:
            gen = np.random.default_rng(int(ax + ay))
            for _ in range(int(30 * (x1 - x0) * 10)):
                sx, sy = gen.uniform(ax, bx), gen.uniform(ay, ay + 0.6 * (by - ay))
                col, row, star = int(sx), int(sy), self.lw(1)
                self.draw.rectangle((col, row, col + star - 1, row + star - 1), fill=(236, 236, 250))
        if sky.light_r > 0 and not self.moon_drawn:
            self.moon_drawn = True
            r = 0.035 * self.h
            cx, cy = ax + 0.7 * (bx - ax), ay + 0.3 * (by - ay)
            self.draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=_c(lerp_rgb(sky.light, (255, 255, 255), 0.3)))
        if self.rain:  # streaks, and drops beading on the glass
            gen = np.random.default_rng(int(bx))
            streak = _c(lerp_rgb(sky.mid, (200, 210, 224), 0.35))
            for _ in range(int(30 * (x1 - x0) * 10)):
                sx, sy = gen.uniform(ax, bx), gen.uniform(ay, by)
                self.draw.line((sx, sy, sx - self.lw(2), sy + self.lw(8)), fill=streak, width=self.lw(1))
            drop = _c(lerp_rgb(sky.horizon, (214, 222, 234), 0.5))
            for _ in range(int(20 * (x1 - x0) * 10)):
                sx, sy = gen.uniform(ax, bx), gen.uniform(ay, by)
                r = gen.uniform(0.6, 1.6) * self.h / 270
                self.draw.ellipse((sx - r, sy - r, sx + r, sy + 1.4 * r), fill=drop)
            self.mark("rain_on_glass", x0, y0, x1, y1)
        w = self.lw(0.008 * WIDTH_ROWS)
        self.draw.rectangle((ax, ay, bx, by), outline=self.lit(frame), width=w)
        for k in range(1, panes):
            x = ax + (bx - ax) * k / panes
            self.draw.line((x, ay, x, by), fill=self.lit(frame), width=w)
        self.draw.line((ax, (ay + by) / 2, bx, (ay + by) / 2), fill=self.lit(frame), width=w)
        self.mark("window", x0, y0, x1, y1)

    def glazing(self, n: int, step: float, width: float, bottom: float, frame: RGB, panes: int) -> None:
        """A wall of glass: ``n`` windows from ``x = 0.02`` every ``step``, each ``width`` wide, from
        ``y = 0.04`` down to ``bottom`` (fractions of the room's height), marked as one ``window``
        across the whole glass instead of one a pane."""
        for k in range(n):
            x0 = 0.02 + k * step
            self.window(x0, 0.04, x0 + width, bottom, frame, panes=panes)
        self.marks = [m for m in self.marks if m.name != "window"]
        self.mark("window", 0.02, 0.04, 0.98, bottom)

    def walls(self, wall: RGB, floor: RGB, trim: RGB, floor_y: float = 0.74) -> None:
        fh = self.h + 2 * self.margin
        for k in range(fh):
            y = (k - self.margin) / self.h
            if y < floor_y:
                c = mul_rgb(wall, (0.82 + 0.18 * (y / floor_y),) * 3)
            else:
                c = mul_rgb(floor, (0.8 + 0.3 * (y - floor_y),) * 3)
            self.draw.line((0, k, self.full_w, k), fill=self.lit(c))
        self.rect(0.0, floor_y - 0.012, 1.0, floor_y + 0.004, trim)
        for k in range(12):  # floorboards
            x = k / 12
            self.draw.line((*self.px(x, floor_y), *self.px(x - 0.1, 1.1)), fill=self.lit(mul_rgb(floor, (0.7,) * 3)),
                           width=self.lw(1))

    def glow(self, cx: float, cy: float, r: float, colour: RGB, strength: float) -> None:
        """A soft pool of light painted onto the picture (lamplight falling on what is near)."""
        arr = np.asarray(self.image, dtype=np.float32)
        px, py = self.px(cx, cy)
        rr = r * self.h
        y0, y1 = int(max(0, py - rr)), int(min(arr.shape[0], py + rr))
        x0, x1 = int(max(0, px - rr)), int(min(arr.shape[1], px + rr))
        ys = (np.arange(y0, y1, dtype=np.float32) - py)[:, None]
        xs = (np.arange(x0, x1, dtype=np.float32) - px)[None, :]
        g = np.exp(-(xs**2 + ys**2) / (0.35 * rr * rr))[:, :, None] * strength
        col = np.array(colour, np.float32)
        region = arr[y0:y1, x0:x1]
        arr[y0:y1, x0:x1] = region + (col - region) * g * 0.6 + g * 30
        self.image = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
        self.draw = ImageDraw.Draw(self.image)


def _kitchen(r: _Room, names: frozenset[str]) -> None:
    wall, floor, trim = ROOMS["kitchen"]
    r.walls(wall, floor, trim)
    r.window(0.5, 0.16, 0.66, 0.46, trim)
    r.ellipse(0.6, 0.34, 0.625, 0.37, (236, 236, 236), raw=True)  # the gull at the window
    r.poly([(0.615, 0.35), (0.632, 0.355), (0.615, 0.36)], (240, 180, 60), raw=True)
    r.rect(0.68, 0.3, 0.86, 0.315, (120, 88, 60))  # shelf with the green bottle
    r.mark("shelf", 0.68, 0.3, 0.86, 0.315)  # what is set on it stands on its top (``put: shelf``)
    r.rect(0.74, 0.22, 0.755, 0.3, (60, 140, 90))
    r.rect(0.745, 0.205, 0.75, 0.22, (150, 110, 70))
    for x in (0.03, 0.07):  # oilskins on hooks
        r.poly([(x, 0.22), (x + 0.035, 0.22), (x + 0.045, 0.55), (x - 0.01, 0.55)], (214, 170, 50))
    # The black stove with its pipe, fire door and kettle.
    r.rect(0.12, 0.0, 0.145, 0.4, (40, 38, 40))
    r.rect(0.08, 0.4, 0.3, 0.78, (38, 36, 38), (20, 20, 22), 3)
    r.rect(0.08, 0.38, 0.3, 0.42, (60, 58, 60))
    r.rect(0.13, 0.56, 0.25, 0.7, (222, 110, 40), (20, 20, 22), 3)
    r.ellipse(0.18, 0.3, 0.26, 0.39, (150, 150, 156))  # kettle
    r.rect(0.255, 0.33, 0.28, 0.345, (150, 150, 156))
    r.glow(0.19, 0.63, 0.3, (255, 170, 90), 0.5)
    r.mark("stove", 0.08, 0.3, 0.3, 0.78)
    r.shines.append(Shine(r.marks[-1].box, 1.0, 0.12, flicker=True))
    # The table with a lamp, by the window.
    r.rect(0.4, 0.6, 0.78, 0.64, (140, 100, 66), (90, 62, 40), 2)
    for x in (0.42, 0.75):
        r.rect(x, 0.64, x + 0.02, 0.86, (110, 78, 52))
    r.rect(0.47, 0.53, 0.5, 0.6, (230, 230, 220))  # a mug
    r.mark("table", 0.4, 0.6, 0.78, 0.86)


def _lantern_room(r: _Room, names: frozenset[str]) -> None:
    wall, floor, trim = ROOMS["lantern_room"]
    r.walls(wall, floor, trim, floor_y=0.8)
    r.glazing(6, 0.165, 0.15, 0.62, trim, panes=1)  # all round, showing the night
    # The great lens: a beehive of glass prism rings in a brass cage round a bright lamp.
    cx = 0.5
    r.rect(cx - 0.1, 0.7, cx + 0.1, 0.84, trim, (90, 70, 40), 3)
    lit = ("beam" in names or r.look.time not in ("day", "golden")) and "unlit" not in names
    for k in range(9):
        y0 = 0.1 + k * 0.065
        half = 0.11 + 0.05 * math.sin(math.pi * (k + 0.5) / 9)
        glass = (92, 128, 138) if k % 2 else (124, 160, 166)
        prism = (236, 206, 132) if lit else (150, 170, 176)
        r.poly([(cx - half, y0), (cx + half, y0), (cx + half * 0.96, y0 + 0.06), (cx - half * 0.96, y0 + 0.06)],
               glass)
        r.poly([(cx - half * 0.5, y0 + 0.012), (cx + half * 0.5, y0 + 0.012), (cx + half * 0.46, y0 + 0.03),
                (cx - half * 0.46, y0 + 0.03)], prism, raw=lit)
        r.rect(cx - half, y0 + 0.056, cx + half, y0 + 0.065, trim)
    for dx in (-0.1, -0.035, 0.035, 0.1):  # the brass cage
        r.rect(cx + dx - 0.004, 0.1, cx + dx + 0.004, 0.69, trim)
    if lit:
        r.ellipse(cx - 0.035, 0.35, cx + 0.035, 0.43, (255, 248, 210), raw=True)
        r.glow(cx, 0.39, 0.22, (255, 236, 190), 0.3)
        r.mark("lit_lamp", cx - 0.035, 0.35, cx + 0.035, 0.43)
    box = r.mark("lens", cx - 0.16, 0.1, cx + 0.16, 0.84)
    r.shines.append(Shine(box, 48.0, 0.2, width=0.12))
    for x in (0.12, 0.86):  # brass clockwork
        r.ellipse(x - 0.03, 0.7, x + 0.03, 0.8, trim)


def _watch_room(r: _Room, names: frozenset[str]) -> None:
    wall, floor, trim = ROOMS["watch_room"]
    r.walls(wall, floor, trim)
    r.window(0.7, 0.14, 0.86, 0.44, trim)
    # The chart of the sound, pinned with flotsam.
    r.rect(0.08, 0.12, 0.4, 0.48, (226, 214, 180), (120, 96, 66), 3)
    r.poly([(0.12, 0.4), (0.2, 0.3), (0.26, 0.34), (0.35, 0.2), (0.37, 0.44)], (176, 196, 200))
    gen = np.random.default_rng(3)
    for _ in range(14):
        x, y = gen.uniform(0.1, 0.38), gen.uniform(0.14, 0.46)
        r.ellipse(x, y, x + 0.008, y + 0.014, (200, 60, 50))
    r.mark("chart", 0.08, 0.12, 0.4, 0.48)
    # The desk with the open logbook under a brass lamp.
    r.rect(0.44, 0.58, 0.7, 0.62, (120, 86, 56), (80, 56, 36), 2)
    for x in (0.46, 0.67):
        r.rect(x, 0.62, x + 0.02, 0.82, (96, 70, 46))
    r.poly([(0.5, 0.58), (0.57, 0.555), (0.64, 0.58), (0.57, 0.59)], (240, 234, 214))
    r.rect(0.6, 0.45, 0.61, 0.58, trim)
    r.poly([(0.57, 0.45), (0.64, 0.45), (0.62, 0.4), (0.59, 0.4)], trim)
    r.glow(0.605, 0.5, 0.25, (255, 220, 150), 0.55)
    r.mark("desk", 0.44, 0.4, 0.7, 0.82)
    r.rect(0.9, 0.0, 0.95, 0.74, (110, 86, 60))  # the ladder to the lantern
    for k in range(8):
        r.rect(0.9, 0.05 + k * 0.09, 0.95, 0.06 + k * 0.09, (140, 110, 76))


def _hut(r: _Room, names: frozenset[str]) -> None:
    """A small wooden room (a hut, a net shed, an inn): plank walls and rafters, a window and a
    table (a workbench), and, when the place names them, a hearth with its fire and nets hung up."""
    wall, floor, trim = ROOMS["hut"]
    r.walls(wall, floor, trim)
    for k in range(9):
        r.rect(0.0, k * 0.083, 1.0, k * 0.083 + 0.004, mul_rgb(wall, (0.7,) * 3))
    for x in (0.1, 0.4, 0.7):  # the rafters
        r.rect(x - 0.3, 0.0, x + 0.3, 0.035, mul_rgb(trim, (0.6,) * 3))
    r.window(0.62, 0.16, 0.8, 0.44, trim)
    r.rect(0.2, 0.6, 0.5, 0.64, (130, 94, 62), (80, 56, 36), 2)
    for x in (0.22, 0.47):
        r.rect(x, 0.64, x + 0.02, 0.84, (100, 72, 48))
    r.mark("table", 0.2, 0.6, 0.5, 0.84)
    if "campfire" in names:  # a stone hearth with its fire
        r.rect(0.53, 0.47, 0.67, 0.76, (96, 90, 86), (50, 46, 44), 3)
        r.rect(0.56, 0.58, 0.64, 0.74, (30, 24, 22))
        r.poly([(0.565, 0.74), (0.585, 0.62), (0.6, 0.69), (0.615, 0.6), (0.635, 0.74)], (240, 140, 50), raw=True)
        r.glow(0.6, 0.69, 0.3, (255, 160, 80), 0.5)
        r.mark("campfire", 0.53, 0.47, 0.67, 0.76)
        r.shines.append(Shine(r.marks[-1].box, 1.0, 0.12, flicker=True))
    if "nets" in names:  # nets hung from the rafters like grey weed
        net = mul_rgb(wall, (0.55, 0.58, 0.6))
        for x in (0.05, 0.28, 0.52):
            r.poly([(x, 0.03), (x + 0.1, 0.03), (x + 0.085, 0.36), (x + 0.05, 0.44), (x + 0.015, 0.34)], net)
            for k in range(5):
                y = 0.08 + k * 0.06
                r.rect(x + 0.01, y, x + 0.09, y + 0.004, mul_rgb(net, (0.7,) * 3))
        r.mark("nets", 0.05, 0.03, 0.62, 0.44)


def _glasshouse(r: _Room, names: frozenset[str]) -> None:
    wall, floor, trim = ROOMS["glasshouse"]
    r.walls(wall, floor, trim, floor_y=0.78)
    r.glazing(5, 0.196, 0.18, 0.7, trim, panes=3)
    gen = np.random.default_rng(5)
    for x in (0.08, 0.22, 0.78, 0.9):  # tomato vines on canes
        r.rect(x, 0.3, x + 0.006, 0.82, (120, 96, 60))
        for _ in range(10):
            lx, ly = x + gen.uniform(-0.04, 0.04), gen.uniform(0.3, 0.8)
            r.ellipse(lx, ly, lx + 0.03, ly + 0.04, (70, 130, 60))
        for _ in range(3):
            lx, ly = x + gen.uniform(-0.03, 0.03), gen.uniform(0.4, 0.75)
            r.ellipse(lx, ly, lx + 0.016, ly + 0.026, (210, 60, 40))
    r.rect(0.3, 0.7, 0.4, 0.84, (130, 90, 60), (80, 56, 36), 2)  # Vesper, in her tub
    r.rect(0.345, 0.45, 0.355, 0.7, (110, 86, 56))
    r.ellipse(0.28, 0.26, 0.42, 0.5, (80, 140, 70))
    for lx, ly in ((0.31, 0.38), (0.38, 0.33)):
        r.ellipse(lx, ly, lx + 0.016, ly + 0.028, (246, 220, 70))
    r.mark("plants", 0.04, 0.26, 0.94, 0.84)


PAINTERS = {"kitchen": _kitchen, "lantern_room": _lantern_room, "watch_room": _watch_room, "hut": _hut,
            "glasshouse": _glasshouse}


def build_room(name: str, look: Look, width: int, height: int, names: frozenset[str]) -> Plate:
    """Paint interior ``name`` for ``look`` at ``width`` x ``height`` (about 20-60 ms at 960x540).

    Below :data:`MIN_PAINT_ROWS` rows the room is painted at a whole multiple of the size and
    area-averaged down (Pillow's box filter), so a small frame shows what a large one reduced
    to its size would show.

    Raises:
        KeyError: ``name`` is not an interior of the vocabulary.
    """
    paint = PAINTERS[name]
    margin = int(math.ceil(LOOK_MAX * height * 0.5)) + 1
    pan = int(PAN * width)
    k = max(1, math.ceil(MIN_PAINT_ROWS / height))
    room = _Room(look, width * k, height * k, margin * k, pan * k, names)
    paint(room, names)
    picture = room.image
    if k > 1:
        picture = picture.resize((width + pan, height + 2 * margin), Image.Resampling.BOX)
    marks = [replace(m, box=_shrink(m.box, k)) for m in room.marks]
    marks.insert(0, Mark(name, "interior", (0, 0, width + pan, height), PLATE_RATE, 0))
    shines = tuple(replace(sh, box=_shrink(sh.box, k)) for sh in room.shines)
    image = np.ascontiguousarray(np.asarray(picture, dtype=np.uint8))
    return Plate(width, height, image, margin, pan, (), tuple(marks), shines)


def _shrink(box: Box, k: int) -> Box:
    """``box`` of a picture painted ``k`` times larger, in the frame's pixels (rounded outwards)."""
    x0, y0, x1, y1 = box
    return (x0 // k, y0 // k, -(-x1 // k), -(-y1 // k))

"""Landmarks: the big fixed things of an outdoor place, drawn once and painted into its layers.

Each function draws one landmark as a :class:`~game.world.backends.sprites.Sprite`
``height`` frame pixels tall, in colours taken from the scene's
:class:`~game.world.backends.palette.Look` (so dusk, night and rain grade them like
the land). :data:`PLACES` says where each stands: its x in world units (0..1 = the
first screen of the location), how tall it is as a share of the frame height, and
which layer it belongs to (``ground`` moves with the characters, ``far`` with the
distant hills). The backdrop stamps them into its layers, so they cost nothing per frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from game.world.backends.palette import Look
from game.world.backends.raster import RGB, lerp_rgb, mul_rgb
from game.world.backends.sprites import Pen, Sprite


@dataclass(frozen=True)
class Place:
    """Where a landmark stands: ``x`` (world units), ``size`` (share of the frame height),
    ``layer`` (``far`` or ``ground``), ``sink`` (how far below the crest its foot is, share
    of the height; ``ground`` layer only)."""

    x: float
    size: float
    layer: str = "ground"
    sink: float = 0.02


#: Where each landmark stands (chosen so that each is in the first screen, clear of the
#: characters the demo scenes place between x = 0.42 and 0.8).
PLACES: dict[str, Place] = {
    "oak": Place(0.2, 0.74, sink=0.05),  # its crown clear of the frame's top at the level look
    "ash_trees": Place(0.85, 0.6),
    "pines": Place(0.1, 0.55),
    "stump": Place(0.33, 0.1, sink=0.07),
    "bracken": Place(0.95, 0.13, sink=0.08),
    "reeds": Place(0.86, 0.2, sink=0.1),
    "stepping_stones": Place(0.28, 0.05, sink=0.075),
    "lighthouse": Place(0.7, 0.3, layer="far"),
    "causeway": Place(0.7, 0.36, layer="far"),
    "railing": Place(0.5, 0.3, sink=0.14),
    # on the water just behind the quay's edge, between the people the quay places at 0.3 and 0.7
    "cobles": Place(0.5, 0.14, sink=-0.012),
    "lobster_pots": Place(0.09, 0.16, sink=0.06),
    # seen from its foot the tower rises out of the top of the frame
    "tower_foot": Place(0.16, 1.25, sink=0.06),
}


def lamp_lit(look: Look, names: frozenset[str]) -> bool:
    """Whether a lighthouse lamp burns: at dusk and at night, unless the setting says it is
    unlit (``unlit`` in ``names``: "the lighthouse stands on its rock, unlit")."""
    return look.time in ("dusk", "night") and "unlit" not in names


def _grade(look: Look, c: RGB) -> RGB:
    """A daylight colour graded for the scene's time of day, half as strongly as the land (a
    landmark is nearer than the hills and must still read at night)."""
    g = look.sky.grade
    soft = (g[0] ** 0.5, g[1] ** 0.5, g[2] ** 0.5)
    return lerp_rgb(mul_rgb(c, soft), look.sky.horizon, look.sky.ambient)


def oak(height: int, look: Look, hollow: bool = False, leaf_bed: bool = False) -> Sprite:
    """A huge old oak: a broad trunk on spreading roots and a wide canopy; with ``hollow``, a
    dark opening at its foot; with ``leaf_bed``, dry brown leaves heaped inside it.

    Box: 1.0 x 1.0 heights; ``foot`` at the bottom centre, ``hold`` at the hollow's centre.
    """
    pen = Pen(height, 1.0, 1.0)
    bark = _grade(look, (104, 84, 64))
    bark_dark = _grade(look, (62, 48, 38))
    leaves = lerp_rgb(look.tree, _grade(look, (70, 110, 60)), 0.7)
    lit = lerp_rgb(leaves, look.rim, 0.25 * look.sky.rim)
    # every crown circle inside the box (top >= 0.015): a circle past its top edge was cut flat
    for cx, cy, r in ((0.5, 0.32, 0.26), (0.26, 0.39, 0.2), (0.74, 0.37, 0.21), (0.38, 0.22, 0.19),
                      (0.64, 0.21, 0.18), (0.5, 0.145, 0.13)):
        pen.circle(cx, cy, r, leaves)
    for cx, cy, r in ((0.56, 0.2, 0.1), (0.72, 0.3, 0.09), (0.36, 0.16, 0.08)):
        pen.circle(cx, cy, r, lit)
    pen.polygon(((0.38, 1.0), (0.42, 0.5), (0.36, 0.36), (0.46, 0.42), (0.5, 0.3), (0.55, 0.42),
                 (0.66, 0.34), (0.59, 0.5), (0.63, 1.0)), bark, bark_dark, 0.006)
    for x0, x1 in ((0.38, 0.22), (0.42, 0.3), (0.6, 0.8), (0.63, 0.72)):  # roots like arms
        pen.line(((x0, 0.86), ((x0 + x1) / 2, 0.95), (x1, 0.995)), bark, 0.035)
    pen.line(((0.47, 0.55), (0.45, 0.75)), bark_dark, 0.01)
    if hollow:
        pen.ellipse((0.43, 0.74, 0.58, 1.02), (16, 12, 12), bark_dark, 0.008)
        if leaf_bed:
            brown = _grade(look, (158, 102, 52))
            for k in range(9):
                x = 0.45 + 0.012 * k + 0.01 * math.sin(k * 2.3)
                pen.ellipse((x, 0.93 - 0.01 * (k % 3), x + 0.05, 0.985), lerp_rgb(brown, (120, 70, 30), (k % 3) / 3))
    return pen.finish(foot=(0.5, 1.0), hold=(0.505, 0.9), light=0.15)


#: The stand of ash trees: ``(x of the foot, height, lean)`` per tree, in the stand's height units.
ASH_STAND = ((0.26, 0.8, -0.03), (0.52, 1.0, 0.01), (0.76, 0.88, 0.03))


def ash_trees(height: int, look: Look) -> Sprite:
    """A stand of three tall ash trees: pale grey trunks that fork into upswept branches, each
    branch ending in loose sprays of leaf (many small clumps with sky between them, lit on the
    side of the light), not one ball of crown. Box 1.0 x 1.0 heights; ``foot`` under the middle tree."""
    pen = Pen(height, 1.0, 1.0)
    bark = _grade(look, (150, 146, 134))
    bark_dark = _grade(look, (96, 92, 84))
    leaf = lerp_rgb(look.tree, _grade(look, (92, 138, 62)), 0.65)
    under = mul_rgb(leaf, (0.72, 0.76, 0.74))
    lit = lerp_rgb(leaf, look.rim, 0.2 * look.sky.rim)
    sprays: list[tuple[float, float, float]] = []
    for k, (fx, th, lean) in enumerate(ASH_STAND):
        top = 1.0 - th
        fork = (fx + lean * 0.5, 1.0 - 0.45 * th)
        pen.line(((fx, 1.0), fork), bark, 0.026)
        pen.line(((fx + 0.008, 1.0), (fork[0] + 0.008, fork[1])), bark_dark, 0.008)
        for dx, dy in ((-0.13, 0.18), (-0.06, 0.04), (0.07, 0.02), (0.14, 0.2), (0.0, 0.0)):
            tip = (fork[0] + dx + lean, top + dy * th + 0.11)
            mid = ((fork[0] + tip[0]) / 2 + 0.02 * (1 if dx > 0 else -1), (fork[1] + tip[1]) / 2)
            pen.line((fork, mid, tip), bark, 0.012)
            sprays.append((tip[0], tip[1], 0.085 + 0.012 * k))
            sprays.append((mid[0] + 0.15 * dx, mid[1], 0.065))
    for j, (cx, cy, r) in enumerate(sprays):  # loose sprays of leaf: clumps with gaps, dark below, lit above
        for i in range(7):
            a = 2.399 * (i + 3 * j)
            d = r * (0.35 + 0.65 * ((i * 37 + j * 11) % 10) / 10)
            x, y = cx + d * math.cos(a), cy + 0.8 * d * math.sin(a)
            s = r * (0.32 + 0.18 * ((i + j) % 3) / 2)
            pen.ellipse((x - s, y - 0.7 * s, x + s, y + 0.7 * s), under if y > cy else leaf)
        pen.ellipse((cx - 0.4 * r, cy - 0.55 * r, cx + 0.2 * r, cy - 0.15 * r), lit)
    return pen.finish(foot=(0.52, 1.0), hold=(0.52, 0.5), light=0.15)


def pine(height: int, look: Look) -> Sprite:
    """A tall dark pine: a tiered cone on a short trunk. Box 0.45 x 1.0 heights."""
    pen = Pen(height, 0.45, 1.0)
    dark = mul_rgb(look.tree, (0.85, 0.9, 0.9))
    pen.line(((0.225, 1.0), (0.225, 0.8)), _grade(look, (90, 70, 56)), 0.03)
    for k in range(4):
        top, base = 0.02 + 0.2 * k, 0.3 + 0.18 * k
        half = 0.08 + 0.045 * k
        pen.polygon(((0.225, top), (0.225 + half, base), (0.225 - half, base)), dark)
    return pen.finish(foot=(0.225, 1.0), hold=(0.225, 0.5), light=0.2)


def stump(height: int, look: Look) -> Sprite:
    """An old mossy stump with a pale cut top. Box 1.6 x 1.0 heights."""
    pen = Pen(height, 1.6, 1.0)
    bark = _grade(look, (112, 88, 66))
    moss = _grade(look, (96, 132, 70))
    pen.polygon(((0.3, 1.0), (0.42, 0.2), (1.18, 0.2), (1.3, 1.0)), bark, _grade(look, (60, 46, 36)), 0.02)
    pen.ellipse((0.4, 0.06, 1.2, 0.36), _grade(look, (196, 168, 126)), _grade(look, (120, 92, 66)), 0.02)
    pen.ellipse((0.62, 0.14, 0.98, 0.28), _grade(look, (170, 140, 104)))
    pen.ellipse((0.25, 0.7, 0.75, 1.0), moss)
    return pen.finish(foot=(0.8, 1.0), hold=(0.8, 0.2), light=0.1)


def bracken(height: int, look: Look) -> Sprite:
    """A fringe of bracken fronds. Box 2.4 x 1.0 heights."""
    pen = Pen(height, 2.4, 1.0)
    green = lerp_rgb(look.grass, _grade(look, (110, 130, 60)), 0.5)
    dark = mul_rgb(green, (0.72, 0.72, 0.72))
    for k in range(11):
        x = 0.12 + 0.2 * k
        tip = (x + 0.18 * math.sin(k * 1.7), 0.05 + 0.12 * (k % 3))
        col = dark if k % 2 else green
        pen.line(((x, 1.0), ((x + tip[0]) / 2, 0.5), tip), col, 0.035)
        for s in (0.35, 0.55, 0.75):
            px, py = x + (tip[0] - x) * s, 1.0 + (tip[1] - 1.0) * s
            pen.line(((px, py), (px - 0.1, py + 0.06)), col, 0.02)
            pen.line(((px, py), (px + 0.1, py + 0.04)), col, 0.02)
    return pen.finish(foot=(1.2, 1.0), hold=(1.2, 0.5))


def reeds(height: int, look: Look) -> Sprite:
    """Tall reeds with brown heads at the water's edge. Box 1.2 x 1.0 heights."""
    pen = Pen(height, 1.2, 1.0)
    stem = lerp_rgb(look.grass, _grade(look, (150, 160, 90)), 0.5)
    head = _grade(look, (110, 76, 50))
    for k in range(14):
        x = 0.06 + 0.08 * k
        top = 0.08 + 0.2 * ((k * 7) % 5) / 5
        bend = 0.05 * math.sin(k * 1.3)
        pen.line(((x, 1.0), (x + bend, top)), stem, 0.016)
        if k % 3 == 0:
            pen.ellipse((x + bend - 0.018, top, x + bend + 0.018, top + 0.14), head)
    return pen.finish(foot=(0.6, 1.0), hold=(0.6, 0.5))


def stepping_stones(height: int, look: Look) -> Sprite:
    """A row of flat pale stones across the water. Box 6 x 1.0 heights."""
    pen = Pen(height, 6.0, 1.0)
    stone = _grade(look, (182, 178, 166))
    shade = _grade(look, (110, 108, 104))
    for k, x in enumerate((0.2, 1.3, 2.5, 3.6, 4.8)):
        w = 0.8 + 0.15 * (k % 2)
        pen.ellipse((x, 0.15, x + w, 1.0), shade)
        pen.ellipse((x + 0.04, 0.05, x + w - 0.04, 0.75), stone)
    return pen.finish(foot=(3.0, 1.0), hold=(3.0, 0.5))


def lighthouse(height: int, look: Look, lit: bool) -> Sprite:
    """A white lighthouse on a black rock island, its lamp lit at dusk and night. Box 0.9 x 1.0."""
    pen = Pen(height, 0.9, 1.0)
    rock = _grade(look, (44, 44, 50))
    white = _grade(look, (240, 238, 228))
    shade = _grade(look, (190, 192, 196))
    pen.polygon(((0.0, 1.0), (0.16, 0.8), (0.7, 0.78), (0.9, 1.0)), rock)
    pen.polygon(((0.36, 0.82), (0.4, 0.26), (0.54, 0.26), (0.58, 0.82)), white, shade, 0.01)
    pen.polygon(((0.48, 0.82), (0.5, 0.26), (0.54, 0.26), (0.58, 0.82)), shade)
    pen.polygon(((0.35, 0.26), (0.59, 0.26), (0.59, 0.23), (0.35, 0.23)), _grade(look, (40, 40, 44)))
    lamp = (255, 236, 160) if lit else _grade(look, (160, 180, 190))
    if lit:
        pen.circle(0.47, 0.17, 0.16, (255, 240, 190), alpha=60)
    pen.polygon(((0.4, 0.23), (0.54, 0.23), (0.54, 0.12), (0.4, 0.12)), lamp)
    pen.polygon(((0.38, 0.12), (0.56, 0.12), (0.47, 0.04)), _grade(look, (150, 40, 36)))
    return pen.finish(foot=(0.45, 1.0), hold=(0.47, 0.17))


def causeway(height: int, look: Look) -> Sprite:
    """A causeway of flat black stones and weed lying on the water, from the shore in front
    out to the island at the horizon, seen in perspective: a strip that narrows to its far
    end, its rows of stones closer together the farther they are. Box 3.0 x 1.0; its foot is
    its far end (it hangs below the horizon it starts on)."""
    pen = Pen(height, 3.0, 1.0)
    rock = _grade(look, (26, 28, 34))
    wet = _grade(look, (52, 56, 66))
    shine = lerp_rgb(wet, look.sky.horizon, 0.25)
    wrack = _grade(look, (78, 74, 42))
    far, near_l, near_r = (2.2, 0.0), (0.25, 1.0), (1.95, 1.0)

    def edge(t: float) -> tuple[float, float, float]:
        """Left x, right x and y of the strip at depth ``t`` (0 far, 1 near)."""
        y = t
        return (far[0] + (near_l[0] - far[0]) * t, far[0] + (near_r[0] - far[0]) * t, y)

    pen.polygon((far, near_r, near_l), rock)
    rows = 14
    for k in range(1, rows + 1):
        t0, t1 = ((k - 1) / rows) ** 1.6, (k / rows) ** 1.6
        l0, r0, y0 = edge(t0)
        l1, r1, y1 = edge(t1)
        n = 2 + k // 3
        for j in range(n):
            a, b = j / n, (j + 0.86) / n
            top_l, top_r = l0 + (r0 - l0) * a, l0 + (r0 - l0) * b
            bot_l, bot_r = l1 + (r1 - l1) * a, l1 + (r1 - l1) * b
            fill = wet if (k + j) % 3 else rock
            pen.polygon(((top_l, y0 + 0.1 * (y1 - y0)), (top_r, y0 + 0.1 * (y1 - y0)), (bot_r, y1 - 0.12 * (y1 - y0)),
                         (bot_l, y1 - 0.12 * (y1 - y0))), fill)
            if (k * 7 + j * 3) % 5 == 0:  # weed over a stone's near edge
                pen.polygon(((bot_l, y1 - 0.3 * (y1 - y0)), (bot_r, y1 - 0.3 * (y1 - y0)), (bot_r, y1),
                             (bot_l, y1)), wrack)
            elif (k + j) % 4 == 1:  # the wet top of a stone catches the sky
                pen.polygon(((top_l, y0 + 0.12 * (y1 - y0)), (top_r, y0 + 0.12 * (y1 - y0)),
                             (top_r, y0 + 0.3 * (y1 - y0)), (top_l, y0 + 0.3 * (y1 - y0))), shine)
    return pen.finish(foot=far, hold=far)


def railing(height: int, look: Look, width_units: float) -> Sprite:
    """An iron gallery railing ``width_units`` heights wide: posts, two rails, a deck edge."""
    pen = Pen(height, width_units, 1.0)
    iron = _grade(look, (36, 40, 46))
    hi = lerp_rgb(iron, look.rim, 0.3)
    pen.polygon(((0.0, 0.82), (width_units, 0.82), (width_units, 1.0), (0.0, 1.0)), iron)
    for y in (0.05, 0.4):
        pen.line(((0.0, y), (width_units, y)), hi, 0.05)
    k = 0.0
    while k <= width_units:
        pen.line(((k, 0.0), (k, 0.84)), iron, 0.04)
        k += 0.35
    return pen.finish(foot=(width_units / 2, 1.0), hold=(width_units / 2, 0.4))


def cobles(height: int, look: Look) -> Sprite:
    """Two cobles (small clinker-built fishing boats) moored side by side, each with a stubby mast
    and its rope to the quay. Box 3.2 x 1.0 heights; ``foot`` at the waterline's centre."""
    pen = Pen(height, 3.2, 1.0)
    for x0, hull, stripe in ((0.05, (58, 92, 120), (230, 226, 210)), (1.65, (156, 54, 44), (236, 200, 90))):
        body, dark = _grade(look, hull), _grade(look, (30, 30, 34))
        pen.polygon(((x0, 0.55), (x0 + 1.5, 0.5), (x0 + 1.3, 0.95), (x0 + 0.25, 0.95)), body, dark, 0.02)
        pen.line(((x0 + 0.06, 0.62), (x0 + 1.44, 0.58)), _grade(look, stripe), 0.05)
        pen.line(((x0 + 0.6, 0.55), (x0 + 0.62, 0.02)), _grade(look, (96, 76, 58)), 0.04)  # the mast
        pen.line(((x0 + 0.62, 0.1), (x0 + 1.2, 0.5)), _grade(look, (70, 64, 56)), 0.015)  # a stay
        pen.line(((x0 + 1.45, 0.55), (x0 + 1.6, 1.0)), _grade(look, (150, 132, 100)), 0.015)  # its rope
    return pen.finish(foot=(1.6, 0.95), hold=(1.6, 0.6), light=0.12)


def lobster_pots(height: int, look: Look) -> Sprite:
    """Lobster pots stacked in a wet tower of three rows: netted domes on flat wooden bases, with a
    coil of rope at the foot. Box 1.4 x 1.0 heights."""
    pen = Pen(height, 1.4, 1.0)
    net = _grade(look, (104, 96, 78))
    wood = _grade(look, (128, 94, 62))
    cord = _grade(look, (186, 170, 132))
    rows = ((0.05, 0.68, 3), (0.23, 0.36, 2), (0.42, 0.04, 1))
    for left, top, n in rows:
        for k in range(n):
            x = left + k * 0.42
            pen.ellipse((x, top, x + 0.4, top + 0.3 * 2), net, wood, 0.015)
            for j in range(1, 4):  # the netting's hoops
                pen.line(((x + 0.1 * j, top + 0.03), (x + 0.1 * j, top + 0.3)), cord, 0.01)
            pen.polygon(((x - 0.01, top + 0.26), (x + 0.41, top + 0.26), (x + 0.41, top + 0.32),
                         (x - 0.01, top + 0.32)), wood)
    pen.ellipse((1.05, 0.88, 1.38, 1.0), cord)
    return pen.finish(foot=(0.7, 1.0), hold=(0.7, 0.5), light=0.1)


def tower_foot(height: int, look: Look, lit: bool) -> Sprite:
    """The foot of a white lighthouse as you stand at it: a broad white tower on black rock
    rising out of the frame, its shut iron door up three stone steps, a wet high-water line;
    a stair window shows the lamp's glow once it is ``lit``.
    Box 0.46 x 1.0 heights (at 1.25 frame heights, about 0.3 of the width)."""
    pen = Pen(height, 0.46, 1.0)
    rock = _grade(look, (44, 44, 50))
    white = _grade(look, (236, 234, 224))
    shade = _grade(look, (178, 180, 186))
    iron = _grade(look, (40, 44, 50))
    pen.polygon(((0.06, 0.0), (0.4, 0.0), (0.42, 0.94), (0.04, 0.94)), white, shade, 0.004)
    pen.polygon(((0.3, 0.0), (0.4, 0.0), (0.42, 0.94), (0.33, 0.94)), shade)  # the round side in shadow
    pen.polygon(((0.04, 0.86), (0.42, 0.86), (0.42, 0.94), (0.04, 0.94)), _grade(look, (120, 128, 110)))
    pen.polygon(((0.0, 0.93), (0.46, 0.93), (0.46, 1.0), (0.0, 1.0)), rock)
    for k in range(3):  # the steps up to the door
        y = 0.9 - 0.02 * k
        pen.polygon(((0.14 + 0.01 * k, y - 0.02), (0.3 - 0.01 * k, y - 0.02), (0.3 - 0.01 * k, y),
                     (0.14 + 0.01 * k, y)), _grade(look, (150, 148, 140)))
    pen.polygon(((0.16, 0.84), (0.16, 0.66), (0.22, 0.62), (0.28, 0.66), (0.28, 0.84)), iron,
                _grade(look, (20, 22, 26)), 0.004)  # the shut iron door
    for y in (0.7, 0.78):
        pen.line(((0.165, y), (0.275, y)), _grade(look, (70, 74, 80)), 0.006)
    pen.circle(0.255, 0.75, 0.006, _grade(look, (160, 140, 90)))
    pen.polygon(((0.2, 0.36), (0.24, 0.36), (0.24, 0.46), (0.2, 0.46)),
                (255, 226, 150) if lit else iron)  # a stair window
    return pen.finish(foot=(0.23, 1.0), hold=(0.22, 0.75), light=0.12)


#: Landmark name -> how to draw it (``height`` px, look, the setting's other names).
DRAW: dict[str, Callable[[int, Look, frozenset[str]], Sprite]] = {
    "oak": lambda h, lk, names: oak(h, lk, "hollow" in names, "leaf_bed" in names),
    "ash_trees": lambda h, lk, names: ash_trees(h, lk),
    "pines": lambda h, lk, names: pine(h, lk),
    "stump": lambda h, lk, names: stump(h, lk),
    "bracken": lambda h, lk, names: bracken(h, lk),
    "reeds": lambda h, lk, names: reeds(h, lk),
    "stepping_stones": lambda h, lk, names: stepping_stones(h, lk),
    "lighthouse": lambda h, lk, names: lighthouse(h, lk, lamp_lit(lk, names)),
    "cobles": lambda h, lk, names: cobles(h, lk),
    "lobster_pots": lambda h, lk, names: lobster_pots(h, lk),
    "tower_foot": lambda h, lk, names: tower_foot(h, lk, "beam" in names),
    "causeway": lambda h, lk, names: causeway(h, lk),
    "railing": lambda h, lk, names: railing(h, lk, 3.4),
}

"""Draw Eve's reference image (``characters/eve.png``) with Pillow: original art, no inputs.

Eve Solvang, keeper of the Skerrow light, at dusk: copper braid over her left
shoulder, navy oilskin over a cream jumper, red scarf, brass tide-watch; behind her
the white lighthouse with its red lantern room on a dark tidal island, the lamp lit.
Drawn at 2x and downsampled for smooth edges. Deterministic (seeded).

Run: ``python characters/make_eve_art.py [out.png]``.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

from PIL import Image, ImageChops, ImageDraw, ImageFilter

W, H = 512, 768
S = 2  # supersampling factor


def _lerp(a: tuple[int, int, int], b: tuple[int, int, int], t: float) -> tuple[int, int, int]:
    return (round(a[0] + (b[0] - a[0]) * t), round(a[1] + (b[1] - a[1]) * t), round(a[2] + (b[2] - a[2]) * t))


def draw(out: Path) -> Path:
    """Draw the picture into ``out`` (PNG, 512x768 RGB)."""
    rng = random.Random(7)
    w, h = W * S, H * S
    img = Image.new("RGB", (w, h))
    d = ImageDraw.Draw(img)

    # dusk sky: indigo to rose to amber at the horizon
    horizon = int(h * 0.55)
    stops = [(0.0, (22, 26, 58)), (0.55, (86, 62, 104)), (0.85, (214, 120, 96)), (1.0, (246, 184, 110))]
    for row in range(horizon):
        t = row / horizon
        for (t0, c0), (t1, c1) in zip(stops, stops[1:], strict=False):
            if t0 <= t <= t1:
                d.line([(0, row), (w, row)], fill=_lerp(c0, c1, (t - t0) / (t1 - t0)))
                break
    for _ in range(90):  # first stars
        x, y = float(rng.randrange(w)), float(rng.randrange(int(horizon * 0.45)))
        r = rng.choice((1, 1, 2, 3))
        d.ellipse([x - r, y - r, x + r, y + r], fill=(236, 232, 255))

    # sea
    for row in range(horizon, h):
        t = (row - horizon) / (h - horizon)
        d.line([(0, row), (w, row)], fill=_lerp((70, 66, 98), (16, 28, 44), t))
    for _ in range(260):  # glints of the afterglow on the water
        y = float(rng.randrange(horizon + 4, h))
        x = rng.gauss(w * 0.62, w * 0.12)
        ln = rng.randrange(8, 40)
        d.line([(x, y), (x + ln, y)], fill=(200, 140, 120) if y < horizon + 120 else (90, 96, 130), width=2)

    # the island and the Spine (causeway) running off to the left
    d.polygon([(w * 0.30, horizon + 40), (w * 0.45, horizon - 30), (w * 0.80, horizon - 44), (w * 1.02, horizon + 10),
               (w * 1.02, horizon + 90), (w * 0.30, horizon + 90)], fill=(30, 30, 38))
    for i in range(16):
        x = w * 0.30 - i * 34
        y = horizon + 70 + i * 9
        d.ellipse([x - 24, y - 9, x + 24, y + 9], fill=(24, 26, 32))

    # lighthouse tower with red bands, gallery and lantern room
    cx, base, top = w * 0.66, horizon - 30, int(h * 0.13)
    bw, tw = 70 * S, 46 * S
    d.polygon([(cx - bw / 2, base), (cx - tw / 2, top + 60 * S), (cx + tw / 2, top + 60 * S), (cx + bw / 2, base)],
              fill=(236, 232, 222))
    d.polygon([(cx - tw / 2 - 14 * S, top + 54 * S), (cx + tw / 2 + 14 * S, top + 54 * S),
               (cx + tw / 2 + 14 * S, top + 62 * S), (cx - tw / 2 - 14 * S, top + 62 * S)], fill=(40, 40, 46))
    d.rectangle([cx - tw / 2 + 4 * S, top + 18 * S, cx + tw / 2 - 4 * S, top + 54 * S], fill=(255, 238, 170))
    for i in range(4):
        x = cx - tw / 2 + 4 * S + i * (tw - 8 * S) / 3
        d.line([(x, top + 18 * S), (x, top + 54 * S)], fill=(60, 40, 40), width=3 * S)
    d.polygon([(cx - tw / 2, top + 18 * S), (cx, top - 4 * S), (cx + tw / 2, top + 18 * S)], fill=(168, 36, 40))
    d.ellipse([cx - 5 * S, top - 12 * S, cx + 5 * S, top - 2 * S], fill=(168, 36, 40))
    for k in range(3):  # windows
        y = top + 90 * S + k * 70 * S
        d.rectangle([cx - 5 * S, y, cx + 5 * S, y + 14 * S], fill=(70, 60, 60))

    # the lamp's beams, added as a blurred glow layer
    glow = Image.new("RGB", (w, h))
    g = ImageDraw.Draw(glow)
    ly = top + 36 * S
    for ang, spread in ((math.radians(194), 0.07), (math.radians(-14), 0.05)):
        far = w * 1.3
        p1 = (cx + far * math.cos(ang - spread), ly + far * math.sin(ang - spread))
        p2 = (cx + far * math.cos(ang + spread), ly + far * math.sin(ang + spread))
        g.polygon([(cx, ly), p1, p2], fill=(170, 150, 90))
    g.ellipse([cx - 60 * S, ly - 60 * S, cx + 60 * S, ly + 60 * S], fill=(255, 230, 150))
    glow = glow.filter(ImageFilter.GaussianBlur(14 * S))
    img = ImageChops.add(img, glow)  # additive light
    d = ImageDraw.Draw(img)

    # Eve, from the waist up, in the foreground (left of centre)
    ex, ey = w * 0.36, h * 0.50  # centre of her face
    skin, skin_dark = (238, 196, 168), (206, 156, 128)
    copper, copper_dark = (184, 84, 38), (132, 56, 26)
    navy, navy_dark = (34, 46, 78), (22, 30, 54)
    # coat (shoulders and body)
    d.polygon([(ex - 190 * S, h), (ex - 170 * S, ey + 150 * S), (ex - 70 * S, ey + 95 * S), (ex + 70 * S, ey + 95 * S),
               (ex + 170 * S, ey + 150 * S), (ex + 190 * S, h)], fill=navy)
    d.line([(ex - 110 * S, ey + 130 * S), (ex - 130 * S, h)], fill=navy_dark, width=4 * S)
    d.line([(ex + 110 * S, ey + 130 * S), (ex + 130 * S, h)], fill=navy_dark, width=4 * S)
    # cream jumper in the open coat
    d.polygon([(ex - 55 * S, ey + 100 * S), (ex + 55 * S, ey + 100 * S), (ex + 34 * S, h), (ex - 34 * S, h)],
              fill=(236, 226, 200))
    for k in range(10):  # cable knit
        y = ey + 150 * S + k * 26 * S
        d.arc([ex - 14 * S, y, ex + 14 * S, y + 26 * S], 200, 340, fill=(206, 194, 166), width=3 * S)
    # neck
    d.rectangle([ex - 30 * S, ey + 40 * S, ex + 30 * S, ey + 105 * S], fill=skin_dark)
    # red scarf
    d.ellipse([ex - 80 * S, ey + 78 * S, ex + 80 * S, ey + 128 * S], fill=(186, 32, 40))
    d.polygon([(ex - 20 * S, ey + 110 * S), (ex - 60 * S, ey + 112 * S), (ex - 54 * S, ey + 250 * S),
               (ex - 22 * S, ey + 246 * S)], fill=(168, 28, 36))
    for k in range(5):
        y = ey + 140 * S + k * 22 * S
        d.line([(ex - 24 * S, y), (ex - 56 * S, y + 2 * S)], fill=(140, 20, 28), width=2 * S)
    # brass tide-watch on its cord
    d.line([(ex + 40 * S, ey + 108 * S), (ex + 18 * S, ey + 190 * S)], fill=(70, 46, 30), width=3 * S)
    d.line([(ex - 10 * S, ey + 112 * S), (ex + 18 * S, ey + 190 * S)], fill=(70, 46, 30), width=3 * S)
    d.ellipse([ex - 2 * S, ey + 186 * S, ex + 38 * S, ey + 226 * S], fill=(196, 156, 60), outline=(120, 90, 30),
              width=3 * S)
    d.ellipse([ex + 6 * S, ey + 194 * S, ex + 30 * S, ey + 218 * S], fill=(240, 232, 200))
    d.line([(ex + 18 * S, ey + 206 * S), (ex + 24 * S, ey + 198 * S)], fill=(40, 30, 20), width=2 * S)
    # hair behind the head
    d.ellipse([ex - 82 * S, ey - 100 * S, ex + 82 * S, ey + 70 * S], fill=copper_dark)
    # face
    d.ellipse([ex - 62 * S, ey - 80 * S, ex + 62 * S, ey + 78 * S], fill=skin)
    d.ellipse([ex - 56 * S, ey + 10 * S, ex + 56 * S, ey + 78 * S], fill=skin)
    # hair on top, parted, falling to the left shoulder as a braid
    d.chord([ex - 70 * S, ey - 98 * S, ex + 70 * S, ey + 10 * S], 180, 360, fill=copper)
    d.polygon([(ex - 70 * S, ey - 44 * S), (ex - 20 * S, ey - 70 * S), (ex - 60 * S, ey + 20 * S)], fill=copper)
    d.polygon([(ex + 70 * S, ey - 44 * S), (ex + 10 * S, ey - 74 * S), (ex + 64 * S, ey + 6 * S)], fill=copper)
    d.line([(ex - 4 * S, ey - 96 * S), (ex + 6 * S, ey - 60 * S)], fill=copper_dark, width=3 * S)
    bx, by = ex + 80 * S, ey + 44 * S
    for k in range(9):  # the braid over her left shoulder, bead by bead
        x, y = bx + 6 * S * math.sin(k * 0.5) + k * 3 * S, by + k * 30 * S
        d.ellipse([x - 22 * S, y - 18 * S, x + 22 * S, y + 18 * S], fill=copper if k % 2 else copper_dark,
                  outline=(110, 46, 20), width=2 * S)
    d.ellipse([bx + 4 * S + 27 * S, by + 262 * S, bx + 20 * S + 27 * S, by + 278 * S], fill=(40, 40, 60))
    # eyes (grey-green), brows, the scar through the right brow
    for side in (-1, 1):
        x = ex + side * 26 * S
        d.ellipse([x - 13 * S, ey - 10 * S, x + 13 * S, ey + 6 * S], fill=(250, 248, 240))
        d.ellipse([x - 7 * S, ey - 9 * S, x + 7 * S, ey + 5 * S], fill=(104, 128, 110))
        d.ellipse([x - 3 * S, ey - 5 * S, x + 3 * S, ey + 1 * S], fill=(20, 24, 22))
        d.ellipse([x + 1 * S, ey - 7 * S, x + 4 * S, ey - 4 * S], fill=(255, 255, 255))
        d.line([(x - 16 * S, ey - 22 * S), (x + 14 * S, ey - 24 * S + side * 2 * S)], fill=copper_dark, width=4 * S)
    d.line([(ex - 30 * S, ey - 32 * S), (ex - 24 * S, ey - 16 * S)], fill=(246, 228, 214), width=3 * S)  # scar
    # nose, mouth (a dry half-smile), freckles
    d.line([(ex + 2 * S, ey - 2 * S), (ex - 4 * S, ey + 26 * S), (ex + 6 * S, ey + 28 * S)], fill=skin_dark,
           width=3 * S)
    d.arc([ex - 22 * S, ey + 30 * S, ex + 26 * S, ey + 52 * S], 15, 160, fill=(170, 80, 80), width=4 * S)
    for _ in range(40):
        fx, fy = ex + rng.uniform(-48, 48) * S, ey + rng.uniform(2, 26) * S
        if abs(fx - ex) > 10 * S:
            d.ellipse([fx - 2 * S, fy - 2 * S, fx + 2 * S, fy + 2 * S], fill=(196, 128, 92))
    # cheeks warmed by the wind
    blush = Image.new("L", (w, h))
    ImageDraw.Draw(blush).ellipse([ex - 52 * S, ey + 14 * S, ex - 24 * S, ey + 34 * S], fill=90)
    ImageDraw.Draw(blush).ellipse([ex + 24 * S, ey + 14 * S, ex + 52 * S, ey + 34 * S], fill=90)
    blush = blush.filter(ImageFilter.GaussianBlur(6 * S))
    img.paste(Image.new("RGB", (w, h), (226, 120, 110)), (0, 0), blush)

    out.parent.mkdir(parents=True, exist_ok=True)
    img.resize((W, H), Image.Resampling.LANCZOS).save(out, format="PNG", optimize=True)
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("eve.png")
    print(draw(target))

"""Draw the art of "The Zero Mark" with Pillow, deterministically.

Run from anywhere::

    python stories/zero_mark/assets/make_art.py

It (re)writes, next to this script:

- ``creature.png`` (128x128 RGBA): the small horned creature with the pale ring on its brow;
- ``creature_sheet.png`` (768x256 RGBA): the same creature with each face of ``FACES`` (first row)
  and leaping or lying down (``BODIES``, second row), a sprite sheet (``cast.creature.sheet`` in the
  story), so its face and body follow its reactions and the scene;
- ``kite.png``, ``leaf.png``, ``stone.png`` (96x96 RGBA): the three things the player carries;
- ``anchor_clearing.png`` (320x180 RGB): a painterly dusk clearing, the world's style anchor.

Every shape is drawn at 4x and scaled down (anti-aliasing); every random choice comes
from ``random.Random`` with a fixed seed, so the same Pillow gives the same pixels.
Original work, made for this story.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from PIL import Image, ImageChops, ImageDraw, ImageFilter

HERE = Path(__file__).resolve().parent
SS = 4  # supersampling factor

Color = tuple[int, int, int]
RGBA = tuple[int, int, int, int]


def _mix(a: Color, b: Color, t: float) -> Color:
    return (round(a[0] + (b[0] - a[0]) * t), round(a[1] + (b[1] - a[1]) * t),
            round(a[2] + (b[2] - a[2]) * t))


def _canvas(size: int) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    im = Image.new("RGBA", (size * SS, size * SS), (0, 0, 0, 0))
    return im, ImageDraw.Draw(im)


def _finish(im: Image.Image, size: int, name: str) -> None:
    out = im.resize((size, size), Image.Resampling.LANCZOS)
    out.save(HERE / name, optimize=True)


def _ellipse(d: ImageDraw.ImageDraw, cx: float, cy: float, rx: float, ry: float,
             fill: RGBA | int | None, outline: RGBA | None = None, width: int = 0) -> None:
    box = [(cx - rx) * SS, (cy - ry) * SS, (cx + rx) * SS, (cy + ry) * SS]
    d.ellipse(box, fill=fill, outline=outline, width=width * SS if outline else 0)


def _poly(d: ImageDraw.ImageDraw, pts: list[tuple[float, float]], fill: RGBA) -> None:
    d.polygon([(x * SS, y * SS) for x, y in pts], fill=fill)


def _line(d: ImageDraw.ImageDraw, pts: list[tuple[float, float]], fill: RGBA, width: float) -> None:
    d.line([(x * SS, y * SS) for x, y in pts], fill=fill, width=max(1, round(width * SS)),
           joint="curve")


def _rotated_ellipse(cx: float, cy: float, rx: float, ry: float, angle: float,
                     n: int = 48) -> list[tuple[float, float]]:
    ca, sa = math.cos(angle), math.sin(angle)
    pts = []
    for i in range(n):
        t = 2 * math.pi * i / n
        x, y = rx * math.cos(t), ry * math.sin(t)
        pts.append((cx + x * ca - y * sa, cy + x * sa + y * ca))
    return pts


# -- the creature --------------------------------------------------------------------------
FUR: RGBA = (176, 154, 128, 255)
FUR_DARK: RGBA = (128, 108, 90, 255)
FUR_LIGHT: RGBA = (214, 198, 174, 255)
INK: RGBA = (52, 38, 40, 255)
HORN: RGBA = (232, 218, 188, 255)
RING: RGBA = (246, 240, 226, 255)


#: The creature's faces in ``creature_sheet.png``, one 128x128 cell each, left to right (the
#: expressions the painter draws; ``creature.png`` is the ``neutral`` cell on its own).
FACES = ("neutral", "smile", "frown", "surprised", "sad", "sleeping")


def creature() -> None:
    """``creature.png`` (neutral) and ``creature_sheet.png`` (a cell per face of :data:`FACES`, and
    below them a cell per pose of :data:`BODIES`)."""
    size = 128
    _creature("neutral").resize((size, size), Image.Resampling.LANCZOS).save(HERE / "creature.png", optimize=True)
    sheet = Image.new("RGBA", (size * len(FACES), 2 * size), (0, 0, 0, 0))
    for k, face in enumerate(FACES):
        sheet.paste(_creature(face).resize((size, size), Image.Resampling.LANCZOS), (k * size, 0))
    for k, (_, body, face) in enumerate(BODIES):
        sheet.paste(_creature_pose(face, body).resize((size, size), Image.Resampling.LANCZOS), (k * size, size))
    sheet.save(HERE / "creature_sheet.png", optimize=True)


def _creature(face: str) -> Image.Image:
    """A small horned creature sitting, facing us, ears drooping, a pale ring on its brow, with
    ``face`` (one of :data:`FACES`), drawn at ``SS`` times 128 px."""
    size = 128
    im, d = _canvas(size)
    # tail tuft, behind the body
    _poly(d, _rotated_ellipse(96, 96, 15, 7, -0.7), INK)
    _poly(d, _rotated_ellipse(96, 96, 13, 5.5, -0.7), FUR_DARK)
    # body: outline then fur, a lighter chest
    _ellipse(d, 64, 92, 31, 28, INK)
    _ellipse(d, 64, 92, 29, 26, FUR)
    _ellipse(d, 64, 97, 16, 18, FUR_LIGHT)
    # front legs and hooves
    for x in (53, 75):
        _poly(d, [(x - 6, 100), (x + 6, 100), (x + 5, 118), (x - 5, 118)], INK)
        _poly(d, [(x - 4.6, 100), (x + 4.6, 100), (x + 3.8, 116), (x - 3.8, 116)], FUR)
        _ellipse(d, x, 118, 6, 3.6, INK)
        _ellipse(d, x, 117.6, 4.6, 2.4, (86, 66, 58, 255))
    _head(d, face)
    # a little shade under the head on the body
    shade = Image.new("RGBA", im.size, (0, 0, 0, 0))
    sd = ImageDraw.Draw(shade)
    _ellipse(sd, 64, 76, 20, 4, (70, 50, 40, 70))
    shade = shade.filter(ImageFilter.GaussianBlur(3 * SS))
    body_mask = Image.new("L", im.size, 0)
    _ellipse(ImageDraw.Draw(body_mask), 64, 92, 29, 26, 255)
    shade.putalpha(ImageChops.multiply(shade.getchannel("A"), body_mask))
    return Image.alpha_composite(im, shade)


def _head(d: ImageDraw.ImageDraw, face: str) -> None:
    """The creature's head (ears, horns, face with ``face``, the ring) centred at (64, 52)."""
    # ears: long, drooping out to the sides
    for side in (-1, 1):
        ang = side * 0.42
        cx = 64 + side * 36
        _poly(d, _rotated_ellipse(cx, 54, 20, 8.5, ang), INK)
        _poly(d, _rotated_ellipse(cx, 54, 18, 6.8, ang), FUR)
        _poly(d, _rotated_ellipse(cx + side * 1.5, 54.5, 12, 3.4, ang), (222, 168, 160, 255))
    # horns: short, ridged, curving outwards
    for side in (-1, 1):
        base = 64 + side * 11
        pts = [(base - 4, 34), (base + 4, 34), (base + side * 8.2, 13.5), (base + side * 6.3, 13)]
        _line(d, [*pts, pts[0]], INK, 2.2)
        _poly(d, pts, HORN)
        for k in range(3):  # ridges
            y = 29 - k * 5.5
            t = (34 - y) / 21
            x = base + side * 7.2 * t
            hw = 4 * (1 - t) + 1 * t - 0.9  # the horn's half width there, less a margin
            _line(d, [(x - hw, y), (x + hw, y - 0.6)], (176, 156, 120, 255), 1.0)
    # head
    _ellipse(d, 64, 52, 28, 25, INK)
    _ellipse(d, 64, 52, 26, 23, FUR)
    _ellipse(d, 64, 63, 14, 10, FUR_LIGHT)  # muzzle
    # the mark: a pale ring on the brow
    _ellipse(d, 64, 40, 6.4, 6.4, None, RING, 2)
    # eyes: big, dark, wet (closed when it sleeps, wide when surprised)
    for x in (53, 75):
        if face == "sleeping":
            _line(d, [(x - 6, 53), (x - 3, 55.5), (x + 3, 55.5), (x + 6, 53)], INK, 1.6)
            continue
        grow = 1.18 if face == "surprised" else 1.0
        _ellipse(d, x, 53, 6.8 * grow, 7.8 * grow, INK)
        _ellipse(d, x, 53, 5.8 * grow, 6.8 * grow, (24, 18, 24, 255))
        _ellipse(d, x - 1.8, 50.2, 2.0, 2.2, (255, 255, 255, 255))
        _ellipse(d, x + 2.0, 56, 0.9, 0.9, (220, 220, 235, 255))
        if face == "smile":  # the lower lids pushed up
            _ellipse(d, x, 61.5, 6.6, 2.6, FUR)
        inner = 1 if x < 64 else -1  # brows: down at the middle in a frown, up in sorrow
        if face == "frown":
            _line(d, [(x - inner * 7, 42), (x + inner * 5, 45.5)], INK, 1.6)
        elif face == "sad":
            _line(d, [(x - inner * 7, 45.5), (x + inner * 5, 42)], INK, 1.6)
    # nose and mouth
    _poly(d, [(60.5, 61), (67.5, 61), (64, 65)], INK)
    _line(d, [(64, 65), (64, 67.5)], INK, 1)
    if face == "smile":
        _line(d, [(58, 66.5), (61, 69.5), (64, 67.5), (67, 69.5), (70, 66.5)], INK, 1.2)
    elif face == "surprised":
        _ellipse(d, 64, 70, 2.6, 3.0, INK)
    elif face in ("frown", "sad"):
        _line(d, [(59.5, 70), (64, 67.8), (68.5, 70)], INK, 1.1)
    else:
        _line(d, [(60, 68), (64, 67.5), (68, 68)], INK, 1)


#: Body poses beyond sitting in ``creature_sheet.png``'s second row: ``(cell name, body, face)``,
#: left to right (the painter picks ``<body>.<face>``, else ``<body>``; see the story's ``sheet``).
BODIES = (("leap", "leap", "smile"), ("lie", "lie", "neutral"), ("lie.sleeping", "lie", "sleeping"),
          ("lie.smile", "lie", "smile"))


def _creature_pose(face: str, body: str) -> Image.Image:
    """The creature ``body`` = ``leap`` (all four hooves off the ground, stretched out after
    something above and ahead, ears streaming) or ``lie`` (lying down, legs tucked, chin low),
    with ``face``, drawn at ``SS`` times 128 px like :func:`_creature`."""
    size = 128
    im, d = _canvas(size)
    if body == "leap":
        _poly(d, _rotated_ellipse(22, 104, 15, 6, 0.5), INK)  # the tail streaming behind
        _poly(d, _rotated_ellipse(22, 104, 13, 4.5, 0.5), FUR_DARK)
        for (x0, y0), (x1, y1) in (((44, 100), (24, 118)), ((52, 102), (34, 121))):  # hind legs pushing off
            _line(d, [(x0, y0), (x1, y1)], INK, 12)
            _line(d, [(x0, y0), (x1, y1)], FUR, 8.5)
            _ellipse(d, x1, y1, 5.5, 3.4, INK)
        for (x0, y0), (x1, y1) in (((80, 84), (104, 74)), ((84, 90), (108, 84))):  # forelegs reaching out
            _line(d, [(x0, y0), (x1, y1)], INK, 12)
            _line(d, [(x0, y0), (x1, y1)], FUR, 8.5)
            _ellipse(d, x1, y1, 3.6, 5.5, INK)
        _poly(d, _rotated_ellipse(62, 92, 34, 20, -0.38), INK)
        _poly(d, _rotated_ellipse(62, 92, 32, 18, -0.38), FUR)
        _poly(d, _rotated_ellipse(66, 99, 18, 9, -0.38), FUR_LIGHT)
        head, hx, hy = Image.new("RGBA", im.size, (0, 0, 0, 0)), 8, 0
    else:  # lie
        _poly(d, _rotated_ellipse(104, 110, 13, 6, 0.3), INK)  # the tail curled round
        _poly(d, _rotated_ellipse(104, 110, 11, 4.5, 0.3), FUR_DARK)
        _ellipse(d, 64, 106, 42, 16, INK)
        _ellipse(d, 64, 106, 40, 14, FUR)
        for x in (46, 82):  # forelegs tucked in front, hooves showing
            _ellipse(d, x, 118, 8, 4.5, INK)
            _ellipse(d, x, 117.6, 6.4, 3.2, (86, 66, 58, 255))
        head, hx, hy = Image.new("RGBA", im.size, (0, 0, 0, 0)), 0, 30
    _head(ImageDraw.Draw(head), face)
    im.alpha_composite(head, (hx * SS, hy * SS))
    return im


# -- the kite ------------------------------------------------------------------------------
def kite() -> None:
    """A red diamond kite on crossed spars, its ribbon tail curling down to the left."""
    size = 96
    im, d = _canvas(size)
    top, right, bottom, left = (62, 4), (86, 26), (62, 60), (38, 26)
    # ribbon tail with bows, drawn first so the kite sits on top
    tail = [(62 - 40 * (t / 40) + 7 * math.sin(t / 40 * 2 * math.pi * 1.2), 60 + 32 * (t / 40))
            for t in range(41)]
    _line(d, tail, (60, 40, 40, 255), 1.4)
    for i, t in enumerate((11, 23, 35)):
        x, y = tail[t]
        col: RGBA = [(240, 200, 70, 255), (90, 150, 220, 255), (240, 200, 70, 255)][i]
        _poly(d, [(x, y), (x - 5, y - 3.5), (x - 5, y + 3.5)], col)
        _poly(d, [(x, y), (x + 5, y - 3.5), (x + 5, y + 3.5)], col)
        _ellipse(d, x, y, 1.3, 1.3, (60, 40, 40, 255))
    # outline, then two-tone panels
    c = (62, 26)
    _poly(d, [(top[0], top[1] - 1.8), (right[0] + 1.8, right[1]), (bottom[0], bottom[1] + 1.8),
              (left[0] - 1.8, left[1])], (70, 20, 24, 255))
    _poly(d, [top, right, c], (222, 52, 46, 255))
    _poly(d, [right, bottom, c], (176, 30, 34, 255))
    _poly(d, [bottom, left, c], (222, 52, 46, 255))
    _poly(d, [left, top, c], (176, 30, 34, 255))
    # spars
    _line(d, [top, bottom], (120, 84, 52, 255), 1.6)
    _line(d, [left, right], (120, 84, 52, 255), 1.6)
    # a soft sheen on the upper panels
    sheen = Image.new("RGBA", im.size, (0, 0, 0, 0))
    sd = ImageDraw.Draw(sheen)
    _poly(sd, [(top[0], top[1] + 4), (top[0] + 16, 22), (top[0] + 4, 22)], (255, 255, 255, 60))
    im = Image.alpha_composite(im, sheen.filter(ImageFilter.GaussianBlur(2 * SS)))
    _finish(im, size, "kite.png")


# -- the leaf ------------------------------------------------------------------------------
def leaf() -> None:
    """A broad green leaf with pale veins and a short stem, tilted."""
    size = 96
    im, d = _canvas(size)
    ang = -0.75  # tilt, radians
    ca, sa = math.cos(ang), math.sin(ang)
    cx, cy = 50, 44

    def rot(u: float, v: float) -> tuple[float, float]:
        return cx + u * ca - v * sa, cy + u * sa + v * ca

    # outline: a pointed ovate shape along the u axis, tip at +u
    half = []
    for i in range(41):
        t = i / 40
        u = -34 + 70 * t
        w = 22 * math.sin(math.pi * t) ** 0.8 * (1 - 0.35 * t)
        half.append((u, w))
    shape = [rot(u, w) for u, w in half] + [rot(u, -w) for u, w in reversed(half)]
    outline = [rot(u * 1.03 + 0.5, w * 1.08 + (1.2 if w >= 0 else -1.2)) for u, w in half]
    outline += [rot(u * 1.03 + 0.5, -(w * 1.08 + 1.2)) for u, w in reversed(half)]
    _line(d, [rot(-34, 0), rot(-48, 3)], (70, 90, 40, 255), 2.4)  # stem
    _poly(d, outline, (34, 66, 30, 255))
    _poly(d, shape, (78, 150, 62, 255))
    # darker half for a folded look
    _poly(d, [rot(u, w) for u, w in half] + [rot(36, 0), rot(-34, 0)], (62, 128, 52, 255))
    # veins
    _line(d, [rot(-34, 0), rot(34, 0)], (196, 228, 150, 255), 1.3)
    for k in range(6):
        u0 = -24 + k * 10
        for s in (-1, 1):
            _line(d, [rot(u0, 0), rot(u0 + 9, s * 13 * (1 - k / 8))], (170, 210, 130, 255), 0.8)
    _finish(im, size, "leaf.png")


# -- the stone -----------------------------------------------------------------------------
def stone() -> None:
    """A smooth grey river stone with a round hole worn through it (the hole is transparent)."""
    size = 96
    S = size * SS
    # a radial-ish shading gradient, then masked to the stone's shape
    grad = Image.new("RGBA", (S, S))
    px = grad.load()
    assert px is not None
    lx, ly = 0.36 * S, 0.34 * S  # light from the upper left
    for y in range(0, S, 2):
        for x in range(0, S, 2):
            dist = math.hypot(x - lx, y - ly) / S
            t = min(1.0, dist * 1.6)
            col = _mix((196, 198, 196), (84, 88, 92), t)
            for yy in (y, y + 1):
                for xx in (x, x + 1):
                    px[xx, yy] = (*col, 255)
    mask = Image.new("L", (S, S), 0)
    md = ImageDraw.Draw(mask)
    md.polygon([(x * SS, y * SS) for x, y in _rotated_ellipse(48, 52, 38, 28, -0.18, 96)], fill=255)
    # the hole
    md.ellipse([(56 - 8.5) * SS, (46 - 7.5) * SS, (56 + 8.5) * SS, (46 + 7.5) * SS], fill=0)
    mask = mask.filter(ImageFilter.GaussianBlur(0.6 * SS))
    im = Image.new("RGBA", (S, S), (0, 0, 0, 0))
    im.paste(grad, (0, 0), mask)
    d = ImageDraw.Draw(im)
    # the hole's inner wall (dark on the lit side, pale rim on the far side)
    _ellipse(d, 56, 46, 9.6, 8.6, None, (60, 62, 66, 255), 1)
    d.arc([(56 - 10.4) * SS, (46 - 9.4) * SS, (56 + 10.4) * SS, (46 + 9.4) * SS], 20, 160,
          fill=(220, 222, 220, 255), width=int(1.2 * SS))
    # speckles, fixed seed
    rng = random.Random(7)
    for _ in range(70):
        a = rng.uniform(0, 2 * math.pi)
        r = math.sqrt(rng.random())
        x, y = 48 + 34 * r * math.cos(a), 52 + 24 * r * math.sin(a)
        if math.hypot(x - 56, y - 46) < 12:
            continue
        g = rng.randint(70, 170)
        _ellipse(d, x, y, 0.5, 0.5, (g, g, g + 4, 200))
    # a highlight
    hl = Image.new("RGBA", (S, S), (0, 0, 0, 0))
    _poly(ImageDraw.Draw(hl), _rotated_ellipse(32, 36, 10, 4.5, -0.5), (255, 255, 255, 120))
    hl = hl.filter(ImageFilter.GaussianBlur(2.5 * SS))
    hl.putalpha(ImageChops.multiply(hl.getchannel("A"), mask))
    im = Image.alpha_composite(im, hl)
    # a soft contact shadow under it
    shadow = Image.new("RGBA", (S, S), (0, 0, 0, 0))
    _ellipse(ImageDraw.Draw(shadow), 50, 78, 32, 5, (20, 20, 30, 90))
    shadow = shadow.filter(ImageFilter.GaussianBlur(3 * SS))
    im = Image.alpha_composite(shadow, im)
    _finish(im, size, "stone.png")


# -- the world anchor ----------------------------------------------------------------------
def anchor_clearing() -> None:
    """A painterly dusk clearing: violet sky to amber horizon, ash trees, blue grass, a stump."""
    w, h = 320, 180
    W, H = w * SS // 2, h * SS // 2  # 2x is plenty under the brushwork
    k = W / w
    rng = random.Random(20240601)
    im = Image.new("RGB", (W, H))
    d = ImageDraw.Draw(im)
    horizon = 0.58 * H
    sky = [(0.0, (34, 36, 84)), (0.45, (112, 80, 126)), (0.8, (214, 122, 112)), (1.0, (246, 176, 96))]
    for y in range(H):  # below the horizon too: the hills and grass cover it
        t = min(1.0, y / horizon)
        for (t0, c0), (t1, c1) in zip(sky, sky[1:], strict=False):
            if t0 <= t <= t1:
                d.line([(0, y), (W, y)], fill=_mix(c0, c1, (t - t0) / (t1 - t0)))
                break
    # the low sun's glow
    glow = Image.new("RGB", (W, H), (0, 0, 0))
    _g = ImageDraw.Draw(glow)
    _g.ellipse([W * 0.28 - 60 * k, horizon - 40 * k, W * 0.28 + 60 * k, horizon + 40 * k],
               fill=(120, 70, 20))
    im = ImageChops.add(im, glow.filter(ImageFilter.GaussianBlur(24 * k)))
    d = ImageDraw.Draw(im)
    # far hills
    for layer, (col, base, amp) in enumerate([((92, 70, 118), 0.60, 16), ((64, 54, 98), 0.66, 12)]):
        pts = [(0.0, float(H))]
        phase = rng.uniform(0, 6)
        for x in range(0, W + 8, 8):
            y = base * H - amp * k * (0.6 * math.sin(x / W * 5 + phase) + 0.4 * math.sin(x / W * 13 + layer))
            pts.append((float(x), y))
        pts.append((float(W), float(H)))
        d.polygon(pts, fill=col)
    # the clearing floor: blue grass, darker toward us
    for y in range(int(0.64 * H), H):
        t = max(0.0, (y - 0.64 * H) / (0.36 * H))
        d.line([(0, y), (W, y)], fill=_mix((72, 88, 132), (22, 30, 58), t ** 0.8))
    # ash trees framing the clearing, crowns made of many dabs
    def tree(x: float, top: float, spread: float, dark: Color) -> None:
        d.line([(x, H * 0.7), (x + rng.uniform(-4, 4) * k, top + spread * 0.5)], fill=dark,
               width=max(2, int(4 * k)))
        for _ in range(140):
            a = rng.uniform(0, 2 * math.pi)
            r = spread * math.sqrt(rng.random())
            cx, cy = x + r * math.cos(a), top + spread * 0.7 + r * math.sin(a) * 0.8
            rr = rng.uniform(3, 8) * k
            d.ellipse([cx - rr, cy - rr, cx + rr, cy + rr],
                      fill=_mix(dark, (60, 50, 90), rng.random() * 0.35))
    for x, top, spread in [(0.04, 0.02, 44), (0.16, 0.10, 36), (0.90, 0.0, 50), (0.78, 0.14, 30),
                           (0.99, 0.2, 30)]:
        tree(x * W, top * H, spread * k, (26, 24, 46))
    # the first star
    sx, sy = 0.62 * W, 0.12 * H
    d.ellipse([sx - 1.6 * k, sy - 1.6 * k, sx + 1.6 * k, sy + 1.6 * k], fill=(255, 246, 214))
    for dx, dy in ((1, 0), (0, 1)):
        d.line([(sx - dx * 5 * k, sy - dy * 5 * k), (sx + dx * 5 * k, sy + dy * 5 * k)],
               fill=(236, 220, 200), width=1)
    # the old stump, lit on its left by the last light
    stx, sty = 0.63 * W, 0.78 * H
    d.polygon([(stx - 13 * k, sty), (stx + 13 * k, sty), (stx + 11 * k, sty - 22 * k),
               (stx - 11 * k, sty - 22 * k)], fill=(58, 44, 48))
    d.polygon([(stx - 13 * k, sty), (stx - 4 * k, sty), (stx - 3 * k, sty - 22 * k),
               (stx - 11 * k, sty - 22 * k)], fill=(104, 76, 72))
    d.ellipse([stx - 11 * k, sty - 26 * k, stx + 11 * k, sty - 18 * k], fill=(70, 92, 66))
    d.ellipse([stx - 20 * k, sty - 3 * k, stx + 20 * k, sty + 5 * k], fill=(24, 28, 52))
    # bracken along the edges: fans of short strokes
    def bracken(x: float, y: float, size: float) -> None:
        for _ in range(9):
            a = rng.uniform(-2.6, -0.5)
            ln = size * rng.uniform(0.6, 1.0)
            ex, ey = x + ln * math.cos(a), y + ln * math.sin(a)
            col = _mix((30, 46, 52), (88, 96, 70), rng.random() * 0.6)
            d.line([(x, y), (ex, ey)], fill=col, width=max(1, int(1.4 * k)))
            for j in range(1, 7):
                px_, py_ = x + (ex - x) * j / 7, y + (ey - y) * j / 7
                leaf_len = size * 0.18 * (1 - j / 8)
                for s in (-1, 1):
                    d.line([(px_, py_), (px_ + s * leaf_len * math.sin(a), py_ - s * leaf_len * math.cos(a))],
                           fill=col, width=1)
    for _ in range(26):
        side = rng.random()
        x = (rng.uniform(0, 0.3) if side < 0.5 else rng.uniform(0.72, 1.0)) * W
        y = rng.uniform(0.66, 0.96) * H
        bracken(x, y, rng.uniform(14, 26) * k)
    # painterly pass: short strokes sampling the image underneath, jittered
    src = im.copy()
    spx = src.load()
    assert spx is not None
    for _ in range(9000):
        x, y = rng.uniform(0, W - 1), rng.uniform(0, H - 1)
        r, g, b = spx[int(x), int(y)]
        j = rng.randint(-10, 10)
        col = (max(0, min(255, r + j)), max(0, min(255, g + j)), max(0, min(255, b + j + 4)))
        a = rng.uniform(-0.4, 0.4) if y < horizon else rng.uniform(-1.9, -1.2)
        ln = rng.uniform(2, 5) * k
        d.line([(x, y), (x + ln * math.cos(a), y + ln * math.sin(a))], fill=col, width=max(1, int(1.2 * k)))
    # warm rim light on the grass near the horizon
    rim = Image.new("RGB", (W, H), (0, 0, 0))
    ImageDraw.Draw(rim).rectangle([0, 0.63 * H, W, 0.68 * H], fill=(50, 26, 10))
    im = ImageChops.add(im, rim.filter(ImageFilter.GaussianBlur(6 * k)))
    im = im.filter(ImageFilter.GaussianBlur(0.5 * k)).resize((w, h), Image.Resampling.LANCZOS)
    im.save(HERE / "anchor_clearing.png", optimize=True)


def main() -> None:
    creature()
    kite()
    leaf()
    stone()
    anchor_clearing()
    for name in ("creature.png", "creature_sheet.png", "kite.png", "leaf.png", "stone.png", "anchor_clearing.png"):
        with Image.open(HERE / name) as im:
            print(f"{name}: {im.size[0]}x{im.size[1]} {im.mode}, {(HERE / name).stat().st_size} bytes")


if __name__ == "__main__":
    main()

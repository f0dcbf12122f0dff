"""Line charts drawn with Pillow (no plotting library needed): drift over a session, bench curves.

Coordinates are data units; the chart picks its ranges from the data (y from 0),
draws axes with ticks, a legend, optional horizontal reference lines and point
markers, and an optional footnote (the bench's "simulated" label).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

RGBc = tuple[int, int, int]
PALETTE: tuple[RGBc, ...] = ((31, 119, 180), (214, 39, 40), (44, 160, 44), (148, 103, 189), (255, 127, 14),
                             (140, 86, 75), (227, 119, 194), (127, 127, 127))


@dataclass
class Series:
    """One line: ``label``, x and y values (same length), colour, and whether it is dashed."""

    label: str
    xs: Sequence[float]
    ys: Sequence[float]
    colour: RGBc = (31, 119, 180)
    dashed: bool = False


@dataclass
class Chart:
    """A line chart.

    Attributes:
        title, xlabel, ylabel: texts.
        series: the lines.
        hlines: ``(y, label, colour)`` horizontal reference lines (thresholds).
        markers: ``(x, y, colour)`` points (alarms, re-anchors).
        footnote: a line of small text under the chart.
        size: ``(width, height)`` in pixels.
    """

    title: str
    xlabel: str
    ylabel: str
    series: list[Series] = field(default_factory=list)
    hlines: list[tuple[float, str, RGBc]] = field(default_factory=list)
    markers: list[tuple[float, float, RGBc]] = field(default_factory=list)
    footnote: str = ""
    size: tuple[int, int] = (960, 480)


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError):  # Pillow without FreeType
        return ImageFont.load_default()


def _nice_step(span: float, ticks: int = 6) -> float:
    raw = span / max(1, ticks)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 10 or v == int(v) else f"{v:.2f}".rstrip("0").rstrip(".")


def draw_chart(chart: Chart, path: str | Path) -> Path:
    """Render ``chart`` to a PNG at ``path`` and return the path."""
    w, h = chart.size
    img = Image.new("RGB", (w, h), (255, 255, 255))
    d = ImageDraw.Draw(img)
    f_small, f_text, f_title = _font(12), _font(14), _font(17)
    left, right, top, bottom = 70, 20, 56, 70 if chart.footnote else 55
    xs = [x for s in chart.series for x in s.xs] + [m[0] for m in chart.markers]
    ys = [y for s in chart.series for y in s.ys if math.isfinite(y)] + [y for y, _, _ in chart.hlines]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if x1 <= x0:
        x1 = x0 + 1.0
    y1 = max(ys) * 1.08 if ys and max(ys) > 0 else 1.0
    y0 = 0.0

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (w - left - right)

    def py(y: float) -> float:
        return h - bottom - (y - y0) / (y1 - y0) * (h - top - bottom)

    d.text((left, 8), chart.title, fill=(0, 0, 0), font=f_title)
    ystep = _nice_step(y1 - y0)
    v = 0.0
    while v <= y1 + 1e-9:
        d.line([(left, py(v)), (w - right, py(v))], fill=(232, 232, 232))
        d.text((left - 8, py(v)), _fmt(v), fill=(60, 60, 60), font=f_small, anchor="rm")
        v += ystep
    xstep = _nice_step(x1 - x0)
    v = math.ceil(x0 / xstep) * xstep
    while v <= x1 + 1e-9:
        d.line([(px(v), h - bottom), (px(v), h - bottom + 4)], fill=(60, 60, 60))
        d.text((px(v), h - bottom + 6), _fmt(v), fill=(60, 60, 60), font=f_small, anchor="mt")
        v += xstep
    d.line([(left, top), (left, h - bottom), (w - right, h - bottom)], fill=(0, 0, 0))
    d.text(((left + w - right) / 2, h - bottom + 22), chart.xlabel, fill=(0, 0, 0), font=f_text, anchor="mt")
    d.text((8, top - 24), chart.ylabel, fill=(0, 0, 0), font=f_text)
    for y, label, colour in chart.hlines:
        for xa in range(left, w - right, 10):
            d.line([(xa, py(y)), (min(xa + 5, w - right), py(y))], fill=colour)
        d.text((w - right - 4, py(y) - 2), label, fill=colour, font=f_small, anchor="rb")
    for s in chart.series:
        pts = [(px(x), py(y)) for x, y in zip(s.xs, s.ys, strict=False) if math.isfinite(y)]
        if s.dashed:
            for i in range(0, len(pts) - 1, 2):
                d.line([pts[i], pts[i + 1]], fill=s.colour, width=2)
        elif len(pts) > 1:
            d.line(pts, fill=s.colour, width=2)
    for x, y, colour in chart.markers:
        cx, cy = px(x), py(y)
        d.ellipse([cx - 3, cy - 3, cx + 3, cy + 3], outline=colour, width=2)
    ly = top
    for s in chart.series:
        d.line([(w - right - 210, ly + 7), (w - right - 185, ly + 7)], fill=s.colour, width=3)
        d.text((w - right - 180, ly), s.label, fill=(0, 0, 0), font=f_small)
        ly += 16
    if chart.footnote:
        d.text((left, h - 20), chart.footnote, fill=(150, 20, 20), font=f_small)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    img.save(out, format="PNG")
    return out

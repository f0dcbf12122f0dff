"""Small numpy raster helpers: array types, alpha blits, smooth noise, colour maths.

Images are ``(H, W, 3)`` arrays, RGB; ``uint8`` for finished pixels, ``float32`` in
0..255 while painting. Alpha is ``(H, W)``: ``uint8`` 0..255 or ``float32`` 0..1.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

U8 = npt.NDArray[np.uint8]
F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]
RGB = tuple[float, float, float]


def lerp_rgb(a: RGB, b: RGB, t: float) -> RGB:
    """Mix two colours: ``a`` at ``t = 0``, ``b`` at ``t = 1``."""
    return (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t)


def mul_rgb(a: RGB, m: RGB) -> RGB:
    """Channel-wise product of a colour and a multiplier."""
    return (a[0] * m[0], a[1] * m[1], a[2] * m[2])


def luma(c: RGB) -> float:
    """Rec. 601 luma of a colour, 0..255."""
    return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]


def desaturate(c: RGB, t: float) -> RGB:
    """Move a colour ``t`` of the way to the grey of its own luma."""
    y = luma(c)
    return lerp_rgb(c, (y, y, y), t)


def smoothstep(e0: float, e1: float, x: F32 | float) -> F32:
    """Hermite step from 0 at ``e0`` to 1 at ``e1``, elementwise, as float32."""
    t = np.clip((np.asarray(x, dtype=np.float32) - e0) / (e1 - e0), 0.0, 1.0)
    return np.asarray(t * t * (3.0 - 2.0 * t), dtype=np.float32)


def value_noise(
    rows: int, cols: int, cells_y: int, cells_x: int, gen: np.random.Generator
) -> F32:
    """Smooth value noise in ``[-1, 1]``, shape ``(rows, cols)``, periodic across columns.

    ``cells_y`` x ``cells_x`` random lattice values are interpolated with a
    smoothstep; the last column joins the first, so layers can wrap around.
    """
    cells_y = max(1, cells_y)
    cells_x = max(1, cells_x)
    grid = gen.uniform(-1.0, 1.0, (cells_y + 1, cells_x)).astype(np.float32)
    ys = np.arange(rows, dtype=np.float32) * (cells_y / max(1, rows))
    xs = np.arange(cols, dtype=np.float32) * (cells_x / max(1, cols))
    y0 = np.floor(ys).astype(np.int64)
    x0 = np.floor(xs).astype(np.int64)
    ty = smoothstep(0.0, 1.0, ys - y0)[:, None]
    tx = smoothstep(0.0, 1.0, xs - x0)[None, :]
    y1 = np.minimum(y0 + 1, cells_y)
    x0 %= cells_x
    x1 = (x0 + 1) % cells_x
    top = grid[y0][:, x0] * (1.0 - tx) + grid[y0][:, x1] * tx
    bottom = grid[y1][:, x0] * (1.0 - tx) + grid[y1][:, x1] * tx
    return np.asarray(top * (1.0 - ty) + bottom * ty, dtype=np.float32)


def to_u8(img: F32, gen: np.random.Generator | None = None) -> U8:
    """Round a float image in 0..255 to ``uint8``, dithered by ``gen`` when given (no banding)."""
    if gen is not None:
        img = img + gen.uniform(-0.5, 0.5, img.shape).astype(np.float32)
    out: U8 = np.clip(img + 0.5, 0.0, 255.0).astype(np.uint8)
    return out


def blit(dst: U8, rgb: U8, alpha: U8, x0: int, y0: int, opacity: int = 255) -> bool:
    """Alpha-blend a sprite onto ``dst`` in place; returns whether any pixel landed.

    Args:
        dst: ``(H, W, 3)`` uint8 frame.
        rgb: ``(h, w, 3)`` uint8 sprite colours.
        alpha: ``(h, w)`` uint8 sprite coverage.
        x0, y0: where the sprite's top-left corner lands, in frame pixels (may be off-frame).
        opacity: extra opacity 0..255 applied to the whole sprite.
    """
    height, width = dst.shape[:2]
    h, w = alpha.shape
    fx0, fy0 = max(0, x0), max(0, y0)
    fx1, fy1 = min(width, x0 + w), min(height, y0 + h)
    if fx1 <= fx0 or fy1 <= fy0 or opacity <= 0:
        return False
    sx0, sy0 = fx0 - x0, fy0 - y0
    src = rgb[sy0 : sy0 + fy1 - fy0, sx0 : sx0 + fx1 - fx0].astype(np.uint16)
    a = alpha[sy0 : sy0 + fy1 - fy0, sx0 : sx0 + fx1 - fx0].astype(np.uint16)
    if opacity < 255:
        a = (a * np.uint16(opacity) + 127) // 255
    a3 = a[:, :, None]
    region = dst[fy0:fy1, fx0:fx1]
    mixed = (src * a3 + region.astype(np.uint16) * (255 - a3) + 127) // 255
    region[...] = mixed.astype(np.uint8)
    return True


def blend_points(dst: U8, rows: I64, cols: I64, colour: U8, alpha: U8) -> None:
    """Blend ``colour`` (3,) into the pixels ``(rows[i], cols[i])`` of ``dst`` with ``alpha[i]``.

    ``rows`` and ``cols`` must already lie inside the frame; repeated points blend once.
    """
    width = dst.shape[1]
    flat = dst.reshape(-1, 3)
    idx = rows * width + cols
    px = flat[idx].astype(np.uint16)
    a = alpha.astype(np.uint16)[:, None]
    flat[idx] = ((px * (255 - a) + colour.astype(np.uint16)[None, :] * a + 127) // 255).astype(
        np.uint8
    )


def draw_line(dst: U8, p0: tuple[float, float], p1: tuple[float, float], colour: U8) -> None:
    """Draw a 1-pixel line from ``p0`` to ``p1`` (``(x, y)`` frame pixels), clipped to ``dst``."""
    n = int(max(abs(p1[0] - p0[0]), abs(p1[1] - p0[1]))) + 1
    t = np.linspace(0.0, 1.0, n)
    xs = np.round(p0[0] + (p1[0] - p0[0]) * t).astype(np.int64)
    ys = np.round(p0[1] + (p1[1] - p0[1]) * t).astype(np.int64)
    keep = (xs >= 0) & (xs < dst.shape[1]) & (ys >= 0) & (ys < dst.shape[0])
    dst[ys[keep], xs[keep]] = colour

"""The window's look: colours and a few drawing primitives (translucent rounded
boxes, vertical fades, shadowed text). Drawing only; no state, no story.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pygame

from game.app.fonts import Color, Typeface

#: Text on dark glass.
TEXT = (238, 238, 242)
#: Secondary text.
DIM = (168, 172, 184)
#: Faint text (hints, placeholders).
FAINT = (118, 122, 134)
#: Warm accent: speaker names, number badges, focus rings.
ACCENT = (255, 198, 112)
#: Notices and soft errors.
WARN = (255, 158, 120)
#: Dark glass behind panels.
GLASS = (10, 12, 18)
#: Button face.
BUTTON = (22, 25, 34)
#: Hovered button face.
BUTTON_HOT = (44, 40, 36)
#: Shadow under text drawn straight on the world.
SHADOW = (0, 0, 0)


def glass(surface: pygame.Surface, rect: pygame.Rect, alpha: int = 190, radius: int = 12,
          color: tuple[int, int, int] = GLASS, border: Color | None = None,
          width: int = 1) -> None:
    """A translucent rounded box on ``surface`` (optionally with a border)."""
    if rect.width <= 0 or rect.height <= 0:
        return
    box = pygame.Surface(rect.size, pygame.SRCALPHA)
    pygame.draw.rect(box, (*color, alpha), box.get_rect(), border_radius=radius)
    if border is not None:
        pygame.draw.rect(box, border, box.get_rect(), width=width, border_radius=radius)
    surface.blit(box, rect.topleft)


@lru_cache(maxsize=16)
def _fade(width: int, height: int, top_alpha: int, bottom_alpha: int,
          color: tuple[int, int, int]) -> pygame.Surface:
    strip = pygame.Surface((1, max(1, height)), pygame.SRCALPHA)
    for y in range(height):
        t = y / max(1, height - 1)
        t = t * t * (3 - 2 * t)
        strip.set_at((0, y), (*color, int(top_alpha + (bottom_alpha - top_alpha) * t)))
    return pygame.transform.scale(strip, (max(1, width), max(1, height)))


def fade(surface: pygame.Surface, rect: pygame.Rect, top_alpha: int, bottom_alpha: int,
         color: tuple[int, int, int] = GLASS) -> None:
    """A vertical gradient of ``color`` from ``top_alpha`` to ``bottom_alpha`` over ``rect``."""
    if rect.width > 0 and rect.height > 0:
        surface.blit(_fade(rect.width, rect.height, top_alpha, bottom_alpha, color), rect.topleft)


def text(surface: pygame.Surface, face: Typeface, value: str, pos: tuple[int, int],
         color: Color = TEXT, shadow: bool = False, alpha: int = 255,
         anchor: str = "topleft") -> pygame.Rect:
    """Draw one line of ``value``; returns the rect it took.

    ``anchor`` names the rect point ``pos`` is (``topleft``, ``center``,
    ``midtop``, ``topright``, ``midleft``...).
    """
    img = face.render(value, color)
    rect = img.get_rect(**{anchor: pos})
    if shadow:
        sh = face.render(value, SHADOW)
        if alpha < 255:
            sh = sh.copy()
            sh.set_alpha(alpha * 2 // 3)
        off = max(1, face.size // 14)
        surface.blit(sh, (rect.x + off, rect.y + off))
    if alpha < 255:
        img = img.copy()
        img.set_alpha(alpha)
    surface.blit(img, rect.topleft)
    return rect


def badge(surface: pygame.Surface, face: Typeface, label: str, center: tuple[int, int],
          radius: int, fill: Color = ACCENT, fg: Color = (20, 18, 16)) -> None:
    """A filled circle with a short label (choice numbers)."""
    pygame.draw.circle(surface, fill, center, radius)
    text(surface, face, label, center, fg, anchor="center")


def clipped(face: Typeface, value: str, width: int) -> str:
    """``value`` shortened with an ellipsis to fit ``width`` pixels."""
    if face.width(value) <= width:
        return value
    while value and face.width(value + "…") > width:
        value = value[:-1]
    return value + "…"


def rows(face: Typeface, value: str, width: int, most: int) -> list[str]:
    """``value`` wrapped into at most ``most`` lines of ``width`` pixels; the last line that
    fits takes an ellipsis when words are left over (nothing is cut silently mid-line)."""
    lines = face.wrap(value, width) or [""]
    if len(lines) <= most:
        return lines
    return [*lines[:most - 1], clipped(face, " ".join(lines[most - 1:]), width)]


def frame_surface(image: np.ndarray) -> pygame.Surface:
    """A ``(H, W, 3)`` uint8 RGB frame as a surface of the same size."""
    h, w = image.shape[:2]
    return pygame.image.frombuffer(np.ascontiguousarray(image, dtype=np.uint8).tobytes(), (w, h), "RGB")


def world_surface(image: np.ndarray, size: tuple[int, int]) -> pygame.Surface:
    """A frame scaled to ``size`` (smooth scaling; the same function the tests compare with)."""
    surf = frame_surface(image)
    if surf.get_size() == size:
        return surf
    return pygame.transform.smoothscale(surf, size)


def ambient(image: np.ndarray, size: tuple[int, int]) -> pygame.Surface:
    """A dim, heavily blurred copy of a frame stretched over ``size`` (the glow around the world)."""
    h, w = image.shape[:2]
    small = pygame.transform.smoothscale(frame_surface(image), (max(2, w // 40), max(2, h // 40)))
    tiny = pygame.transform.smoothscale(small, (max(2, w // 80), max(2, h // 80)))
    big = pygame.transform.smoothscale(tiny, size)
    big.fill((74, 74, 82), special_flags=pygame.BLEND_MULT)
    return big

"""Where everything goes, from the window size and the frame size.

The world sits on top, scaled to fit the area above the bottom panel; the bars
beside it and the panel behind are filled with a dim, blurred copy of the frame
(so the picture seems to glow past its edges); the text panel, choices, text
line and inventory sit on dark glass. All sizes scale
with the window (1.0 = 1280x720). Also here: where the characters stand on
screen, so a dragged item can be dropped on one.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygame

#: Width and height the design is drawn for.
BASE = (1280, 720)
#: A character's hit box, as fractions of the world rect: width, height, feet height.
CHARACTER_BOX = (0.14, 0.42, 0.92)


@dataclass(frozen=True)
class Layout:
    """The rects of one window size.

    Attributes:
        size: window size.
        scale: UI scale (1.0 at 1280x720).
        world: where the frame is drawn (aspect kept, centred above the panel).
        clear: part of ``world`` nothing is drawn over (except toasts and the ending card).
        panel: the bottom band under the world.
        fade: the rect of the panel's glass.
        speaker: where the speaker's name goes.
        text: where the line's text goes.
        choices: the column of choice buttons (they stack down from its top).
        entry: the text line.
        inventory: the column of inventory chips (the bar right of the world).
        title: the scene title's top-left corner.
        toast: centre-top of setting changes.
    """

    size: tuple[int, int]
    scale: float
    world: pygame.Rect
    clear: pygame.Rect
    panel: pygame.Rect
    fade: pygame.Rect
    speaker: pygame.Rect
    text: pygame.Rect
    choices: pygame.Rect
    entry: pygame.Rect
    inventory: pygame.Rect
    title: tuple[int, int]
    toast: tuple[int, int]

    def px(self, n: float) -> int:
        """``n`` design pixels at this scale."""
        return max(1, int(round(n * self.scale)))

    def choice_height(self, n: int) -> int:
        """The height of a one-line button when ``n`` choices share the column (30-40 design px)."""
        room = (self.choices.height - max(0, n - 1) * self.px(7)) // max(1, n)
        return max(self.px(30), min(self.px(40), room))

    def choice_rects(self, n: int) -> list[pygame.Rect]:
        """Rects of ``n`` one-line choice buttons: they shrink to fit the column, then grow upward."""
        return self.choice_stack([self.choice_height(n)] * n)

    def choice_stack(self, heights: list[int]) -> list[pygame.Rect]:
        """Rects of choice buttons of ``heights`` (a long choice is a taller, wrapped button),
        top to bottom, starting at the column's top, or higher when they do not fit in it."""
        gap = self.px(7)
        need = sum(heights) + max(0, len(heights) - 1) * gap
        y = min(self.choices.top, self.choices.bottom - need)
        out = []
        for h in heights:
            out.append(pygame.Rect(self.choices.x, y, self.choices.width, h))
            y += h + gap
        return out

    def chip_rects(self, n: int, heights: list[int] | None = None) -> list[pygame.Rect]:
        """Rects of ``n`` inventory chips, top to bottom (one line each, or of ``heights``)."""
        gap = self.px(8)
        out = []
        y = self.inventory.y
        for h in heights or [self.px(32)] * n:
            out.append(pygame.Rect(self.inventory.x, y, self.inventory.width, h))
            y += h + gap
        return out


def fit(frame_size: tuple[int, int], area: pygame.Rect) -> pygame.Rect:
    """The largest rect of ``frame_size``'s aspect centred in ``area``."""
    fw, fh = max(1, frame_size[0]), max(1, frame_size[1])
    k = min(area.width / fw, area.height / fh)
    w, h = max(1, int(round(fw * k))), max(1, int(round(fh * k)))
    return pygame.Rect(area.x + (area.width - w) // 2, area.y + (area.height - h) // 2, w, h)


def make_layout(size: tuple[int, int], frame_size: tuple[int, int]) -> Layout:
    """Lay out a window of ``size`` showing frames of ``frame_size`` (width, height).

    The world takes the area above the bottom panel (at 1280x720 a 960x540 world
    is drawn 1:1); the bars beside it hold the inventory, the panel holds the
    line, the choices and the text line.
    """
    w, h = size
    s = min(w / BASE[0], h / BASE[1])

    def px(n: float) -> int:
        return max(1, int(round(n * s)))

    panel_h = px(180)
    world = fit(frame_size, pygame.Rect(0, 0, w, h - panel_h))
    world.y = 0
    panel = pygame.Rect(0, world.bottom, w, h - world.bottom)
    fade_rect = panel.copy()
    left = max(px(40), world.x + px(16))
    right = min(w - px(40), world.right - px(16))
    split = left + int((right - left) * 0.54)
    text_w = split - left - px(24)
    speaker = pygame.Rect(left, panel.top + px(12), text_w, px(22))
    entry = pygame.Rect(left, panel.bottom - px(42), text_w, px(30))
    text = pygame.Rect(left, speaker.bottom + px(2), text_w, entry.top - px(6) - speaker.bottom)
    choices = pygame.Rect(split, panel.top + px(14), right - split, panel.height - px(28))
    bar = world.x
    if bar >= px(120):
        inventory = pygame.Rect(world.right + px(10), px(56), bar - px(20), world.height - px(70))
    else:
        inv_w = px(190)
        inventory = pygame.Rect(world.right - px(20) - inv_w, world.y + px(56), inv_w, px(300))
    clear = pygame.Rect(world.x + int(world.width * 0.25), world.y + int(world.height * 0.24),
                        int(world.width * 0.5), int(world.height * 0.5)).clip(world)
    return Layout(size=(w, h), scale=s, world=world, clear=clear, panel=panel, fade=fade_rect,
                  speaker=speaker, text=text, choices=choices, entry=entry, inventory=inventory,
                  title=(world.x + px(28), world.y + px(24)), toast=(world.centerx, px(18)))


def character_boxes(present: dict[str, float], camera_x: float,
                    world: pygame.Rect) -> dict[str, pygame.Rect]:
    """Hit boxes of the characters on screen.

    Args:
        present: character id -> horizontal position in world units (1.0 = one
            screen width, 0 = the location's origin), as the scene places them.
        camera_x: the camera's position in the same units.
        world: where the frame is drawn.

    Returns:
        character id -> rect around where the backend draws it (feet at
        ``CHARACTER_BOX[2]`` of the height); characters off screen are left out.
    """
    bw, bh, feet = CHARACTER_BOX
    out: dict[str, pygame.Rect] = {}
    for cid, x in present.items():
        fx = x - camera_x
        if not -0.05 <= fx <= 1.05:
            continue
        cx = world.x + fx * world.width
        rect = pygame.Rect(0, 0, int(bw * world.width), int(bh * world.height))
        rect.midbottom = (int(cx), int(world.y + feet * world.height))
        out[cid] = rect
    return out


def nearest_character(boxes: dict[str, pygame.Rect], x: int) -> str:
    """The id of the character whose box centre is nearest to screen ``x`` (``""`` if none)."""
    if not boxes:
        return ""
    return min(boxes, key=lambda c: abs(boxes[c].centerx - x))

"""Full-window overlays: the history of past lines, the save screen, the key help,
and the ending card. Each draws from plain values and returns its hit rects.
"""

from __future__ import annotations

import time
from pathlib import Path

import pygame

from game.app import paint
from game.app.fonts import Fonts, right_to_left
from game.app.layout import Layout
from game.app.panels import Hit
from game.locale import ui

#: Keys and what they do, as the help overlay lists them.
#: Keys the help overlay lists, in order, by string id (``ui.key.<k>`` the key, ``ui.key.<k>.do``
#: what it does: :data:`game.locale.UI`).
KEYS: tuple[str, ...] = ("choose", "move", "type", "address", "voice", "drop", "next", "drag", "back", "forward",
                         "history", "saves", "quick", "reload", "subtitles", "auto", "skip", "speed", "volume",
                         "stats", "fullscreen", "quit")


def _veil(surface: pygame.Surface, alpha: int = 222) -> None:
    veil = pygame.Surface(surface.get_size(), pygame.SRCALPHA)
    veil.fill((*paint.GLASS, alpha))
    surface.blit(veil, (0, 0))


def _heading(surface: pygame.Surface, layout: Layout, fonts: Fonts, title: str, hint: str) -> int:
    x, y = layout.px(64), layout.px(44)
    r = paint.text(surface, fonts.heading, title, (x, y), paint.TEXT)
    paint.text(surface, fonts.small, hint, (layout.size[0] - x, r.centery), paint.FAINT,
               anchor="midright")
    bar = pygame.Rect(x, r.bottom + layout.px(10), layout.px(44), max(2, layout.px(3)))
    pygame.draw.rect(surface, paint.ACCENT, bar)
    return bar.bottom + layout.px(26)


class HistoryOverlay:
    """Past lines, newest at the bottom; the wheel scrolls, past the end closes it."""

    def __init__(self) -> None:
        self.open = False
        self.scroll = 0
        self._max_scroll = 0

    def show(self) -> None:
        """Open at the newest line."""
        self.open = True
        self.scroll = 0

    def wheel(self, dy: int) -> None:
        """Scroll ``dy`` rows (positive = back in time); scrolling below the newest closes."""
        if dy < 0 and self.scroll == 0:
            self.open = False
            return
        self.scroll = max(0, min(self._max_scroll, self.scroll + dy * 2))

    def draw(self, surface: pygame.Surface, layout: Layout, fonts: Fonts,
             lines: list[tuple[str, str]]) -> None:
        """Draw ``(speaker name, text)`` lines, scrolled by :attr:`scroll` rows."""
        _veil(surface)
        top = _heading(surface, layout, fonts, ui("ui.history"), ui("ui.history.hint"))
        col = pygame.Rect(layout.px(64), top, int(layout.size[0] * 0.62), 0)
        name_w = layout.px(150)
        face = fonts.body
        rows: list[tuple[str, str, bool]] = []  # (speaker on its first row, row, right to left)
        for speaker, text in lines:
            rtl = right_to_left(text)
            for i, row in enumerate(face.wrap(text, col.width - name_w)):
                rows.append((speaker if i == 0 else "", row, rtl))
            rows.append(("", "", False))
        if not rows:
            paint.text(surface, fonts.body, ui("ui.history.empty"), (col.x, top), paint.DIM)
            return
        fit = max(1, (layout.size[1] - top - layout.px(40)) // face.line_height)
        self._max_scroll = max(0, len(rows) - fit)
        self.scroll = min(self.scroll, self._max_scroll)
        end = len(rows) - self.scroll
        y = top
        for speaker, row, rtl in rows[max(0, end - fit): end]:
            if speaker:
                paint.text(surface, fonts.name, paint.clipped(fonts.name, speaker, name_w - 12),
                           (col.x, y + layout.px(2)), paint.ACCENT)
            if row and rtl:  # a right-to-left line is right-aligned in its column
                paint.text(surface, face, row, (col.right, y), paint.TEXT, anchor="topright")
            elif row:
                paint.text(surface, face, row, (col.x + name_w, y), paint.TEXT)
            y += face.line_height
        if self.scroll:
            paint.text(surface, fonts.small, ui("ui.history.more", n=self.scroll), (col.x + name_w, y),
                       paint.FAINT)


class SaveScreen:
    """A grid of saves with their thumbnails; a "new save" card first.

    Click a save to load it, the first card to save to a new slot.
    """

    COLUMNS = 4

    def __init__(self) -> None:
        self.open = False
        self.scroll = 0
        self._thumbs: dict[tuple[str, float, tuple[int, int]], pygame.Surface | None] = {}

    def _thumb(self, png: Path, size: tuple[int, int]) -> pygame.Surface | None:
        try:
            mtime = png.stat().st_mtime
        except OSError:
            return None
        key = (str(png), mtime, size)
        if key not in self._thumbs:
            try:
                img = pygame.image.load(str(png))
                try:
                    self._thumbs[key] = pygame.transform.smoothscale(img, size)
                except ValueError:  # palette images cannot be smooth-scaled
                    self._thumbs[key] = pygame.transform.scale(img, size)
            except (pygame.error, OSError, ValueError):
                self._thumbs[key] = None
        return self._thumbs[key]

    def draw(self, surface: pygame.Surface, layout: Layout, fonts: Fonts,
             saves: list[tuple[str, Path]], hover: tuple[int, int] | None) -> list[Hit]:
        """Draw the grid; returns hits keyed ``"new"`` or ``"load:<slot>"``."""
        _veil(surface, 230)
        top = _heading(surface, layout, fonts, ui("ui.saves"), ui("ui.saves.hint"))
        margin, gap = layout.px(64), layout.px(22)
        cols = self.COLUMNS
        card_w = (layout.size[0] - 2 * margin - (cols - 1) * gap) // cols
        thumb_h = card_w * 9 // 16
        card_h = thumb_h + layout.px(58)
        rows_fit = max(1, (layout.size[1] - top - layout.px(20)) // (card_h + gap))
        cards: list[tuple[str, str, Path | None]] = [("new", ui("ui.saves.new"), None)]
        cards += [(f"load:{slot}", slot, path) for slot, path in saves]
        max_scroll = max(0, (len(cards) + cols - 1) // cols - rows_fit)
        self.scroll = max(0, min(self.scroll, max_scroll))
        hits: list[Hit] = []
        first = self.scroll * cols
        for i, (key, label, path) in enumerate(cards[first: first + rows_fit * cols]):
            r, c = divmod(i, cols)
            rect = pygame.Rect(margin + c * (card_w + gap), top + r * (card_h + gap), card_w, card_h)
            hot = hover is not None and rect.collidepoint(hover)
            paint.glass(surface, rect, alpha=235 if hot else 200, radius=layout.px(14),
                        color=paint.BUTTON_HOT if hot else paint.BUTTON,
                        border=(*paint.ACCENT, 220) if hot else (255, 255, 255, 30))
            thumb_rect = pygame.Rect(rect.x + layout.px(8), rect.y + layout.px(8),
                                     card_w - layout.px(16), thumb_h - layout.px(8))
            if path is None:
                pygame.draw.rect(surface, (30, 33, 44), thumb_rect, border_radius=layout.px(8))
                paint.text(surface, fonts.heading, "+", thumb_rect.center, paint.ACCENT,
                           anchor="center")
                sub = ui("ui.saves.new_sub")
            else:
                thumb = self._thumb(path.with_suffix(".png"), thumb_rect.size)
                if thumb is not None:
                    surface.blit(thumb, thumb_rect.topleft)
                else:
                    pygame.draw.rect(surface, (26, 28, 36), thumb_rect, border_radius=layout.px(8))
                    paint.text(surface, fonts.small, ui("ui.saves.no_picture"), thumb_rect.center, paint.FAINT,
                               anchor="center")
                try:
                    sub = time.strftime("%d %b %Y  %H:%M", time.localtime(path.stat().st_mtime))
                except OSError:
                    sub = ""
            ty = thumb_rect.bottom + layout.px(8)
            paint.text(surface, fonts.choice, paint.clipped(fonts.choice, label, card_w - 24),
                       (rect.x + layout.px(12), ty), paint.TEXT)
            paint.text(surface, fonts.tiny, sub, (rect.x + layout.px(12),
                                                  ty + fonts.choice.line_height), paint.DIM)
            hits.append(Hit(rect, key, label))
        return hits


def help_overlay(surface: pygame.Surface, layout: Layout, fonts: Fonts,
                 state: list[tuple[str, str]]) -> None:
    """The keys and the current settings."""
    _veil(surface, 228)
    top = _heading(surface, layout, fonts, ui("ui.keys"), ui("ui.keys.hint"))
    x = layout.px(64)
    key_w = layout.px(230)
    y = top
    for k in KEYS:
        key, what = ui(f"ui.key.{k}"), ui(f"ui.key.{k}.do")
        paint.text(surface, fonts.small, key, (x, y), paint.ACCENT)
        paint.text(surface, fonts.small, what, (x + key_w, y), paint.TEXT)
        y += int(fonts.small.line_height * 1.25)
    sx = int(layout.size[0] * 0.66)
    y = top
    paint.text(surface, fonts.tiny, ui("ui.settings"), (sx, y), paint.DIM)
    y += fonts.tiny.line_height + layout.px(6)
    for name, value in state:
        paint.text(surface, fonts.small, name, (sx, y), paint.DIM)
        paint.text(surface, fonts.small, value, (sx + layout.px(150), y), paint.TEXT)
        y += int(fonts.small.line_height * 1.25)


def ending_card(surface: pygame.Surface, layout: Layout, fonts: Fonts, title: str) -> None:
    """An ending's ``title`` over the world, as given (the translated ending name, else the authored
    title: see :func:`game.story.strings.ending_name`; never title-cased again), with what the player can do now."""
    cx, cy = layout.world.centerx, layout.world.y + int(layout.world.height * 0.36)
    box = pygame.Rect(0, 0, layout.px(460), layout.px(150))
    box.center = (cx, cy)
    paint.glass(surface, box, alpha=150, radius=layout.px(18), border=(255, 255, 255, 26))
    paint.text(surface, fonts.tiny, ui("ui.ending"), (cx, cy - layout.px(44)), paint.ACCENT,
               shadow=True, anchor="center")
    paint.text(surface, fonts.title, paint.clipped(fonts.title, title, box.width - layout.px(24)), (cx, cy), paint.TEXT,
               shadow=True, anchor="center")
    paint.text(surface, fonts.small, ui("ui.ending.hint"),
               (cx, cy + layout.px(44)), paint.DIM, shadow=True, anchor="center")

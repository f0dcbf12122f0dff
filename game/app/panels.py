"""The pieces drawn over the world while playing: scene title, text panel, choices,
text line, inventory chips, drag targets, notices and toasts.

Each function draws one piece from plain values and returns the hit rects it
made (the window keeps them for mouse clicks). Nothing here knows of stories.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import pygame

from game.app import paint
from game.app.fonts import Fonts, Typeface, right_to_left
from game.app.layout import Layout
from game.locale import ui


@dataclass(frozen=True)
class Hit:
    """A clickable rect and what it stands for (a choice id, an item id...)."""

    rect: pygame.Rect
    key: str
    label: str = ""
    #: The lines the label was drawn as (wrapped; the last ends in "…" only if words were left over).
    rows: tuple[str, ...] = ()


def title_card(surface: pygame.Surface, layout: Layout, fonts: Fonts, title: str,
               subtitle: str, age: float, label: str = "") -> None:
    """The scene title top-left: fades in, stays, fades out; then a faint ``label`` stays."""
    x, y = layout.title
    fade_in, stay, fade_out = 0.6, 3.6, 1.6
    if age < fade_in + stay + fade_out:
        a = min(1.0, age / fade_in) if age < fade_in else \
            max(0.0, 1.0 - (age - fade_in - stay) / fade_out) if age > fade_in + stay else 1.0
        alpha = int(255 * a)
        if alpha > 0:
            r = paint.text(surface, fonts.title, title, (x, y), paint.TEXT, shadow=True, alpha=alpha)
            if subtitle:
                bar = pygame.Rect(x, r.bottom + layout.px(8), layout.px(44), max(2, layout.px(3)))
                line = pygame.Surface(bar.size, pygame.SRCALPHA)
                line.fill((*paint.ACCENT, alpha))
                surface.blit(line, bar.topleft)
                paint.text(surface, fonts.small, subtitle.upper(), (x, bar.bottom + layout.px(8)),
                           paint.DIM, shadow=True, alpha=alpha)
    settled = fade_in + stay + fade_out
    if age > settled:  # then a small, quiet location label stays
        a = min(1.0, (age - settled) / 1.0)
        paint.text(surface, fonts.tiny, (label or title).upper(), (x, layout.world.y + layout.px(18)),
                   paint.DIM, shadow=True, alpha=int(190 * a))


def panel_glass(surface: pygame.Surface, layout: Layout) -> None:
    """The dark glass of the bottom panel, with a faint hairline on top."""
    paint.fade(surface, layout.fade, 150, 232)
    line = pygame.Surface((layout.fade.width, 1), pygame.SRCALPHA)
    line.fill((255, 255, 255, 20))
    surface.blit(line, layout.fade.topleft)


def dialogue(surface: pygame.Surface, layout: Layout, fonts: Fonts, speaker: str, full: str,
             visible: str, more: bool, complete: bool, blink: bool,
             subtitles: bool = True) -> pygame.Rect:
    """Speaker name and the revealed part of the line, wrapped to the text column.

    The full line is wrapped first so words do not jump lines while typing. When
    the line is longer than the column, the latest lines are shown.

    Returns:
        The rect of the text column (click to advance).
    """
    area = layout.text
    if not subtitles:
        paint.text(surface, fonts.small, ui("ui.subtitles_off"), area.topleft, paint.FAINT)
        return area
    rtl = right_to_left(full)  # a right-to-left paragraph is right-aligned, its name and marker too
    if speaker and rtl:
        paint.text(surface, fonts.name, speaker, (area.right, layout.speaker.y), paint.ACCENT, shadow=True,
                   anchor="topright")
    elif speaker:
        paint.text(surface, fonts.name, speaker, layout.speaker.topleft, paint.ACCENT, shadow=True)
    else:  # narration starts on the name's row
        area = pygame.Rect(area.x, layout.speaker.y + layout.px(4), area.width,
                           area.bottom - layout.speaker.y - layout.px(4))
    face = fonts.body
    rows = face.wrap(full, area.width)
    mark = layout.px(10) + fonts.small.width("▼")
    if more and rows and face.width(rows[-1]) + mark > area.width:
        # the "more" marker follows the last row: wrap so it fits there, inside the column (it was
        # drawn past its edge, under the choices, for a last row that filled it: 8 French lines)
        rows = face.wrap(full, area.width - mark)
    out: list[str] = []
    n, pos = len(visible), 0
    for row in rows:
        start = full.find(row, pos) if row else pos
        start = pos if start < 0 else start
        if start >= n and out:
            break
        out.append(row[: max(0, n - start)])
        pos = start + len(row)
    fit = max(1, area.height // face.line_height)
    out = out[-fit:]
    y = area.y
    color = paint.TEXT if speaker else (222, 224, 232)
    last = area.topleft
    for row in out:
        if rtl:
            r = paint.text(surface, face, row, (area.right, y), color, shadow=True, anchor="topright")
            last = (r.left - layout.px(10) - fonts.small.width("▼"), y)
        else:
            r = paint.text(surface, face, row, (area.x, y), color, shadow=True)
            last = (r.right + layout.px(10), y)
        y += face.line_height
    if complete and more and blink:
        paint.text(surface, fonts.small, "▼", (last[0], last[1] + layout.px(6)), paint.ACCENT)
    return area


def choices(surface: pygame.Surface, layout: Layout, fonts: Fonts,
            items: list[tuple[int, str, str]], hover: tuple[int, int] | None,
            alpha: float = 1.0) -> list[Hit]:
    """Rounded choice buttons with number badges.

    Args:
        items: ``(number, choice id, text)`` in order.
        hover: the mouse position (hovered button is lit), or ``None``.
        alpha: 0..1 fade of the whole column.

    Returns:
        One :class:`Hit` per button, keyed by choice id.
    """
    hits: list[Hit] = []
    if not items:
        return hits
    base = layout.choice_height(len(items))
    pad = layout.px(8)
    room = layout.choices.width - base - layout.px(4) - layout.px(16)
    shapes = choice_shapes(fonts, [label for _, _, label in items], room)
    heights = [max(base, len(rows) * face.line_height + pad) for face, rows in shapes]
    rects = layout.choice_stack(heights)
    col = pygame.Surface(surface.get_size(), pygame.SRCALPHA)
    for rect, (number, cid, label), (face, rows) in zip(rects, items, shapes, strict=True):
        hot = hover is not None and rect.collidepoint(hover)
        paint.glass(col, rect, alpha=215 if hot else 178, radius=min(rect.height, base) // 2,
                    color=paint.BUTTON_HOT if hot else paint.BUTTON,
                    border=(*paint.ACCENT, 230) if hot else (255, 255, 255, 38))
        r = base // 2 - layout.px(8)
        rtl = right_to_left(label)  # a right-to-left choice is mirrored: its number at the right, text right-aligned
        paint.badge(col, fonts.small, str(number), (rect.right - base // 2 if rtl else rect.x + base // 2,
                                                    rect.centery), r,
                    fill=paint.ACCENT if hot else (232, 226, 214))
        tx = rect.right - base - layout.px(4) if rtl else rect.x + base + layout.px(4)
        y = rect.centery - len(rows) * face.line_height // 2
        for row in rows:
            paint.text(col, face, row, (tx, y), paint.TEXT, anchor="topright" if rtl else "topleft")
            y += face.line_height
        hits.append(Hit(rect, cid, label, tuple(rows)))
    if alpha < 1.0:
        col.set_alpha(int(255 * max(0.0, alpha)))
    surface.blit(col, (0, 0))
    return hits


#: Most lines a choice button or an inventory chip wraps to before its last line is ellipsised.
MAX_ROWS = 3


def choice_shapes(fonts: Fonts, labels: list[str], room: int) -> list[tuple[Typeface, list[str]]]:
    """How each choice reads in ``room`` pixels: one line in the choice face when every label
    fits so, else all in the small face, one line or wrapped (at most :data:`MAX_ROWS` lines),
    so one column never mixes two sizes of type."""
    if all(fonts.choice.width(label) <= room for label in labels):
        return [(fonts.choice, [label]) for label in labels]
    return [(fonts.small, paint.rows(fonts.small, label, room, MAX_ROWS)) for label in labels]


#: The room an inventory chip's name has, design px: a chip reaches left over the world's edge
#: when the bar beside the world is narrower (at 1280x720 the bar left 96 px, and French names
#: broke onto two or three lines, "mer" alone on the last: "le morceau de verre de mer").
CHIP_TEXT = 166


@lru_cache(maxsize=256)
def _chip_rows(face: Typeface, name: str, room: int) -> tuple[str, ...]:
    """An item's name in ``room`` pixels: one line when it fits, else as few lines as it needs,
    balanced (the narrowest width that needs no more lines, so no word is left alone on the
    last); more than :data:`MAX_ROWS` lines end in "…"."""
    lines = face.wrap(name, room)
    if len(lines) > MAX_ROWS:
        return tuple(paint.rows(face, name, room, MAX_ROWS))
    if len(lines) < 2:
        return tuple(lines) or ("",)
    lo, hi = 1, room
    while lo < hi:
        mid = (lo + hi) // 2
        if len(face.wrap(name, mid)) <= len(lines):
            hi = mid
        else:
            lo = mid + 1
    return tuple(face.wrap(name, hi))


def entry(surface: pygame.Surface, layout: Layout, fonts: Fonts, value: str, focused: bool,
          blink: bool, *, to: str = "", placeholder: str = "", status: str = "",
          status_color: tuple[int, int, int] = paint.DIM) -> pygame.Rect:
    """The text line: a hint when idle, the typed text and a caret when focused.

    Args:
        to: the name of the character the line goes to (a small tag at its start).
        placeholder: what the empty focused line says (default "Say or do something…").
        status: shown instead of the key hint while unfocused ("“make it rain” …",
            "● listening"), in ``status_color``.
    """
    rect = layout.entry
    pad = layout.px(14)
    x = rect.x + pad
    if focused:
        paint.glass(surface, rect, alpha=200, radius=rect.height // 2,
                    border=(*paint.ACCENT, 200), width=max(1, layout.px(1.5)))
    else:
        paint.glass(surface, rect, alpha=96, radius=rect.height // 2, border=(255, 255, 255, 22))
    if to:
        label = ui("ui.entry.to", name=to)
        tag = pygame.Rect(rect.x + layout.px(5), rect.y + layout.px(4),
                          fonts.tiny.width(label) + layout.px(18), rect.height - layout.px(8))
        paint.glass(surface, tag, alpha=220, radius=tag.height // 2, color=paint.BUTTON_HOT,
                    border=(*paint.ACCENT, 160))
        paint.text(surface, fonts.tiny, label, tag.center, paint.ACCENT, anchor="center")
        x = tag.right + layout.px(8)
    if focused:
        face = fonts.body if fonts.body.line_height < rect.height else fonts.choice
        avail = rect.right - pad - x - layout.px(4)
        shown = value
        while shown and face.width(shown) > avail:
            shown = shown[1:]
        if shown:
            r = paint.text(surface, face, shown, (x, rect.centery), paint.TEXT, anchor="midleft")
            caret_x = r.right
        else:
            hint = placeholder or (ui("ui.entry.placeholder_to", name=to) if to else ui("ui.entry.placeholder"))
            paint.text(surface, fonts.choice, paint.clipped(fonts.choice, hint, avail), (x, rect.centery),
                       paint.FAINT, anchor="midleft")
            caret_x = x
        if blink:
            h = face.line_height * 3 // 4
            pygame.draw.line(surface, paint.ACCENT, (caret_x + 2, rect.centery - h // 2),
                             (caret_x + 2, rect.centery + h // 2), max(1, layout.px(2)))
    elif status:
        paint.text(surface, fonts.small, paint.clipped(fonts.small, status, rect.right - pad - x),
                   (x, rect.centery), status_color, anchor="midleft")
    else:
        hint = ui("ui.hint.keys")
        paint.text(surface, fonts.small, paint.clipped(fonts.small, hint, rect.right - pad - x),
                   (x, rect.centery), paint.FAINT, anchor="midleft")
    return rect


def inventory(surface: pygame.Surface, layout: Layout, fonts: Fonts,
              items: list[tuple[str, str]], dragging: str, hover: tuple[int, int] | None) -> list[Hit]:
    """Inventory chips top-right, one per item; the dragged one is dimmed.

    Returns:
        One :class:`Hit` per chip, keyed by item id.
    """
    hits: list[Hit] = []
    if not items:
        return hits
    area = layout.inventory
    paint.text(surface, fonts.tiny, ui("ui.carrying"), (area.right - layout.px(6), area.y - layout.px(24)),
               paint.DIM, shadow=True, anchor="topright")
    inset, pad = layout.px(44), layout.px(10)
    face = fonts.small
    room = max(area.width - inset, layout.px(CHIP_TEXT))
    labels = [_chip_rows(face, name, room) for _, name in items]
    heights = [max(layout.px(32), len(rows) * face.line_height + pad) for rows in labels]
    for rect, (iid, name), rows in zip(layout.chip_rects(len(items), heights), items, labels, strict=False):
        w = max(face.width(row) for row in rows) + inset
        chip = pygame.Rect(rect.right - w, rect.y, w, rect.height)
        hot = hover is not None and chip.collidepoint(hover) and not dragging
        paint.glass(surface, chip, alpha=110 if iid == dragging else (215 if hot else 170),
                    radius=layout.px(16), color=paint.BUTTON_HOT if hot else paint.BUTTON,
                    border=(*paint.ACCENT, 200) if hot else (255, 255, 255, 34))
        y = chip.centery - len(rows) * face.line_height // 2
        pygame.draw.circle(surface, paint.ACCENT if iid != dragging else paint.FAINT,
                           (chip.x + layout.px(17), y + face.line_height // 2), max(2, layout.px(4)))
        for row in rows:
            paint.text(surface, face, row, (chip.x + layout.px(30), y),
                       paint.FAINT if iid == dragging else paint.TEXT)
            y += face.line_height
        hits.append(Hit(chip, iid, name, tuple(rows)))
    return hits


def drag_targets(surface: pygame.Surface, layout: Layout, fonts: Fonts,
                 boxes: dict[str, pygame.Rect], names: dict[str, str], target: str) -> None:
    """While dragging an item: outline where each character stands, light the target."""
    for cid, rect in boxes.items():
        hot = cid == target
        paint.glass(surface, rect, alpha=60 if hot else 0, radius=layout.px(18),
                    color=paint.ACCENT if hot else paint.GLASS,
                    border=(*paint.ACCENT, 235 if hot else 120), width=max(1, layout.px(2)))
        paint.text(surface, fonts.small, names.get(cid, cid), (rect.centerx, rect.y - layout.px(6)),
                   paint.ACCENT if hot else paint.TEXT, shadow=True, anchor="midbottom")


def drag_ghost(surface: pygame.Surface, layout: Layout, fonts: Fonts, name: str,
               pos: tuple[int, int]) -> None:
    """The dragged item's chip under the mouse."""
    w = fonts.small.width(name) + layout.px(40)
    rect = pygame.Rect(0, 0, w, layout.px(34))
    rect.center = pos
    paint.glass(surface, rect, alpha=230, radius=rect.height // 2, color=paint.BUTTON_HOT,
                border=(*paint.ACCENT, 255))
    pygame.draw.circle(surface, paint.ACCENT, (rect.x + layout.px(16), rect.centery),
                       max(2, layout.px(4)))
    paint.text(surface, fonts.small, name, (rect.x + layout.px(28), rect.centery), paint.TEXT,
               anchor="midleft")


def notice(surface: pygame.Surface, layout: Layout, fonts: Fonts, message: str, age: float,
           life: float) -> None:
    """A notice or soft error above the speaker line; fades at the end of its ``life``."""
    if not message or age >= life:
        return
    alpha = int(255 * min(1.0, (life - age) / 0.8, age / 0.15 if age < 0.15 else 1.0))
    face = fonts.small
    width = layout.text.width + layout.choices.width
    shown = paint.clipped(face, message, width)
    y = layout.speaker.y - layout.px(34)
    r = pygame.Rect(layout.speaker.x - layout.px(12), y - layout.px(6),
                    face.width(shown) + layout.px(24), face.line_height + layout.px(8))
    paint.glass(surface, r, alpha=int(alpha * 0.72), radius=r.height // 2, color=(40, 22, 16))
    paint.text(surface, face, shown, (layout.speaker.x, y), paint.WARN, alpha=alpha)


def toast(surface: pygame.Surface, layout: Layout, fonts: Fonts, message: str, age: float,
          life: float = 1.8, below: int = 0) -> None:
    """A short pill at the top centre (a setting changed, a game saved); ``below`` moves it
    under something already drawn there (the status pill), in pixels from the window top."""
    if not message or age >= life:
        return
    alpha = min(1.0, (life - age) / 0.5)
    face = fonts.small
    rect = pygame.Rect(0, 0, face.width(message) + layout.px(36), face.line_height + layout.px(12))
    rect.midtop = (layout.toast[0], max(layout.toast[1], below))
    paint.glass(surface, rect, alpha=int(200 * alpha), radius=rect.height // 2,
                border=(255, 255, 255, int(40 * alpha)))
    paint.text(surface, face, message, rect.center, paint.TEXT, alpha=int(255 * alpha),
               anchor="center")


def status_pill(surface: pygame.Surface, layout: Layout, fonts: Fonts, message: str) -> pygame.Rect:
    """A small amber pill at the top centre of the world, while ``message`` is set (the error
    bank's notice: "world model unreachable — showing the procedural world").

    Returns:
        Its rect (an empty rect at the top when there is no message).
    """
    top = layout.world.y + layout.px(10)
    if not message:
        return pygame.Rect(layout.world.centerx, top, 0, 0)
    face = fonts.tiny
    shown = paint.clipped(face, message, int(layout.world.width * 0.7))
    dot = max(2, layout.px(3.5))
    rect = pygame.Rect(0, 0, face.width(shown) + layout.px(40), face.line_height + layout.px(10))
    rect.midtop = (layout.world.centerx, top)
    paint.glass(surface, rect, alpha=190, radius=rect.height // 2, color=(34, 26, 14),
                border=(*paint.ACCENT, 170))
    pygame.draw.circle(surface, paint.ACCENT, (rect.x + layout.px(15), rect.centery), dot)
    paint.text(surface, face, shown, (rect.x + layout.px(26), rect.centery), (255, 222, 170),
               anchor="midleft")
    return rect


def banner(surface: pygame.Surface, layout: Layout, fonts: Fonts, title: str, detail: str,
           top: int) -> pygame.Rect:
    """A box across the top of the world for something the author must fix (a story that
    did not reload): ``title`` and one ``detail`` line, wrapped to at most three rows.

    Returns:
        Its rect (click it to close).
    """
    width = min(layout.world.width - layout.px(40), layout.px(860))
    face = fonts.small
    rows = face.wrap(detail, width - layout.px(36))[:3]
    height = fonts.name.line_height + len(rows) * face.line_height + layout.px(22)
    rect = pygame.Rect(0, 0, width, height)
    rect.midtop = (layout.world.centerx, top)
    paint.glass(surface, rect, alpha=225, radius=layout.px(12), color=(40, 16, 14),
                border=(*paint.WARN, 200), width=max(1, layout.px(1.5)))
    x, y = rect.x + layout.px(18), rect.y + layout.px(10)
    paint.text(surface, fonts.name, title, (x, y), paint.WARN)
    paint.text(surface, fonts.tiny, ui("ui.banner.close"), (rect.right - layout.px(16), y + layout.px(2)),
               paint.FAINT, anchor="topright")
    y += fonts.name.line_height + layout.px(2)
    for row in rows:
        paint.text(surface, face, row, (x, y), paint.TEXT)
        y += face.line_height
    return rect


def stats(surface: pygame.Surface, layout: Layout, fonts: Fonts, lines: list[str]) -> None:
    """Small diagnostic lines bottom-right (frame rate, queue, stalls)."""
    y = layout.px(8)
    for line in lines:
        paint.text(surface, fonts.tiny, line, (layout.size[0] // 2, y), paint.DIM, shadow=True,
                   anchor="midtop")
        y += fonts.tiny.line_height

"""Fonts that show every script the stories use: Latin (æøå), CJK, punctuation.

No single free font covers both a pleasant Latin face and CJK, so a
:class:`Typeface` is a *stack* of fonts: each character is drawn with the first
font of the stack that has a glyph for it (``pygame.freetype`` reports a missing
glyph as ``None`` metrics), and a line is composed from runs on a common
baseline. The stack is found on the system (:func:`font_paths`); when nothing is
found, pygame's built-in font is used alone.

A line with right-to-left letters (Hebrew, Arabic: :func:`rtl_script`) is put in
visual order by the Unicode bidi algorithm (UAX #9, through ``python-bidi``:
:func:`visual_runs`): its right-to-left runs are shaped and laid out by SDL_ttf's
HarfBuzz, a ``pygame.font.Font`` of the first face of the stack that has the script,
with its script (ISO 15924 ``Hebr``/``Arab``) and direction (``DIRECTION_RTL``) set, so
Arabic letters join and read from the right; a Latin word or a number inside it reads
left to right, drawn by the stack. A paragraph whose first strong letter is
right-to-left (:func:`right_to_left`) is right-aligned by the panels that draw it.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Iterable

import pygame
import pygame.freetype
from bidi import get_base_level, get_display

Color = tuple[int, int, int] | tuple[int, int, int, int]

#: Latin faces tried first (by pygame's font matcher), best first.
LATIN = ("dejavusans", "notosans", "liberationsans", "freesans", "arial", "helvetica")
#: Latin font files checked first (regular, bold), where fontconfig is vague.
LATIN_FILES = (
    ("/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
     "/usr/share/fonts/truetype/noto/NotoSans-Bold.ttf"),
    ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
     "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"),
)
#: CJK faces tried next, best first.
CJK = ("notosanscjksc", "notosanscjk", "notosanscjkjp", "sourcehansans", "droidsansfallbackfull",
       "droidsansfallback", "wqyzenhei", "wqymicrohei", "arialunicodems", "msgothic", "simsun")
#: Well-known CJK font files, checked directly (fontconfig may be missing).
CJK_FILES = (
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/System/Library/Fonts/PingFang.ttc",
    "C:/Windows/Fonts/msyh.ttc",
)
#: Wrapped texts a :class:`Typeface` keeps (:meth:`Typeface.wrap`).
WRAPPED = 64
#: Faces tried last for symbols the others lack.
SYMBOLS = ("dejavusans", "notosanssymbols", "symbola")

_CJK = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
#: Right-to-left scripts: (ISO 15924 code, its Unicode blocks), after Unicode's Scripts.txt.
RTL_SCRIPTS = (("Hebr", "\u0590-\u05ff\ufb1d-\ufb4f"),
               ("Arab", "\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff"))
_RTL_CHAR = re.compile("|".join(f"(?P<{code}>[{chars}])" for code, chars in RTL_SCRIPTS))
_CJK_CHAR = re.compile(f"[{_CJK}]")
_TOKEN = re.compile(rf"\s+|[{_CJK}]|[^\s{_CJK}]+")


def _match(names: Iterable[str], bold: bool) -> list[str]:
    out: list[str] = []
    for name in names:
        try:
            path = pygame.font.match_font(name, bold=bold)
        except Exception:  # a broken fontconfig must not stop the game
            path = None
        if path and os.path.isfile(path) and path not in out:
            out.append(str(path))
    return out


def font_paths(bold: bool = False) -> list[str]:
    """The font files of the stack, best first: a Latin face, a CJK face, symbols.

    Returns an empty list when the system has none of them (the built-in font is
    then used).
    """
    if not pygame.font.get_init():
        pygame.font.init()
    paths: list[str] = []
    latin = [pair[int(bold)] for pair in LATIN_FILES if os.path.isfile(pair[int(bold)])]
    for group in ((latin or _match(LATIN, bold))[:1],
                  [p for p in CJK_FILES if os.path.isfile(p)][:1] or _match(CJK, False)[:1],
                  _match(SYMBOLS, bold)):
        for p in group:
            if p not in paths:
                paths.append(p)
    return paths


class Typeface:
    """One size of the font stack: measure, render and wrap text in any script.

    Args:
        size: pixel size.
        bold: use bold faces where there are some.
        paths: font files, best first (default :func:`font_paths`).

    Rendered lines are cached (least recently used first out), so drawing the
    same text every frame costs a dictionary look-up.
    """

    def __init__(self, size: int, bold: bool = False, paths: list[str] | None = None) -> None:
        if not pygame.freetype.get_init():
            pygame.freetype.init()
        self.size = max(6, int(size))
        self.fonts: list[pygame.freetype.Font] = []
        #: the file of each of :attr:`fonts` (``None``: pygame's built-in font).
        self._paths: list[str | None] = []
        for p in font_paths(bold) if paths is None else paths:
            try:
                f = pygame.freetype.Font(p, self.size)
            except (OSError, pygame.error):
                continue
            self.fonts.append(f)
            self._paths.append(p)
        if not self.fonts:
            self.fonts.append(pygame.freetype.Font(None, self.size))
            self._paths.append(None)
        for f in self.fonts:
            f.antialiased = True
            f.kerning = False
            f.pad = False
        self.ascent = max(int(f.get_sized_ascender(self.size)) for f in self.fonts[:2])
        self.descent = min(int(f.get_sized_descender(self.size)) for f in self.fonts[:2])
        self.line_height = int((self.ascent - self.descent) * 1.18)
        self._glyph: dict[str, tuple[int, float]] = {}
        self._cache: OrderedDict[tuple[str, Color], pygame.Surface] = OrderedDict()
        self._wrapped: OrderedDict[tuple[str, int], tuple[str, ...]] = OrderedDict()
        self._shapers: dict[str, pygame.font.Font] = {}

    def shaper(self, script: str, sample: str) -> pygame.font.Font:
        """The font that lays out ``script`` (ISO 15924) right to left: the first face of the
        stack with a glyph for ``sample``, script and direction set (see the module doc)."""
        font = self._shapers.get(script)
        if font is None:
            if not pygame.font.get_init():
                pygame.font.init()
            font = pygame.font.Font(self._paths[self._lookup(sample)[0]], self.size)
            font.set_script(script)
            font.set_direction(pygame.DIRECTION_RTL)
            self._shapers[script] = font
        return font

    def _rtl(self, text: str) -> pygame.font.Font | None:
        m = _RTL_CHAR.search(text)
        return self.shaper(str(m.lastgroup), m.group(0)) if m else None

    def _lookup(self, ch: str) -> tuple[int, float]:
        """``(font index, horizontal advance)`` of one character."""
        hit = self._glyph.get(ch)
        if hit is None:
            hit = (0, float(self.fonts[0].get_rect(ch).width))  # tofu of the first font
            for i, f in enumerate(self.fonts):
                m = f.get_metrics(ch)
                if m and m[0] is not None:
                    hit = (i, float(m[0][4]))
                    break
            self._glyph[ch] = hit
        return hit

    def has_glyph(self, ch: str) -> bool:
        """Whether some font of the stack has a real glyph for ``ch``."""
        return any(m and m[0] is not None for m in (f.get_metrics(ch) for f in self.fonts))

    def _runs(self, text: str) -> list[tuple[int, str, float]]:
        runs: list[tuple[int, str, float]] = []
        for ch in text:
            idx, adv = self._lookup(ch)
            if runs and runs[-1][0] == idx:
                _, s, w = runs[-1]
                runs[-1] = (idx, s + ch, w + adv)
            else:
                runs.append((idx, ch, adv))
        return runs

    def _advance(self, text: str) -> float:
        return sum(self._lookup(ch)[1] for ch in text)

    def width(self, text: str) -> int:
        """Advance width of ``text`` in pixels (right-to-left runs as shaped)."""
        if not _RTL_CHAR.search(text):
            return int(round(self._advance(text)))
        total = 0.0
        for run, rtl in visual_runs(text):
            shaper = self._rtl(run) if rtl else None
            total += shaper.size(run)[0] if shaper is not None else self._advance(run)
        return int(round(total))

    def size_of(self, text: str) -> tuple[int, int]:
        """``(width, height)`` the rendered ``text`` takes."""
        return self.width(text), self.ascent - self.descent

    def render(self, text: str, color: Color) -> pygame.Surface:
        """``text`` drawn in ``color`` on a transparent surface (one line, no wrapping)."""
        key = (text, color)
        surf = self._cache.get(key)
        if surf is not None:
            self._cache.move_to_end(key)
            return surf
        w, h = self.size_of(text)
        surf = pygame.Surface((max(1, w + 2), max(1, h)), pygame.SRCALPHA)
        x = 0.0
        for part, rtl in visual_runs(text) if _RTL_CHAR.search(text) else [(text, False)]:
            shaper = self._rtl(part) if rtl else None
            if shaper is not None:  # shaped and laid out right to left by HarfBuzz, on our baseline
                img = shaper.render(part, True, color[:3])
                if len(color) == 4:
                    img.set_alpha(color[3])
                surf.blit(img, (int(round(x)), self.ascent - shaper.get_ascent()))
                x += shaper.size(part)[0]
                continue
            for idx, run, adv in self._runs(part):
                if run.strip():
                    img, rect = self.fonts[idx].render(run, color)
                    surf.blit(img, (int(round(x)) + rect.x, self.ascent - rect.y))
                x += adv
        return self._keep(key, surf)

    def _keep(self, key: tuple[str, Color], surf: pygame.Surface) -> pygame.Surface:
        self._cache[key] = surf
        if len(self._cache) > 600:
            self._cache.popitem(last=False)
        return surf

    def wrap(self, text: str, width: int) -> list[str]:
        """Break ``text`` into lines no wider than ``width`` pixels.

        Breaks at spaces; CJK text (written without spaces) breaks between any two
        characters; a word longer than a line is split. Newlines are kept. The last
        :data:`WRAPPED` results are kept (least recently used first out): the dialogue panel
        wraps the line it shows every frame, and a story line of 100,000 characters took 3 s
        of CPU a frame to wrap.
        """
        key = (text, width)
        hit = self._wrapped.get(key)
        if hit is None:
            hit = self._wrapped[key] = tuple(self._wrap(text, width))
            if len(self._wrapped) > WRAPPED:
                self._wrapped.popitem(last=False)
        else:
            self._wrapped.move_to_end(key)
        return list(hit)

    def _wrap(self, text: str, width: int) -> list[str]:
        out: list[str] = []
        for para in text.split("\n"):
            line = ""
            for tok in _TOKEN.findall(para):
                if tok.isspace():
                    if line:
                        line += " "
                    continue
                if self.width(line + tok) <= width:
                    line += tok
                    continue
                if line.strip():
                    out.append(line.rstrip())
                pieces = self._split_long(tok, width) if self.width(tok) > width else [tok]
                out.extend(pieces[:-1])
                line = pieces[-1]
            out.append(line.rstrip())
        return out

    def _split_long(self, word: str, width: int) -> list[str]:
        pieces = [""]
        for ch in word:
            if pieces[-1] and self.width(pieces[-1] + ch) > width:
                pieces.append(ch)
            else:
                pieces[-1] += ch
        return pieces


class Fonts:
    """The typefaces the window uses, sized for a UI scale (1.0 = 1280x720)."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale
        regular = font_paths(False)
        bold = font_paths(True)

        def px(n: float) -> int:
            return max(8, int(round(n * scale)))

        self.body = Typeface(px(20), paths=regular)
        self.name = Typeface(px(16), bold=True, paths=bold)
        self.choice = Typeface(px(17), paths=regular)
        self.small = Typeface(px(14), paths=regular)
        self.tiny = Typeface(px(12), paths=regular)
        self.title = Typeface(px(36), bold=True, paths=bold)
        self.heading = Typeface(px(28), bold=True, paths=bold)


#: A right-to-left run in visual order: right-to-left letters (not the Arabic-Indic digits, which
#: read left to right) and the spaces between them.
_RTL_RUN = re.compile("((?:[{0}])+(?:\\s+(?:[{0}])+)*)".format(
    "".join(chars for _, chars in RTL_SCRIPTS).replace("\u0600-\u06ff", "\u0600-\u065f\u066a-\u06ef\u06fa-\u06ff")))


def visual_runs(text: str) -> list[tuple[str, bool]]:
    """``text`` (one line, logical order) as runs in visual order, left to right: ``(run, rtl)``.

    The Unicode bidi algorithm (UAX #9, ``python-bidi``'s ``get_display``, the base
    direction from the first strong letter) gives the visual order and mirrors brackets;
    a right-to-left run is handed back in logical order (``rtl`` true), for a shaper that
    lays it out right to left itself. A line with no right-to-left letter is one run.
    """
    if not _RTL_CHAR.search(text):
        return [(text, False)]
    out: list[tuple[str, bool]] = []
    for n, part in enumerate(_RTL_RUN.split(get_display(text))):
        if part:
            out.append((part[::-1], True) if n % 2 else (part, False))
    return out


def right_to_left(text: str) -> bool:
    """Whether ``text`` is a right-to-left paragraph: its first strong letter is (UAX #9 P2, P3)."""
    return bool(_RTL_CHAR.search(text)) and get_base_level(text) == 1


def rtl_script(text: str) -> str:
    """The ISO 15924 code of the first right-to-left script in ``text`` (``Hebr``, ``Arab``), or ``""``."""
    m = _RTL_CHAR.search(text)
    return str(m.lastgroup) if m else ""


def is_cjk(ch: str) -> bool:
    """Whether ``ch`` is a CJK ideograph, kana, hangul or full-width form."""
    return bool(_CJK_CHAR.match(ch))

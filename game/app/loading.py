"""The loading screen: the window opens at once and shows progress while the game is built.

Building a game with a living character takes from seconds to a minute on a CPU (the
sentence model's import, the dialogue model's worker process, a first start's GGUF
conversion). :class:`Loading` runs that build on a thread; the window's own loop keeps
pumping events and draws :meth:`Loading.draw` meanwhile, so the window is never blank
and never "not responding". What the player types while it loads is kept, not dropped:
each line sent with Enter is said, in order, once the game is ready, and a line still
being typed is put back in the text line (:meth:`Loading.hand_over`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import pygame

from game.app import paint
from game.app.fonts import Fonts
from game.locale import ui

T = TypeVar("T")

#: ``progress(part, stage, fraction)``: ``part`` a key of :data:`PART_LABELS` (or a model's
#: name: shown as the dialogue model), ``stage`` what it does now (free text, shown small),
#: ``fraction`` in [0, 1] (1: done).
LoadProgress = Callable[[str, str, float], None]

#: Parts a build reports (:func:`game.session.assembly.open_game`), in the order shown.
PART_LABELS = {"world": "ui.loading.world", "words": "ui.loading.words", "dialogue": "ui.loading.dialogue",
               "cast": "ui.loading.cast"}
#: Most characters kept in the text line while loading (as the window's own text line).
MAX_TEXT = 300
#: Most lines kept to say once the game is ready.
MAX_LINES = 8


class Typist(Protocol):
    """What :meth:`Loading.hand_over` needs of the window (:class:`game.app.app.App`)."""

    def say(self, text: str) -> bool: ...

    def resume_typing(self, text: str) -> None: ...


class Loading(Generic[T]):
    """A build on a thread, its progress, and what the player typed meanwhile.

    Args:
        build: ``build(progress) -> T``, run on a thread by :meth:`start`; it calls
            ``progress(part, stage, fraction)`` (from any thread) as it goes.
        title: the story's title, shown large.
        clock: seconds, monotonic (tests pass their own).
    """

    def __init__(self, build: Callable[[LoadProgress], T], title: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.build = build
        self.title = title
        self._clock = clock
        self._started_at = clock()
        self._lock = threading.Lock()
        #: part -> ``(stage, fraction)``, in the order first reported.
        self.parts: dict[str, tuple[str, float]] = {}
        #: The line being typed now.
        self.text = ""
        #: Lines sent with Enter while loading, to be said in order when the game is ready.
        self.lines: list[str] = []
        #: The player closed the window while it loaded.
        self.quit = False
        self._result: T | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the build -----------------------------------------------------------------------
    def progress(self, part: str, stage: str, fraction: float) -> None:
        """Record ``part``'s progress (thread-safe; ``fraction`` clamped to [0, 1])."""
        with self._lock:
            self.parts[part] = (stage, min(1.0, max(0.0, float(fraction))))

    def start(self) -> Loading[T]:
        """Run the build on a daemon thread (a window closed mid-load does not wait for it)."""
        def run() -> None:
            try:
                self._result = self.build(self.progress)
            except BaseException as exc:  # handed to the window's thread by result()
                self._error = exc
            finally:
                self._done.set()

        self._started_at = self._clock()
        self._thread = threading.Thread(target=run, name="worldloom-loading", daemon=True)
        self._thread.start()
        return self

    @property
    def done(self) -> bool:
        """Whether the build finished (well or not)."""
        return self._done.is_set()

    def result(self) -> T:
        """What the build returned (waits for it).

        Raises:
            BaseException: whatever the build raised (a ``WorldloomError`` for a bad story).
        """
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    @property
    def elapsed(self) -> float:
        """Seconds since the build started."""
        return self._clock() - self._started_at

    # -- the player, meanwhile -----------------------------------------------------------
    def handle(self, e: pygame.event.Event) -> None:
        """Handle one event while loading: typing is kept, Enter keeps the line, closing quits."""
        if e.type == pygame.QUIT:
            self.quit = True
        elif e.type == pygame.TEXTINPUT:
            if e.text.isprintable():
                self.text = (self.text + e.text)[:MAX_TEXT]
        elif e.type == pygame.KEYDOWN:
            if e.key in (pygame.K_RETURN, pygame.K_KP_ENTER):
                if self.text.strip() and len(self.lines) < MAX_LINES:
                    self.lines.append(self.text.strip())
                    self.text = ""
            elif e.key == pygame.K_BACKSPACE:
                self.text = self.text[:-1]
            elif e.key == pygame.K_u and e.mod & pygame.KMOD_CTRL:
                self.text = ""

    def hand_over(self, app: Typist) -> None:
        """Say the lines kept while loading, in order, and put the unfinished one in the text line."""
        for line in self.lines:
            app.say(line)
        if self.text:
            app.resume_typing(self.text)
        self.lines, self.text = [], ""

    # -- drawing -------------------------------------------------------------------------
    def draw(self, surface: pygame.Surface, fonts: Fonts) -> None:
        """Draw the loading screen over the whole of ``surface``: the title, one bar per part
        with its stage, the time so far, and the text line with the lines kept."""
        w, h = surface.get_size()
        s = fonts.scale
        surface.fill((14, 16, 24))
        paint.fade(surface, pygame.Rect(0, h // 2, w, h - h // 2), 0, 120, (40, 34, 30))
        paint.text(surface, fonts.title, self.title, (w // 2, int(h * 0.22)), paint.TEXT, shadow=True,
                   anchor="center")
        seconds = int(self.elapsed)
        paint.text(surface, fonts.body, ui("ui.loading", seconds=seconds), (w // 2, int(h * 0.22 + 44 * s)),
                   paint.DIM, anchor="center")
        with self._lock:
            parts = list(self.parts.items())
        bar_w, bar_h = int(min(560 * s, w * 0.7)), max(4, int(8 * s))
        x0 = (w - bar_w) // 2
        y = int(h * 0.22 + 90 * s)
        for part, (stage, fraction) in parts:
            label = ui(PART_LABELS[part]) if part in PART_LABELS else ui("ui.loading.dialogue")
            done = fraction >= 1.0
            paint.text(surface, fonts.choice, label, (x0, y), paint.TEXT if not done else paint.DIM)
            mark = ui("ui.loading.ready") if done else f"{int(round(fraction * 100))}%" if fraction else "…"
            paint.text(surface, fonts.small, mark, (x0 + bar_w, y), paint.ACCENT if not done else paint.FAINT,
                       anchor="topright")
            y += fonts.choice.size + int(6 * s)
            pygame.draw.rect(surface, (40, 44, 56), pygame.Rect(x0, y, bar_w, bar_h), border_radius=bar_h // 2)
            if fraction or done:
                fill = max(bar_h, int(bar_w * fraction))
                pygame.draw.rect(surface, paint.ACCENT if not done else (90, 96, 110),
                                 pygame.Rect(x0, y, fill, bar_h), border_radius=bar_h // 2)
            else:  # no figure yet (one long step): a segment sweeps the bar, so it is seen to work
                seg = bar_w // 6
                at = int((self.elapsed * 0.5 % 1.0) * (bar_w - seg))
                pygame.draw.rect(surface, paint.ACCENT, pygame.Rect(x0 + at, y, seg, bar_h),
                                 border_radius=bar_h // 2)
            y += bar_h + int(4 * s)
            if stage and not done:
                paint.text(surface, fonts.tiny, paint.clipped(fonts.tiny, stage, bar_w), (x0, y), paint.FAINT)
            y += fonts.tiny.size + int(12 * s)
        self._draw_entry(surface, fonts)

    def _draw_entry(self, surface: pygame.Surface, fonts: Fonts) -> None:
        w, h = surface.get_size()
        s = fonts.scale
        box = pygame.Rect(int(w * 0.12), int(h - 118 * s), int(w * 0.76), int(44 * s))
        y = box.y - int(8 * s)
        for line in reversed(self.lines[-3:]):
            y -= fonts.small.size + int(4 * s)
            paint.text(surface, fonts.small, paint.clipped(fonts.small, ui("ui.loading.kept", text=line),
                                                           box.width), (box.x + int(12 * s), y), paint.DIM)
        paint.glass(surface, box, alpha=220, radius=int(10 * s), border=(70, 74, 90))
        inner = box.width - int(24 * s)
        if self.text:
            shown = self.text
            while shown and fonts.body.width(shown + "|") > inner:
                shown = shown[1:]
            paint.text(surface, fonts.body, shown + "|", (box.x + int(12 * s), box.centery), paint.TEXT,
                       anchor="midleft")
        else:
            paint.text(surface, fonts.body, paint.clipped(fonts.body, ui("ui.loading.type"), inner),
                       (box.x + int(12 * s), box.centery), paint.FAINT, anchor="midleft")
        paint.text(surface, fonts.tiny, ui("ui.loading.kept_hint"), (w // 2, box.bottom + int(10 * s)),
                   paint.FAINT, anchor="midtop")


__all__ = ["Loading", "PART_LABELS", "LoadProgress", "Typist"]

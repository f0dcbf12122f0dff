"""The lines of the current turn, revealed one at a time: typewriter, advance,
auto-advance and skip-seen. Pure state driven by ``update(dt)``; no drawing.
"""

from __future__ import annotations

from collections import deque

from game.app.settings import Settings

Line = tuple[str, str]
#: How long a seen line stays when skipping through seen lines, seconds.
SKIP_HOLD = 0.18


class LineReader:
    """Queue of ``(speaker name, text)`` lines and the typewriter of the current one.

    Args:
        settings: text speed, auto-advance and skip-seen are read live from it.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.current: Line | None = None
        self.queue: deque[Line] = deque()
        self.seen: set[Line] = set()
        self.shown = 0.0
        self.hold = 0.0
        #: Bumped whenever the visible text changes (for redraw caches and tests).
        self.version = 0
        self._was_seen = False

    # -- feeding -----------------------------------------------------------------
    def push(self, lines: list[Line], replace: bool = True) -> None:
        """Show ``lines`` next; ``replace`` drops what was still queued (a new turn)."""
        if not lines:
            return
        if replace:
            self.queue.clear()
            self.current = None
        self.queue.extend(lines)
        if self.current is None:
            self._next()

    def grow(self, old: Line, new: Line) -> None:
        """Line ``old`` goes on as ``new`` (a reply streaming in, sentence by sentence): the
        typewriter keeps its place; if ``old`` is no longer shown or queued, ``new`` queues."""
        if self.current == old:
            self.current = new
            self.version += 1
            return
        for i, line in enumerate(self.queue):
            if line == old:
                self.queue[i] = new
                return
        self.push([new], replace=False)

    def rewrite(self, new: dict[Line, Line]) -> None:
        """Lines the author changed (a hot reload): shown and queued lines become their new
        text in place; a changed current line shows whole."""
        if self.current in new:
            self.current = new[self.current]
            self.shown = float(len(self.current[1]))
            self.seen.add(self.current)
        self.queue = deque(new.get(line, line) for line in self.queue)
        self.version += 1

    def settle(self) -> None:
        """A turn passed with no new line: finish the current one and drop stale queued ones."""
        if self.queue or not self.complete:
            self.queue.clear()
            if self.current is not None:
                self.shown = float(len(self.current[1]))
                self.seen.add(self.current)
            self.version += 1

    def reset_to(self, line: Line | None) -> None:
        """Show ``line`` complete, with nothing queued (after a rollback or a load)."""
        self.queue.clear()
        self.current = line
        self.shown = float(len(line[1])) if line else 0.0
        self.hold = 0.0
        self._was_seen = True
        if line:
            self.seen.add(line)
        self.version += 1

    def _next(self) -> None:
        self.current = self.queue.popleft() if self.queue else self.current
        self.shown = 0.0
        self.hold = 0.0
        self._was_seen = self.current is not None and self.current in self.seen
        if self.current is not None and (self.settings.text_speed <= 0 or self._skip_this()):
            self.shown = float(len(self.current[1]))
        self.version += 1

    # -- reading -------------------------------------------------------------------
    @property
    def complete(self) -> bool:
        """Whether the current line is fully shown."""
        return self.current is None or self.shown >= len(self.current[1])

    @property
    def more(self) -> bool:
        """Whether lines wait after the current one."""
        return bool(self.queue)

    @property
    def visible(self) -> str:
        """The revealed part of the current line's text."""
        if self.current is None:
            return ""
        return self.current[1][: int(self.shown)]

    def _skip_this(self) -> bool:
        """Whether skip-seen applies: the current line had been read before it came up."""
        return self.settings.skip_seen and self._was_seen

    # -- driving -------------------------------------------------------------------
    def advance(self) -> bool:
        """The player asks for more: finish the line, or go to the next one.

        Returns:
            Whether anything changed.
        """
        if self.current is None:
            return False
        if not self.complete:
            self.shown = float(len(self.current[1]))
            self.seen.add(self.current)
            self.version += 1
            return True
        if self.queue:
            self._next()
            return True
        return False

    def update(self, dt: float) -> None:
        """Let ``dt`` seconds pass: type, then auto-advance or skip when allowed."""
        if self.current is None:
            return
        text = self.current[1]
        if not self.complete:
            before = int(self.shown)
            speed = self.settings.text_speed
            self.shown = float(len(text)) if speed <= 0 else min(len(text), self.shown + speed * dt)
            if int(self.shown) != before:
                self.version += 1
            if self.complete:
                self.seen.add(self.current)
            return
        self.seen.add(self.current)
        if not self.queue:
            return
        self.hold += dt
        if self._skip_this() and self.hold >= SKIP_HOLD:
            self._next()
        elif self.settings.auto_advance and self.hold >= self.settings.auto_delay(text):
            self._next()

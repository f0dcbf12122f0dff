"""Hot reload in the window: F6, and by itself with ``watch``.

:class:`Reloader` asks the session to reload its story (:meth:`game.session.Session.reload`:
the state is kept and resumes by stable ids) and, with ``watch``, polls a
:class:`game.session.reload.StoryWatcher` over the story's files (the main file, its
includes, ``worldloom.toml``, character cards) every :data:`POLL_SECONDS` of window
time. A broken file is not a crash: the old story keeps playing and the window
shows the first error as ``file:line:col: CODE message`` until a reload succeeds. An edit
with any lint error is refused (``strict``), as ``worldloom play`` refuses to start such a story.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from game.errors import WorldloomError
from game.session import Session
from game.session.reload import ReloadResult, StoryWatcher, story_source, watch_paths
from game.state import Event
from game.story.lint import Diagnostic

#: How often ``watch`` looks at the story's files, seconds of window time.
POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Reloaded:
    """What a reload did.

    Attributes:
        ok: the new file is in use (the last one, when several changed).
        events: events of the reloads (already recorded in the session's log).
        message: the first error as ``file:line:col: CODE message`` when not ``ok``.
        names: the files reloaded (``story.yaml``, ``eve.yaml``).
    """

    ok: bool
    events: list[Event] = field(default_factory=list)
    message: str = ""
    names: tuple[str, ...] = ()


def short_where(where: str) -> str:
    """``where`` with its file path made relative to the current folder when it is inside it."""
    path, sep, rest = where.partition(":")
    try:
        rel = Path(path).resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        return where
    return f"{rel}{sep}{rest}"


def first_error(diagnostics: list[Diagnostic]) -> str:
    """The first error (else the first finding) as ``file:line:col: CODE message``."""
    if not diagnostics:
        return "the story did not load"
    d = next((d for d in diagnostics if d.severity == "error"), diagnostics[0])
    return f"{short_where(d.where)}: {d.code} {d.message}" if d.where else f"{d.code} {d.message}"


class Reloader:
    """Reloads ``session``'s story on request, and watches its files when ``watch`` is on.

    Args:
        session: the session.
        watch: poll the story's files (:meth:`poll`).
        interval: seconds of window time between two looks.
    """

    def __init__(self, session: Session, watch: bool = False, interval: float = POLL_SECONDS) -> None:
        self.session = session
        self.watch = watch
        self.interval = interval
        self.watcher: StoryWatcher | None = None
        #: Why watching stopped (the story came from no file worldloom can find again).
        self.watch_error = ""
        self._next = 0.0

    @property
    def available(self) -> bool:
        """Whether the session can reload its story."""
        return callable(getattr(self.session, "reload", None))

    def _paths(self) -> list[Path]:
        return watch_paths(self.session.story, story_source(self.session))

    def poll(self, now: float) -> list[Path]:
        """With ``watch``: the story's files that changed since the last look (at most every
        :attr:`interval` seconds of ``now``; a few ``stat`` calls, fine on the UI thread)."""
        if not self.watch or now < self._next or self.watch_error:
            return []
        self._next = now + self.interval
        try:
            if self.watcher is None:
                self.watcher = StoryWatcher(self._paths())
                return []
            return list(self.watcher.changed_paths) if self.watcher.changed() else []
        except (WorldloomError, OSError) as exc:
            self.watch_error = str(exc)
            return []

    def reload(self, changed: list[Path] | None = None) -> Reloaded:
        """Reload now (on the input worker: it reads and lints files). Never raises for a
        broken file: the result says what is wrong, and the old story plays on.

        Args:
            changed: files the watcher saw change: the story is reloaded once if any of them
                is one of its files, each changed character card on its own; ``None`` (F6):
                the story.
        """
        targets: list[Path | None] = [None]
        if changed:
            try:
                story_files = set(watch_paths(self.session.story, story_source(self.session), cards=False))
            except WorldloomError:
                story_files = set()
            cards = [p for p in changed if p not in story_files]
            targets = ([None] if len(cards) < len(changed) else []) + list(cards)
        events: list[Event] = []
        names: list[str] = []
        last: ReloadResult | None = None
        for target in targets:
            last = self.session.reload(target, strict=True)  # as at the start: any lint error keeps the old story
            events += last.events
            if not last.ok:
                return Reloaded(False, events, first_error(last.diagnostics), tuple(names))
            names.append(last.path.name if last.path else "story")
        if self.watcher is not None:
            try:
                self.watcher.watch(self._paths())  # an include may have come or gone
            except WorldloomError:
                pass
        return Reloaded(True, events, names=tuple(names))

"""Hot reload: put an edited story (or character card) under a running session.

UI-free: the window binds F6 to :meth:`game.session.Session.reload` and, with
``--watch``, polls a :class:`StoryWatcher` once a frame or so. A reload

1. checks the new file first: a story that does not load, or has a lint error that
   would break play (:data:`FATAL_CODES`; every error with ``strict=True``), is not
   used: the result carries the :class:`~game.story.lint.Diagnostic` list and the
   old story keeps running;
2. swaps the story, the runtime and the director's story under the session lock
   (:meth:`Session.reload` runs :func:`prepare_reload`, the slow load and lint, off
   the lock, then :func:`fit_session` and the swap under it);
3. keeps the :class:`~game.state.GameState`, resuming by stable ids: the same
   scene id (its entry lines are not replayed: the next entry shows the new text),
   choices by id (once-only choices stay used), variables by name (new ones get
   their defaults, removed ones go, a value whose type changed takes the new
   default), items and characters by id. If the scene is gone it restarts at the
   start scene, as loading a save of an older story does: both use
   :func:`game.session.fit.fit_game`, which fits the checkpoints too. An Ink story
   resumes inside bink from its saved state, or at the start of its knot when the
   recompiled story no longer fits that state;
4. records a ``reload`` event (plus any ``warning``) and queues a fresh request so
   the world picks up changed places and prompts.

A card file goes to every session extension or hook with an
``on_card_reload(card, path)`` method; a story reload calls ``on_story_reload(story)``
on them the same way.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from game.errors import CardError, StoryError, WorldloomError
from game.lint import lint
from game.locale import use_story
from game.session.fit import fit_game
from game.state import Event, GameState
from game.state.saves import Checkpoint
from game.story.diagnostics import CODES
from game.story.ink import InkStory, is_ink_path, load_ink
from game.story.ink_runtime import runtime_for
from game.story.lint import Diagnostic
from game.story.loader import load_story, read_sources, story_file
from game.story.runtime import StoryRuntime
from game.story.strings import localised, translation_for

if TYPE_CHECKING:
    from game.session import Session
    from game.story.story import Story

#: Lint codes that mean the story would stop with an error while played (each code's
#: :attr:`~game.story.diagnostics.Code.breaks_play`): a reload with one of these at ``error`` is refused.
FATAL_CODES = frozenset(c.code for c in CODES.values() if c.breaks_play)
CARD_SUFFIXES = (".yaml", ".yml", ".json", ".png")
#: The file each live session's story was last loaded or reloaded from.


@dataclass
class ReloadResult:
    """What :meth:`Session.reload` did.

    Attributes:
        ok: the new file is in use (``False``: nothing changed, see ``diagnostics``).
        events: what happened (``reload``, ``warning``, a restart's ``scene`` and lines),
            already recorded in the session's log.
        diagnostics: lint findings for the new file (errors when ``ok`` is false; with
            ``ok`` true, any warnings worth showing).
        path: the file that was reloaded.
    """

    ok: bool
    events: list[Event] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    path: Path | None = None

    @property
    def message(self) -> str:
        """One line for a toast: ``reloaded story.yaml`` or the first error."""
        if self.ok:
            return f"reloaded {self.path.name if self.path else 'story'}"
        first = next((d for d in self.diagnostics if d.severity == "error"), None)
        return first.format() if first else "reload failed"


class StoryWatcher:
    """Polls files' modification times (no threads, no extra packages).

    ``changed()`` is true once after any watched file was written, created or
    removed since the last call; :attr:`changed_paths` says which. Cheap enough to
    call every frame for a few dozen files (one ``stat`` each); ``interval`` (seconds,
    monotonic clock) rate-limits the stats if it is called more often than that.

    Args:
        paths: files to watch (missing ones are watched for creation).
        interval: least time between two polls.
    """

    def __init__(self, paths: Iterable[str | Path], interval: float = 0.0) -> None:
        self.paths = [Path(p) for p in paths]
        self.interval = interval
        self.changed_paths: list[Path] = []
        self._last_poll = 0.0
        self._stamps = {p: self._stamp(p) for p in self.paths}

    @staticmethod
    def _stamp(path: Path) -> tuple[int, int] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def changed(self) -> bool:
        """Whether any watched file changed since the last call (see :attr:`changed_paths`)."""
        now = time.monotonic()
        if self.interval and now - self._last_poll < self.interval:
            return False
        self._last_poll = now
        self.changed_paths = []
        for p in self.paths:
            stamp = self._stamp(p)
            if stamp != self._stamps.get(p):
                self._stamps[p] = stamp
                self.changed_paths.append(p)
        return bool(self.changed_paths)

    def watch(self, paths: Iterable[str | Path]) -> None:
        """Replace the watched files (after a reload added an include, say)."""
        self.paths = [Path(p) for p in paths]
        self._stamps = {p: self._stamps.get(p, self._stamp(p)) for p in self.paths}


def story_source(session: Session) -> Path:
    """The file a session's story was loaded from (as far as can be known).

    Raises:
        StoryError: the story was not loaded from a file worldloom can find again.
    """
    if session.source is not None:
        return session.source
    path = getattr(session.story, "path", None)
    if isinstance(path, Path):
        return path
    candidate = session.story.folder / "story.yaml"
    if candidate.is_file():
        return candidate
    raise StoryError("cannot tell which file this story came from", where=str(session.story.folder),
                     hint="pass the story path to reload()")


def watch_paths(story: Story, story_path: str | Path | None = None, cards: bool = True) -> list[Path]:
    """Files whose change should reload ``story``: the main file, its includes,
    ``worldloom.toml``, and (``cards``) its characters' card files."""

    if isinstance(story, InkStory):
        return [story.path]
    out: list[Path] = []
    main = story_file(story_path) if story_path else story.folder / "story.yaml"
    try:
        _, order, _ = read_sources(main)
        out += [(main.parent / name) for name in order]
    except StoryError:
        out.append(main)
    out.append(story.folder / "worldloom.toml")
    if cards:
        for member in story.model.cast.values():
            if member.card:
                out.append(story.folder / member.card)
        chars = story.folder / "characters"
        if chars.is_dir():
            out += sorted(p for p in chars.iterdir() if p.suffix.lower() in CARD_SUFFIXES)
    seen: set[Path] = set()
    return [p for p in out if not (p in seen or seen.add(p))]  # type: ignore[func-returns-value]


def _diag(where: str, message: str, hint: str, code: str = "WL018") -> Diagnostic:
    return Diagnostic(where, code, "error", message, hint or CODES[code].hint)


def _load_diags(exc: StoryError, path: str | Path) -> list[Diagnostic]:
    """One WL018 diagnostic per problem of a story that does not load."""
    hint = "" if exc.problems[1:] else exc.hint
    return [_diag(where or str(path), CODES["WL018"].message.format(name=why), hint) for where, why in exc.problems]


def check_story(path: str | Path, strict: bool = False) -> tuple[Story | None, list[Diagnostic]]:
    """Load and lint the story at ``path`` and its cast's cards: ``(story or None if unusable, diagnostics)``.

    Never raises for a broken story; the diagnostics say what is wrong, where.
    """

    try:
        if is_ink_path(path) or str(path).endswith(".ink"):
            return load_ink(path), []
        diags = lint(path)  # the story and its cast's cards: a card that does not load breaks play too
    except StoryError as exc:
        return None, _load_diags(exc, path)
    fatal = [d for d in diags if d.severity == "error" and (strict or d.code in FATAL_CODES)]
    if fatal:
        return None, diags
    try:
        story = load_story(path)
    except StoryError as exc:
        return None, diags + _load_diags(exc, path)
    return localised(story, translation_for(story)), diags  # the names and titles of $WORLDLOOM_LANG


def _notify(session: Session, method: str, *args: Any) -> list[Event]:
    """Call ``method(*args)`` on every extension and hook that has it; collect returned events."""
    out: list[Event] = []
    for target in [*session.extensions.values(), *session.steps]:
        fn = getattr(target, method, None)
        if callable(fn):
            got = fn(*args)
            if isinstance(got, list):
                out += [e for e in got if isinstance(e, Event)]
    return out


def _is_card(session: Session, target: Path, story_files: set[Path]) -> bool:

    if target.suffix.lower() not in CARD_SUFFIXES or target in story_files or is_ink_path(target):
        return False
    cards = {(session.story.folder / m.card).resolve() for m in session.story.model.cast.values() if m.card}
    return target.parent.name == "characters" or target.resolve() in cards


@dataclass
class PreparedReload:
    """A reload that was checked but not applied (see :func:`prepare_reload`).

    Attributes:
        result: what to give back; when ``result.ok`` is false nothing is to be applied.
        story: the new story (a story reload), or ``None``.
        card: the new character card (a card reload), or ``None``.
    """

    result: ReloadResult
    story: Story | None = None
    card: Any = None

    def failed(self, exc: WorldloomError) -> ReloadResult:
        """The result when the new story fails on resuming (the old one keeps running)."""
        where = exc.where or str(self.result.path or "")
        return ReloadResult(False, [], [*self.result.diagnostics, _diag(where, f"cannot resume: {exc.why}", exc.hint)],
                            self.result.path)

    def done(self, events: list[Event]) -> ReloadResult:
        """The result once applied with ``events``."""
        return ReloadResult(True, events, self.result.diagnostics, self.result.path)


@dataclass
class Swap:
    """The session's new parts after a reload (see :func:`fit_session`); ``runtime`` is
    ``None`` for a card reload (the story stays)."""

    runtime: StoryRuntime | None
    state: GameState
    checkpoints: list[Checkpoint]
    events: list[Event]


def prepare_reload(session: Session, path: str | Path | None = None, strict: bool = False) -> PreparedReload:
    """Read and check the new file; changes nothing (the slow part: run it off the lock).

    ``path`` is the story (folder, ``story.yaml``, an included file, ``worldloom.toml``
    or ``.ink.json``) or a character card; ``None`` reloads the story's own file.
    Never raises for a broken file: the result carries the diagnostics.
    """

    try:
        source: Path | None = story_source(session)
    except StoryError as exc:
        if path is None:
            return PreparedReload(ReloadResult(False, [], [_diag(exc.where, exc.why, exc.hint)], None))
        source = None
    target = Path(path) if path is not None else source
    assert target is not None
    story_files: set[Path] = set()
    if source is not None and not isinstance(session.story, InkStory):
        try:
            story_files = set(watch_paths(session.story, source, cards=False))
        except StoryError:
            story_files = {source}
    if path is not None and _is_card(session, target, story_files):
        # imported for a card reload only: game.cast is ~0.1 s of CPU of imports that a story
        # without cards never needs (start-up cost only; game.cast does not import game.session)
        from game.cast.card_io import load_card

        try:
            card = load_card(target)
        except CardError as exc:
            return PreparedReload(ReloadResult(False, [], [_diag(exc.where or str(target),
                                                                 f"card does not load: {exc.why}",
                                                                 exc.hint or "fix the card file")], target))
        return PreparedReload(ReloadResult(True, [], [], target), card=card)
    main = source if source is not None and target in story_files else target
    story, diags = check_story(main, strict)
    return PreparedReload(ReloadResult(story is not None, [], diags, main), story=story)


def fit_session(session: Session, prepared: PreparedReload) -> Swap:
    """What the session becomes with the prepared story or card (call it under the session's lock).

    Computes the new runtime, the state and checkpoints fitted by stable ids
    (:func:`game.session.fit.fit_game`, as a load does) and the events (``reload``
    first); changes nothing on the session itself. The new runtime keeps the agents' policy
    (:meth:`~game.story.runtime.StoryRuntime.use_policy`). Extensions and hooks with
    ``on_story_reload(story)`` / ``on_card_reload(card, path)`` are told here.

    Raises:
        game.errors.WorldloomError: the new story fails on resuming (the session keeps the old one).
    """
    path = prepared.result.path or Path()
    now = session.state
    if prepared.story is None:
        card_id = str(getattr(prepared.card, "id", ""))
        events = [Event(kind="reload", turn=now.turn, frame=now.frame, scene=now.scene, text=f"reloaded {path.name}",
                        ids={"card": card_id}, data={"path": str(path)})]
        events += _notify(session, "on_card_reload", prepared.card, path)
        return Swap(None, now, session.checkpoints, events)
    story = prepared.story
    runtime = runtime_for(story)
    runtime.use_policy(session.runtime.policy)  # the agents keep their dialogue model (or recorded picks)
    fitted = fit_game(runtime, now, session.checkpoints, "reload")
    state = fitted.state
    head = Event(kind="reload", turn=state.turn, frame=state.frame, scene=state.scene, text=f"reloaded {path.name}",
                 ids={"story": story.id}, data={"path": str(path), "digest": story.digest})
    events = [head, *fitted.events, *_notify(session, "on_story_reload", story)]
    use_story(translation_for(story))  # the reloaded catalogue translates the game's own words first
    return Swap(runtime, state, fitted.checkpoints, events)


__all__ = ["FATAL_CODES", "PreparedReload", "ReloadResult", "StoryWatcher", "Swap", "check_story", "fit_session",
           "prepare_reload", "story_source", "watch_paths"]

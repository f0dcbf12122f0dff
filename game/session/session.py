"""`Session`: the one place a turn happens.

intent -> story runtime -> (cast) -> director -> backend -> save. The window,
the headless runner and the tests all drive a game through this class; it knows
nothing of pygame. See ``docs/api.md``.

Threading: :meth:`submit`, :meth:`rollback`, :meth:`roll_forward`, :meth:`save`, :meth:`load` may be
called from the UI thread while another thread iterates :meth:`stream`; a lock
guards the state. A :meth:`submit` while a chunk streams pre-empts it: the
stream stops at the next block and the new request goes out at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from game.errorbank import GuardedBackend
from game.errors import BackendError, InputError, SaveError, StoryRuntimeError, WorldloomError
from game.images import validate_image
from game.session.fit import Fitted, check_state, fit_game
from game.session.reload import ReloadResult, fit_session, prepare_reload
from game.session.rules import Rules
from game.session.steps import Begins, Observes, Prepares, Progress, Step, Turn
from game.state import AnyIntent, Event, EventLog, GameState, Move, Wait, takes_checkpoint
from game.state.forward import LEFT, Forward
from game.state.intents import Choose, Give
from game.state.saves import (
    PREVIOUS,
    Checkpoint,
    SaveData,
    list_saves,
    previous_path,
    read_save,
    slot_path,
    write_save,
)
from game.story.agents import AgentPolicy
from game.story.ink_runtime import runtime_for
from game.story.loader import load_story
from game.story.runtime import StoryRuntime
from game.story.story import Story
from game.words import counted
from game.world.backends import make_backend
from game.world.chunking import ChunkPolicy
from game.world.director import CastView, Director
from game.world.protocol import Backend, FrameChunk, WorldRequest, interrupt

#: How many checkpoints rollback keeps.
MAX_CHECKPOINTS = 200


class Extension(Protocol):
    """Something beside ``GameState`` that saves, loads and rolls back with the game
    (a character's memory, say). Its snapshot goes into the save's ``extra[name]``
    and into every checkpoint, so a rollback after a load works as one before it;
    it must be JSON-able and hold no derived data."""

    def save_extra(self) -> dict[str, Any]:
        """A snapshot of the extension now (JSON-able; the caller never changes it)."""
        ...

    def restore_extra(self, data: dict[str, Any] | None) -> Callable[[], None]:
        """Check ``data`` (a :meth:`save_extra` snapshot, or ``None`` for a save made
        without this extension: start afresh) and return the function that puts it
        in place. Changes nothing itself; the returned function must not fail.

        Raises:
            game.errors.SaveError: ``data`` is malformed (the game is left as it was).
        """
        ...


@dataclass(frozen=True)
class ChoiceView:
    """A choice as the player sees it: 1-based ``number``, stable ``id``, ``text``."""

    number: int
    id: str
    text: str


@dataclass(frozen=True)
class View:
    """Everything a window needs to draw the non-world part of the screen."""

    title: str
    scene: str
    scene_title: str
    location: str
    lines: tuple[tuple[str, str], ...]
    choices: tuple[ChoiceView, ...]
    inventory: tuple[tuple[str, str], ...]
    characters: tuple[tuple[str, str], ...]
    ending: str
    notice: str
    turn: int
    frame: int
    present: tuple[tuple[str, float], ...] = ()
    camera_x: float = 0.0


@dataclass
class TurnResult:
    """What :meth:`Session.submit` did: the events and the request it queued."""

    events: list[Event]
    request: WorldRequest | None
    checkpoint: bool = False
    notices: list[str] = field(default_factory=list)


def default_save_dir(story_id: str) -> Path:
    """``~/.local/share/worldloom/saves/<story id>``."""
    return Path.home() / ".local" / "share" / "worldloom" / "saves" / story_id


class Session:
    """One playthrough of one story on one backend; the one place a turn happens.

    A turn (:meth:`submit`) is: the steps that prepare do so off the lock
    (:class:`~game.session.steps.Prepares`), then, under the lock, a checkpoint if the
    intent takes one, the rules (:class:`~game.session.rules.Rules`), each of ``steps`` in
    order, the event log (and every :class:`~game.session.steps.Observes` step), and the
    director's request. Build a whole game with :func:`game.session.assembly.open_game`.

    Args:
        story: a loaded :class:`Story`.
        backend: the backend stack, or a registered name (default ``procedural``).
        seed: seed of every random draw (story and backend).
        save_dir: where saves go (default :func:`default_save_dir`).
        session_id: backend session id.
        policy: chunk policy (default :class:`ChunkPolicy`).
        steps: the turn's steps after the rules, in order (:class:`~game.session.steps.Step`).
        extensions: name -> what saves, loads and rolls back with the game under
            ``extra[name]`` (:class:`Extension`).
        cast: character id -> the director's view of her (identity anchor, expression).
        agents: what picks for agents with ``fallback: model`` when no rule applies
            (:class:`~game.story.agents.AgentPolicy`: the dialogue model, or a replay's
            recorded picks; ``None``: they wait). A reload keeps it.
        source: the file the story was loaded from (what :meth:`reload` re-reads).

    Raises:
        game.errors.BackendError: the backend could not be started.
    """

    def __init__(self, story: Story, backend: Backend | str = "procedural", *, seed: int = 0,
                 save_dir: str | Path | None = None, session_id: str = "main",
                 policy: ChunkPolicy | None = None,
                 steps: Sequence[Step] = (), extensions: Mapping[str, Extension] | None = None,
                 cast: Mapping[str, CastView] | None = None, source: str | Path | None = None,
                 agents: AgentPolicy | None = None) -> None:
        self.story = story
        #: :class:`StoryRuntime`, or :class:`game.story.ink_runtime.InkRuntime` for an Ink story.
        self.runtime: StoryRuntime = runtime_for(story)
        self.runtime.use_policy(agents)
        self._lock = threading.RLock()
        self.notice = ""
        self.backend: Backend = make_backend(backend) if isinstance(backend, str) else backend
        self.caps = self.backend.capabilities()
        self.seed = seed
        self.save_dir = Path(save_dir) if save_dir else default_save_dir(story.id)
        self.steps: tuple[Step, ...] = tuple(steps)
        self.state: GameState = self.runtime.new_state(seed)
        for step in self.steps:
            if isinstance(step, Begins):
                step.begin(self.state)
        self.log = EventLog()
        self.checkpoints: list[Checkpoint] = []
        #: the path a rollback undid, to roll forward along (:mod:`game.state.forward`).
        self.forward = Forward()
        self.director = Director(story, self.caps, session_id, policy, cast=cast)
        self.rules = Rules(lambda path: validate_image(path).path)
        #: name -> state kept beside GameState (saved in ``extra``).
        self.extensions: dict[str, Extension] = dict(extensions or {})
        #: the story file :meth:`reload` re-reads (``None``: the story's own file).
        self.source = Path(source) if source is not None else None
        self._pending: WorldRequest | None = None
        self._listeners: list[Callable[[Event], None]] = [s.observe for s in self.steps
                                                          if isinstance(s, Observes) and callable(s.observe)]
        self._started = False
        #: seq of the request being streamed now (a submit meanwhile pre-empts it), or None.
        self._streaming: int | None = None
        self._watch_notices()

    @classmethod
    def from_path(cls, path: str | Path, backend: Backend | str = "procedural", **kw: Any) -> Session:
        """Load the story at ``path`` and make a session (see :class:`Session`)."""
        return cls(load_story(path), backend, **kw)

    def _watch_notices(self) -> None:
        """Show the notices of every guard in the backend stack (``world model unreachable``...)."""
        layer: Any = self.backend
        seen = 0
        while layer is not None and seen < 8:
            if isinstance(layer, GuardedBackend):
                layer.on_notice = self.show_notice
                self.notice = layer.notice
            layer = getattr(layer, "inner", None)
            seen += 1

    def show_notice(self, text: str) -> None:
        """Show ``text`` as the game's notice line (the guard's "world model unreachable"...)."""
        with self._lock:
            self.notice = text

    def extension(self, name: str) -> Extension | None:
        """The extension saved under ``extra[name]`` (the cast under ``"cast"``), if any."""
        return self.extensions.get(name)

    # -- listening -------------------------------------------------------------
    def on_event(self, fn: Callable[[Event], None]) -> None:
        """Call ``fn(event)`` for every event from now on (in the calling thread): a view's feed."""
        self._listeners.append(fn)

    def _record(self, events: list[Event]) -> list[Event]:
        for e in events:
            self.log.append(e)
            for fn in self._listeners:
                fn(e)
        self.state.log_offset = len(self.log)
        return events

    # -- playing ---------------------------------------------------------------
    def start(self) -> TurnResult:
        """Enter the start scene and queue the opening request.

        Raises:
            game.errors.BackendError: the backend refused the session.
        """
        with self._lock:
            if self._started:
                raise InputError("session already started")
            self._started = True
            events = self._record(self._missing_assets() + self.runtime.begin(self.state))
            self.backend.start(self.director.session_start(self.state, self.seed))
            request = self.director.build(self.state, events, self.director.cause(events, "start"))
            self._pending = request
            return TurnResult(events, request)

    def _missing_assets(self) -> list[Event]:
        """A warning event for each image the story names that is not there (play goes on)."""
        m = self.story.model
        named = [*m.world.anchors, *(i.image for i in m.items.values()), *(c.image for c in m.cast.values())]
        missing = sorted({p for p in named if p and not (self.story.folder / p).is_file()})
        if missing:
            self.notice = f"missing image(s): {', '.join(missing)} (drawn as placeholders; see worldloom lint)"
        return [Event(kind="warning", text=f"missing image {p!r} (relative to {self.story.folder}); "
                      "a placeholder is drawn", ids={"asset": p}) for p in missing]

    def _turn(self, state: GameState, intent: AnyIntent, progress: Progress | None = None) -> Turn:
        return Turn(self.story, self.runtime, state, intent, takes_checkpoint(intent), self.seed, self.caps.fps,
                    self.director.session_id, progress)

    def submit(self, intent: AnyIntent, *, audio: str = "", progress: Progress | None = None) -> TurnResult:
        """Apply one intent and queue the world request it causes.

        The steps that prepare (a character writing her reply) do so first, off the lock,
        on a copy of the state; their partial output goes to ``progress`` as it comes. A
        checkpoint is taken before every intent :func:`~game.state.takes_checkpoint` names,
        so :meth:`rollback` can undo it. ``audio`` is the path of the player's voice clip,
        sent with the request as its audio cue. Submitted while a chunk streams, the new
        request pre-empts it: a backend that is :class:`~game.world.protocol.Interruptible`
        abandons the block in flight, any other is cut short after it.

        Raises:
            game.errors.InputError: the intent is not possible here (nothing changes).
            game.errors.StoryRuntimeError: the story is broken at this point (state restored).
        """
        self._prepare(intent, progress)
        with self._lock:
            if not self._started:
                self.start()
            if self.runtime.is_ending(self.state) and not isinstance(intent, Move | Wait):
                raise InputError("the story has ended", hint="load a save or roll back")
            before = self.state.copy_state()
            camera_from = self.state.camera_x
            turn = self._turn(self.state, intent, progress)
            try:
                events = self.rules.apply(turn, intent)
                for step in self.steps:
                    events = events + step.on_turn(turn, intent, events)
            except (InputError, StoryRuntimeError):
                self.state = before
                raise
            if turn.checkpoint:
                self.checkpoints.append(self._checkpoint(self._label(intent, before), before))
                del self.checkpoints[:-MAX_CHECKPOINTS]
            self._record(events)
            # the path ahead stays only if this turn did what its next step did (else: another path)
            self.forward.after_turn(self._label(intent, before), self.state, self._extras)
            warned = [e.text for e in events if e.kind == "warning"]
            if warned:
                self.notice = warned[-1]
            seconds = intent.seconds if isinstance(intent, Move | Wait) else None
            direction = intent.direction if isinstance(intent, Move) else ""
            fallback = "wait" if isinstance(intent, Wait) else "say"
            cause = self.director.cause(events, fallback, seconds, direction, camera_from)
            # a dropped image goes to the backend only when the world took it (not when refused)
            refs = tuple(str(e.data.get("image", "")) for e in events
                         if e.kind == "edit" and e.ids.get("edit") == "add_reference")
            preempt = self._streaming is not None
            request = self.director.build(self.state, events, cause, references=refs, audio=audio, preempt=preempt)
            self._pending = request
            if preempt:  # the block in flight is abandoned where the backend can (else cut after it)
                interrupt(self.backend, self.director.session_id)
            return TurnResult(events, request, turn.checkpoint)

    def _prepare(self, intent: AnyIntent, progress: Progress | None) -> None:
        """The prepare phase: the rules on a copy of the state, under the lock (an Ink story
        has one bink story object, which the window's ``choices()`` also drives, and bink is
        not thread-safe), then every step that prepares sees that turn, off the lock (a
        refused intent prepares nothing)."""
        preparing = [s for s in self.steps if isinstance(s, Prepares) and s.prepares(intent)]
        if not preparing or not self._started:
            return
        with self._lock:
            ahead = self._turn(self.state.copy_state(), intent, progress)
            try:
                events = self.rules.apply(ahead, intent)
            except WorldloomError:
                return
        for step in preparing:
            step.prepare(ahead, intent, events)

    def _label(self, intent: AnyIntent, state: GameState) -> str:
        scene = self.story.model.scenes.get(state.scene)
        title = scene.title if scene and scene.title else state.scene
        if isinstance(intent, Choose):
            return f"{title}: {intent.choice_id}"
        if isinstance(intent, Give):
            return f"{title}: give {intent.item_id}"
        return f"{title}: {intent.type}"

    @property
    def started(self) -> bool:
        """Whether :meth:`start` (or a load) has happened."""
        return self._started

    @property
    def pending(self) -> WorldRequest | None:
        """The request waiting to be streamed, if any."""
        return self._pending

    def idle_request(self) -> WorldRequest:
        """A one-block continuation with no input (what plays between turns)."""
        with self._lock:
            return self.director.build(self.state, [], self.director.cause([], "idle"))

    def stream(self, request: WorldRequest | None = None) -> Iterator[FrameChunk]:
        """Stream the pending request (or ``request``, or an idle block).

        Yields blocks as the backend makes them and advances the frame clock. If a
        newer request is submitted meanwhile, stops after the current block
        (pre-emption); the caller then streams again.

        Raises:
            game.errors.BackendError: the backend failed (the story state is untouched).
        """
        with self._lock:
            if request is None:
                request, self._pending = self._pending, None
            if request is None:
                request = self.idle_request()
        try:
            self._streaming = request.seq
            for chunk in self.backend.generate(request):
                with self._lock:
                    self.state.frame += chunk.n_frames
                    if chunk.last:
                        self._streaming = None  # nothing is left to cut short
                yield chunk
                if self._pending is not None and self._pending.seq > request.seq:
                    return
        except BackendError:
            raise
        except Exception as exc:  # a backend bug must not take the game down
            raise BackendError(f"backend {self.caps.backend!r} failed: {exc}") from exc
        finally:
            if self._streaming == request.seq:
                self._streaming = None

    # -- what the player sees ------------------------------------------------
    def choices(self) -> list[ChoiceView]:
        """The choices available now, numbered from 1."""
        with self._lock:
            return [ChoiceView(i + 1, c.id, self.runtime.interpolate(self.state, c.text))
                    for i, c in enumerate(self.runtime.available_choices(self.state))]

    def history(self, n: int = 50) -> list[tuple[str, str]]:
        """The last ``n`` lines as ``(speaker name, text)``."""
        with self._lock:
            out = []
            for e in self.log.since(max(0, len(self.log) - 4 * n)):
                if e.kind in ("line", "say", "reply") and e.text:
                    out.append((self.speaker_name(e.speaker), e.text))
            return out[-n:]

    def speaker_name(self, speaker: str) -> str:
        if speaker in ("", "narrator"):
            return ""
        if speaker == "player":  # the story's catalogue has it (builtin.you)
            return self.runtime.say_builtin("builtin.you")
        c = self.story.model.cast.get(speaker)
        return c.name if c else speaker

    def view(self) -> View:
        """A snapshot for drawing (safe to call from any thread)."""
        with self._lock:
            m = self.story.model
            scene = m.scenes.get(self.state.scene)
            loc = m.locations.get(self.state.location)
            here = self.runtime.present(self.state)  # agents come and go
            return View(
                title=m.title,
                scene=self.state.scene,
                scene_title=(scene.title if scene else "") or (loc.name if loc else ""),
                location=loc.name if loc else self.state.location,
                lines=tuple(self.history(8)),
                choices=tuple(self.choices()),
                inventory=tuple((i, m.items[i].name) for i in self.state.inventory if i in m.items),
                characters=tuple((c, m.cast[c].name) for c in here if c in m.cast),
                ending=scene.ending if scene else "",
                notice=self.notice,
                turn=self.state.turn,
                frame=self.state.frame,
                present=tuple(here.items()),
                camera_x=self.state.camera_x,
            )

    # -- checkpoints, saves ------------------------------------------------------
    def _checkpoint(self, label: str, state: GameState) -> Checkpoint:
        """A checkpoint of ``state`` with every extension's snapshot as it is now; its difference
        from the last checkpoint is worked out now (a turn's worth), so no save has to."""
        cp = Checkpoint(label, state, self._extras())
        cp.delta_from(self.checkpoints[-1] if self.checkpoints else None)
        return cp

    def _restore_extras(self, extras: dict[str, Any], section: str, where: str,
                        missing_is_fresh: bool = False) -> list[Callable[[], None]]:
        """Check every extension's snapshot in ``extras``; the functions that put them in place.

        An extension missing from ``extras`` starts afresh when ``missing_is_fresh`` (a
        save made without it), else is left as it is (a checkpoint of a schema 1 save,
        or one taken before the extension was added).

        Raises:
            game.errors.SaveError: a snapshot is malformed (names ``section.<extension>``).
        """
        commits = []
        for name, ext in self.extensions.items():
            if name not in extras and not missing_is_fresh:
                continue
            try:
                commits.append(ext.restore_extra(extras.get(name)))
            except (WorldloomError, KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
                why = exc.why if isinstance(exc, WorldloomError) else f"{type(exc).__name__}: {exc}"
                raise SaveError(f"save is corrupt ({section}.{name}: {why})", where=where, hint=PREVIOUS) from exc
        return commits

    def rollback(self, n: int = 1) -> list[Event]:
        """Undo the last ``n`` choices (restore the ``n``-th last checkpoint: the state and
        every extension's snapshot). The frame clock never goes back.

        Raises:
            game.errors.InputError: there is nothing to roll back to.
            game.errors.SaveError: an extension refused its snapshot (nothing changed).
        """
        with self._lock:
            if n < 1 or n > len(self.checkpoints):
                raise InputError(f"cannot roll back {n}: {counted(len(self.checkpoints), 'checkpoint')}")
            cp = self.checkpoints[-n]
            commits = self._restore_extras(cp.extras, f"checkpoints.{len(self.checkpoints) - n}.extra", "")
            left = Checkpoint(LEFT, self.state, self._extras())
            self.forward.rolled_back(self.checkpoints[-n:], left, self.log.since(cp.state.log_offset))
            del self.checkpoints[-n:]
            frame = self.state.frame
            self.state = cp.state.copy_state()
            self.state.frame = frame
            self.state.reactions.clear()
            self.log.truncate(self.state.log_offset)
            for commit in commits:
                commit()
            self._pending = self.director.build(self.state, [], self.director.cause([], "rollback"))
            return [Event(kind="rollback", turn=self.state.turn, frame=frame, scene=self.state.scene,
                          text=cp.label, data={"n": n})]

    def _extras(self) -> dict[str, Any]:
        return {name: ext.save_extra() for name, ext in self.extensions.items()}

    def roll_forward(self, n: int = 1) -> list[Event]:
        """Redo ``n`` of the actions a rollback undid, exactly as they were (state, events and
        every extension's snapshot put back; nothing re-run), along :attr:`forward`. A turn
        discards the path ahead, unless it did what the next step did (the same choice, to the
        same state and snapshots: the rest of the path stays).
        Returns a ``rollforward`` event, then the events put back in the log (the lines shown again).

        Raises:
            game.errors.InputError: there is nothing (or less than ``n``) to roll forward to.
            game.errors.SaveError: an extension refused its snapshot (nothing changed).
        """
        with self._lock:
            if n < 1 or n > len(self.forward):
                raise InputError(f"cannot roll forward {n}: {counted(len(self.forward), 'step')} ahead",
                                 hint="roll forward goes back along a path a rollback undid")
            commits = self._restore_extras(self.forward.steps[n].extras, f"forward.steps.{n}.extra", "")
            back, target, events = self.forward.step(n)
            self.checkpoints.extend(back)
            del self.checkpoints[:-MAX_CHECKPOINTS]
            frame = self.state.frame
            self.state = target.state.copy_state()
            self.state.frame = frame
            self.state.reactions.clear()
            for e in events:
                self.log.append(e)
            for commit in commits:
                commit()
            self._pending = self.director.build(self.state, [], self.director.cause([], "rollback"))
            return [Event(kind="rollforward", turn=self.state.turn, frame=frame, scene=self.state.scene,
                          text=back[-1].label, data={"n": n}), *events]

    def save(self, slot: str, thumbnail: np.ndarray | None = None) -> Path:
        """Save the game, its event log, its checkpoints and every extension to ``slot``.

        Crash-safe: the slot holds a loadable file at every instant, the previous
        copy is kept as ``<slot>.json.bak`` (see :func:`game.state.saves.write_atomic`).

        Args:
            slot: ``[A-Za-z0-9_.-]{1,64}``.
            thumbnail: optional ``(H, W, 3)`` uint8 RGB image saved beside it as PNG.

        Raises:
            game.errors.SaveError: bad slot name, something not JSON, or the disk refused.
        """
        with self._lock:
            path = slot_path(self.save_dir, slot)
            data = SaveData(self.story.id, self.story.digest, self.state, self.log.upto(self.state.log_offset),
                            list(self.checkpoints), label=self.view().scene_title,
                            extra=self._extras(),
                            forward=self.forward.steps, forward_events=self.forward.events)
            write_save(path, data)
        if thumbnail is not None:
            from PIL import Image

            Image.fromarray(np.ascontiguousarray(thumbnail)).save(path.with_suffix(".png"))
        return path

    def has_previous(self, slot: str) -> bool:
        """Whether ``slot`` has a previous copy (``.json.bak``) to fall back to."""
        return previous_path(slot_path(self.save_dir, slot)).is_file()

    def saves(self) -> list[tuple[str, Path]]:
        """``(slot, path)`` of this story's saves, newest first."""
        return list_saves(self.save_dir)

    def load(self, slot: str, previous: bool = False) -> list[Event]:
        """Load ``slot`` (or its previous copy): all or nothing.

        Every section (state, event log, checkpoints, extensions) is checked before
        anything is replaced; if one fails, the running game is left exactly as it was.
        A save made before the story changed is fitted to it by stable ids, its
        checkpoints too (:func:`game.session.fit.fit_game`), so rolling back after
        the load works; a ``warning`` event says what changed.

        Raises:
            game.errors.SaveError: missing, corrupt (naming the section), for another
                story, too new, or not resumable in this story.
        """
        path = slot_path(self.save_dir, slot)
        if previous:
            path = previous_path(path)
        where = str(path)
        if previous:
            hint = "this was the previous copy; no older one is kept"
        elif previous_path(path).is_file():
            hint = f"its previous copy is kept: `load {slot} previous` in a script, or load the slot again"
        else:
            hint = "no previous copy of this slot is kept"
        try:
            data = read_save(path)
        except SaveError as exc:
            raise SaveError(exc.why, exc.where, hint if exc.hint == PREVIOUS else exc.hint) from exc
        if data.story_id != self.story.id:
            raise SaveError(f"save is for story {data.story_id!r}, not {self.story.id!r}", where=where)
        with self._lock:
            try:
                commits = self._restore_extras(data.extra, "extra", where, missing_is_fresh=True)
                for i, cp in enumerate(data.checkpoints):
                    self._restore_extras(cp.extras, f"checkpoints.{i}.extra", where)
                forward = Forward()  # a save fitted to a changed story keeps no path ahead
                if data.story_hash == self.story.digest:
                    check_state(self.runtime, data.state, where)
                    for i, cp in enumerate(data.checkpoints):
                        base = data.checkpoints[i - 1].state if i else None
                        check_state(self.runtime, cp.state, where, f"checkpoints.{i}.state", base)
                    for i, cp in enumerate(data.forward):
                        self._restore_extras(cp.extras, f"forward.steps.{i}.extra", where)
                        check_state(self.runtime, cp.state, where, f"forward.steps.{i}.state")
                    forward = Forward(data.forward, data.forward_events)
                    fitted = Fitted(data.state, data.checkpoints, [])
                else:
                    fitted = fit_game(self.runtime, data.state, data.checkpoints, "load")
            except SaveError as exc:
                raise SaveError(exc.why, exc.where or where, hint if exc.hint == PREVIOUS else exc.hint) from exc
            except WorldloomError as exc:  # the changed story fails on resuming this save
                raise SaveError(f"save does not resume in this story: {exc}", where=where) from exc
            # nothing below can fail: replace the game
            state = fitted.state
            frame = state.frame = self.state.frame
            self.state = state
            self.log = EventLog(data.events[: state.log_offset])
            self.checkpoints = fitted.checkpoints
            self.forward = forward
            for commit in commits:
                commit()
            self._started = True
            self._pending = self.director.build(self.state, [], self.director.cause([], "load"))
            ev = Event(kind="load", turn=state.turn, frame=frame, scene=state.scene, text=slot)
            return [ev, *fitted.events]

    def reload(self, path: str | Path | None = None, strict: bool = False) -> ReloadResult:
        """Hot-reload the story (or a character card) from disk, keeping the game state.

        Resumes by stable ids (:func:`game.session.fit.fit_game`, as a load does): the
        same scene (its lines are not replayed), choices and variables by id; a scene
        that is gone restarts at the start scene; checkpoints are fitted too. A new
        file that does not load or has a lint error that would break play leaves the
        old story running and comes back as ``ok=False`` with its diagnostics. See
        :mod:`game.session.reload`.

        Args:
            path: the story folder or file, an included file, ``worldloom.toml``, a
                ``.ink.json``, or a card file; ``None`` reloads the story's own file.
            strict: refuse on any lint error, not only on those that break play.
        """
        prepared = prepare_reload(self, path, strict)  # reads and lints the new file; changes nothing
        if not prepared.result.ok:
            return prepared.result
        with self._lock:
            try:
                swap = fit_session(self, prepared)
            except WorldloomError as exc:  # the new story fails on resuming: the old one keeps running
                return prepared.failed(exc)
            if prepared.story is not None and swap.runtime is not None:
                self.story = self.director.story = prepared.story
                if prepared.result.path is not None:
                    self.source = Path(prepared.result.path)  # reload() with no path reloads this file
                self.runtime, self.state, self.checkpoints = swap.runtime, swap.state, swap.checkpoints
                self.forward.clear()  # the path ahead was taken in the old story
            self._record(swap.events)
            if prepared.story is not None:
                self._pending = self.director.build(self.state, swap.events,
                                                    self.director.cause(swap.events, "load"))
        return prepared.done(swap.events)

    def close(self) -> None:
        """Close the backend."""
        self.backend.close()


__all__ = ["ChoiceView", "Extension", "Session", "TurnResult", "View", "default_save_dir"]

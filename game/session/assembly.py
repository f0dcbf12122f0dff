"""`open_game`: the one place a game is built (window, headless play, replay, benches, tests).

It loads the story, makes the backend, and stacks, from the outside in:

    voice (the cast's speech mixed into chunk audio)  ->  guard (the error bank)  ->  backend

then builds the cast (cards, memories, relationships, dialogue model, voice) and the
:class:`~game.session.session.Session` with its steps in turn order: rules (built in),
the cast, then the director (built in). :attr:`Game.stack` names the layers in that
order, so a run can say what it plays on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from game.cast.castroom import Castroom, RecordedReplies, build_cast
from game.errorbank import ErrorStore, GuardedBackend
from game.errorbank.persona import PersonaCases
from game.models.llm import ModelError
from game.session.session import Extension, Session
from game.session.steps import Step
from game.session.voice import VoiceLayer
from game.story.loader import load_story
from game.story.story import Story
from game.world.backends import make_backend
from game.world.chunking import ChunkPolicy
from game.world.director import CastView
from game.world.protocol import Backend, WorldRequest


@dataclass
class Game:
    """A built game: the session, its cast (``None`` without characters with a card),
    the backend stack's layer names from the outside in, and what went wrong on the way
    that play survives (a dialogue model that would not load)."""

    session: Session
    cast: Castroom | None
    stack: tuple[str, ...]
    warnings: list[str] = field(default_factory=list)

    def close(self) -> None:
        """Close the backend stack and the cast (idempotent)."""
        try:
            self.session.close()
        finally:
            if self.cast is not None:
                self.cast.close()


def _layer_name(backend: Backend) -> str:
    return str(getattr(backend.capabilities(), "backend", type(backend).__name__))


def open_game(story: str | Path | Story, *, backend: Backend | str = "procedural",
              backend_options: dict[str, Any] | None = None, size: tuple[int, int] | None = None,
              seed: int = 0, save_dir: str | Path | None = None, session_id: str = "main",
              policy: ChunkPolicy | None = None, errorbank: str | Path | ErrorStore | None = None,
              dialogue: Any = "transformers", voice: bool = True, realtime: bool = False,
              recorded: RecordedReplies | None = None, cast_options: dict[str, Any] | None = None,
              steps: Sequence[Step] = ()) -> Game:
    """Build a whole game.

    Args:
        story: a story folder or file, or a loaded :class:`Story`.
        backend: a registered backend name (made with ``backend_options`` and ``size``) or a
            backend object.
        backend_options: keyword arguments for the backend (``model=``, ``url=``).
        size: the world's frame size ``(width, height)`` (default: the backend's).
        seed: seed of every random draw.
        save_dir: where saves go (default: the session's).
        session_id: the backend session id.
        policy: the chunk policy.
        errorbank: error-bank database (or store): the guard checks every chunk, corrects
            drift, falls back while the backend is down, and records each case there.
        dialogue: the characters' dialogue model (see :func:`game.cast.castroom.dialogue_spec`;
            ``None``: authored lines only). If it cannot load, they answer with their
            authored lines and :attr:`Game.warnings` says why (in every front end alike).
        voice: characters speak their replies.
        realtime: the voice does not wait for synthesis (a window plays it as it comes).
        recorded: replies recorded in a transcript (replays: no model is built, no voice made).
        cast_options: more keyword arguments for :func:`game.cast.castroom.build_cast`.
        steps: extra turn steps after the cast's (tests, tools).

    Raises:
        game.errors.WorldloomError: a bad story, card or backend, naming where and why.
    """
    loaded = story if isinstance(story, Story) else load_story(story)
    # a file given by name is what reload() re-reads (a folder: the story's own file)
    source = Path(story) if not isinstance(story, Story) and Path(story).is_file() else None
    if isinstance(backend, str):
        kwargs: dict[str, Any] = {"width": size[0], "height": size[1]} if size else {}
        kwargs.update(backend_options or {})
        base: Backend = make_backend(backend, **kwargs)
    else:
        base = backend
    stack = [_layer_name(base)]
    built: list[Session] = []  # the guard reads the scene of the session built below
    store: ErrorStore | None = None
    outer: Backend = base
    if errorbank is not None:
        store = errorbank if isinstance(errorbank, ErrorStore) else ErrorStore(errorbank)

        def scene_of(_request: WorldRequest) -> str:
            return built[0].state.scene if built else ""

        outer = GuardedBackend(base, store=store, session=session_id, story=loaded.id, scene_of=scene_of)
        stack.insert(0, "guard")
    caps = outer.capabilities()
    warnings: list[str] = []
    options = dict(cast_options or {})
    if store is not None:
        options.setdefault("errorbank", PersonaCases(store, session=session_id, story=loaded.id, fps=caps.fps))
    try:
        cast = _cast(loaded, dialogue, warnings, seed=seed, audio_rate=caps.audio_rate, voice=voice,
                     realtime=realtime, recorded=recorded, **options)
    except BaseException:
        outer.close()
        raise
    if cast is not None and cast.voice is not None:
        outer = VoiceLayer(outer, cast)
        stack.insert(0, "voice")
    all_steps: list[Step] = [cast, *steps] if cast is not None else list(steps)
    extensions: dict[str, Extension] = {"cast": cast} if cast is not None else {}
    views: dict[str, CastView] = dict(cast.views()) if cast is not None else {}
    try:
        session = Session(loaded, outer, seed=seed, save_dir=save_dir, session_id=session_id, policy=policy,
                          steps=all_steps, extensions=extensions, cast=views, source=source)
    except BaseException:
        outer.close()
        if cast is not None:
            cast.close()
        raise
    built.append(session)
    if warnings:
        session.show_notice(warnings[-1])
    return Game(session, cast, tuple(stack), warnings)


def _cast(story: Story, dialogue: Any, warnings: list[str], **kw: Any) -> Castroom | None:
    """The cast, falling back to authored lines when the dialogue model cannot load."""
    try:
        return build_cast(story, dialogue, **kw)
    except ModelError as exc:
        if dialogue is None:
            raise
        warnings.append(f"{exc}; characters answer with their authored lines only")
        return build_cast(story, None, **kw)


__all__ = ["Game", "open_game"]

"""`open_game`: the one place a game is built (window, headless play, replay, benches, tests).

It loads the story, makes the backend, and stacks, from the outside in:

    voice (the cast's speech mixed into chunk audio)  ->  guard (the error bank)  ->  backend

then builds the cast (cards, memories, relationships, dialogue model, voice), the
agents' policy (:mod:`game.cast.agentmind`: the dialogue model picks, among the actions
the story declares, for agents with ``fallback: model``; a replay's recorded picks) and
the :class:`~game.session.session.Session` with its steps in turn order: rules (built
in; the agents act in them), the cast, then the director (built in). :attr:`Game.stack`
names the layers in that order, so a run can say what it plays on. A backend that paints
ahead (:class:`~game.world.protocol.PaintsAhead`) is given the opening scenes first, so it
paints them while the cast loads and the window opens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from game.errorbank import ErrorStore, GuardedBackend
from game.errorbank.clock import Clock
from game.errorbank.store import run_id
from game.errors import BackendError
from game.locale import use_story
from game.models.embedder import shared_encode
from game.models.llm import ModelError
from game.models.registry import Progress
from game.session.session import Extension, Session
from game.session.steps import Step
from game.session.voice import VoiceLayer
from game.state import GameState
from game.story.agents import AgentPolicy, model_agents
from game.story.loader import load_story
from game.story.story import Story
from game.story.strings import localised, translation_for
from game.world.backends import make_backend
from game.world.chunking import ChunkPolicy
from game.world.director import CastView, opening
from game.world.protocol import Backend, PaintsAhead, WorldRequest

if TYPE_CHECKING:
    from game.cast.castroom import Castroom, RecordedReplies
    from game.models.worker import ModelWorker


@dataclass
class Game:
    """A built game: the session, its cast (``None`` without characters with a card),
    the backend stack's layer names from the outside in, what went wrong on the way
    that play survives (a dialogue model that would not load), the agents' policy
    (``None``: they act by their rules and wait otherwise) and the worker process of the
    agents' model when no cast shares its own."""

    session: Session
    cast: Castroom | None
    stack: tuple[str, ...]
    warnings: list[str] = field(default_factory=list)
    agents: AgentPolicy | None = None
    worker: ModelWorker | None = None

    def close(self) -> None:
        """Close the backend stack, the cast and the agents' model worker (idempotent)."""
        try:
            self.session.close()
        finally:
            try:
                if self.cast is not None:
                    self.cast.close()
            finally:
                if self.worker is not None:
                    self.worker.close()


def _layer_name(backend: Backend) -> str:
    """The backend's name in :attr:`Game.stack` (its capabilities', or its class's while it is unreachable)."""
    try:
        return str(getattr(backend.capabilities(), "backend", type(backend).__name__))
    except BackendError:
        return type(backend).__name__.removesuffix("Backend").lower() or type(backend).__name__


def open_game(story: str | Path | Story, *, backend: Backend | str = "procedural",
              backend_options: dict[str, Any] | None = None, size: tuple[int, int] | None = None,
              seed: int = 0, save_dir: str | Path | None = None, session_id: str = "main",
              policy: ChunkPolicy | None = None, errorbank: str | Path | ErrorStore | None = None,
              dialogue: Any = "transformers", voice: bool = True, realtime: bool = False,
              recorded: RecordedReplies | None = None, cast_options: dict[str, Any] | None = None,
              steps: Sequence[Step] = (), clock: Clock | None = None,
              agents: AgentPolicy | None = None, source: str | Path | None = None,
              progress: Progress | None = None) -> Game:
    """Build a whole game.

    Args:
        story: a story folder or file, or a loaded :class:`Story`.
        backend: a registered backend name (made with ``backend_options`` and ``size``) or a
            backend object. ``procedural`` gets the shared MiniLM (loaded on first need) to map
            nouns its vocabulary does not know, unless ``backend_options`` give ``embed``.
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
        clock: what the guard measures lateness and hangs on (with ``errorbank``; see
            :mod:`game.errorbank.clock`); default: the backend's own progress in this
            process, real time for a remote backend. Tests inject a ``ManualClock``.
        agents: what picks the actions of agents with ``fallback: model`` when no rule or
            schedule entry applies (a replay passes
            :class:`~game.cast.agentmind.RecordedAgentPolicy`). Default: the dialogue model
            (the cast's, else ``dialogue`` loaded for them) through
            :class:`~game.cast.agentmind.ModelAgentPolicy`, which only ever picks among the
            actions the story declares and falls back to the rules if the model fails; none
            with ``dialogue=None`` or ``recorded`` (they then act by their rules and wait).
        source: the path a loaded ``story`` was loaded from (what ``reload()`` re-reads when it
            is a file); a story given by path is its own.
        progress: ``progress(part, stage, fraction)`` as it builds (a window's loading screen,
            :mod:`game.app.loading`): ``"world"`` (the backend), ``"words"`` and ``"dialogue"``
            (see :func:`~game.cast.castroom.build_cast`), ``"cast"`` (the characters built).

    Raises:
        game.errors.WorldloomError: a bad story, card or backend, naming where and why.
    """
    loaded = story if isinstance(story, Story) else load_story(story)
    translation = translation_for(loaded)
    use_story(translation)  # the story's catalogue translates the game's own words first (game.locale.ui)
    loaded = localised(loaded, translation)  # $WORLDLOOM_LANG's names and titles
    # a file given by name is what reload() re-reads (a folder: the story's own file)
    given = source if isinstance(story, Story) else story
    source = Path(given) if given is not None and Path(given).is_file() else None
    report: Progress = progress or (lambda _part, _stage, _fraction: None)
    report("world", backend if isinstance(backend, str) else type(backend).__name__, 0.0)
    if isinstance(backend, str):
        kwargs: dict[str, Any] = {"width": size[0], "height": size[1]} if size else {}
        kwargs.update(backend_options or {})
        if backend == "procedural":  # unknown nouns of a scene map to what it draws by meaning
            kwargs.setdefault("embed", shared_encode)
        base: Backend = make_backend(backend, **kwargs)
    else:
        base = backend
    if isinstance(base, PaintsAhead):  # the opening is painted while the cast loads and the title shows
        base.prepare(opening(loaded, GameState(seed=seed)), seed)
    stack = [backend if isinstance(backend, str) else _layer_name(base)]
    built: list[Session] = []  # the guard reads the scene of the session built below
    store: ErrorStore | None = None
    outer: Backend = base
    if errorbank is not None:
        store = errorbank if isinstance(errorbank, ErrorStore) else ErrorStore(errorbank)

        def scene_of(_request: WorldRequest) -> str:
            return built[0].state.scene if built else ""

        run = run_id(session_id)  # this run's cases and samples, apart from other runs in the same bank
        outer = GuardedBackend(base, store=store, session=run, story=loaded.id, scene_of=scene_of,
                               clock=clock)
        stack.insert(0, "guard")
    caps = outer.capabilities()
    report("world", "", 1.0)
    warnings: list[str] = []
    options = dict(cast_options or {})
    if progress is not None:
        options.setdefault("on_progress", progress)
    try:
        cast = _cast(loaded, dialogue, warnings, (store, run, caps.fps) if store is not None else None, seed=seed,
                     audio_rate=caps.audio_rate, voice=voice, realtime=realtime, recorded=recorded, **options)
    except BaseException:
        outer.close()
        raise
    try:
        mind, worker, picks = _agents(loaded, dialogue, cast, agents, warnings, recorded is not None,
                                      bool(options.get("show_progress", True)))
    except BaseException:
        outer.close()
        if cast is not None:
            cast.close()
        raise
    if cast is not None:
        warnings.extend(cast.warnings)
        report("cast", "", 1.0)
    if cast is not None and cast.voice is not None:
        outer = VoiceLayer(outer, cast)
        stack.insert(0, "voice")
    all_steps: list[Step] = [cast, *steps] if cast is not None else list(steps)
    if picks is not None:  # the model picks off the session's lock
        all_steps.insert(0, picks)
    extensions: dict[str, Extension] = {"cast": cast} if cast is not None else {}
    views: dict[str, CastView] = dict(cast.views()) if cast is not None else {}
    try:
        session = Session(loaded, outer, seed=seed, save_dir=save_dir, session_id=session_id, policy=policy,
                          steps=all_steps, extensions=extensions, cast=views, source=source, agents=mind)
    except BaseException:
        outer.close()
        if cast is not None:
            cast.close()
        if worker is not None:
            worker.close()
        raise
    built.append(session)
    if warnings:
        session.show_notice(warnings[-1])
    return Game(session, cast, tuple(stack), warnings, mind, worker)


def has_cards(story: Story) -> bool:
    """Whether a cast member of ``story`` has a ``card:`` (only then is there a cast room to build)."""
    return any(member.card for member in story.model.cast.values())


# The cast room and the agents' model policy (game.cast, its models and checks: ~0.2 s of CPU of
# imports) are imported by the two functions below only when the story needs them, so a story
# without character cards or model-driven agents starts without them (start-up cost only: neither
# module imports game.session, there is no cycle).

def _cast(story: Story, dialogue: Any, warnings: list[str], bank: tuple[ErrorStore, str, float] | None,
          **kw: Any) -> Castroom | None:
    """The cast (``None`` when no cast member has a card), falling back to authored lines when the
    dialogue model cannot load; ``bank`` (the error bank, this run's id, frames a second) records
    its rejected replies, unless ``kw`` gives ``errorbank``."""
    if not has_cards(story):
        return None
    from game.cast.castroom import build_cast  # start-up cost only (see above)

    if bank is not None:
        from game.errorbank.persona import PersonaCases  # start-up cost only: it imports game.cast

        store, run, fps = bank
        kw.setdefault("errorbank", PersonaCases(store, session=run, story=story.id, fps=fps))
    try:
        return build_cast(story, dialogue, **kw)
    except ModelError as exc:
        if dialogue is None:
            raise
        warnings.append(f"{exc}; characters answer with their authored lines only")
        return build_cast(story, None, **kw)


def _agents(story: Story, dialogue: Any, cast: Castroom | None, given: AgentPolicy | None, warnings: list[str],
            replay: bool, show_progress: bool) -> tuple[AgentPolicy | None, ModelWorker | None, Step | None]:
    """The agents' policy, the worker this game must close (see ``open_game(agents=)``) and the
    step that lets the model pick off the session's lock (with a model policy only)."""
    if given is None and (replay or dialogue is None or not model_agents(story)):
        return None, None, None
    from game.cast.agentmind import ModelAgentPolicy, PicksAhead  # start-up cost only (see above)

    if given is not None:
        return given, None, PicksAhead(given) if isinstance(given, ModelAgentPolicy) else None

    worker = None
    if cast is not None:  # one model for the cast's replies and the agents' picks
        model = cast.model
    else:
        from game.cast.castroom import load_dialogue  # start-up cost only (see above)

        try:
            model, worker = load_dialogue(dialogue, story.folder, show_progress)
        except ModelError as exc:
            warnings.append(f"{exc}; the agents act by their rules only")
            return None, None, None
    if model is None:
        return None, worker, None
    mind = ModelAgentPolicy(model)
    return mind, worker, PicksAhead(mind)


__all__ = ["Game", "has_cards", "open_game"]

"""A session's cast: cards, memories, relationships, dialogue, voice and identity anchors.

:func:`build_cast` brings a story's living characters (the ``cast.<id>`` entries with a
``card:``) to life; :func:`game.session.assembly.open_game` gives the resulting
:class:`Castroom` to the :class:`game.session.Session` it builds, as one typed step of
the turn, the ``"cast"`` extension, an event observer and the director's cast views.
Nothing here imports ``game.session`` or assigns to a session.

1. **cards**: each ``card:`` path is read relative to the story folder
   (:func:`game.cast.card.load_card`);
2. **relationships**: a :class:`~game.cast.relationships.RelationshipHook` per
   character (the story's ``relationship`` start values win; the hook only fills the
   axes the story does not name);
3. **memory**: one :class:`~game.cast.memory.Memory` per character, fed every event the
   session records (:meth:`Castroom.observe`, with ids -> display names), saved into the
   save's ``extra["cast"]``, restored on load with :meth:`Memory.from_json`, and cut back
   on rollback (the snapshot taken with the checkpoint, else :meth:`Memory.forget_after`);
4. **dialogue**: one dialogue model for the cast, named by a spec (:func:`dialogue_spec`:
   ``transformers`` (default: the embedded SmolLM2), ``transformers:<path or hub id>``,
   ``openai[:model]``, ``scripted:<file>``, or a bare model path / hub id). Real models load
   once, with progress, in the :class:`~game.models.worker.ModelWorker` process; a
   ``scripted`` model runs in this process. Each character's
   :class:`~game.cast.dialogue.DialoguePipeline` answers ``say`` events addressed to her
   (``Say(text, target=<id>)``, the ``ask <id> <text>`` script verb) through
   :class:`CastHook`, after the relationship hooks. Her card's ``answers`` (``{{user}}``
   becomes the player's name) and example exchanges come first; her ``fallbacks`` last.
   Every reply is a ``reply`` event whose ``data`` records its source, the guard's
   rejections, her expression and voice, the memories her prompt retrieved and
   ``speech_s`` (how long it takes to say; the director sizes the chunk by it).
   Replies the persona guard rejected for being out of character go to the error bank
   (``reply.persona`` cases) and, from the bank, back into her guard as negative
   examples on the next start;
5. **voice**: each accepted sentence is spoken with pyttsx3/espeak-ng
   (:class:`~game.audio.tts.TextToSpeech`, the card's voice with the relationship's
   style on top) on a background thread. Headless, the speech is mixed into the audio
   of the chunks that follow the reply (:class:`VoiceTrack` behind :class:`game.session.voice.VoiceLayer`,
   waiting for the synthesis so the recording is the same on every run); in a window,
   :meth:`Castroom.set_voice_output` sends each sentence to the player's mixer as soon
   as it is spoken;
6. **identity anchors**: the director sends each character's card look and first
   reference image as her identity anchor, her expression every turn and what she says
   (:meth:`Castroom.views`, :class:`game.world.director.CastView`).

Replays never run a model: :class:`RecordedReplies` answers each ``say`` to her with the
next recorded ``reply`` row of the transcript.

Talking from a window without blocking it: the turn's prepare phase
(:meth:`Castroom.prepare`, called by ``Session.submit`` off the session's lock) writes
the reply on a copy of the state, sentence by sentence; the turn then takes it at once.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import threading
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from game.audio.tts import TextToSpeech, VoiceMixer, VoiceSettings, resample
from game.cast.card import CharacterCard, card_fields, substitute
from game.cast.card_io import load_card
from game.cast.cardcheck import BUDGET_FIELDS, check_card
from game.cast.dialogue import (
    AuthoredAnswer,
    AuthoredKnowledge,
    AuthoredMatch,
    DialoguePipeline,
    DialogueSettings,
    Reply,
    Sentence,
    addressed_to,
    facts_from_card,
    facts_from_memory,
    perspective,
    pipeline_for,
)
from game.cast.factsheet import quantities
from game.cast.grounding import OWN_GROUPS, asks_anothers_name, content_words, recall_groups, says_value
from game.cast.guard import PersonaFacts
from game.cast.memory import Memory, MemoryConfig, extract_player_name, is_disclosure
from game.cast.persona_log import PersonaLog, Rejection
from game.cast.prompt import PromptBuilder
from game.cast.relationships import RelationshipHook, Relationships
from game.cast.told import FOREIGN_NAME_FORMS
from game.errors import CardError, InputError, SaveError, WorldloomError
from game.models.embedder import get_embedder
from game.models.llm import DialogueModel, Message, ModelError
from game.models.registry import KINDS, ModelSpec, Progress, build_model, parse_model_spec
from game.models.worker import ModelWorker
from game.state import AnyIntent, Event, GameState, Say
from game.story.agents import present
from game.story.host import TurnHost
from game.story.story import Story
from game.story.strings import language
from game.story.yamlio import compose_marked

#: Name of the extension in saves (``extra["cast"]``).
EXTENSION = "cast"
#: Largest context the prompt is built for, tokens (a small CPU model slows down on more).
MAX_CONTEXT = 4096
#: Speech estimate: pause between sentences and after the last one, seconds.
SENTENCE_GAP_S = 0.15
SPEECH_TAIL_S = 0.5
#: Retrieved memories recorded per reply (in ``data.memories``), and their length.
RECORDED_MEMORIES = 5
MEMORY_CHARS = 200

#: Called with each spoken sentence's audio (``(N,)`` float32 mono) and its rate (Hz).
VoiceOutput = Callable[[np.ndarray, int], None]


# -- dialogue model specs ----------------------------------------------------------------

def dialogue_spec(text: str, base: str | Path | None = None) -> ModelSpec:
    """The model a ``--dialogue`` value names.

    ``transformers`` (the embedded SmolLM2-135M-Instruct), ``transformers:<folder or hub
    id>[#file.gguf]``, ``openai`` / ``openai:<model>`` (endpoint from
    ``$WORLDLOOM_OPENAI_BASE_URL``), ``scripted:<file>`` (a YAML or JSON file:
    ``answers: [[regex, answer or [variants]], ...]`` and ``default:``), or a bare model
    folder / hub id (a transformers causal LM). ``base``: folder that relative
    ``scripted:`` paths are tried against when not found as given.

    Raises:
        ModelError: a scripted file that cannot be read or has the wrong shape.
    """
    text = text.strip() or "transformers"
    kind, _, rest = text.partition(":")
    if kind.lower() not in KINDS:
        return ModelSpec("transformers", source=text)
    if kind.lower() != "scripted" or not rest:
        return parse_model_spec(text)
    path = Path(rest).expanduser()
    if not path.is_file() and base is not None and (Path(base) / path).is_file():
        path = Path(base) / path
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"cannot read scripted answers: {exc}", where=str(path)) from exc
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(raw)
        else:

            data = compose_marked(raw, str(path)).value
    except (json.JSONDecodeError, WorldloomError) as exc:
        raise ModelError(f"scripted answers are not valid: {exc}", where=str(path)) from exc
    if not isinstance(data, dict):
        raise ModelError("scripted answers must be a mapping with answers: and default:", where=str(path))
    answers = data.get("answers", [])
    if isinstance(answers, dict):
        answers = [[k, v] for k, v in answers.items()]
    options = {"answers": answers, "default": data.get("default", "..."),
               "name": str(data.get("name", f"scripted:{path.name}"))}
    try:
        json.dumps(options)
    except TypeError as exc:
        raise ModelError(f"scripted answers must be plain text: {exc}", where=str(path)) from exc
    spec = ModelSpec("scripted", source=str(path), options=options)
    build_model(spec)  # fail now, naming the file, rather than at the first question
    return spec


# -- authored answers with the player's name ------------------------------------------------

_OWNED = re.compile(r"\b(my|your|our)\s+(?:own\s+|old\s+|dear\s+|late\s+)?([a-z][a-z'-]+)", re.IGNORECASE)


def owners_differ(line: str, question: str) -> bool:
    """Whether ``line`` and ``question`` name the same thing with different owners ("my
    grandmother" / "your grandmother"): then they are not the same question."""
    mine = {(n.lower(), o.lower()) for o, n in ((m.group(1), m.group(2)) for m in _OWNED.finditer(line))}
    theirs = {(n.lower(), o.lower()) for o, n in ((m.group(1), m.group(2)) for m in _OWNED.finditer(question))}
    return any(noun == n and owner != o for noun, owner in mine for n, o in theirs)


class PlayerKnowledge(AuthoredKnowledge):
    """Authored answers (card ``answers`` and example exchanges) whose ``{{user}}`` is the
    player's name at the moment she answers.

    Args:
        card: her card.
        player: ``player() -> name`` (``""`` while she does not know it).
        embedder: as :class:`AuthoredKnowledge`.
    """

    def __init__(self, card: CharacterCard, player: Callable[[], str], embedder: Any = None) -> None:
        me = card.display_name
        answers = [AuthoredAnswer(f"answer.{a.id}", tuple(substitute(q, me, "the player") for q in a.questions),
                                  substitute(a.answer, me, "{{user}}"))
                   for a in card.answers]
        answers += AuthoredKnowledge.from_card(card, embedder).answers
        super().__init__(answers, embedder)
        self._unknown = {f"answer.{a.id}": substitute(a.unknown, me, "walker") for a in card.answers}
        self._me = me
        self._player = player

    def match(self, text: str) -> AuthoredMatch | None:
        """The best authored answer for ``text``, with the player's name filled in (``None``:
        none; one whose question is about *your* X while the line is about *my* X, or the
        other way round ("What did I tell you about my grandmother?" is not "Tell me about
        your grandmother."); or one that names the player while she does not know the
        name and has no ``unknown`` line, or while the line's words ask for another fact of the
        player's own (:func:`~game.cast.grounding.recall_groups`: "What's my surname?"))."""
        m = super().match(text)
        if m is None or owners_differ(text, m.question):
            return None
        if perspective(text) == (True, False) and perspective(m.question) == (False, True):
            return None  # "What does everyone call me?" is not "What do people call you?"
        if asks_anothers_name(text) and re.search(r"(?i)\bname|\bcalled\b", m.question):
            return None  # "What's my daughter's name?" is not a question about the player's or her name
        if "{{user}}" not in m.answer.answer:
            return m
        if recall_groups(text) & OWN_GROUPS - {"name"}:
            return None  # "What's my surname?" asks for more than the name: the grounded full name answers
        name = self._player()
        if name:
            said = substitute(m.answer.answer, self._me, name)
        else:
            said = self._unknown.get(m.answer.id, "")
            if not said:
                return None
        return AuthoredMatch(AuthoredAnswer(m.answer.id, m.answer.questions, said), m.question, m.score)


# -- recorded replies (replays) --------------------------------------------------------------

class RecordedReplies:
    """The ``reply`` rows of a transcript, handed out in order per character (replays)."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self._rows: dict[str, list[Mapping[str, Any]]] = {}
        for r in rows:
            if r.get("type") == "reply":
                self._rows.setdefault(str(r.get("speaker", "")), []).append(r)
        self._next: Counter[str] = Counter()

    def __len__(self) -> int:
        return sum(len(v) for v in self._rows.values())

    def take(self, character: str, said: str) -> Mapping[str, Any]:
        """The next recorded reply of ``character``.

        Raises:
            InputError: the transcript has no more replies of hers.
        """
        rows = self._rows.get(character, [])
        i = self._next[character]
        if i >= len(rows):
            raise InputError(f"the transcript has no recorded reply of {character!r} to {said[:60]!r}",
                             hint="replays answer only with recorded replies; the model is never run")
        self._next[character] = i + 1
        return rows[i]


# -- voice ------------------------------------------------------------------------------------

class VoiceTrack:
    """Her voice: sentences spoken on a background thread, then mixed into chunk audio
    (headless) or handed to an output (a window's mixer).

    Args:
        rate: audio rate of the chunks, Hz.
        realtime: do not wait for speech still being synthesised when mixing (a window);
            headless runs wait, so the recording is the same on every run.
        tts: the engine (default :class:`~game.audio.tts.TextToSpeech` at ``rate``).
    """

    def __init__(self, rate: int, realtime: bool = False, tts: TextToSpeech | None = None) -> None:

        self.rate = int(rate)
        self.realtime = realtime
        self.tts = tts or TextToSpeech(rate=self.rate)
        self.mixer = VoiceMixer(self.rate)
        #: When set, speech goes here as it is ready instead of into chunk audio.
        self.output: VoiceOutput | None = None
        #: ``(sentence, seconds)`` of everything spoken.
        self.spoken: list[tuple[str, float]] = []
        #: Why sentences could not be spoken (the game goes on without the voice).
        self.errors: list[str] = []
        self._queue: queue.Queue[tuple[int, str, VoiceSettings]] = queue.Queue()
        self._lock = threading.Lock()
        self._idle = threading.Condition()
        self._pending = 0
        self._generation = 0
        self._thread = threading.Thread(target=self._run, name="worldloom-voice", daemon=True)
        self._thread.start()

    def say(self, text: str, voice: VoiceSettings) -> None:
        """Queue one sentence (spoken after the ones queued before)."""
        if not text.strip():
            return
        with self._idle:
            self._pending += 1
        self._queue.put((self._generation, text, voice))

    def interrupt(self) -> None:
        """Drop what is queued and not yet heard (she was cut short)."""
        with self._lock:
            self._generation += 1
            self.mixer.clear()

    def wait(self, timeout: float = 120.0) -> bool:
        """Block until every queued sentence is synthesised (headless determinism); ``False`` on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def _run(self) -> None:
        while True:
            generation, text, voice = self._queue.get()
            try:
                self._speak(generation, text, voice)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()

    def _speak(self, generation: int, text: str, voice: VoiceSettings) -> None:
        if generation != self._generation:
            return
        try:
            audio = self.tts.synthesise(text, voice)
        except Exception as exc:  # no voice is better than no game
            self.errors.append(f"{text[:40]!r}: {exc}")
            return
        if len(audio) == 0:
            return
        with self._lock:
            if generation != self._generation:
                return
            self.spoken.append((text, len(audio) / self.rate))
            out = self.output
            if out is None:
                self.mixer.add(audio)
        if out is not None:
            try:
                out(audio, self.rate)
            except Exception as exc:  # a window's sound failing must not stop the voice
                self.errors.append(f"voice output: {exc}")

    def mix(self, track: np.ndarray | None, track_rate: int, n: int) -> np.ndarray | None:
        """Queued speech mixed into ``track`` (``(n,)`` float32 mono at ``track_rate`` Hz, or
        ``None`` for silence): ``(n,)`` float32 at ``track_rate``, or ``None`` when nothing is
        to be heard (no speech pending, or speech goes to a window's output instead).
        Headless (not ``realtime``) it first waits for the synthesis, so recordings repeat."""
        if self.output is not None:
            return None
        if not self.realtime:
            self.wait()
        with self._lock:
            if self.mixer.pending_samples == 0:
                return None
            mine = None if track is None else resample(np.asarray(track, np.float32), track_rate, self.rate)
            mixed = self.mixer.mix(mine, round(n * self.rate / track_rate) if mine is None else None)
        mixed = resample(mixed, self.rate, track_rate)
        if len(mixed) != n:
            mixed = np.pad(mixed, (0, max(0, n - len(mixed))))[:n]
        return mixed.astype(np.float32)

    def close(self) -> None:
        """Stop speaking (queued sentences are dropped)."""
        self.interrupt()


# -- one character -------------------------------------------------------------------------

@dataclass
class Character:
    """One living character of the session: card, relationship rules, memory, dialogue.

    Attributes:
        id: her id.
        card: her card.
        rel: her relationship rules.
        memory: her memory (replaced on load).
        pipeline: her reply pipeline (``None`` in replays).
        builder: prompt assembly over :attr:`memory`.
        lock: guards :attr:`memory` (the window's thread and the reply's thread both use it).
        talk: one reply at a time.
    """

    id: str
    card: CharacterCard
    rel: Relationships
    memory: Memory
    pipeline: DialoguePipeline | None = None
    builder: PromptBuilder | None = None
    base_facts: PersonaFacts | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    talk: threading.Lock = field(default_factory=threading.Lock)
    retrieved: list[str] = field(default_factory=list)

    def player_name(self) -> str:
        """The player's name as she knows it (``""`` when not told)."""
        return self.memory.player_name

    def identity(self) -> tuple[str, str]:
        """``(look description, first reference image path)`` of her card."""
        images = self.card.image_paths()
        return self.card.look.description, str(images[0].resolve()) if images else ""


class _View:
    """The director's view of one character (:class:`game.world.director.CastView`)."""

    def __init__(self, character: Character) -> None:
        self.character = character

    def identity(self) -> tuple[str, str]:
        return self.character.identity()

    def expression(self, state: GameState) -> str:
        return self.character.rel.expression(state)


def speech_estimate(text: str, rate_wpm: int, sentences: int) -> float:
    """Seconds ``text`` takes to say at ``rate_wpm`` words per minute, with pauses between
    ``sentences`` and after the last (an estimate; deterministic, so transcripts are too)."""
    words = len(text.split())
    if not words:
        return 0.0
    return round(words * 60.0 / max(60, rate_wpm) + SENTENCE_GAP_S * max(0, sentences - 1) + SPEECH_TAIL_S, 2)


_SELF_NAME = re.compile(r"\b(?i:my name is|my name's|call me|i am|i'm|" + FOREIGN_NAME_FORMS
                        + r")\s+([A-Z][\w'-]+)(?=[\s.,!?;:]|$)")
_NOT_A_NAME = frozenset({"I", "Not", "Just", "Here", "Glad", "Sure", "Sorry", "Fine", "Afraid", "Aye", "No",
                         "Yes", "A", "An", "The", "So", "Still", "Only", "Always", "Never", "Quite"})


def names_claimed(text: str) -> list[str]:
    """Names a reply gives herself ("my name is X", "I'm X", "call me X")."""
    return [m.group(1).removesuffix("'s") for m in _SELF_NAME.finditer(text)
            if m.group(1) not in _NOT_A_NAME]


# -- the turn hooks ----------------------------------------------------------------------------

class CastHook:
    """A :class:`game.session.TurnHook` that makes one character answer what the player says to her.

    Like :class:`~game.cast.dialogue.DialogueHook`, for each ``say`` event of the player
    addressed to her (``data.target`` is her id, or no target while she is present in the
    scene) and not an authored action, it adds her ``reply`` event: the reply written
    ahead by :meth:`Castroom.prepare`, the next recorded one (replays), or one written now
    (its sentences spoken as they come). The event also carries her expression, voice,
    the memories her prompt retrieved and ``speech_s``. The memory is fed by the
    :class:`Castroom`'s event listener, not here.
    """

    def __init__(self, room: Castroom, character: Character) -> None:
        self.room = room
        self.character = character
        #: ``(turn, player's line, reply, retrieved memories)`` written ahead by :meth:`Castroom.prepare`.
        self.prepared: tuple[int, str, Reply, list[str]] | None = None
        #: The replies written in this session, in order.
        self.replies: list[Reply] = []

    def addressed(self, host: TurnHost, event: Event) -> bool:
        """Whether ``event`` is the player speaking to her (see :func:`addressed_to`)."""
        return addressed_to(host, event, self.character.id)

    def on_turn(self, host: TurnHost, intent: AnyIntent, events: list[Event]) -> list[Event]:
        """Her ``reply`` events for this turn's lines addressed to her."""
        out: list[Event] = []
        state: GameState = host.state
        for e in events:
            if not self.addressed(host, e):
                continue
            if self.room.recorded is not None:
                row = self.room.recorded.take(self.character.id, e.text)
                out.append(Event(kind="reply", turn=state.turn, frame=state.frame, scene=state.scene,
                                 speaker=str(row.get("speaker", self.character.id)), text=str(row.get("text", "")),
                                 ids=dict(row.get("ids") or {}), data=dict(row.get("data") or {})))
                continue
            prepared, self.prepared = self.prepared, None
            if prepared is not None and prepared[:2] == (state.turn, e.text):
                reply, memories = prepared[2], prepared[3]
            else:
                reply, memories = self.room.write_reply(self.character, e.text, state)
            self.replies.append(reply)
            out.append(self.room.reply_event(self.character, reply, memories, state))
        return out


# -- the cast of a session ---------------------------------------------------------------------

class Castroom:
    """A session's living characters: one turn step, and the extension that saves their memories.

    Made by :func:`build_cast`; a session gets it as a step (``Session(steps=[room])``), as
    its ``"cast"`` extension, its event observer, and the director's cast views
    (:meth:`views`); :func:`game.session.assembly.open_game` does all of it. Reach it from
    a session with :func:`cast_of`. Each turn (:meth:`on_turn`) runs, in order, every
    character's relationship hook, every character's reply, then the bookkeeping (the
    relationship path, and a memory snapshot when the turn takes a checkpoint).

    Attributes:
        story: the story.
        characters: id -> :class:`Character`.
        model: the dialogue model (``None``: authored answers and fallbacks only, or a replay).
        worker: the model worker process, when the model runs in one.
        voice: her voice (``None``: silent).
        recorded: recorded replies (replays), or ``None``.
        names: ids (characters, items, scenes, locations) -> display names.
        path: ``(turn, {character: {axis: value}})`` after every turn.
        warnings: a card over its budget, by what the player would lose (shown by
            :func:`game.session.assembly.open_game` as :attr:`Game.warnings`).
    """

    def __init__(self, story: Story, characters: dict[str, Character], *, model: DialogueModel | None,
                 worker: ModelWorker | None, voice: VoiceTrack | None, recorded: RecordedReplies | None,
                 store: PersonaLog | None, embedder: Any, settings: DialogueSettings,
                 warnings: Sequence[str] = ()) -> None:
        self.story = story
        self.characters = characters
        self.model = model
        self.worker = worker
        self.voice = voice
        self.recorded = recorded
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.hooks: dict[str, CastHook] = {cid: CastHook(self, ch) for cid, ch in characters.items()}
        self.relationship_hooks = [RelationshipHook(ch.card, ch.rel) for ch in characters.values()]
        #: the state the turn being applied (or prepared) reads: her mood in the prompt.
        self._state: GameState | None = None
        m = story.model
        self.names: dict[str, str] = {**{k: v.name for k, v in m.locations.items()},
                                      **{k: v.title or k.replace("_", " ") for k, v in m.scenes.items()},
                                      **{k: v.name for k, v in m.items.items()},
                                      **{k: v.name for k, v in m.cast.items()}}
        self.path: list[tuple[int, dict[str, dict[str, float]]]] = []
        #: what a player would lose from a card over its budget (:func:`game.cast.cardcheck.check_card`)
        self.warnings: list[str] = list(warnings)
        self._closed = False

    # -- the extension ------------------------------------------------------------------
    def save_extra(self) -> dict[str, Any]:
        """Every character's memory (``Memory.to_json``: no embeddings)."""
        out: dict[str, Any] = {}
        for cid, ch in self.characters.items():
            with ch.lock:
                out[cid] = ch.memory.to_json()
        turn = self.path[-1][0] if self.path else 0
        return {"format": "worldloom-cast", "version": 1, "memories": out, "turn": turn}

    def restore_extra(self, data: dict[str, Any] | None) -> Callable[[], None]:
        """Check memories saved by :meth:`save_extra` (``None``: fresh memories) and return the
        function that puts them in place (for a load and for a rollback to a checkpoint,
        which carries this snapshot). Every memory is rebuilt before any is replaced.

        Raises:
            SaveError: the saved memories are malformed (nothing changed).
        """
        saved = (data or {}).get("memories", {})
        if not isinstance(saved, dict):
            raise SaveError("memories must be a mapping")
        built: dict[str, Memory] = {}
        for cid, ch in self.characters.items():
            config, count = ch.memory.config, ch.memory.count_tokens
            if cid in saved:
                try:
                    built[cid] = Memory.from_json(saved[cid], ch.card, config, count_tokens=count,
                                                  embedder=self.embedder)
                except SaveError as exc:
                    raise SaveError(f"memories.{cid}: {exc.why}") from exc
            else:
                built[cid] = Memory(ch.card, config, count_tokens=count, embedder=self.embedder)

        def commit() -> None:
            for cid, memory in built.items():
                ch = self.characters[cid]
                with ch.lock:
                    ch.memory = memory
                    ch.builder = PromptBuilder(memory)
            turn = (data or {}).get("turn")
            if isinstance(turn, int):  # the relationship path as far as the snapshot went
                self.path = [p for p in self.path if p[0] <= turn]

        return commit

    # -- the turn step ----------------------------------------------------------------------
    def on_turn(self, host: TurnHost, intent: AnyIntent, events: list[Event]) -> list[Event]:
        """The cast's part of a turn: relationship effects, then replies, then bookkeeping.

        Raises:
            InputError: a replay's transcript has no recorded reply left for a line to her.
        """
        self._state = host.state
        out: list[Event] = []
        for rel_hook in self.relationship_hooks:
            out += rel_hook.on_turn(host, intent, events + out)
        for hook in self.hooks.values():
            out += hook.on_turn(host, intent, events + out)
        out += self.greetings(host.state, events + out)
        self.note_path(host.state)
        return out

    def greetings(self, state: GameState, events: Sequence[Event]) -> list[Event]:
        """Her card greeting, the first turn she is in the player's scene and has said nothing yet.

        The greeting is V2 ``first_mes`` or one of ``alternate_greetings`` (:attr:`CharacterCard.greetings`),
        chosen by the session's seed (the same on every run of that seed, and in its replay),
        macros expanded (``{{user}}``: the player's name once known, else "traveller"). None when
        the story already gave her a line this turn (an authored greeting wins), when she
        has spoken before (her memory holds a line of hers), or when her card has none.
        Returns ``line`` events (speaker: her id; ``data.greeting``: the greeting's index); her
        voice says it.
        """
        here = present(self.story, state)
        out: list[Event] = []
        for cid, ch in self.characters.items():
            greetings = ch.card.greetings
            if not greetings or cid not in here or any(e.speaker == cid for e in events):
                continue
            with ch.lock:
                if any(m.role == "assistant" for m in ch.memory.history):
                    continue
                user = ch.memory.player_name or "traveller"
            index = zlib.crc32(f"{self.settings.seed}:{cid}".encode()) % len(greetings)
            text = substitute(greetings[index], ch.card.display_name, user, card_fields(ch.card),
                              self.settings.seed)
            text = " ".join(text.split())
            if self.voice is not None:
                self.voice.say(text, self._voice_settings(ch, ch.rel.voice_style(state)))
            out.append(Event(kind="line", turn=state.turn, frame=state.frame, scene=state.scene, speaker=cid,
                             text=text, data={"greeting": index, "source": "card"}))
        return out

    def prepares(self, intent: AnyIntent) -> bool:
        """Whether :meth:`prepare` has work for ``intent``: a line said, and a model to answer it."""
        return isinstance(intent, Say) and self.recorded is None and not intent.action_id

    def prepare(self, host: TurnHost, intent: AnyIntent, events: list[Event]) -> None:
        """Write ahead, off the session's lock, the reply to a line said to one of them.

        ``host.state`` is a copy the rules have already been applied to and ``events`` are
        that turn's events: the relationship hooks run on the copy too, so the reply is the
        one :meth:`on_turn` would write (it then takes it at once). Sentences go to
        ``host.progress("sentence", character, text)`` as they are accepted.
        """
        if self.recorded is not None or not isinstance(intent, Say):
            return
        self._state = host.state
        for rel_hook in self.relationship_hooks:
            events = events + rel_hook.on_turn(host, intent, events)
        progress = getattr(host, "progress", None)
        for cid, hook in self.hooks.items():
            said = next((e for e in events if hook.addressed(host, e)), None)
            if said is None or hook.character.pipeline is None:
                continue

            def sentence(s: Sentence, who: str = cid) -> None:
                if progress is not None:
                    progress("sentence", who, s.text)

            reply, memories = self.write_reply(hook.character, said.text, host.state, on_sentence=sentence)
            hook.prepared = (host.state.turn, said.text, reply, memories)

    def begin(self, state: GameState) -> None:
        """Put every character's relationship start values into a new game's ``state``."""
        for ch in self.characters.values():
            ch.rel.ensure(state)
        self.note_path(state)

    def views(self) -> dict[str, _View]:
        """Character id -> the director's view of her (identity anchor, expression)."""
        return {cid: _View(ch) for cid, ch in self.characters.items()}

    # -- events -----------------------------------------------------------------------------
    def observe(self, event: Event) -> None:
        """Feed one recorded event to every character's memory (``Session.on_event``).

        Then, when the model runs in the worker process, each character's pipeline hands it
        the known start of her next prompt to encode while the player is idle
        (:meth:`DialoguePipeline.preencode_next`: after her reply, after a slide, after a line
        of hers; it returns at once and gives way to any reply asked for), with the header of
        the player's next turn after it.
        """
        for ch in self.characters.values():
            with ch.lock:
                ch.memory.observe(event, self.names)
            if self.worker is not None and ch.pipeline is not None:
                ch.pipeline.preencode_next(typed="")

    def typing(self, text: str, target: str | None = None) -> int:
        """The player has typed ``text`` so far (not sent yet): hand it to the model worker after
        the known start of ``target``'s next prompt (``None``: every character's), so it is
        encoded while the player goes on typing (:meth:`DialoguePipeline.preencode_next`); a
        newer call replaces an older one there, and a reply asked for comes first. Call it at a
        pause in typing (a word's end), not per key. Only with the model in the worker process.

        Returns:
            How many characters' prompts were handed over.
        """
        sent = 0
        for cid, ch in self.characters.items():
            if self.worker is not None and ch.pipeline is not None and target in (None, cid):
                sent += ch.pipeline.preencode_next(typed=text)
        return sent

    def note_path(self, state: GameState) -> None:
        """Record the relationship values now."""
        values = {cid: {k: round(v, 4) for k, v in ch.rel.values(state).items()}
                  for cid, ch in self.characters.items()}
        if self.path and self.path[-1][0] == state.turn:
            self.path[-1] = (state.turn, values)
        else:
            self.path.append((state.turn, values))

    # -- replies ------------------------------------------------------------------------------
    def _prompt(self, ch: Character) -> Callable[[str], list[Message]]:
        def prompt(text: str) -> list[Message]:
            with ch.lock:
                assert ch.builder is not None and self._state is not None
                mood = ch.rel.describe(self._state, ch.memory.player_name or "the player")
                parts = ch.builder.build(text, mood=mood, names=self.names)
            best = sorted((b for b in parts.blocks if b.section == "memories"), key=lambda b: -b.score)
            ch.retrieved = [b.text[:MEMORY_CHARS] for b in best]
            return parts.to_messages()

        return prompt

    def _prefix(self, ch: Character) -> Callable[[], list[Message]]:
        def prefix() -> list[Message]:
            with ch.lock:
                assert ch.builder is not None
                return ch.builder.known_prefix()

        return prefix

    def _facts(self, ch: Character) -> Callable[[str], PersonaFacts]:
        def facts(text: str) -> PersonaFacts:
            assert ch.base_facts is not None
            with ch.lock:
                return facts_from_memory(ch.base_facts, ch.memory, text)

        return facts

    def write_reply(self, ch: Character, text: str, state: GameState, speak: bool = True,
                    on_sentence: Callable[[Sentence], None] | None = None) -> tuple[Reply, list[str]]:
        """Her reply to ``text`` in ``state`` (its turn; her mood), its sentences spoken as
        they come, and the memories her prompt retrieved. Rejections go to the error bank."""
        if ch.pipeline is None:
            raise InputError(f"{ch.card.display_name} cannot answer in this session (no dialogue pipeline)")
        turn = state.turn
        with ch.talk:
            self._state = state
            ch.retrieved = []
            voice_settings = self._voice_settings(ch, ch.rel.voice_style(state))
            if speak and self.voice is not None and self.voice.realtime:
                self.voice.interrupt()

            def sentence(s: Sentence) -> None:
                if speak and self.voice is not None:
                    self.voice.say(s.text, voice_settings)
                if on_sentence is not None:
                    on_sentence(s)

            reply = ch.pipeline.reply(text, turn, sentence)
            memories = list(ch.retrieved[:RECORDED_MEMORIES])
        self._bank(ch, reply, state)
        return reply, memories

    @staticmethod
    def _voice_settings(ch: Character, style: Any) -> VoiceSettings:
        """Her card's voice with ``style`` on top, in the language play is in (``--lang``)."""
        return VoiceSettings.from_card(ch.card.voice, style, language())

    def _bank(self, ch: Character, reply: Reply, state: GameState) -> None:
        """Out-of-character rejections: a ``reply.persona`` case each, and a negative example."""
        bad = [r for r in reply.rejected if r.kind in ("ooc", "never_say", "leak") and r.text.strip()]
        if not bad or ch.pipeline is None:
            return
        for r in bad:
            ch.pipeline.guard.add_negative(r.text)
        if self.store is None:
            return

        correction = "regenerate_reply" if reply.source == "model" else "authored_line"
        for r in bad:
            with contextlib.suppress(Exception):  # the error bank must never end a turn
                self.store.record(Rejection(character=ch.id, scene=state.scene, frame=state.frame, kind=r.kind,
                                            bad_reply=r.text, fixed_reply=reply.text,
                                            player_text=reply.player_text, correction=correction,
                                            reasons="; ".join(r.reasons)))

    def reply_event(self, ch: Character, reply: Reply, memories: list[str], state: GameState) -> Event:
        """The ``reply`` event: the pipeline's record plus expression, voice, memories and ``speech_s``."""
        event = reply.to_event(state.turn, state.frame, state.scene)
        style = ch.rel.voice_style(state)
        data = dict(event.data)
        data.update(expression=style.expression, voice=style.to_json(), memories=memories,
                    speech_s=speech_estimate(reply.text, style.rate, len(reply.sentences)))
        return event.model_copy(update={"data": data})

    # -- talking from a window or a script ------------------------------------------------------
    def character(self, character: str) -> Character:
        """The living character ``character``.

        Raises:
            InputError: no such character with a card in this story.
        """
        ch = self.characters.get(character)
        if ch is None:
            known = ", ".join(self.characters) or "none"
            raise InputError(f"{character!r} is not a character you can talk to", hint=f"characters: {known}")
        return ch

    def addressee(self, text: str, present: Sequence[str] = ()) -> str:
        """Whom a typed line speaks to: a leading name (``"Eve, ..."``/``"eve: ..."``), else the
        only character in ``present`` (the scene's cast) who can answer; ``""`` when unclear."""
        low = text.strip().lower()
        for cid, ch in self.characters.items():
            for name in {cid, ch.card.display_name.lower(), ch.card.name.lower()}:
                if low.startswith(name) and low[len(name):len(name) + 1] in (",", ":", " ", ""):
                    return cid
        answer = [cid for cid in present if cid in self.characters]
        return answer[0] if len(answer) == 1 else ""

    def set_voice_output(self, output: VoiceOutput | None) -> None:
        """Send each spoken sentence to ``output(audio, rate)`` as soon as it is ready (a window
        plays it on its own mixer channel) instead of mixing it into the chunks' audio."""
        if self.voice is not None:
            self.voice.output = output
            self.voice.realtime = output is not None or self.voice.realtime

    # -- the closing note ---------------------------------------------------------------------
    def summary(self, events: Sequence[Event]) -> dict[str, Any]:
        """What the session's ``events`` (its whole log) showed of each character (see :func:`summarise`)."""
        return summarise(self, list(events))

    def close(self) -> None:
        """Stop the voice and the model worker (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self.voice is not None:
            self.voice.close()
        if self.worker is not None:
            self.worker.close()


class _HasExtensions(Protocol):
    def extension(self, name: str) -> Any: ...


def cast_of(session: _HasExtensions) -> Castroom | None:
    """The :class:`Castroom` a session was built with (its ``"cast"`` extension), if any."""
    room = session.extension(EXTENSION)
    return room if isinstance(room, Castroom) else None


# -- the summary -----------------------------------------------------------------------------

_PROPER = re.compile(r"(?<!^)(?<![.!?]\s)\b([A-Z][a-z\u00c0-\u024f'-]{2,})\b")


def key_terms(text: str) -> list[str]:
    """Proper nouns of a player's line ("my grandmother kept a lighthouse in Finnmark" -> ``["Finnmark"]``)."""
    return list(dict.fromkeys(m.group(1) for m in _PROPER.finditer(text.strip())))


def _passes_now(reply: Event, pipeline: DialoguePipeline | None) -> bool:
    """Whether a delivered reply passes her persona guard and (model replies) her verifier now."""
    if pipeline is None or not pipeline.guard.check(reply.text).ok:
        return pipeline is None
    if pipeline.verifier is None or (reply.data.get("check") or {}).get("status") == "authored":
        return True
    said = str(reply.data.get("player_text", ""))  # what the player said that turn may be echoed
    return pipeline.verifier.check(reply.text, pipeline.guard.facts, said)[0].ok


def said_back(text: str, entity: str, key: str, value: str) -> bool:
    """Whether ``text`` says the belief ``entity.key = value`` back (:func:`~game.cast.grounding.says_value`);
    a count needs the counted thing too: "2 cats, you said." says ``player_cats.count = 2``, "Two white
    flashes every fifteen seconds." does not; a gift, a place or a carer needs every word of one item
    ("the lemon from the Harrowby shop" is not said back by a reply that names Harrowby)."""
    if not says_value(text, value):
        return False
    if key in ("gave", "place", "carer"):
        return any(all(says_value(text, w) for w in content_words(item)) for item in value.split("; ") if item)
    if key != "count":
        return True
    thing = entity.removeprefix("player_").replace("_", " ").split()
    said = {t.removesuffix("s") for t in re.findall(r"[a-z]+", text.lower())}
    return bool(thing) and thing[-1].removesuffix("s") in said


def echoes(reply: str, line: str, value: str) -> bool:
    """Whether ``reply`` says ``value`` only as the player's own ``line`` of that turn does: every
    word of the value the reply says is one the line says too ("what did I say I enjoy doing in the
    mornings?" -> "mornings" is an echo; "Rowing on cold mornings." says "rowing", which the line
    does not, so the fact is said back)."""
    if not says_value(line, value):
        return False
    asked = {w.removesuffix("s") for w in content_words(line)} | {str(q.value) for q in quantities(line)}
    return not any(says_value(reply, w) for w in content_words(value) if w.removesuffix("s") not in asked)


def summarise(room: Castroom, events: Sequence[Event]) -> dict[str, Any]:
    """The closing note of a session, per character.

    * ``replies``: how many, by source (``authored``, ``model``, ``fallback``);
    * ``identity``: replies delivered; ``in_character``: those recorded as checked when said
      (``data.check.status``: ``verified``, a model reply that passed the persona guard and the
      verifier and the coherence check, or ``authored``); ``pass_guard_now``: those that pass the guard
      and the verifier re-checked at the end; ``replaced_incoherent``: replies said instead of model
      attempts the coherence check stopped; model attempts the guard rejected (by
      kind), the names she gave herself (``name_kept``: only her own), and her identity
      anchor (constant: from her card);
    * ``player_name``: the name she holds, where it was told, and the later replies that say it;
    * ``facts``: each thing the player told her about themselves: first every belief her
      memory took from the player's lines (``belief``: ``entity.key = value``; said back when
      a later reply says the value, :func:`~game.cast.grounding.says_value`, "40" for "forty",
      and the player's own question that turn does not), then any other disclosure with proper
      nouns (a question never counts), when, and the later exchanges whose reply says it or
      whose prompt retrieved it;
    * ``path``: trust/affinity (every axis) after each turn, and first/min/max/last.
    """
    out: dict[str, Any] = {}
    for cid, ch in room.characters.items():
        replies = [e for e in events if e.kind == "reply" and e.speaker == cid]
        said = [e for e in events if e.kind == "say" and e.speaker == "player"
                and str(e.data.get("target", "")) in ("", cid)]
        sources = Counter(str(e.data.get("source", "")) for e in replies)
        rejected = Counter(str(r.get("kind", "")) for e in replies for r in e.data.get("rejected", []))
        checked = sum(1 for e in replies if str((e.data.get("check") or {}).get("status", "")) in ("verified",
                                                                                                 "authored"))
        still_ok = sum(1 for e in replies if _passes_now(e, ch.pipeline))
        replaced = sum(1 for e in replies if (e.data.get("check") or {}).get("replaced") == "incoherent")
        claimed = sorted({n for e in replies for n in names_claimed(e.text)})
        mine = {ch.card.name, ch.card.display_name, *ch.card.name.split()}
        exchange_of = {e.turn: i + 1 for i, e in enumerate(replies)}
        name = ch.memory.player_name
        told_at = next((e.turn for e in said if extract_player_name(e.text)), -1)
        named = {e.turn for e in said if name and re.search(rf"\b{re.escape(name)}\b", e.text)}
        name_said = [exchange_of[e.turn] for e in replies if name and 0 <= told_at < e.turn and e.turn not in named
                     and re.search(rf"\b{re.escape(name)}\b", e.text)]
        facts = []
        asked = {e.turn: e.text for e in said}  # the player's line of each turn (a reply echoing it does not count)
        told = [b for b in ch.memory.beliefs() if (b.entity == "player" and b.key != "name")
                or b.entity.startswith("player_")]
        for b in told:  # what her memory took from the player's lines, checked by value ("forty" == "40")
            later = [e for e in replies if e.turn > b.turn]
            facts.append({
                "told": asked.get(b.turn, b.source), "belief": f"{b.entity}.{b.key} = {b.value}", "terms": [b.value],
                "told_at_exchange": exchange_of.get(b.turn, 0),
                "said_in_replies": [exchange_of[e.turn] for e in later if said_back(e.text, b.entity, b.key, b.value)
                                    and not echoes(e.text, asked.get(e.turn, ""), b.value)],
                "retrieved_in_prompts": [exchange_of[e.turn] for e in later
                                         if any(says_value(m, b.value) for m in e.data.get("memories", []))]})
        believed = {b.turn for b in told}
        for s in said:
            terms = [t for t in key_terms(s.text) if t not in mine and t != name]
            if (s.turn in believed or s.text.rstrip().endswith("?") or not is_disclosure(s.text) or not terms
                    or extract_player_name(s.text)):
                continue  # a question is not a disclosure, whatever it contains ("Which treat did I say I'm fond of?")
            later = [e for e in replies if e.turn > s.turn]
            in_reply = [exchange_of[e.turn] for e in later
                        if any(t.lower() in e.text.lower() and t.lower() not in asked.get(e.turn, "").lower()
                               for t in terms)]
            in_memory = [exchange_of[e.turn] for e in later
                         if any(t.lower() in m.lower() for m in e.data.get("memories", []) for t in terms)]
            facts.append({"told": s.text, "terms": terms, "told_at_exchange": exchange_of.get(s.turn, 0),
                          "said_in_replies": in_reply, "retrieved_in_prompts": in_memory})
        path = [(turn, values[cid]) for turn, values in room.path if cid in values]
        axes = sorted({a for _, v in path for a in v})
        stats = {a: {"first": path[0][1][a], "min": min(v[a] for _, v in path), "max": max(v[a] for _, v in path),
                     "last": path[-1][1][a]} for a in axes} if path else {}
        look, image = ch.identity()
        out[cid] = {
            "name": ch.card.name,
            "replies": {"total": len(replies), **{k: sources.get(k, 0) for k in ("authored", "grounded", "model",
                                                                                  "fallback", "deflection")}},
            "identity": {"delivered": len(replies), "in_character": checked, "pass_guard_now": still_ok,
                         "rejected_attempts": dict(rejected), "replaced_incoherent": replaced,
                         "names_given": claimed, "name_kept": all(n in mine for n in claimed),
                         "anchor_image": Path(image).name if image else "", "anchor_look": look[:80]},
            "player_name": {"name": name, "told_at_exchange": exchange_of.get(told_at, 0),
                            "said_in_replies": name_said, "pinned": [t for t, _ in ch.memory.pinned.values()]},
            "facts": facts,
            "path": [{"turn": t, **v} for t, v in path],
            "path_stats": stats,
        }
    return out


def format_summary(summary: Mapping[str, Any]) -> list[str]:
    """The closing note as lines of text (for the CLI)."""
    lines: list[str] = []
    for cid, s in summary.items():
        r, ident, pn = s["replies"], s["identity"], s["player_name"]
        lines.append(f"{s['name']} ({cid}): {r['total']} replies: {r['authored']} authored, {r['grounded']} grounded, "
                     f"{r['model']} model, {r['fallback']} fallback, {r['deflection']} deflection")
        rej = ", ".join(f"{k} {v}" for k, v in sorted(ident["rejected_attempts"].items())) or "none"
        lines.append(f"  in character: {ident['in_character']}/{ident['delivered']} replies (model replies that "
                     f"passed the persona guard, the verifier and the coherence check, and authored lines), "
                     f"{ident['pass_guard_now']} pass guard and verifier re-checked at the end; "
                     f"{ident.get('replaced_incoherent', 0)} replaced after incoherent model attempts; "
                     f"model attempts rejected: {rej}; "
                     f"names she gave herself: {', '.join(ident['names_given']) or 'none'} "
                     f"({'never changed' if ident['name_kept'] else 'CHANGED'}); "
                     f"anchor {ident['anchor_image'] or '(text only)'}")
        if pn["name"]:
            lines.append(f"  player's name: {pn['name']} (told at exchange {pn['told_at_exchange']}, pinned); "
                         f"said back in replies at exchanges {pn['said_in_replies'] or 'none'} (later replies only: "
                         "not the one to the line that told it, nor one to a line that says it too)")
        else:
            lines.append("  player's name: never told")
        for f in s["facts"]:
            belief = f" ({f['belief']})" if f.get("belief") else ""
            lines.append(f"  fact told at exchange {f['told_at_exchange']}: {f['told']!r}{belief} -> "
                         f"said back at {f['said_in_replies'] or 'none'}, retrieved into her prompt at "
                         f"{f['retrieved_in_prompts'] or 'none'}")
        stats = s["path_stats"]
        if stats:
            lines.append("  relationship: " + "; ".join(
                f"{a} {v['first']:+.2f} -> {v['last']:+.2f} (min {v['min']:+.2f}, max {v['max']:+.2f})"
                for a, v in stats.items()) + f" over {len(s['path'])} turns")
    return lines


# -- installing ---------------------------------------------------------------------------------

def story_cards(story: Story) -> dict[str, CharacterCard]:
    """The cards the story's cast names (``cast.<id>.card``, relative to the story folder).

    Raises:
        CardError: a card is missing or malformed, or its id differs from the cast id.
    """
    return {cid: member_card(story, cid) for cid, member in story.model.cast.items() if member.card}


def card_path(story: Story, cid: str) -> Path:
    """The file ``cast.<cid>.card`` names (relative paths are read from the story folder)."""
    path = Path(story.model.cast[cid].card)
    return path if path.is_absolute() else story.folder / path


def member_card(story: Story, cid: str) -> CharacterCard:
    """The card of cast member ``cid`` (who has a ``card:``).

    Raises:
        CardError: the card is missing or malformed, or its id differs from ``cid``.
    """
    path = card_path(story, cid)
    card = load_card(path)
    if card.id != cid:
        raise CardError(f"cast.{cid}.card is the card of {card.id!r}", where=str(path),
                        hint=f"use the card of {cid!r} or rename the cast entry")
    return card


def load_dialogue(spec: ModelSpec | DialogueModel | str | None, base: Path,
                  show_progress: bool = True,
                  on_progress: Progress | None = None) -> tuple[DialogueModel | None, ModelWorker | None]:
    """``(model, worker)``: the dialogue model ``spec`` names (see :func:`dialogue_spec`; a model
    object is used as it is; ``None``: none), loaded in a worker process unless it is scripted
    (``worker`` is then ``None``; otherwise the caller closes it). ``base``: the story folder.
    ``on_progress(model name, stage, fraction)`` follows the worker's loading (a window's
    loading screen).

    Raises:
        ModelError: the model cannot be loaded.
    """
    if spec is None:
        return None, None
    if isinstance(spec, str):
        spec = dialogue_spec(spec, base)
    if not isinstance(spec, ModelSpec):
        return spec, None
    if spec.kind == "scripted":
        return build_model(spec), None

    worker = ModelWorker({"dialogue": spec}, show_progress=show_progress, on_progress=on_progress).start()
    try:
        return worker.model("dialogue"), worker
    except Exception:
        worker.close()
        raise


def _warm_embedder(on_progress: Progress | None) -> threading.Thread:
    """Load the shared MiniLM (:func:`game.models.embedder.get_embedder`) on a daemon thread, so
    its import (tens of seconds on a CPU) overlaps the model worker's start; whoever needs it
    next waits for this load instead of starting another. A failure is left to that caller,
    which loads again and raises the named error."""
    def run() -> None:
        if on_progress is not None:
            on_progress("words", "MiniLM", 0.0)
        with contextlib.suppress(Exception):
            get_embedder()
        if on_progress is not None:
            on_progress("words", "MiniLM", 1.0)

    thread = threading.Thread(target=run, name="worldloom-minilm", daemon=True)
    thread.start()
    return thread


def build_cast(story: Story, dialogue: ModelSpec | DialogueModel | str | None = "transformers", *,
               seed: int = 0, audio_rate: int = 16000,
               voice: bool = True, realtime: bool = False, recorded: RecordedReplies | None = None,
               errorbank: PersonaLog | None = None, embedder: Any = None,
               settings: DialogueSettings | None = None, show_progress: bool = True,
               tts: TextToSpeech | None = None, on_progress: Progress | None = None) -> Castroom | None:
    """The story's living characters (the ``cast.<id>`` entries with a ``card:``), ready to
    be given to a session (:func:`game.session.assembly.open_game` does).

    Args:
        story: the story.
        dialogue: the dialogue model: a spec string (:func:`dialogue_spec`), a
            :class:`ModelSpec`, a model object, or ``None`` (authored answers and fallbacks only).
        seed: the session's seed (generation settings are seeded with it).
        audio_rate: the backend's audio rate, Hz (her voice is made at it).
        voice: speak her replies (pyttsx3/espeak-ng).
        realtime: the voice does not wait for synthesis when mixing (a window).
        recorded: answer with these recorded replies and never build a model (replays).
        errorbank: where rejected replies are recorded and read back as negative examples
            (:class:`game.errorbank.persona.PersonaCases` over the game's error bank).
        embedder: text encoder for memories and authored answers (default: the shared MiniLM).
        settings: generation settings (default: :class:`DialogueSettings` seeded with ``seed``).
        show_progress: show the model's loading progress.
        tts: the speech engine (tests pass one; default :class:`~game.audio.tts.TextToSpeech`).
        on_progress: ``on_progress(part, stage, fraction)`` while it loads: ``"dialogue"`` (the
            model worker) and ``"words"`` (the shared MiniLM, loaded on a thread meanwhile).

    Returns:
        The :class:`Castroom`, or ``None`` when no cast member has a card.

    Raises:
        CardError: a card is missing or malformed.
        ModelError: the dialogue model cannot be loaded.
    """
    cards = story_cards(story)
    if not cards:
        return None
    settings = settings or DialogueSettings(seed=seed)
    store = errorbank
    if embedder is None and recorded is None:  # memories need MiniLM: load it while the model worker starts
        _warm_embedder(on_progress)
    dialogue_progress = (None if on_progress is None else
                         lambda _name, stage, fraction: on_progress("dialogue", stage, fraction))
    model, worker = ((None, None) if recorded is not None
                     else load_dialogue(dialogue, story.folder, show_progress, dialogue_progress))
    try:
        context = min(model.context_size, MAX_CONTEXT) if model is not None else MAX_CONTEXT
        characters: dict[str, Character] = {}
        for cid, card in cards.items():
            memory = Memory(card, MemoryConfig(context_tokens=context), embedder=embedder)
            characters[cid] = Character(cid, card, Relationships(card, embedder=embedder), memory,
                                        builder=PromptBuilder(memory, language=language()),
                                        base_facts=facts_from_card(card, card.home))
        voice_track = VoiceTrack(audio_rate, realtime=realtime, tts=tts) if voice and recorded is None else None
        over_budget = [f"{card.where or cid}: {p.field}: {p.why}" for cid, card in cards.items()
                       for p in check_card(card, MemoryConfig(context_tokens=context)) if p.field in BUDGET_FIELDS]
        room = Castroom(story, characters, model=model, worker=worker, voice=voice_track, recorded=recorded,
                        store=store, embedder=embedder, settings=settings, warnings=over_budget)
        for ch in characters.values():
            if recorded is None:
                enc = embedder if embedder is not None else ch.memory.embedder
                pipe = pipeline_for(ch.card, ch.memory, model, settings=settings, embedder=enc, home=ch.card.home,
                                    story_names=tuple(room.names.values()))
                pipe.prompt = room._prompt(ch)
                pipe.prefix = room._prefix(ch)
                pipe.facts = room._facts(ch)
                pipe.knowledge = PlayerKnowledge(ch.card, ch.player_name, enc)
                if store is not None:
                    with contextlib.suppress(Exception):
                        pipe.guard.add_negatives(store.rejected_replies(ch.id))
                ch.pipeline = pipe
        return room
    except BaseException:
        if worker is not None:
            worker.close()
        raise


__all__ = [
    "EXTENSION",
    "CastHook",
    "Castroom",
    "Character",
    "PlayerKnowledge",
    "RecordedReplies",
    "VoiceTrack",
    "cast_of",
    "dialogue_spec",
    "format_summary",
    "build_cast",
    "card_path",
    "member_card",
    "key_terms",
    "load_dialogue",
    "names_claimed",
    "owners_differ",
    "speech_estimate",
    "story_cards",
    "summarise",
]

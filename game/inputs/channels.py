"""The player's channels into one session: typed words, voice, dropped images.

:class:`Channels` is what the window and the headless runner call; every channel
ends in ``Session.submit`` with an intent carrying ids, or in an honest answer
and no change at all:

* :meth:`Channels.say`: free text through :class:`game.inputs.meaning.Resolver`
  (negation and undo first, then meaning, then slots). Understood -> submitted;
  ``undo`` -> the last checkpoint is rolled back; a close call -> a
  :class:`~game.inputs.meaning.Clarify` question whose answer the next line may
  be ("the kite"); anything else -> a line and nothing changes.
* :meth:`Channels.voice`: a WAV or samples through :func:`game.inputs.voice.recognise`
  with a grammar of the scene's phrases; the words then go the way typed text
  goes, and the clip goes with the request as its audio cue.
* :meth:`Channels.image`: a PNG/JPEG validated by
  :func:`game.images.validate_image`, submitted as ``AddReference`` (the
  world places it, or hands it to the character it was dropped on).

Keys (WASD) and choices by number, click or drag are plain intents
(``Move``, ``Choose``, ``Give``) the window submits itself.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from game.errors import InputError
from game.inputs.images import reference_intent
from game.inputs.meaning import Clarify, NotUnderstood, Outcome, Resolver, Understood
from game.inputs.voice import Transcript, recognise, scene_phrases
from game.locale import ui
from game.state import Event, GameState, Say
from game.story.story import Story
from game.wav import pcm16, write_wav


class _Session(Protocol):
    story: Story
    state: GameState
    checkpoints: list[Any]
    director: Any

    def submit(self, intent: Any, *, audio: str = "", progress: Any = None) -> Any: ...

    def rollback(self, n: int = 1) -> list[Event]: ...


@dataclass
class Reply:
    """What a channel did.

    Attributes:
        text: the words (typed, or heard in a voice clip).
        outcome: how they were understood (``None`` for images).
        events: the events of the turn (empty when nothing happened).
        line: the player-facing answer when nothing happened (a question, "You decide not to.").
        result: the ``TurnResult`` when an intent was submitted.
        heard: the voice transcript, for voice.
        audio: the audio cue sent with the request, for voice.
    """

    text: str
    outcome: Outcome | None
    events: list[Event] = field(default_factory=list)
    line: str = ""
    result: Any = None
    heard: Transcript | None = None
    audio: str = ""

    @property
    def acted(self) -> bool:
        """Whether an intent was submitted (or a rollback done)."""
        return bool(self.events)


class Channels:
    """Typed, spoken and dropped input for ``session``.

    Args:
        session: a :class:`game.session.Session`.
        resolver: the free-text resolver (default: one over the session's story, MiniLM).
        voice_dir: where voice clips given as arrays are written for the request's audio cue.
    """

    def __init__(self, session: _Session, resolver: Resolver | None = None,
                 voice_dir: str | Path | None = None) -> None:
        self.session = session
        self.resolver = resolver or Resolver(session.story)
        self.pending: Clarify | None = None
        self.voice_dir = Path(voice_dir) if voice_dir else Path(tempfile.gettempdir()) / "worldloom-voice"
        self._embed_wired = False

    def _wire_embeddings(self) -> None:
        """Let the object cache embed entity descriptions with the resolver's embedder."""
        if not self._embed_wired:
            self._embed_wired = True
            objects = getattr(self.session.director, "objects", None)
            if objects is not None and getattr(objects, "embed", None) is None:
                objects.embed = self.resolver.embedder.encode

    def understand(self, text: str) -> Outcome:
        """How ``text`` would be understood now (nothing is submitted)."""
        return self.resolver.understand(text, self.session.state, self.pending)

    def say(self, text: str, audio: str = "") -> Reply:
        """Understand ``text`` and act on it (see the module doc).

        Raises:
            game.errors.InputError: the understood intent is not possible here (nothing changed).
            game.errors.StoryRuntimeError: the story is broken at this point (state restored).
        """
        outcome = self.understand(text)
        self._wire_embeddings()
        if isinstance(outcome, Clarify):
            self.pending = outcome
            return Reply(text, outcome, line=outcome.question, audio=audio)
        self.pending = None
        if isinstance(outcome, NotUnderstood):
            if outcome.reason == "undo":
                if self.session.checkpoints:
                    return Reply(text, outcome, self.session.rollback(1), line=outcome.reply, audio=audio)
                return Reply(text, outcome, line=ui("input.nothing_to_undo"), audio=audio)
            return Reply(text, outcome, line=outcome.reply, audio=audio)
        assert isinstance(outcome, Understood)
        intent = outcome.intent
        if isinstance(intent, Say):
            intent = Say(text=text, action_id=intent.action_id, target=intent.target)
        result = self.session.submit(intent, audio=audio)
        return Reply(text, outcome, list(result.events), result=result, audio=audio)

    def voice(self, source: str | Path | np.ndarray, rate: int | None = None) -> Reply:
        """Recognise a voice clip and act on its words as :meth:`say` does.

        Args:
            source: a PCM WAV path, or samples (float in [-1, 1] or int16), mono or ``(N, C)``.
            rate: the samples' rate in Hz (arrays only).

        Raises:
            game.errors.InputError: an unreadable clip; see also :meth:`say`.
            game.models.embedder.ModelError: pocketsphinx is not installed.
        """
        heard = recognise(source, rate, scene_phrases(self.session.story, self.session.state))
        cue = str(Path(source).resolve()) if isinstance(source, str | Path) else self._write_clip(source, rate)
        if not heard.text:
            outcome = NotUnderstood("", "empty", ui("input.heard_nothing"))
            return Reply("", outcome, line=outcome.reply, heard=heard, audio=cue)
        reply = self.say(heard.text, audio=cue)
        reply.heard = heard
        return reply

    def _write_clip(self, samples: np.ndarray, rate: int | None) -> str:
        if rate is None:
            raise InputError("a sample rate is needed with raw voice samples")
        pcm = pcm16(samples)
        digest = hashlib.sha1(pcm.tobytes() + str(rate).encode()).hexdigest()[:16]
        self.voice_dir.mkdir(parents=True, exist_ok=True)
        return str(write_wav(self.voice_dir / f"voice-{digest}.wav", pcm, rate))

    def image(self, path: str | Path, dropped_on: str = "", x: float | None = None) -> Reply:
        """Validate a dropped image and submit it (placed in view at ``x``, a fraction of the view's
        width, or where pictures go without one; or given to ``dropped_on``).

        Raises:
            game.errors.InputError: not a usable PNG/JPEG (the message names the file and why).
        """
        intent = reference_intent(path, dropped_on, x)
        result = self.session.submit(intent)
        return Reply(str(path), None, list(result.events), result=result)

"""The window's slow inputs: typed lines, voice and dropped images, off the UI thread.

* :class:`InputWorker` runs jobs one at a time, in order, on one thread (MiniLM
  takes 10-100 ms a line, a character's reply seconds, pocketsphinx about 0.6 s
  to load); their results come back to the UI thread in :meth:`InputWorker.collect`.
  With ``threaded=False`` (tests, deterministic runs) a job runs at once, inline.
* :func:`run_line` turns a typed line into a turn: said to a character, or
  understood by :class:`game.inputs.channels.Channels` (meaning, clarify, world
  edits), with a character who can talk answering what nothing else understood.
* :class:`Microphone`: push-to-talk that reports "no microphone" instead of raising.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np

from game.errors import InputError
from game.inputs.channels import Channels, Reply
from game.inputs.meaning import NotUnderstood, Resolver
from game.locale import UI, ui
from game.state import Say

T = TypeVar("T")

#: What the notice says when V finds no way to record.
NO_MICROPHONE = UI["ui.no_microphone"]
#: Shortest clip sent for recognition, seconds (a tap of V is not speech).
MIN_CLIP = 0.25
#: Not-understood reasons that a character who can talk answers instead.
TALK_REASONS = ("unknown", "question")
#: ``stream(kind, speaker id, text)``, called on the worker while a line is said to someone:
#: ``echo`` (the player's own line, to show at once) then ``sentence`` for each sentence of
#: her reply as it is accepted (before the turn, with her whole reply, is in the session).
Stream = Callable[[str, str, str], None]


class InputWorker:
    """One thread that runs input jobs in order and hands results back to the UI thread.

    Args:
        threaded: run jobs on a worker thread; ``False`` runs each job inline in
            :meth:`submit` and calls its callback at once.
    """

    def __init__(self, threaded: bool = True) -> None:
        self.threaded = threaded
        self._jobs: deque[tuple[str, bool, Callable[[], Callable[[], None]]]] = deque()
        self._done: deque[Callable[[], None]] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stop = False
        self._running: tuple[str, bool] | None = None
        self.jobs_done = 0

    def submit(self, label: str, run: Callable[[], T], done: Callable[[T], None],
               failed: Callable[[BaseException], None], quiet: bool = False) -> None:
        """Run ``run()`` off the UI thread; then ``done(result)`` or ``failed(error)`` on it.

        Args:
            label: what the window shows while the job waits or runs ("…", "Eve is thinking").
            run: the work (may block: models, the session lock).
            done: called on the UI thread (in :meth:`collect`) with the result.
            failed: called on the UI thread with the exception ``run`` raised.
            quiet: background work that neither touches the session nor makes the worker
                :attr:`busy` (loading a model ahead of need); its callbacks are not called.
        """

        def job() -> Callable[[], None]:
            try:
                value = run()
            except Exception as exc:  # every failure becomes a notice, never a dead thread
                err: BaseException = exc
                return lambda: failed(err)
            return lambda: done(value)

        if not self.threaded:
            job()()
            self.jobs_done += 1
            return
        with self._cond:
            self._jobs.append((label, quiet, job))
            if self._thread is None:
                self._stop = False
                self._thread = threading.Thread(target=self._loop, name="worldloom-inputs", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                label, quiet, job = self._jobs.popleft()
                self._running = (label, quiet)
            finish = job()
            with self._cond:
                if not quiet:
                    self._done.append(finish)
                self._running = None
                self._cond.notify_all()

    def collect(self) -> int:
        """Call the callbacks of finished jobs (UI thread); returns how many ran."""
        n = 0
        while True:
            with self._cond:
                if not self._done:
                    return n
                finish = self._done.popleft()
            finish()
            self.jobs_done += 1
            n += 1

    @property
    def busy(self) -> bool:
        """Whether a job (not a quiet one) waits, runs, or has a result not yet collected."""
        with self._cond:
            return bool(any(not q for _, q, _ in self._jobs) or (self._running and not self._running[1])
                        or self._done)

    @property
    def label(self) -> str:
        """The label of the job running (or next to run), quiet ones aside; ``""`` when idle."""
        with self._cond:
            if self._running and not self._running[1]:
                return self._running[0]
            return next((label for label, q, _ in self._jobs if not q), "")

    def wait(self, timeout: float = 10.0) -> bool:
        """Block until every submitted job has run (not collected); ``False`` on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._jobs and self._running is None, timeout)

    def stop(self, timeout: float = 1.0) -> None:
        """Stop the thread after the job it runs (queued jobs are dropped)."""
        with self._cond:
            self._stop = True
            self._jobs.clear()
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None


def refresh_resolver(channels: Channels) -> None:
    """After a story reload: understand lines with the story the session plays now."""
    story = channels.session.story
    if channels.resolver.story is not story:
        channels.resolver = Resolver(story, channels.resolver.embedder, channels.resolver.thresholds)
        channels.pending = None


def say_to(channels: Channels, text: str, target: str, stream: Stream | None = None) -> Reply:
    """Submit ``text`` said to character ``target``; her reply comes as a ``reply`` event.

    The session's cast writes the reply in the turn's prepare phase, off the session's
    lock, its sentences going to ``stream`` as they come (``Session.submit(progress=)``).
    """
    channels.pending = None
    session = channels.session
    if stream is not None:
        stream("echo", "player", text)
    result = session.submit(Say(text=text, target=target), progress=stream)
    return Reply(text, None, list(result.events), result=result)


def run_line(channels: Channels, text: str, target: str = "", fallback: str = "",
             stream: Stream | None = None) -> Reply:
    """A typed line's turn (runs on the input worker).

    Args:
        channels: the session's channels.
        text: the line.
        target: a character it is said to outright (``@eve``, or clicked and she can
            talk): submitted as ``Say(text, target)`` without looking for other meanings.
        fallback: a character who answers when the line is not understood otherwise
            (someone present with a character card, or the character clicked).
        stream: see :data:`Stream` (lines said to someone only).

    Raises:
        game.errors.WorldloomError: the turn was refused (nothing changed).
    """
    refresh_resolver(channels)
    if target:
        return say_to(channels, text, target, stream)
    if fallback:
        outcome = channels.understand(text)
        if isinstance(outcome, NotUnderstood) and outcome.reason in TALK_REASONS:
            reply = say_to(channels, text, fallback, stream)
            reply.outcome = outcome
            return reply
    return channels.say(text)


def run_voice(channels: Channels, samples: np.ndarray, rate: int, target: str = "", fallback: str = "",
              stream: Stream | None = None) -> Reply:
    """A push-to-talk clip's turn (runs on the input worker): its words go the way a typed
    line goes (see :func:`run_line`; ``samples`` ``(N,)`` float32 mono at ``rate`` Hz).

    Said to ``target``: recognised and said to her. Otherwise acted on by
    :meth:`Channels.voice` (the clip goes with the request as its audio cue); words it does
    not understand go to ``fallback`` when there is one.
    """
    refresh_resolver(channels)
    if target:
        from game.inputs.voice import recognise, scene_phrases

        session = channels.session
        heard = recognise(samples, rate, scene_phrases(session.story, session.state))
        if not heard.text:
            nothing = NotUnderstood("", "empty", ui("input.heard_nothing"))
            return Reply("", nothing, line=nothing.reply, heard=heard)
        reply = say_to(channels, heard.text, target, stream)
        reply.heard = heard
        return reply
    reply = channels.voice(samples, rate)
    outcome = reply.outcome
    if fallback and reply.heard is not None and reply.heard.text and isinstance(outcome, NotUnderstood) \
            and outcome.reason in TALK_REASONS:
        talked = say_to(channels, reply.heard.text, fallback, stream)
        talked.outcome, talked.heard, talked.audio = outcome, reply.heard, reply.audio
        return talked
    return reply


class Recorder(Protocol):
    """A push-to-talk recorder (:class:`game.inputs.voice.PushToTalk` is one)."""

    def start(self) -> None: ...

    def stop(self) -> tuple[np.ndarray, int]: ...


def _push_to_talk() -> Recorder:
    from game.inputs.voice import PushToTalk

    return PushToTalk()


@dataclass
class Microphone:
    """Hold-to-record without surprises: a missing microphone, ``sounddevice`` or PortAudio
    turns voice off with :attr:`error` set, instead of raising.

    Args:
        factory: makes the recorder (default :class:`game.inputs.voice.PushToTalk`).
    """

    factory: Callable[[], Recorder] = _push_to_talk
    error: str = ""
    recording: bool = False
    _recorder: Recorder | None = None

    def start(self) -> bool:
        """Start recording; ``False`` (and :attr:`error` set) when there is no microphone."""
        if self.error:
            return False
        if self.recording:
            return True
        try:
            if self._recorder is None:
                self._recorder = self.factory()
            self._recorder.start()
        except InputError as exc:
            self.error = exc.why
            return False
        except Exception as exc:  # PortAudio and friends raise their own types
            self.error = str(exc) or type(exc).__name__
            return False
        self.recording = True
        return True

    def stop(self) -> tuple[np.ndarray, int] | None:
        """Stop recording; the clip ``((N,) float32 mono, rate Hz)``, or ``None`` if none was made."""
        if not self.recording or self._recorder is None:
            return None
        self.recording = False
        try:
            return self._recorder.stop()
        except Exception as exc:  # a device that vanished mid-clip
            self.error = str(exc) or type(exc).__name__
            return None

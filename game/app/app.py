"""`App`: the player window as a view over a `Session`, stepped one event and one
tick at a time.

The blocking loop in :mod:`game.app.window` only feeds it pygame events and wall
time; tests drive the same object deterministically (``threaded=False``: the
frame feed streams synchronously, ``tick()`` with no argument is exactly one
frame period).

Every player action goes through :meth:`App.act` (or rollback / save / load),
which turns a :class:`~game.errors.WorldloomError` into a notice in the panel:
nothing the player does ends in a traceback.

Typed lines, push-to-talk clips (hold V), dropped pictures and story reloads (F6,
``watch``) are slow (MiniLM, a character's reply, pocketsphinx, Pillow, YAML):
they run on the :class:`~game.app.inputs.InputWorker` thread, through
:class:`~game.inputs.channels.Channels`, and come back in :meth:`App.tick`.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np
import pygame

from game.app import overlays, paint, panels
from game.app.audio import AudioOut
from game.app.dialogue import Line, LineReader
from game.app.fonts import Fonts
from game.app.frames import FrameClock, FrameFeed, QueuedFrame
from game.app.inputs import MIN_CLIP, InputWorker, Microphone, run_line, run_voice
from game.app.layout import Layout, character_boxes, make_layout, nearest_character
from game.app.reload import Reloaded, Reloader
from game.app.settings import SPEED_NAMES, Settings
from game.errors import InputError, SaveError, WorldloomError
from game.inputs.address import parse_address
from game.inputs.channels import Channels, Reply
from game.inputs.meaning import Clarify, NotUnderstood
from game.locale import error_text, message, ui
from game.session import Session, TurnResult, View
from game.state import AnyIntent, Choose, Event, Give, Move, Wait
from game.story.strings import ending_name
from game.words import opening

Direction = Literal["w", "a", "s", "d"]

def _on_off(on: bool) -> str:
    """``on`` / ``off`` in the play language."""
    return ui("ui.on") if on else ui("ui.off")


#: Keys that move, and the direction each stands for.
MOVE_KEYS: dict[int, Direction] = {pygame.K_w: "w", pygame.K_a: "a", pygame.K_s: "s", pygame.K_d: "d",
             pygame.K_UP: "w", pygame.K_LEFT: "a", pygame.K_DOWN: "s", pygame.K_RIGHT: "d"}
#: Seconds of holding one Move intent stands for.
MOVE_STEP = 0.5
#: Number keys -> choice number.
NUMBER_KEYS = {**{getattr(pygame, f"K_{i}"): i for i in range(1, 10)},
               **{getattr(pygame, f"K_KP{i}"): i for i in range(1, 10)}}
#: Slot of F5 / F9.
QUICK_SLOT = "quick"
#: How long a notice stays, seconds.
NOTICE_LIFE = 6.0
#: Thumbnail width saved with a game, pixels.
THUMB_WIDTH = 320
#: Frames between two refreshes of the blurred glow around the world.
AMBIENT_EVERY = 6
#: Event kinds shown as lines (``reply``: a character answering, from the cast room).
LINE_KINDS = ("line", "say", "reply")
#: Picture files a drop is checked as (anything else is refused with a notice, unread).
PICTURE_SUFFIXES = (".png", ".jpg", ".jpeg")


class App:
    """The player: frames, lines, choices, inventory, text line, saves, settings.

    Args:
        session: the session to show (started by :meth:`start` if it is not yet).
        size: window size in pixels.
        screen: draw on this surface instead of opening a display.
        fullscreen: open the display fullscreen.
        threaded: stream frames on a worker thread (``False``: synchronously in
            :meth:`tick`, for tests and deterministic runs).
        audio: try to play world sound.
        settings: initial settings.
        channels: typed, spoken and dropped input (default: ``Channels(session)``,
            MiniLM loading on the input worker at the first line).
        microphone: push-to-talk (default: :class:`game.inputs.voice.PushToTalk`).
        watch: reload the story by itself when its files change on disk.
    """

    def __init__(self, session: Session, size: tuple[int, int] = (1280, 720), *,
                 screen: pygame.Surface | None = None, fullscreen: bool = False,
                 threaded: bool = True, audio: bool = True, settings: Settings | None = None,
                 channels: Channels | None = None, microphone: Microphone | None = None,
                 watch: bool = False) -> None:
        pygame.display.init()
        pygame.font.init()
        self.session = session
        self.settings = settings or Settings(fullscreen=fullscreen)
        self.settings.fullscreen = fullscreen or self.settings.fullscreen
        self.window_size = size
        self._owns_display = screen is None
        self.screen = screen if screen is not None else self._open_display()
        caps = session.caps
        self.frame_size = (caps.width, caps.height)
        self.fps = caps.fps
        self.layout: Layout = make_layout(self.screen.get_size(), self.frame_size)
        self._fonts: dict[float, Fonts] = {}
        #: Scenery the backend did not draw, one line per scene and phrase, as told on stderr.
        self.author_notes: list[str] = []
        self.feed = FrameFeed(session, buffer_frames=max(2 * caps.frames_per_block, int(caps.fps)),
                              threaded=threaded)
        self.clock = FrameClock(caps.fps)
        self.audio = AudioOut(enabled=audio, rate=caps.audio_rate, volume=self.settings.volume)
        self.reader = LineReader(self.settings)
        self.history = overlays.HistoryOverlay()
        self.save_screen = overlays.SaveScreen()
        self.help_open = False
        self.show_stats = False
        self.entry_text = ""
        self.entry_focus = False
        self.running = True
        #: The frame on screen, ``(H, W, 3)`` uint8 RGB, and its index on the backend's clock.
        self.frame: np.ndarray | None = None
        self.frame_index = -1
        self.frames_shown = 0
        self.stalls = 0
        self.time = 0.0
        self.mouse: tuple[int, int] = (-1, -1)
        self._world: pygame.Surface | None = None
        self._ambient: pygame.Surface | None = None
        self._ambient_at = 0
        self._held: dict[Direction, float] = {}
        self._press: tuple[str, tuple[int, int]] | None = None
        self.dragging = ""
        self._events: deque[Event] = deque()
        self._notice = ("", 0.0)
        self._toast = ("", 0.0)
        self._scene = ""
        self._scene_age = 0.0
        self._quit_armed = -1.0
        self._ignore_text = ""
        self._offer_previous = ""
        #: Clickable rects of the last draw: choice buttons, inventory chips, save cards.
        self.choice_hits: list[panels.Hit] = []
        self.chip_hits: list[panels.Hit] = []
        self.save_hits: list[panels.Hit] = []
        self._text_rect = pygame.Rect(0, 0, 0, 0)
        self._started = False
        self._saves: list[tuple[str, Path]] = []
        self._saves_at = -1.0
        self._rate = (0.0, 0, 0.0)
        #: Slow input: typed lines, voice, pictures, reloads (see :mod:`game.app.inputs`).
        self.channels = channels or Channels(session)
        self.worker = InputWorker(threaded=threaded)
        self.mic = microphone or Microphone()
        #: The question asked back ("The kite or the leaf?") while it waits for an answer.
        self.clarify: Clarify | None = None
        #: The character the text line speaks to (clicked), ``""`` for none.
        self.addressee = ""
        self._addressee_scene = ""
        self._sent = ""
        self._fresh = False
        self._view: View | None = None
        self._frame_seq = -1
        #: From the input worker while a line is said to someone: ``(kind, speaker id, text)``.
        self._stream_in: deque[tuple[str, str, str]] = deque()
        self._skip: deque[Line] = deque()
        self._streamed: Line | None = None
        self._echoed = False
        #: Her voice, sentence by sentence, from the cast room's speech thread: ``(audio, rate)``.
        self._voice_in: deque[tuple[np.ndarray, int]] = deque()
        self._voice_out = getattr(session.extension("cast"), "set_voice_output", None)
        #: ``typing(text, target)``: the line so far, at each word's end, encoded ahead by the dialogue model
        #: (:meth:`game.cast.castroom.Castroom.typing`; off the window's thread).
        self._typing = getattr(session.extension("cast"), "typing", None)
        if callable(self._voice_out) and self.audio.on:
            self._voice_out(lambda audio, rate: self._voice_in.append((audio, rate)))
        self.reloader = Reloader(session, watch=watch)
        #: The first diagnostic of a story that did not reload (shown until a reload works).
        self.reload_error = ""
        self._banner_rect = pygame.Rect(0, 0, 0, 0)
        #: Lines as said -> as a hot reload rewrote them on screen.
        self._rewritten: dict[Line, Line] = {}
        session.on_event(self._events.append)

    # -- display ---------------------------------------------------------------------
    def _open_display(self) -> pygame.Surface:
        pygame.display.set_caption(f"worldloom — {self.session.story.model.title}")
        if self.settings.fullscreen:
            return pygame.display.set_mode((0, 0), pygame.FULLSCREEN)
        return pygame.display.set_mode(self.window_size, pygame.RESIZABLE)

    @property
    def fonts(self) -> Fonts:
        """Typefaces for the current UI scale."""
        key = round(self.layout.scale, 2)
        if key not in self._fonts:
            self._fonts[key] = Fonts(key)
        return self._fonts[key]

    def relayout(self) -> None:
        """Recompute the layout after the window changed size."""
        if self._owns_display:
            surf = pygame.display.get_surface()
            if surf is not None:
                self.screen = surf
        self.layout = make_layout(self.screen.get_size(), self.frame_size)
        self._world = None

    def set_fullscreen(self, on: bool) -> None:
        """Switch fullscreen on or off (only when the app opened the display)."""
        self.settings.fullscreen = on
        if self._owns_display:
            self.screen = self._open_display()
        self.relayout()
        self.toast(ui("ui.fullscreen") if on else ui("ui.windowed"))

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        """Start the session (if needed), show its opening lines, start the frame worker.

        Raises:
            game.errors.BackendError: the backend refused to start.
        """
        if self._started:
            return
        self._started = True
        try:
            self.session.start()
        except InputError:
            pass  # already started by the caller: show where it stands
        self._drain(replace=True)
        if self.reader.current is None:
            self.reader.reset_to(self._last_line())
        self._focus(False)
        self.feed.start()

    def close(self) -> None:
        """Stop the workers, the microphone and the sound (the session stays open; the caller closes it)."""
        self.worker.stop()
        self.feed.stop()
        self.mic.stop()
        if callable(self._voice_out) and self.audio.on:
            self._voice_out(None)
        self.audio.close()

    def preload(self) -> None:
        """Load the free-text model on the input worker now, so the first typed line is quick."""
        channels = self.channels
        self.worker.submit("", lambda: channels.resolver.embedder, lambda _: None, lambda _: None, quiet=True)

    # -- notices -------------------------------------------------------------------------
    def notify(self, message: str) -> None:
        """Show ``message`` (a notice or a soft error) in the panel."""
        self._notice = (message, 0.0)

    def toast(self, message: str) -> None:
        """Show a short message at the top (a setting changed, a game saved)."""
        self._toast = (message, 0.0)

    @property
    def notice(self) -> str:
        """The notice shown now (``""`` if none)."""
        text, age = self._notice
        return text if age < NOTICE_LIFE else ""

    # -- events from the session ------------------------------------------------------
    def _drain(self, replace: bool) -> list[Line]:
        """Turn new session events into lines and notices; returns the lines.

        The first lines of a turn sent from the input worker replace what was still
        queued, as a turn submitted here does; later ones (a reply streaming in) queue.
        """
        lines: list[Line] = []
        while self._events:
            e = self._events.popleft()
            if e.kind in LINE_KINDS and e.text:
                line = (self.session.speaker_name(e.speaker), e.text)
                if self._skip and line == self._skip[0]:
                    self._skip.popleft()  # the player's own line, shown when it was sent
                elif e.kind == "reply" and self._streamed is not None and self._streamed[0] == line[0]:
                    self.reader.grow(self._streamed, line)  # her reply, streamed in already: the whole of it
                    self._streamed = None
                else:
                    lines.append(line)
            elif e.kind in ("not_understood", "warning") and e.text:
                self.notify(e.text)
        if lines and self._fresh:
            replace, self._fresh = True, False
        self.reader.push(lines, replace=replace)
        return lines

    def _take_stream(self) -> None:
        """Show what the input worker streamed: the player's line said to someone, at once,
        then her reply growing sentence by sentence."""
        while self._stream_in:
            kind, who, text = self._stream_in.popleft()
            line = (self.session.speaker_name(who), text)
            if kind == "echo":
                self.reader.push([line], replace=True)
                self._skip.append(line)
                self._fresh = False
                self._echoed = True
                self._streamed = None
            elif self._streamed is None or self._streamed[0] != line[0]:
                self._streamed = line
                self.reader.push([line], replace=False)
            else:
                grown = (line[0], f"{self._streamed[1]} {text}")
                self.reader.grow(self._streamed, grown)
                self._streamed = grown

    def _last_line(self) -> Line | None:
        past = self.session.history(1)
        return past[-1] if past else None

    def _after_request(self, seq: int | None, flush: bool = True) -> None:
        """A new request is pending: drop queued frames of older ones, cut their sound.

        (A turn from the input worker is seen a little later, when its frames may already
        be playing: their sound is then left alone.)
        """
        if flush:
            self.feed.flush(seq)
            if seq is None or self._frame_seq < seq:
                self.audio.stop()

    # -- actions --------------------------------------------------------------------------
    def act(self, intent: AnyIntent, flush: bool = True, menu: tuple[str, ...] | None = None) -> bool:
        """Submit ``intent``; a refusal becomes a notice.

        While the input worker is busy (a line being understood, a character answering)
        the intent queues behind it, so the window never waits on the session. ``menu`` is
        the choice ids shown when a choice was pressed: if the turn in flight changes the
        menu, the queued choice is dropped with a notice rather than applied to the new one.

        Returns:
            Whether the session took it (``True`` when queued).
        """
        if not isinstance(intent, Move | Wait):
            self._clear_clarify()
        if self.worker.busy:
            session = self.session

            def submit() -> TurnResult:
                if menu is not None and tuple(c.id for c in session.choices()) != menu:
                    raise InputError("the choices changed before that one was taken",
                                     hint="choose again from the new menu")
                return session.submit(intent)

            self.worker.submit("", submit, lambda result: self._acted(intent, result, flush), self._refused)
            return True
        try:
            result = self.session.submit(intent)
        except WorldloomError as exc:
            self._refused(exc)
            return False
        self._acted(intent, result, flush)
        return True

    def _acted(self, intent: AnyIntent, result: TurnResult, flush: bool = True) -> None:
        self._after_request(result.request.seq if result.request else None, flush)
        if not self._drain(replace=True) and not isinstance(intent, Move | Wait):
            self.reader.settle()

    def _refused(self, exc: BaseException) -> None:
        """A turn the session refused (or an input that failed): a notice; nothing changed."""
        self._events.clear()
        self._fresh = False
        if isinstance(exc, InputError) and exc.where and Path(exc.where).suffix:
            self.notify(f"{Path(exc.where).name}: {message(exc.why)}")  # a dropped file: its name, not its path
        elif isinstance(exc, WorldloomError):
            self.notify(error_text(exc))
        else:
            self.notify(ui("ui.did_not_work", why=exc))

    def choose(self, number: int) -> bool:
        """Take the choice numbered ``number`` (1-based) as shown now (while a question is
        asked back, its option numbered ``number``)."""
        if self.clarify is not None:
            return self.answer(number)
        # the menu the player sees: while a turn is in flight, the one last drawn (never wait on the session)
        busy = self.worker.busy and self._view is not None
        shown = list(self._view.choices) if busy and self._view is not None else self.session.choices()
        for c in shown:
            if c.number == number:
                return self.act(Choose(choice_id=c.id), menu=tuple(c.id for c in shown))
        self.notify(ui("ui.no_choice", n=number) if shown else ui("ui.nothing_to_choose"))
        return False

    def give(self, item_id: str, character_id: str) -> bool:
        """Give ``item_id`` to ``character_id``."""
        return self.act(Give(item_id=item_id, character_id=character_id))

    def say(self, text: str) -> bool:
        """Send a typed line: understood on the input worker (see :func:`game.app.inputs.run_line`).

        ``@eve …``, ``ask eve …`` or a clicked character who can talk: said to her; a
        line nothing else understands goes to a character with a card who is present.

        Returns:
            Whether the line was sent (``False``: empty, or it names someone who is not here).
        """
        text = text.strip()
        if not text:
            return False
        model = self.session.story.model
        names = {cid: c.name for cid, c in model.cast.items()}
        present = dict(self._present())
        who, rest = parse_address(text, names)
        if who:
            if who not in present:
                self.notify(ui("ui.not_here", name=opening(names.get(who, who))))
                return False
            if not rest:
                self.address(who)
                return False
            target, fallback, text = who, "", rest
        else:
            target, fallback = self._listener(present)
        label = ui("ui.thinking", name=present[target]) if target else "…"
        stream = self._stream_in.append

        def run(channels: Channels) -> Reply:
            return run_line(channels, text, target, fallback, lambda *record: stream(record))

        self._send(label, text, run)
        return True

    def _listener(self, present: dict[str, str]) -> tuple[str, str]:
        """``(target, fallback)`` of a line that names no one (see :func:`game.app.inputs.run_line`):
        the clicked character (said to her if she can talk, else her answer when nothing
        else understands it), else a character with a card who is here answers what
        nothing else understands."""
        if self.addressee in present:
            return (self.addressee, "") if self._can_talk(self.addressee) else ("", self.addressee)
        return "", next((c for c in present if self._can_talk(c)), "")

    def _present(self) -> list[tuple[str, str]]:
        """``(id, name)`` of the characters in the scene now."""
        m = self.session.story.model
        scene = m.scenes.get(self.session.state.scene)
        return [(c, m.cast[c].name) for c in (scene.present if scene else {}) if c in m.cast]

    def _can_talk(self, character: str) -> bool:
        """Whether ``character`` has a character card (she answers what she is told)."""
        c = self.session.story.model.cast.get(character)
        return c is not None and bool(c.card)

    def address(self, character: str) -> None:
        """Speak to ``character`` with the text line (a click on her); ``""`` stops."""
        self.addressee = character
        self._addressee_scene = self.session.state.scene
        if character:
            self._focus(True)

    def answer(self, number: int) -> bool:
        """Answer the question asked back with its option ``number`` (1-based)."""
        if self.clarify is None:
            return False
        if not 1 <= number <= len(self.clarify.options):
            self.notify(ui("ui.no_answer", n=number))
            return False
        self._send("…", self.clarify.options[number - 1].label,
                   lambda channels: run_line(channels, str(number)))
        return True

    def _clear_clarify(self) -> None:
        if self.clarify is not None:
            self.clarify = None
            channels = self.channels
            if self.worker.busy:  # the worker owns the channels while it runs
                self.worker.submit("", lambda: setattr(channels, "pending", None), lambda _: None,
                                   lambda _: None)
            else:
                channels.pending = None

    def _send(self, label: str, shown: str, run: Callable[[Channels], Reply]) -> None:
        """Run an input on the worker; ``shown`` is what the text line says meanwhile."""
        channels = self.channels
        self._sent = shown
        self._fresh = True
        self._echoed = False
        self.worker.submit(label, lambda: run(channels), self._replied, self._input_failed)

    def _input_failed(self, exc: BaseException) -> None:
        self._sent = ""
        self._take_stream()
        self._skip.clear()
        self._streamed = None
        self._refused(exc)

    def _replied(self, reply: Reply) -> None:
        """A channel's answer is back (UI thread): lines, a question, or a notice."""
        self._sent = "" if not self.worker.busy else self._sent
        self._take_stream()
        if reply.result is not None:
            request = reply.result.request
            self._after_request(request.seq if request is not None else None)
        outcome = reply.outcome
        if isinstance(outcome, Clarify):
            self.clarify = outcome
            self._fresh = False
            self.reader.push([("", outcome.question)], replace=True)
            self._focus(True)
        else:
            self.clarify = None
        if reply.heard is not None and reply.heard.text:
            self.toast(ui("ui.heard", text=reply.heard.text))
        if isinstance(outcome, NotUnderstood) and outcome.reason == "undo" and reply.acted:
            self._rolled_back(reply.events)
            return
        lines = self._drain(replace=False)
        self._fresh = False
        self._skip.clear()
        self._streamed = None
        if reply.line and not isinstance(outcome, Clarify) and not reply.acted:
            self.notify(reply.line)
        elif reply.acted and not lines and not self._echoed:
            self.reader.settle()
        self._echoed = False

    def rollback(self) -> bool:
        """Undo the last choice (a notice if there is none)."""
        if not self.session.checkpoints:
            self.notify(ui("ui.nothing_back"))
            return False
        try:
            events = self.session.rollback()
        except WorldloomError as exc:
            self.notify(str(exc))
            return False
        self._rolled_back(events)
        return True

    def roll_forward(self) -> bool:
        """Redo the next action a rollback undid (a notice if there is none)."""
        if not self.session.forward:
            self.notify(ui("ui.nothing_forward"))
            return False
        try:
            events = self.session.roll_forward()
        except WorldloomError as exc:
            self.notify(str(exc))
            return False
        self._rolled_back(events, ui("ui.rolled_forward"))
        return True

    def _rolled_back(self, events: list[Event], what: str = "") -> None:
        self._events.clear()
        self._clear_clarify()
        pending = self.session.pending
        self._after_request(pending.seq if pending else None)
        self.reader.reset_to(self._last_line())
        label = events[0].text if events else ""
        self.toast(f"{what or ui('ui.rolled_back')}{': ' + label if label else ''}")

    def thumbnail(self) -> np.ndarray | None:
        """The frame on screen, at most :data:`THUMB_WIDTH` wide, ``(H, W, 3)`` uint8 RGB."""
        if self.frame is None:
            return None
        h, w = self.frame.shape[:2]
        if w <= THUMB_WIDTH:
            return np.ascontiguousarray(self.frame)
        size = (THUMB_WIDTH, max(1, round(h * THUMB_WIDTH / w)))
        small = pygame.transform.smoothscale(paint.frame_surface(self.frame), size)
        return np.ascontiguousarray(pygame.surfarray.array3d(small).swapaxes(0, 1))

    def save(self, slot: str) -> bool:
        """Save to ``slot`` with the frame on screen as its thumbnail."""
        try:
            self.session.save(slot, thumbnail=self.thumbnail())
        except WorldloomError as exc:
            self.notify(error_text(exc))
            return False
        self._saves_at = -1.0
        self.toast(ui("ui.saved", slot=slot))
        return True

    def load(self, slot: str, previous: bool = False) -> bool:
        """Load ``slot`` (or its previous copy); a bad save leaves the game as it was."""
        try:
            events = self.session.load(slot, previous=previous)
        except SaveError as exc:
            if not previous and self._has_previous(slot):
                self._offer_previous = slot
                again = ui("ui.previous_copy.f9" if slot == QUICK_SLOT else "ui.previous_copy.click")
                self.notify(ui("ui.previous_copy", why=message(exc.why), again=again))
            else:
                self.notify(error_text(exc))
            return False
        except WorldloomError as exc:
            self.notify(error_text(exc))
            return False
        self._offer_previous = ""
        self._events.clear()
        self._clear_clarify()
        pending = self.session.pending
        self._after_request(pending.seq if pending else None)
        self.reader.reset_to(self._last_line())
        for e in events:
            if e.kind == "warning" and e.text:
                self.notify(e.text)
        self.toast(ui("ui.loaded_previous" if previous else "ui.loaded", slot=slot))
        self.save_screen.open = False
        return True

    def _has_previous(self, slot: str) -> bool:
        """Whether ``slot`` has a previous copy (``Session.save`` keeps it as ``.bak``)."""
        path = dict(self.session.saves()).get(slot)
        return path is not None and path.with_name(path.name + ".bak").is_file()

    def load_slot(self, slot: str) -> bool:
        """Load ``slot``; right after a bad-save notice for it, load its previous copy."""
        if self._offer_previous == slot and self.notice:
            return self.load(slot, previous=True)
        return self.load(slot)

    def quick_load(self) -> bool:
        """F9: load the quick slot (or its previous copy, see :meth:`load_slot`)."""
        return self.load_slot(QUICK_SLOT)

    # -- the world on screen -------------------------------------------------------------
    def character_boxes(self) -> dict[str, pygame.Rect]:
        """Screen rects of the characters present now (where the backend draws them): the
        scene's and the agents who came (:meth:`game.story.runtime.StoryRuntime.present`), so one
        an agent brought (Gullhaven's Brann) gets a name and a drop target like the rest."""
        state = self.session.state
        return character_boxes(self.session.runtime.present(state), state.camera_x, self.layout.world)

    def _show(self, f: QueuedFrame) -> None:
        self.frame = f.image
        self.frame_index = f.index
        self._frame_seq = f.seq
        self._world = None
        self.frames_shown += 1
        if f.audio is not None:
            self.audio.queue(f.audio, f.audio_rate)

    # -- input ---------------------------------------------------------------------------
    def _overlay_open(self) -> bool:
        return self.history.open or self.save_screen.open or self.help_open

    def _focus(self, on: bool) -> None:
        self.entry_focus = on
        self._held.clear()
        try:
            if on:
                pygame.key.start_text_input()
                pygame.key.set_text_input_rect(self.layout.entry)
            else:
                pygame.key.stop_text_input()
        except pygame.error:
            pass

    def resume_typing(self, text: str) -> None:
        """Put ``text`` in the text line, with the focus, as if just typed (the loading screen's
        unfinished line; see :meth:`game.app.loading.Loading.hand_over`)."""
        self.entry_text = text[:300]
        self._focus(True)

    def handle_event(self, e: pygame.event.Event) -> None:
        """Handle one pygame event."""
        if e.type == pygame.QUIT:
            self.running = False
        elif e.type in (pygame.VIDEORESIZE, pygame.WINDOWSIZECHANGED):
            if not self.settings.fullscreen and self._owns_display and e.type == pygame.VIDEORESIZE:
                self.window_size = (max(320, e.w), max(180, e.h))
            self.relayout()
        elif e.type == pygame.KEYDOWN:
            self._key_down(e)
        elif e.type == pygame.KEYUP:
            if e.key in MOVE_KEYS:
                self._held.pop(MOVE_KEYS[e.key], None)
            elif e.key == pygame.K_v and self.mic.recording:
                self.talk_stop()
        elif e.type == pygame.DROPFILE:
            self.drop_file(str(e.file), self.mouse)
        elif e.type == pygame.WINDOWFOCUSLOST and self.mic.recording:
            self.mic.stop()  # V's release will not come: drop the clip rather than act on half of it
            self.toast(ui("ui.voice_cancelled"))
        elif e.type == pygame.TEXTINPUT:
            skip = bool(self._ignore_text) and e.text == self._ignore_text
            self._ignore_text = ""
            if self.entry_focus and not skip and e.text.isprintable():
                self.entry_text = (self.entry_text + e.text)[:300]
                if e.text[-1:].isspace() and self.entry_text.strip() and callable(self._typing):
                    threading.Thread(target=self._typing, args=(self.entry_text, self.addressee or None),
                                     name="typing-ahead", daemon=True).start()
        elif e.type == pygame.MOUSEMOTION:
            self.mouse = e.pos
            if self._press and not self.dragging:
                x0, y0 = self._press[1]
                if abs(e.pos[0] - x0) + abs(e.pos[1] - y0) > 6:
                    self.dragging = self._press[0]
        elif e.type == pygame.MOUSEBUTTONDOWN and e.button == 1:
            self.mouse = e.pos
            self._click(e.pos)
        elif e.type == pygame.MOUSEBUTTONUP and e.button == 1:
            self.mouse = e.pos
            self._release(e.pos)
        elif e.type == pygame.MOUSEWHEEL:
            self._wheel(e.y)

    def _key_down(self, e: pygame.event.Event) -> None:
        k = e.key
        if self._ignore_text and k != pygame.K_UNKNOWN:
            self._ignore_text = ""
        if k == pygame.K_F11:
            self.set_fullscreen(not self.settings.fullscreen)
            return
        if self._overlay_open():
            self._overlay_key(e)
            return
        if k in (pygame.K_F1, pygame.K_F2, pygame.K_F3, pygame.K_F4, pygame.K_F5, pygame.K_F6,
                 pygame.K_F7, pygame.K_F8, pygame.K_F9, pygame.K_F10):
            self._function_key(k)
            return
        if self.clarify is not None and k in NUMBER_KEYS and not self.entry_text:
            self._ignore_text = e.unicode  # the game asked back: a number answers it, not typed
            self.choose(NUMBER_KEYS[k])
            return
        if self.entry_focus:
            self._entry_key(e)
            return
        if k in NUMBER_KEYS:
            self.choose(NUMBER_KEYS[k])
        elif k in MOVE_KEYS:
            d = MOVE_KEYS[k]
            if d not in self._held:
                self._held[d] = 0.0
                self.act(Move(direction=d, seconds=MOVE_STEP))
        elif k in (pygame.K_RETURN, pygame.K_KP_ENTER, pygame.K_t):
            self._focus(True)
            self._ignore_text = e.unicode if k == pygame.K_t else ""
        elif k == pygame.K_BACKSPACE:
            self.rollback()
        elif k == pygame.K_PAGEDOWN:
            self.roll_forward()
        elif k == pygame.K_SPACE:
            self.reader.advance()
        elif k == pygame.K_v:
            self.talk_start()
        elif k in (pygame.K_h, pygame.K_PAGEUP):
            self.history.show()
        elif k in (pygame.K_PLUS, pygame.K_EQUALS, pygame.K_KP_PLUS):
            self._volume(0.1)
        elif k in (pygame.K_MINUS, pygame.K_KP_MINUS):
            self._volume(-0.1)
        elif k == pygame.K_ESCAPE:
            if self.dragging or self._press:
                self.dragging, self._press = "", None
            elif self.addressee:
                self.addressee = ""
            elif self._quit_armed >= 0 and self.time - self._quit_armed < 2.0:
                self.running = False
            else:
                self._quit_armed = self.time
                self.toast(ui("ui.quit_again"))

    def _entry_key(self, e: pygame.event.Event) -> None:
        k = e.key
        if k in (pygame.K_RETURN, pygame.K_KP_ENTER):
            text, self.entry_text = self.entry_text, ""
            self._focus(False)
            if text.strip():
                self.say(text)
        elif k == pygame.K_ESCAPE:
            if not self.entry_text and self.addressee:
                self.addressee = ""  # Esc on an empty line stops speaking to her
            self._focus(False)
        elif k == pygame.K_BACKSPACE:
            self.entry_text = self.entry_text[:-1]
        elif k == pygame.K_u and e.mod & pygame.KMOD_CTRL:
            self.entry_text = ""
        # every other key types (TEXTINPUT) and does nothing else: WASD do not move here

    def _function_key(self, k: int) -> None:
        s = self.settings
        if k == pygame.K_F1:
            self.help_open = True
        elif k == pygame.K_F2:
            self._saves_at = -1.0
            self.save_screen.open = True
            self.save_screen.scroll = 0
        elif k == pygame.K_F3:
            s.subtitles = not s.subtitles
            self.toast(ui("ui.subtitles_on_off", state=_on_off(s.subtitles)))
        elif k == pygame.K_F4:
            s.auto_advance = not s.auto_advance
            self.toast(ui("ui.auto_on_off", state=_on_off(s.auto_advance)))
        elif k == pygame.K_F5:
            self.save(QUICK_SLOT)
        elif k == pygame.K_F6:
            self.reload()
        elif k == pygame.K_F8:
            self.toast(ui("ui.text_speed", speed=ui(f"ui.speed.{s.next_speed()}")))
        elif k == pygame.K_F7:
            s.skip_seen = not s.skip_seen
            self.toast(ui("ui.skip_on_off", state=_on_off(s.skip_seen)))
        elif k == pygame.K_F9:
            self.quick_load()
        elif k == pygame.K_F10:
            self.show_stats = not self.show_stats
        self._held.clear()

    def _overlay_key(self, e: pygame.event.Event) -> None:
        k = e.key
        if self.help_open:
            if k in (pygame.K_ESCAPE, pygame.K_F1, pygame.K_RETURN, pygame.K_SPACE):
                self.help_open = False
        elif self.history.open:
            if k in (pygame.K_ESCAPE, pygame.K_h, pygame.K_RETURN, pygame.K_SPACE):
                self.history.open = False
            elif k in (pygame.K_UP, pygame.K_PAGEUP, pygame.K_w):
                self.history.wheel(3 if k == pygame.K_PAGEUP else 1)
            elif k in (pygame.K_DOWN, pygame.K_PAGEDOWN, pygame.K_s):
                self.history.wheel(-3 if k == pygame.K_PAGEDOWN else -1)
        elif self.save_screen.open:
            if k in (pygame.K_ESCAPE, pygame.K_F2):
                self.save_screen.open = False
            elif k == pygame.K_n:
                self.save(time.strftime("save-%Y%m%d-%H%M%S"))
            elif k == pygame.K_F5:
                self.save(QUICK_SLOT)

    def _volume(self, step: float) -> None:
        v = self.settings.change_volume(step)
        self.audio.set_volume(v)
        self.toast(ui("ui.volume", percent=int(round(v * 100))) + ("" if self.audio.on else ui("ui.sound_off")))

    def _click(self, pos: tuple[int, int]) -> None:
        if self.help_open:
            self.help_open = False
            return
        if self.history.open:
            self.history.open = False
            return
        if self.save_screen.open:
            for hit in self.save_hits:
                if hit.rect.collidepoint(pos):
                    if hit.key == "new":
                        self.save(time.strftime("save-%Y%m%d-%H%M%S"))
                    else:
                        self.load_slot(hit.key.split(":", 1)[1])
                    return
            return
        if self._banner_rect.collidepoint(pos) and self.reload_error:
            self.reload_error = ""
            return
        for hit in self.choice_hits:
            if hit.rect.collidepoint(pos):
                if hit.key.startswith("answer:"):
                    self.answer(int(hit.key.split(":", 1)[1]))
                else:
                    self.choose(next((c.number for c in self.session.choices() if c.id == hit.key), 0))
                return
        for hit in self.chip_hits:
            if hit.rect.collidepoint(pos):
                self._press = (hit.key, pos)
                return
        if self.layout.entry.collidepoint(pos):
            self._focus(True)
            return
        if self.layout.world.collidepoint(pos) and not self.layout.inventory.collidepoint(pos):
            who = self.character_at(pos)
            if who:
                self.address(who)
                return
            if self.addressee:
                self.addressee = ""
        if self.entry_focus:
            self._focus(False)
        if self._text_rect.collidepoint(pos) or self.layout.panel.collidepoint(pos):
            self.reader.advance()

    def _release(self, pos: tuple[int, int]) -> None:
        press, item = self._press, self.dragging
        self._press, self.dragging = None, ""
        if press is None:
            return
        names = dict(self.session.view().inventory)
        if not item:
            self.notify(ui("ui.drag_to_give", item=names.get(press[0], press[0])))
            return
        self.drop(item, pos)

    def drop(self, item_id: str, pos: tuple[int, int]) -> bool:
        """Drop a dragged item at ``pos``: on a character gives it, elsewhere on the world
        gives it to the nearest character by x; over the inventory (or a chip, which may reach
        over the world's edge) cancels."""
        if self.layout.inventory.collidepoint(pos) or not self.layout.world.collidepoint(pos) \
                or any(h.rect.collidepoint(pos) for h in self.chip_hits):
            return False
        boxes = self.character_boxes()
        target = next((c for c, r in boxes.items() if r.collidepoint(pos)), "")
        target = target or nearest_character(boxes, pos[0])
        if not target:
            here = self.session.view().characters
            target = here[0][0] if len(here) == 1 else ""
        if not target:
            names = dict(self.session.view().inventory)
            self.notify(ui("ui.no_one_to_give", item=names.get(item_id, item_id)))
            return False
        return self.give(item_id, target)

    def character_at(self, pos: tuple[int, int]) -> str:
        """The id of the character whose box is under ``pos`` (``""`` for none)."""
        boxes = self.character_boxes()
        return next((c for c, r in boxes.items() if r.collidepoint(pos)), "")

    def drop_file(self, path: str, pos: tuple[int, int]) -> bool:
        """A file dropped on the window: a PNG/JPEG becomes a picture in the world where it was
        dropped (``pos`` across the world view, mapped to a fraction of the frame's width), or is
        given to the character under ``pos``; anything else is a notice.

        Returns:
            Whether it was sent (checked and placed on the input worker).
        """
        name = Path(path).name
        if Path(path).suffix.lower() not in PICTURE_SUFFIXES:
            self.notify(ui("ui.only_pictures", name=name))
            return False
        world = self.layout.world
        inside = world.collidepoint(pos)
        who = self.character_at(pos) if inside else ""
        x = (pos[0] - world.x) / max(1, world.w) if inside else None  # where in the view it fell
        self._clear_clarify()
        self._send(f"looking at {name} …", f"picture: {name}",
                   lambda channels: channels.image(path, dropped_on=who, x=x))
        return True

    def talk_start(self) -> bool:
        """V pressed: start recording (a notice when there is no microphone)."""
        if self.mic.start():
            self._held.clear()
            return True
        self.notify(ui("ui.no_microphone"))
        return False

    def talk_stop(self) -> bool:
        """V released: send what was recorded to be heard and acted on (on the input worker)."""
        clip = self.mic.stop()
        if clip is None:
            if self.mic.error:
                self.notify(ui("ui.no_microphone"))
            return False
        samples, rate = clip
        if samples.size < MIN_CLIP * rate:
            self.notify(ui("ui.hold_v"))
            return False
        target, fallback = self._listener(dict(self._present()))
        stream = self._stream_in.append

        def run(channels: Channels) -> Reply:
            return run_voice(channels, samples, rate, target, fallback, lambda *record: stream(record))

        self._send("hearing", "(voice)", run)
        return True

    def reload(self, changed: list[Path] | None = None) -> bool:
        """F6: reload the story from disk, keeping the state (on the input worker).

        Args:
            changed: the files ``watch`` saw change (``None``: the story, as F6 does).

        A broken file leaves the old story playing and shows its first error until a
        reload works.
        """
        if not self.reloader.available:
            self.notify(ui("ui.no_reload"))
            return False
        reloader = self.reloader
        self.worker.submit("reloading", lambda: reloader.reload(changed), self._reloaded, self._reload_failed)
        return True

    def _reloaded(self, result: Reloaded) -> None:
        if not result.ok:
            self.reload_error = result.message
            return
        self.reload_error = ""
        self._clear_clarify()
        if self.addressee and self.addressee not in self.session.story.model.cast:
            self.addressee = ""
        pending = self.session.pending
        self._after_request(pending.seq if pending else None)
        self._drain(replace=False)  # a warning, or a restart's lines when the scene is gone
        if not any(e.kind == "scene" for e in result.events):
            rewritten = self._lines_as_written_now()
            if self.reader.current is None:
                last = self._last_line()
                self.reader.reset_to(rewritten.get(last, last) if last else None)
            else:
                self.reader.rewrite(rewritten)
        self._world = None
        self.toast(ui("ui.reloaded", names=", ".join(result.names) or ui("ui.the_story")))

    def _reload_failed(self, exc: BaseException) -> None:
        self.reload_error = str(exc) or type(exc).__name__

    def _lines_as_written_now(self) -> dict[Line, Line]:
        """Recent lines as the (reloaded) story writes them now, ``{as shown: as written}``: a
        scene's entry line is found by its stable id and filled in with the current state;
        other lines (choices' reactions, replies) stay as they were said."""
        story, session = self.session.story, self.session
        out: dict[Line, Line] = {}
        for e in session.log.since(max(0, len(session.log) - 60)):
            scene = story.model.scenes.get(e.scene)
            line_id = e.ids.get("line", "")
            if e.kind != "line" or not e.text or scene is None or not line_id:
                continue
            for i, line in enumerate(scene.lines):
                if story.line_id(e.scene, i, line) == line_id:
                    said = (session.speaker_name(e.speaker), e.text)
                    shown = self._rewritten.get(said, said)  # as an earlier reload rewrote it
                    now = (session.speaker_name(line.speaker), session.runtime.interpolate(session.state, line.text))
                    if now != shown:
                        out[shown] = now
                        self._rewritten[said] = now
                    break
        return out

    def _wheel(self, dy: int) -> None:
        if self.save_screen.open:
            self.save_screen.scroll -= dy
        elif self.history.open:
            self.history.wheel(dy)
        elif dy > 0 and not self.help_open:
            self.history.show()

    # -- time ----------------------------------------------------------------------------
    def tick(self, dt: float | None = None) -> int:
        """Let ``dt`` seconds pass (default: one frame period).

        Moves held keys, types the line, and shows frames at the backend's rate:
        one queued frame per frame slot, or the last one again (a stall).

        Returns:
            How many new frames were shown.
        """
        dt = 1.0 / self.fps if dt is None else dt
        self._ignore_text = ""
        self.time += dt
        self._scene_age += dt
        self._notice = (self._notice[0], self._notice[1] + dt)
        self._toast = (self._toast[0], self._toast[1] + dt)
        for err in self.feed.take_errors():
            self.notify(err)
        for line in self.feed.take_undrawn(self.session.state.scene):
            self.author_notes.append(line)
            print(f"worldloom: {line}", file=sys.stderr)  # for the author at the terminal, once
        self._take_stream()
        self.worker.collect()
        while self._voice_in:
            self.audio.voice(*self._voice_in.popleft())
        if self._events:
            self._drain(replace=False)
        if self.addressee and self.session.state.scene != self._addressee_scene:
            self.addressee = ""  # she stays behind when the scene changes
        changed = self.reloader.poll(self.time)
        if changed:
            self.reload(changed)
        for d in list(self._held):
            self._held[d] += dt
            if self._held[d] >= MOVE_STEP:
                self._held[d] -= MOVE_STEP
                self.act(Move(direction=d, seconds=MOVE_STEP), flush=False)
        self.reader.update(dt)
        shown = 0
        for _ in range(self.clock.advance(dt)):
            if not self.feed.threaded and self.feed.queued() == 0:
                self.feed.pump()
            f = self.feed.pop()
            if f is None:
                self.stalls += self.frame is not None  # waiting for the very first frame is no stall
                continue
            self._show(f)
            shown += 1
        t0, n0, _ = self._rate
        if self.time - t0 >= 1.0:
            self._rate = (self.time, self.frames_shown, (self.frames_shown - n0) / (self.time - t0))
        return shown

    # -- drawing ---------------------------------------------------------------------------
    def draw(self) -> None:
        """Draw the whole window onto :attr:`screen`."""
        surf, lay, fonts = self.screen, self.layout, self.fonts
        if self.frame is not None:
            if self._world is None or self._world.get_size() != lay.world.size:
                self._world = paint.world_surface(self.frame, lay.world.size)
            if self._ambient is None or self._ambient.get_size() != lay.size \
                    or self.frames_shown - self._ambient_at >= AMBIENT_EVERY:
                self._ambient = paint.ambient(self.frame, lay.size)
                self._ambient_at = self.frames_shown
            surf.blit(self._ambient, (0, 0))
            surf.blit(self._world, lay.world.topleft)
        else:
            surf.fill(paint.GLASS)
            pygame.draw.rect(surf, (16, 18, 26), lay.world)
            dots = "." * (1 + int(self.time * 2) % 3)
            paint.text(surf, fonts.small, ui("ui.waking", dots=dots),
                       (lay.world.centerx - fonts.small.width("the world is waking...") // 2,
                        lay.world.centery), paint.FAINT, anchor="midleft")
        # while the input worker runs a turn the session may be busy (a character answering
        # under its lock): draw from the last snapshot instead of waiting for it
        view = self._view if self.worker.busy and self._view is not None else self.session.view()
        self._view = view
        if view.scene_title != self._scene:
            self._scene, self._scene_age = view.scene_title, 0.0
        panels.title_card(surf, lay, fonts, view.scene_title or view.title,
                          view.location if view.location != view.scene_title else view.title,
                          self._scene_age, view.location)
        self.chip_hits = panels.inventory(surf, lay, fonts, list(view.inventory), self.dragging,
                                           None if self._overlay_open() else self.mouse)
        panels.panel_glass(surf, lay)
        blink = int(self.time * 2) % 2 == 0
        current = self.reader.current or ("", "")
        self._text_rect = panels.dialogue(surf, lay, fonts, current[0], current[1], self.reader.visible,
                                          self.reader.more, self.reader.complete, blink,
                                          self.settings.subtitles)
        if self.clarify is not None:  # the question asked back: its options stand in for the choices
            items = [(i + 1, f"answer:{i + 1}", opening(o.label))
                     for i, o in enumerate(self.clarify.options)]
        else:
            items = [(c.number, c.id, c.text) for c in view.choices]
        self.choice_hits = panels.choices(surf, lay, fonts, items,
                                           None if self._overlay_open() else self.mouse,
                                           alpha=0.7 if self.reader.more and self.clarify is None else 1.0)
        status, status_color = self._entry_status()
        to = dict(view.characters).get(self.addressee, "") if self.addressee else ""
        placeholder = ui("ui.entry.answer") if self.clarify is not None else ""
        panels.entry(surf, lay, fonts, self.entry_text, self.entry_focus, blink, to=to,
                     placeholder=placeholder, status=status, status_color=status_color)
        if self.dragging:
            names = dict(view.characters)
            boxes = {c: r for c, r in self.character_boxes().items() if c in names}
            target = next((c for c, r in boxes.items() if r.collidepoint(self.mouse)), "")
            if not target and lay.world.collidepoint(self.mouse) \
                    and not lay.inventory.collidepoint(self.mouse):
                target = nearest_character(boxes, self.mouse[0])
            panels.drag_targets(surf, lay, fonts, boxes, names, target)
            panels.drag_ghost(surf, lay, fonts, dict(view.inventory).get(self.dragging, self.dragging),
                              self.mouse)
        if view.ending and not self.reader.more:
            # a translated ending name where the catalogue has one, else the authored title
            overlays.ending_card(surf, lay, fonts, ending_name(self.session.story, view.scene, view.ending))
        pill = panels.status_pill(surf, lay, fonts, view.notice)
        below = pill.bottom + lay.px(6) if view.notice else 0
        panels.toast(surf, lay, fonts, self._toast[0], self._toast[1], below=below)
        if self.reload_error:
            self._banner_rect = panels.banner(surf, lay, fonts, ui("ui.banner.reload_failed"),
                                              self.reload_error, max(below, pill.bottom + lay.px(6)))
        else:
            self._banner_rect = pygame.Rect(0, 0, 0, 0)
        if self.show_stats:
            panels.stats(surf, lay, fonts, [ui(
                "ui.stats", shown=f"{self._rate[2]:.1f}", world=f"{self.fps:g}", queued=self.feed.queued(),
                stalls=self.stalls, chunks=self.feed.chunks, frame=view.frame, sound=_on_off(self.audio.on),
                voice=ui("ui.stats.voice_off", why=self.mic.error) if self.mic.error
                else ui("ui.on"))])
        if self.help_open:
            s = self.settings
            overlays.help_overlay(surf, lay, fonts, [
                (ui("ui.set.speed"), ui(f"ui.speed.{SPEED_NAMES[s.text_speed]}") if s.text_speed in SPEED_NAMES
                 else f"{s.text_speed:g}/s"),
                (ui("ui.set.auto"), _on_off(s.auto_advance)),
                (ui("ui.set.skip"), _on_off(s.skip_seen)),
                (ui("ui.set.subtitles"), _on_off(s.subtitles)),
                (ui("ui.set.volume"), f"{int(round(s.volume * 100))}%" + ("" if self.audio.on else ui("ui.no_sound"))),
                (ui("ui.set.world"), f"{self.frame_size[0]}×{self.frame_size[1]} @ {self.fps:g} fps"),
                (ui("ui.set.voice"), ui("ui.voice.none") if self.mic.error else ui("ui.voice.hold")),
                (ui("ui.set.reload"), ui("ui.reload.watching") if self.reloader.watch else "F6"),
            ])
        elif self.history.open:
            self.history.draw(surf, lay, fonts, self.session.history(200))
        elif self.save_screen.open:
            if self.time - self._saves_at > 1.0 or self._saves_at < 0:
                self._saves, self._saves_at = self.session.saves(), self.time
            self.save_hits = self.save_screen.draw(surf, lay, fonts, self._saves, self.mouse)
        panels.notice(surf, lay, fonts, self._notice[0], self._notice[1], NOTICE_LIFE)

    def _entry_status(self) -> tuple[str, tuple[int, int, int]]:
        """What the unfocused text line says: recording, or the input being worked on."""
        dots = "." * (1 + int(self.time * 3) % 3)
        if self.mic.recording:
            return f"● listening{dots}  release V to send", paint.WARN
        if self.worker.busy and self.worker.label:
            label = self.worker.label.rstrip(" …")
            sent = f"“{self._sent}”  " if self._sent else ""
            return f"{sent}{label}{' ' if label else ''}{dots}", paint.DIM
        return "", paint.DIM

    def step(self, events: list[pygame.event.Event] | None = None, dt: float | None = None) -> int:
        """Handle ``events``, :meth:`tick` and :meth:`draw` once; returns frames shown."""
        for e in events or ():
            self.handle_event(e)
        n = self.tick(dt)
        self.draw()
        return n

    def screenshot(self, path: str) -> None:
        """Save the whole window as a PNG."""
        pygame.image.save(self.screen, path)

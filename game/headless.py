"""Play a session with no window, on the frame clock, from a playthrough script.

The same story, inputs and seed give the same transcript and the same frames,
byte for byte, on any machine: nothing here reads the wall clock (timings are
measured but never written to the transcript).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from game.errorbank.clock import Clock, FrameClock
from game.errors import InputError, SaveError, WorldloomError
from game.inputs.address import parse_address
from game.inputs.script import Command, parse_line
from game.readable import Reader
from game.session import Session, open_game
from game.state import Choose, Event, Give, Move, Say, Wait
from game.story.story import Story
from game.world import undrawn
from game.world.protocol import FrameChunk

if TYPE_CHECKING:
    from game.cast.castroom import Castroom
    from game.inputs.channels import Channels
    from game.world.record import Recorder

TRANSCRIPT_VERSION = 1
#: The extension name a session's cast room is kept under (:data:`game.cast.castroom.EXTENSION`).
CAST = "cast"


def cast_room(session: Session) -> Castroom | None:
    """The session's :class:`~game.cast.castroom.Castroom` (:func:`~game.cast.castroom.cast_of`), if any.

    A session without a ``"cast"`` extension (a story with no character card) has none, and then
    the cast room's modules are never imported: they are ~0.2 s of CPU of a headless start.
    """
    if session.extension(CAST) is None:
        return None
    from game.cast.castroom import cast_of  # start-up cost only (see above): no cycle

    return cast_of(session)


class Transcript:
    """Writes JSON lines: a header, then inputs, events and chunk summaries."""

    def __init__(self, out: IO[str] | None, fps: float) -> None:
        self.out = out
        self.fps = fps
        self.rows: list[dict[str, Any]] = []

    def write(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if self.out is not None:
            self.out.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")

    def event(self, e: Event) -> None:
        self.write({"frame": e.frame, "time": round(e.frame / self.fps, 4), "type": e.kind,
                    "scene": e.scene, "speaker": e.speaker, "text": e.text, "ids": e.ids,
                    "data": e.data})


def resolve_choice(session: Session, arg: str, where: str) -> Choose:
    """``choose`` accepts a choice id, its number, or its text (case-insensitive)."""
    choices = session.choices()
    for c in choices:
        if arg == c.id or arg == str(c.number) or arg.lower() == c.text.lower():
            return Choose(choice_id=c.id)
    shown = "; ".join(f"{c.number}. {c.id} ({c.text})" for c in choices) or "none"
    raise InputError(f"no available choice {arg!r}", where=where, hint=f"available: {shown}")


#: Event kinds whose text is a subtitle of the recording: narration and lines, the player's, replies.
SUBTITLED = ("line", "say", "reply")


class HeadlessRunner:
    """Runs commands against a session, recording frames and a transcript.

    Args:
        session: the session (not yet started).
        transcript: where JSON lines go (or ``None``).
        recorder: MP4 recorder (or ``None``).
        on_chunk: called with each chunk (tests, benchmarks).
        on_error: told (one line naming the script line) of a command that could not apply and
            left the game as it was, the run going on (see :meth:`run`).
        on_text: told each line the player reads, as it happens (:class:`game.readable.Reader`:
            scene titles, lines by speaker name, the choice taken, the game's answer to words it
            did not take, the ending's name), and the choices on offer whenever they change.

    Attributes:
        errors: those lines, in order.
    """

    def __init__(self, session: Session, transcript: IO[str] | None = None,
                 recorder: Recorder | None = None,
                 on_chunk: Callable[[FrameChunk], None] | None = None,
                 on_error: Callable[[str], None] | None = None,
                 on_text: Callable[[str], None] | None = None) -> None:
        self.session = session
        self.on_error = on_error
        self.on_text = on_text
        self._reader = Reader(session.story, session.speaker_name)
        self._menu: list[str] = []
        self._carried: list[str] | None = None  # the inventory last told to on_text
        self.errors: list[str] = []
        self.transcript = Transcript(transcript, session.caps.fps)
        self.recorder = recorder
        self.on_chunk = on_chunk
        self.frame_hash = hashlib.sha256()
        self._channels: Channels | None = None
        #: The cast's closing note (:meth:`finish`), once written.
        self.summary: dict[str, Any] | None = None

    @property
    def channels(self) -> Channels:
        """The session's :class:`game.inputs.channels.Channels` (made on first use: MiniLM loads then).

        Its module (words, voice and pictures to intents) is imported then too: a script of
        choices, or a start, never needs it (start-up cost only; it does not import this module).
        """
        if self._channels is None:
            from game.inputs.channels import Channels

            self._channels = Channels(self.session)
        return self._channels

    def _said(self, cmd: Command, reply: Any) -> None:
        """Write what ``say``/``voice`` did: the events, or the answer when nothing happened."""
        from game.inputs.meaning import Clarify, NotUnderstood  # loaded with the channels (see channels)

        s = self.session
        if reply.heard is not None:
            self.transcript.write({"frame": s.state.frame, "type": "heard", "text": reply.heard.text,
                                   "mode": reply.heard.mode, "time": round(s.state.frame / s.caps.fps, 4)})
        if reply.events:
            intent = getattr(reply.outcome, "intent", None)
            if intent is not None:  # what the words meant, as ids (a replay can skip the model)
                self.transcript.write({"frame": s.state.frame, "type": "understood", "input": reply.text,
                                       "intent": intent.model_dump(mode="json"),
                                       "time": round(s.state.frame / s.caps.fps, 4)})
            self._events(reply.events)
            return
        if self.recorder is not None and reply.line:  # the game's answer to words it did not take
            self.recorder.caption(reply.line)
        if self.on_text is not None and reply.line:
            said = self._reader.line("say", "player", reply.text)  # what the player said, as a taken line reads
            if said is not None:
                self.on_text(said)
            self.on_text(reply.line)
        row = {"frame": s.state.frame, "type": "not_understood", "text": reply.line, "input": reply.text,
               "reason": getattr(reply.outcome, "reason", ""), "time": round(s.state.frame / s.caps.fps, 4)}
        if isinstance(reply.outcome, Clarify):
            row.update(type="clarify", reason="clarify", options=[o.label for o in reply.outcome.options])
        elif not isinstance(reply.outcome, NotUnderstood):
            row["reason"] = "unknown"
        self.transcript.write(row)

    def header(self, story_path: str) -> None:
        s = self.session
        self.transcript.write({"type": "header", "version": TRANSCRIPT_VERSION, "story": story_path,
                               "story_id": s.story.id, "story_hash": s.story.digest, "seed": s.seed,
                               "backend": s.caps.backend, "fps": s.caps.fps, "block": s.caps.frames_per_block,
                               "width": s.caps.width, "height": s.caps.height, "frame": 0, "time": 0.0,
                               **self._cast_header()})

    def _cast_header(self) -> dict[str, Any]:
        room = cast_room(self.session)
        if room is None:
            return {}
        return {"cast": sorted(room.characters), "dialogue": room.model.name if room.model is not None else "",
                "voice": room.voice is not None}

    def _told(self, line: str) -> None:
        """Print a line the game itself says about the run (a save made, a rollback), when printing."""
        if self.on_text is not None:
            self.on_text(line)

    def _events(self, events: list[Event]) -> None:
        for e in events:
            self.transcript.event(e)
            shown = self._reader.event(e.kind, e.speaker, e.text, e.scene, e.ids, e.data) \
                if self.on_text is not None else None
            if shown is not None and self.on_text is not None:
                self.on_text(shown)
            if self.recorder is not None and e.kind in SUBTITLED and e.text:  # the recording's subtitles
                self.recorder.caption(e.text, self.session.speaker_name(e.speaker))
        self._show_carried()

    def _show_carried(self) -> None:
        """Tell ``on_text`` what the player carries when it changed since it was last told (or
        since the start): ``(you now carry: tower key)``."""
        if self.on_text is None:
            return
        now = list(self.session.state.inventory)
        if self._carried is not None and now != self._carried:
            self.on_text(self._reader.carry(now))
        self._carried = now

    def _play(self) -> None:
        """Stream the pending request to the end."""
        s = self.session
        request = s.pending
        if request is None:
            return
        frames = 0
        h = hashlib.sha256()
        start = s.state.frame
        ignored: tuple[str, ...] = ()
        untold: list[str] = []
        for chunk in s.stream():
            frames += chunk.n_frames
            h.update(chunk.frames.tobytes())
            if chunk.audio is not None:
                h.update(chunk.audio.tobytes())
            ignored = chunk.ignored
            untold += self.scenery.tell(s.state.scene, chunk.ignored) if self.scenery is not None else []
            self.frame_hash.update(chunk.frames.tobytes())
            if self.recorder is not None:
                self.recorder.add(chunk.frames, chunk.audio)
            if self.on_chunk is not None:
                self.on_chunk(chunk)
        self.transcript.write({"frame": start, "time": round(start / s.caps.fps, 4), "type": "chunk",
                               "request": request.summary(), "frames": frames,
                               "sha256": h.hexdigest(), "ignored": list(ignored)})
        if self.scenery is not None:
            self.scenery.said(untold)

    def _show_menu(self) -> None:
        """Tell ``on_text`` the choices on offer, when they are not those it was last told."""
        if self.on_text is None:
            return
        menu = self._reader.menu(self.session.choices())
        if menu != self._menu:
            self._menu = menu
            for line in menu:
                self.on_text(line)

    def start(self) -> None:
        events = self.session.start().events
        self._carried = list(self.session.state.inventory)  # what the player starts with is not news
        self._events(events)
        self._play()
        self._show_menu()

    def hold(self) -> None:
        """Before the next turn, let the world idle until the recording's lines are read and its
        sound heard (:meth:`game.world.record.Recorder.owed`), as it does in the window while the
        player reads; nothing without a recorder or with nothing owed. Writes an ``idle`` row
        (its ``frames``) that :func:`game.replay.replay` plays again."""
        if self.recorder is not None and self.recorder.owed():
            self.idle(self.recorder.owed())

    def idle(self, frames: int) -> None:
        """Stream :meth:`game.session.Session.idle_request` blocks until at least ``frames``
        frames have played (into the recording, ``idle=True``, and the frame hash)."""
        s = self.session
        start, played = s.state.frame, 0
        while played < frames:
            for chunk in s.stream(s.idle_request()):
                played += chunk.n_frames
                self.frame_hash.update(chunk.frames.tobytes())
                if self.recorder is not None:
                    self.recorder.add(chunk.frames, chunk.audio, idle=True)
        self.transcript.write({"frame": start, "time": round(start / s.caps.fps, 4), "type": "idle",
                               "frames": played})

    #: Scenery the backend did not draw, told once per scene and phrase to its ``say``
    #: (:class:`game.world.undrawn.UndrawnScenery`); ``play_headless`` gives it ``on_warning``.
    scenery: undrawn.UndrawnScenery | None = None

    def run(self, cmd: Command) -> None:
        """Run one command. A line that cannot apply in the game as it is (no such choice,
        nothing to roll back or forward, a ``load`` of a missing, damaged or absent previous
        save, an item not held, nobody to ask, an unreadable image or clip, the story over)
        leaves the game as it was and the run goes on, whatever its kind: an ``error`` row in
        the transcript and a line naming the script line in :attr:`errors` (and to
        ``on_error``). ``worldloom play --headless`` then exits 1.

        Raises:
            game.errors.WorldloomError: anything else, naming the script line, and the run
                stops: a broken story, a failed backend, a ``save`` that cannot be written
                (the save folder, not the line, is at fault).
        """
        s = self.session
        text = " ".join((cmd.verb, *cmd.args))
        self.hold()
        self.transcript.write({"frame": s.state.frame, "time": round(s.state.frame / s.caps.fps, 4),
                               "type": "input", "input": text, "where": cmd.where})
        try:
            self._run(cmd)
            self._show_menu()
        except (InputError, SaveError) as exc:
            if isinstance(exc, SaveError) and cmd.verb == "save":  # the save folder is unusable: not this line
                raise type(exc)(exc.why, exc.where or cmd.where, exc.hint) from None
            # the path goes apart from the compared text: a replay loads from another folder
            file = exc.where if exc.where != cmd.where else ""
            self.transcript.write({"frame": s.state.frame, "time": round(s.state.frame / s.caps.fps, 4),
                                   "type": "error", "input": text, "where": cmd.where,
                                   "text": f"{text}: {exc.why}", "file": file})
            line = f"{cmd.where}: `{text}` failed: {exc.why}" + (f" ({file})" if file else "") + \
                (f"; {exc.hint}" if exc.hint else "")
            self.errors.append(line + "; the game goes on as it was")
            if self.on_error is not None:
                self.on_error(self.errors[-1])
        except WorldloomError as exc:
            if not exc.where:
                exc = type(exc)(exc.why, cmd.where, exc.hint)
            raise exc from None

    def _run(self, cmd: Command) -> None:
        s = self.session
        v, a = cmd.verb, cmd.args
        if v == "save":
            s.save(a[0])
            self.transcript.write({"frame": s.state.frame, "type": "save", "slot": a[0],
                                   "time": round(s.state.frame / s.caps.fps, 4)})
            self._told(self._reader.saved(a[0]))
            return
        if v == "load":
            events = s.load(a[0], previous=len(a) > 1)
            self._told(self._reader.loaded(a[0], previous=len(a) > 1))
            self._events(events)
        elif v in ("rollback", "rollforward"):
            n = int(a[0]) if a else 1
            events = s.rollback(n) if v == "rollback" else s.roll_forward(n)
            self._told(self._reader.rolled(v, n))
            self._events(events)
        elif v == "choose":
            self._events(s.submit(resolve_choice(s, a[0], cmd.where)).events)
        elif v == "move":
            self._events(s.submit(Move(direction=a[0], seconds=float(a[1]) if len(a) > 1 else 0.5)).events)  # type: ignore[arg-type]
        elif v == "wait":
            self._events(s.submit(Wait(seconds=float(a[0]))).events)
        elif v == "give":
            events = s.submit(Give(item_id=a[0], character_id=a[1])).events
            if self.on_text is not None:  # the player's act, as a choice taken reads
                self.on_text(self._reader.give(a[0], a[1]))
            self._events(events)
        elif v == "ask":
            self._ask(a[0], a[1], cmd.where)
        elif v == "say":
            room = cast_room(s)
            names = {cid: c.name for cid, c in s.story.model.cast.items()}
            who, rest = parse_address(a[0], names)
            if who and rest and room is not None and who in room.characters:  # "@eve hi", as in the window
                self._ask(who, rest, cmd.where)
                self._play()
                return
            reply = self.channels.say(a[0])
            self._said(cmd, reply)
            if not reply.events:
                return
        elif v == "voice":
            reply = self.channels.voice(self._path(a[0], cmd.where))
            self._said(cmd, reply)
            if not reply.events:
                return
        elif v == "image":
            self._events(self.channels.image(self._path(a[0], cmd.where), a[1] if len(a) > 1 else "").events)
        self._play()

    def _ask(self, character: str, text: str, where: str) -> None:
        """``ask <character> <text>``: say it to her; her reply comes back as a ``reply`` event."""
        s = self.session
        room = cast_room(s)
        if room is None or character not in room.characters:
            talk = ", ".join(room.characters) if room is not None else "none (no cast member has a card)"
            raise InputError(f"cannot ask {character!r}", where=where, hint=f"characters who answer: {talk}")
        self._events(s.submit(Say(text=text, target=character)).events)

    def finish(self) -> dict[str, Any] | None:
        """Write the cast's closing note as the transcript's last row (``cast_summary``); returns it."""
        room = cast_room(self.session)
        if room is None:
            return None
        summary = room.summary(self.session.log.since(0))
        s = self.session
        self.transcript.write({"frame": s.state.frame, "time": round(s.state.frame / s.caps.fps, 4),
                               "type": "cast_summary", "cast": summary})
        return summary

    @staticmethod
    def _path(arg: str, where: str) -> str:
        """``arg`` as given, or relative to the script's folder when that is where it is."""
        p = Path(arg).expanduser()
        if not p.is_absolute() and not p.exists() and ":" in where:
            beside = Path(where.rsplit(":", 1)[0]).parent / p
            if beside.exists():
                return str(beside)
        return str(p)


class StreamScript:
    """A playthrough script read as it comes (``worldloom play --headless --inputs -``: a pipe, or a
    player typing one input a line), each line played before the next is read.

    A line that does not parse is named (``<stdin>:3: unknown command 'jump'``) in :attr:`errors` and
    to ``on_error``, and skipped: a typing player keeps the game (a script file's bad line stops the
    run before it starts, :func:`game.inputs.script.read_script`). ``len()`` is the inputs read so far.
    """

    def __init__(self, lines: Iterable[str], name: str = "<stdin>",
                 on_error: Callable[[str], None] | None = None) -> None:
        self.lines = lines
        self.name = name
        self.on_error = on_error
        self.errors: list[str] = []
        self.count = 0

    def __iter__(self) -> Iterator[Command]:
        for i, line in enumerate(self.lines, 1):
            try:
                cmd = parse_line(line, f"{self.name}:{i}")
            except InputError as exc:
                self.errors.append(f"{exc}; the line was skipped and the game goes on as it was")
                if self.on_error is not None:
                    self.on_error(self.errors[-1])
                continue
            if cmd is not None:
                self.count += 1
                yield cmd

    def __len__(self) -> int:
        return self.count


def _open_output(path: str | Path) -> IO[str]:
    """Open a transcript for writing, creating its folder.

    Raises:
        game.errors.InputError: the path is a folder or cannot be written.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError("is a folder, not a file", where=str(p), hint="give a file name such as out.jsonl")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        return open(p, "w", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", where=str(p)) from exc


def play_headless(story_path: str, commands: Iterable[Command], *, backend: str = "procedural",
                  seed: int = 0, save_dir: str | Path | None = None, record: str | Path | None = None,
                  transcript: str | Path | None = None, size: tuple[int, int] | None = None,
                  backend_options: dict[str, Any] | None = None,
                  errorbank: str | Path | None = None, dialogue: Any = "transformers",
                  voice: bool = True, cast_options: dict[str, Any] | None = None,
                  on_warning: Callable[[str], None] | None = None, clock: Clock | None = None,
                  story: Story | None = None, on_text: Callable[[str], None] | None = None) -> HeadlessRunner:
    """Play ``commands`` on the story at ``story_path`` with no window (a list, or a
    :class:`StreamScript` played as it is read).

    The game is built by :func:`game.session.open_game` (as in the window):
    ``backend_options`` are extra keyword arguments for the backend (``model=``,
    ``url=``); ``errorbank`` guards the backend and records failures in that database;
    ``dialogue`` names the dialogue model of the characters with a card (see
    :func:`game.cast.castroom.dialogue_spec`; a model object or ``None`` for authored lines
    only; one that cannot load falls back to authored lines, said to ``on_warning``, as is a
    script line that could not apply and left the game as it was: :meth:`HeadlessRunner.run`),
    ``voice`` mixes her speech into the recording, ``cast_options`` are more keyword
    arguments for :func:`game.cast.castroom.build_cast`; the transcript then ends with a
    ``cast_summary`` row (also ``runner.summary``). ``clock`` is the guard's clock (see
    :func:`game.session.open_game`); by default a backend outside this process (``remote``,
    or any with a ``url``) is guarded on a :class:`~game.errorbank.clock.FrameClock` of the
    session's frame time (seconds), so a run's frames do not depend on the machine's load,
    and one in this process on the default :class:`~game.errorbank.clock.WorkClock` (its
    own CPU progress, which load does not stop, and which still catches a stuck call).
    ``story`` is the story at ``story_path`` already loaded (``worldloom play`` loads it once,
    for its start lint and for play). ``on_text`` is told each line the player reads, as the
    window shows it (see :class:`HeadlessRunner`).

    Returns:
        The runner (its ``frame_hash`` digests every frame shown).

    Raises:
        game.errors.WorldloomError: a bad story, command or backend, naming where.
    """
    frame_time: list[Callable[[], float]] = []
    if clock is None and (backend == "remote" or "url" in (backend_options or {})):
        # a backend outside this process: the guard's default WallClock would call a block that a
        # loaded machine makes slow a hang; on the session's frame time it never is, and the remote
        # backend's own receive timeout still ends a dead call (game.errorbank.clock)
        clock = FrameClock(lambda: frame_time[0]() if frame_time else 0.0, fps=1.0)
    game = open_game(story_path if story is None else story, backend=backend, backend_options=backend_options,
                     size=size, seed=seed, save_dir=save_dir, errorbank=errorbank, dialogue=dialogue, voice=voice,
                     cast_options=cast_options, clock=clock, source=story_path)
    frame_time.append(lambda: game.session.state.frame / game.session.caps.fps)
    for text in game.warnings:
        if on_warning is not None:
            on_warning(text)
    session = game.session
    caps = session.caps
    rec = None
    out = None
    try:
        if record:
            from game.world.record import Recorder  # start-up cost only: a play that records needs it

            rec = Recorder(record, caps.width, caps.height, caps.fps, caps.audio_rate)
        out = _open_output(transcript) if transcript else None
        runner = HeadlessRunner(session, out, rec, on_error=on_warning, on_text=on_text)
        runner.header(str(story_path))
        runner.scenery = undrawn.UndrawnScenery(on_warning)
        runner.start()
        for cmd in commands:
            runner.run(cmd)
        runner.hold()
        runner.summary = runner.finish()
    finally:
        if out is not None:
            out.close()
        if rec is not None:
            rec.close()
        game.close()
    return runner

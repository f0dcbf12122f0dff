"""Record a session to MP4: every frame shown, the sound under it, and what was said.

Frames go to ffmpeg (from ``imageio-ffmpeg``, which ships its own binary) as they
arrive; sound goes to a 16-bit WAV beside them; :meth:`Recorder.close` muxes the
two into the final file with AAC audio. Bit-exact flags keep reruns identical.

The lines said and narrated (:meth:`Recorder.caption`) become subtitles: a SubRip file
beside the MP4 (``out.srt``) and the same cues as a subtitle track inside it (``mov_text``,
on by default in VLC, mpv and QuickTime). They are not burned into the frames: a recording
keeps exactly what the world model drew (frame hashes, the error bank's evidence), and text
stays text (any script, the player's own font and size, searchable, can be switched off).

A turn whose lines take longer to read (:func:`reading_time`) than its frames last, or whose
sound runs past them, is owed time (:meth:`Recorder.owed`) before the next turn, as a player
reading before the next choice would: no line is squeezed under its reading time or left after
the video ends, and each turn's subtitles begin with its own frames. The player of a recorded
session pays it with the world idling, as in the window (:meth:`game.headless.HeadlessRunner.hold`
streams :meth:`game.session.Session.idle_request` blocks, added with ``idle=True`` and counted in
:attr:`Recorder.idled`), its ambience going on under the lines; sound that runs past its frames
is mixed into the frames that follow. Only what is still owed when a new turn's first line comes
(a recorder fed by hand) holds the last frame, never drawn over; :attr:`Recorder.held` counts those.
To burn them in for a player that shows no tracks (a browser):
``ffmpeg -i out.mp4 -vf subtitles=out.srt burned.mp4``.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import wave
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import imageio_ffmpeg
import numpy as np

from game.errors import BackendError, InputError

#: Reading speed that sets a subtitle's time on screen, characters per second (about the 160-180
#: words a minute of broadcast subtitling guidelines, e.g. the BBC's).
READ_CPS = 15.0
#: Shortest and longest time one subtitle stays up, seconds.
MIN_CUE_S = 1.2
MAX_CUE_S = 7.0


@contextmanager
def _interrupt_after() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) until the block is done, then raise its ``KeyboardInterrupt``.

    A ``KeyboardInterrupt`` raised inside ``imageio_ffmpeg.write_frames`` makes it kill ffmpeg
    (its ``BaseException`` branch), so the video so far never gets its index and is lost; held to
    the end of a write, the interrupt stops the game with the frames given so far intact. Only in
    the main thread and while Python's own SIGINT handler is set (no other handler is replaced).
    """
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    hit: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: hit.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hit:
        raise KeyboardInterrupt


@dataclass(frozen=True)
class Cue:
    """One subtitle: ``text`` on screen from ``start`` to ``end`` seconds."""

    start: float
    end: float
    text: str


def reading_time(text: str) -> float:
    """Seconds ``text`` takes to read at :data:`READ_CPS`, within [:data:`MIN_CUE_S`, :data:`MAX_CUE_S`]."""
    return min(MAX_CUE_S, max(MIN_CUE_S, len(text) / READ_CPS))


def timed_cues(batches: list[tuple[float, list[str]]], end: float) -> list[Cue]:
    """Cues for lines said in batches: ``(seconds, lines)``, a turn's lines at the time its frames
    began, in order; ``end``: the video's length, seconds.

    A batch's lines follow one another, each for its :func:`reading_time`, squeezed (never below
    :data:`MIN_CUE_S`) to end when the next batch's turn begins, so the text stays with its
    picture; a batch that cannot fit pushes the next one later rather than drop a line.
    """
    cues: list[Cue] = []
    cursor = 0.0
    for i, (t, lines) in enumerate(batches):
        start = max(t, cursor)
        limit = batches[i + 1][0] if i + 1 < len(batches) else max(end, start)
        need = [reading_time(line) for line in lines]
        room = limit - start
        squeeze = min(1.0, room / sum(need)) if need and room > 0 else (1.0 if i + 1 == len(batches) else 0.0)
        for line, want in zip(lines, need, strict=True):
            length = max(MIN_CUE_S, want * squeeze)
            cues.append(Cue(round(start, 3), round(start + length, 3), line))
            start += length
        cursor = start
    return cues


def srt(cues: list[Cue]) -> str:
    """``cues`` as a SubRip (``.srt``) file's text."""
    def stamp(t: float) -> str:
        ms = int(round(t * 1000))
        return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"

    return "".join(f"{i}\n{stamp(c.start)} --> {stamp(c.end)}\n{c.text}\n\n" for i, c in enumerate(cues, 1))


class Recorder:
    """Writes frames and audio to ``path`` (``.mp4``).

    Args:
        path: output file.
        width, height: frame size in pixels (even numbers; ffmpeg's yuv420p needs them).
        fps: frames per second.
        audio_rate: sample rate of the audio track, Hz.

    Raises:
        game.errors.InputError: the output folder cannot be created.
    """

    def __init__(self, path: str | Path, width: int, height: int, fps: float, audio_rate: int = 22050) -> None:
        self.path = Path(path)
        if self.path.is_dir() or self.path.suffix.lower() != ".mp4":
            raise InputError("a recording is an .mp4 file", where=str(path), hint="give a file name such as out.mp4")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create folder for recording: {exc}", where=str(path)) from exc
        self.size = (width, height)
        self.fps = fps
        self.audio_rate = audio_rate
        self._video = self.path.with_suffix(".video.mp4")
        self._wav_path = self.path.with_suffix(".audio.wav")
        self._writer: Generator[Any, Any, None] = imageio_ffmpeg.write_frames(
            str(self._video), self.size, fps=fps, codec="libx264", quality=None, bitrate=None,
            macro_block_size=2, ffmpeg_log_level="error",
            output_params=["-crf", "20", "-preset", "veryfast", "-threads", "1",
                           "-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1"])
        self._writer.send(None)
        #: Why ffmpeg stopped taking frames (it died, or its disk is full), once it has; ``""`` while it takes them.
        self._failed = ""
        self._wav = wave.open(str(self._wav_path), "wb")
        self._wav.setnchannels(1)
        self._wav.setsampwidth(2)
        self._wav.setframerate(audio_rate)
        self.frames = 0
        self.samples = 0
        #: Frames repeated to hold a turn until its lines are read and its sound heard.
        self.held = 0
        #: World frames added while the lines were read (``add(..., idle=True)``).
        self.idled = 0
        self._carry = np.zeros(0, np.float32)  # sound past the frames written, mixed into the next ones
        self._last: np.ndarray | None = None
        self._batch_frame = -1  # the frame count when the open batch of lines began
        self._read_until = 0.0  # seconds: when the lines captioned so far are read
        #: Lines said, ``(seconds into the video, [lines])`` (see :meth:`caption`).
        self.said: list[tuple[float, list[str]]] = []
        #: The subtitle file written beside the MP4 by :meth:`close` (``None`` when nothing was said).
        self.subtitles: Path | None = None

    def caption(self, text: str, speaker: str = "") -> None:
        """A line said or narrated now (as the next frames begin): a subtitle, ``"Eve: text"``
        with a ``speaker``, timed by :func:`timed_cues`. The first line of a new turn first holds
        the last frame until the previous turn's lines are read (see the module's note)."""
        text = " ".join(text.split())
        if not text:
            return
        line = f"{speaker}: {text}" if speaker else text
        if not self.said or self._batch_frame != self.frames:  # a new turn's lines
            self._hold(self._read_until)
            self._batch_frame = self.frames
            now = round(self.frames / self.fps, 3)
            self.said.append((now, []))
            self._read_until = now
        self.said[-1][1].append(line)
        self._read_until += reading_time(line)

    def _need(self, until: float) -> int:
        """Frames still to add so that ``until`` seconds and all the sound given are covered."""
        sound = (self.samples + self._carry.shape[0]) * self.fps / self.audio_rate
        return max(0, int(np.ceil(max(until * self.fps, sound) - self.frames - 1e-9)))

    def owed(self) -> int:
        """Frames owed before the next turn: until every line captioned so far is read
        (:func:`reading_time`) and all the sound given is heard; 0 before the first frame."""
        return 0 if self._last is None else self._need(self._read_until)

    @property
    def seconds(self) -> float:
        """The video's length so far, seconds."""
        return self.frames / self.fps

    def describe(self) -> str:
        """One line for the player: the video's real length and how much of it the lines held,
        e.g. ``"video: 62.0 s (1488 frames); 40.5 s of it while lines are read (the world idling
        40.5 s, a still frame 0.0 s)"``."""
        idle, still = self.idled / self.fps, self.held / self.fps
        return (f"video: {self.seconds:.1f} s ({self.frames} frames); {idle + still:.1f} s of it while lines "
                f"are read (the world idling {idle:.1f} s, a still frame {still:.1f} s)")

    def _hold(self, until: float) -> None:
        """Repeat the last frame (the sound given still playing) until ``until`` seconds and the
        sound are covered; nothing before the first frame."""
        if self._last is None:
            return
        n = self._need(until)
        if n > 0:
            self.held += n
            self._write(np.repeat(self._last[None], n, axis=0), None)

    def add(self, frames: np.ndarray, audio: np.ndarray | None, idle: bool = False) -> None:
        """Append ``(T, H, W, 3)`` uint8 frames and their ``(S,)`` float32 audio (or silence);
        sound longer than the frames is kept whole and mixed into the frames that follow.
        ``idle``: the world idling while lines are read (counted in :attr:`idled`)."""
        if frames.shape[0]:
            self._last = np.ascontiguousarray(frames[-1]).copy()
        if idle:
            self.idled += frames.shape[0]
        self._write(frames, audio)

    def _write(self, frames: np.ndarray, audio: np.ndarray | None) -> None:
        if self._failed:
            raise BackendError(f"the recording stopped at frame {self.frames}: {self._failed}", where=str(self.path))
        with _interrupt_after():  # the frames, their count and their sound stay in step
            try:
                for f in frames:
                    self._writer.send(np.ascontiguousarray(f))
            except (OSError, StopIteration) as exc:  # imageio's IOError for a broken pipe; a writer already done
                self._failed = "ffmpeg stopped taking frames (" + (str(exc).splitlines() or ["it exited"])[0] + ")"
                raise BackendError(f"the recording stopped at frame {self.frames}: {self._failed}",
                                   where=str(self.path), hint="is the disk full?") from exc
            self.frames += frames.shape[0]
            want = max(0, round(self.frames * self.audio_rate / self.fps) - self.samples)
            sound = np.zeros(0, np.float32) if audio is None else np.asarray(audio, np.float32).reshape(-1)
            n = max(want, sound.shape[0], self._carry.shape[0])
            mixed = np.zeros(n, np.float32)
            mixed[:sound.shape[0]] += sound
            mixed[:self._carry.shape[0]] += self._carry
            self._carry = mixed[want:]
            pcm = (np.clip(mixed[:want], -1.0, 1.0) * 32767).astype("<i2")
            self._wav.writeframes(pcm.tobytes())
            self.samples += pcm.shape[0]

    def close(self) -> Path:
        """Finish and mux (with the subtitles, written beside it as ``.srt`` too); returns the MP4 path.

        Raises:
            game.errors.BackendError: ffmpeg failed, now or while frames were written (the video-only
                file and the sound are kept).
        """
        if not self._failed:
            self._hold(self._read_until)  # the last turn's lines are read, its sound heard, before the end
        with _interrupt_after():
            self._writer.close()
        self._wav.close()
        if self._failed:
            raise BackendError(f"the recording stopped at frame {self.frames}: {self._failed}", where=str(self.path),
                               hint=f"what was written is kept in {self._video.name} and {self._wav_path.name}")
        subs: list[str] = []
        if self.said:
            self.subtitles = self.path.with_suffix(".srt")
            self.subtitles.write_text(srt(timed_cues(self.said, self.frames / self.fps)), encoding="utf-8")
            subs = ["-i", str(self.subtitles), "-map", "0:v", "-map", "1:a", "-map", "2:s", "-c:s", "mov_text",
                    "-disposition:s:0", "default"]
        cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-loglevel", "error", "-i", str(self._video),
               "-i", str(self._wav_path), *subs, "-c:v", "copy", "-c:a", "aac", "-b:a", "96k",
               "-map_metadata", "-1", "-fflags", "+bitexact", "-flags:a", "+bitexact",
               "-t", f"{self.frames / self.fps:.3f}", str(self.path)]
        result = subprocess.run(cmd, capture_output=True, check=False)
        if result.returncode != 0:
            raise BackendError(f"ffmpeg could not mux the recording: {result.stderr.decode()[-300:]}",
                               where=str(self.path))
        self._video.unlink(missing_ok=True)
        self._wav_path.unlink(missing_ok=True)
        return self.path

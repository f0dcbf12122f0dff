"""Text to speech: a character's voice, sentence by sentence, as float32 audio.

Engines, tried in this order (``engine="auto"``):

1. **pyttsx3** (espeak-ng on Linux through its ``espeak`` driver; the system voice
   elsewhere): ``save_to_file`` + ``runAndWait`` into a temporary WAV.
2. **the espeak-ng program** (Linux): ``espeak-ng -v VOICE -s RATE -p PITCH -a AMP
   -w FILE`` with the text on stdin, run with an argument list (no shell).

Both are espeak-ng on Linux and sound the same. pyttsx3's quirks are handled here: its
espeak driver initialises the library once per process and keeps one engine per driver
name (so all synthesis goes through one lock); it prints "Audio saved to" on stdout
(silenced); the engine's first ``runAndWait`` returns before the utterance ends (it is
waited for), and an utterance that ends with no save file is played through the shell
with ``aplay`` (the save file is never unset: it is ``os.devnull`` between runs); a
failed run leaves its loop marked as started (the loop is ended before the next run); it
never finishes an utterance with nothing to say (blank text is not sent) and can hang
(each run has a timeout, after which pyttsx3 is given up for the process and the program
is used); a voice id it does not know raises (the variant is dropped, then the default
voice is kept); its WAV is 16-bit mono at espeak's 22050 Hz.

Audio is ``float32`` mono in [-1, 1] at :attr:`TextToSpeech.rate` Hz (default
:data:`GAME_AUDIO_RATE`, the game's audio rate; resampled when the engine's differs).

:meth:`TextToSpeech.stream` synthesises sentences on a background thread as they
arrive, so the first sentence is ready to play while the reply is still being
written; :class:`VoiceMixer` adds queued speech into each world chunk's audio track.
"""

from __future__ import annotations

import contextlib
import io
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import wave
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from game.errors import WorldloomError
from game.wav import decode_pcm, write_wav

F32 = npt.NDArray[np.float32]

#: The game's audio rate, Hz (``FrameChunk.audio_rate``).
GAME_AUDIO_RATE = 22050
#: Longest one synthesis may take before the engine is given up, seconds.
SYNTH_TIMEOUT_S = 20.0

Engine = Literal["auto", "pyttsx3", "espeak-ng"]


class SpeechError(WorldloomError):
    """No text-to-speech engine could speak the text."""


@dataclass(frozen=True)
class VoiceSettings:
    """A voice: the card's ``voice`` block, or a relationship's voice style on top of it.

    Attributes:
        voice: engine voice id (espeak-ng: ``en-us+f3``, ``en-gb-scotland+f3``...; the
            part after ``+`` is a variant).
        rate: speaking rate, words per minute (espeak-ng default 175).
        pitch: 0-99 (50: the voice's default).
        volume: 0.0-1.0.
    """

    voice: str = "en-us+f3"
    rate: int = 170
    pitch: int = 50
    volume: float = 1.0

    @classmethod
    def from_card(cls, voice: Any, style: Any = None, lang: str = "") -> VoiceSettings:
        """From a card's :class:`~game.cast.card.Voice`, with an optional
        :class:`~game.cast.relationships.VoiceStyle` (its ``rate``, ``pitch``, ``volume``) on top,
        speaking ``lang`` (``""``: the card's own voice; see :func:`voice_in_language`)."""
        src = style if style is not None else voice
        return cls(voice=voice_in_language(str(getattr(voice, "voice", cls.voice)), lang),
                   rate=int(getattr(src, "rate", cls.rate)), pitch=int(getattr(src, "pitch", cls.pitch)),
                   volume=float(getattr(src, "volume", cls.volume)))


def voice_in_language(voice: str, lang: str) -> str:
    """The espeak-ng voice id that speaks ``lang`` in the manner of ``voice``: the language part
    is replaced, the variant after ``+`` (the timbre: ``f3``, ``m2``) kept.

    ``voice_in_language("en-us+f3", "fr") == "fr+f3"``; a voice already of that language
    (``fr-be+f3`` for ``fr``), or ``lang == ""``, is returned as it is. A language espeak-ng
    lacks falls back at synthesis like any unknown voice (the variant dropped, then the default).
    Language ids are espeak-ng's (``espeak-ng --voices``), which are BCP 47 language tags.
    """
    lang = lang.strip().lower().replace("_", "-")
    if not lang:
        return voice
    base, plus, variant = voice.partition("+")
    if base.lower() == lang or base.lower().startswith(lang + "-"):
        return voice
    return f"{lang}{plus}{variant}"


@dataclass(frozen=True)
class Speech:
    """One synthesised sentence.

    Attributes:
        text: what was said.
        audio: ``(N,)`` float32 mono in [-1, 1].
        rate: sample rate of ``audio``, Hz.
        index: position in the stream (0 for the first sentence).
        engine: ``pyttsx3`` or ``espeak-ng``.
        ready_s: seconds from the start of the stream until this sentence was ready.
    """

    text: str
    audio: F32
    rate: int
    index: int = 0
    engine: str = ""
    ready_s: float = 0.0

    @property
    def seconds(self) -> float:
        """Duration, seconds."""
        return len(self.audio) / self.rate if self.rate else 0.0


# -- WAV and resampling -----------------------------------------------------------------

def read_wav(path: str | Path) -> tuple[F32, int]:
    """``(samples, rate)`` of a PCM WAV: float32 mono in [-1, 1] (channels averaged).

    Raises:
        SpeechError: not a readable 8/16/32-bit PCM WAV.
    """
    try:
        with wave.open(str(path), "rb") as w:
            n, width, channels, rate = w.getnframes(), w.getsampwidth(), w.getnchannels(), w.getframerate()
            raw = w.readframes(n)
    except (OSError, EOFError, wave.Error) as exc:
        raise SpeechError(f"cannot read the speech WAV: {exc}", where=str(path)) from exc
    x = decode_pcm(raw, width, channels)
    if x is None:
        raise SpeechError(f"unsupported WAV sample width {width}", where=str(path))
    return x, int(rate)


def resample(audio: F32, src: int, dst: int) -> F32:
    """Resample mono ``audio`` from ``src`` to ``dst`` Hz (polyphase with scipy when
    installed, else linear interpolation); the length becomes ``round(N * dst / src)``."""
    if src == dst or len(audio) == 0:
        return audio.astype(np.float32, copy=False)
    n_out = int(round(len(audio) * dst / src))
    try:
        from math import gcd

        from scipy.signal import resample_poly

        g = gcd(int(src), int(dst))
        y = np.asarray(resample_poly(audio, dst // g, src // g), np.float32)
    except ImportError:
        t = np.arange(n_out, dtype=np.float64) * (src / dst)
        y = np.interp(t, np.arange(len(audio)), audio).astype(np.float32)
    if len(y) < n_out:
        y = np.pad(y, (0, n_out - len(y)))
    return np.clip(y[:n_out], -1.0, 1.0).astype(np.float32)


# -- engines ------------------------------------------------------------------------------

def espeak_ng_command(voice: VoiceSettings, out: str | Path, binary: str = "espeak-ng") -> list[str]:
    """The espeak-ng argument list that writes ``voice``'s speech of stdin to ``out`` (WAV)."""
    amplitude = int(round(max(0.0, min(1.0, voice.volume)) * 100))
    return [binary, "-v", voice.voice, "-s", str(int(voice.rate)), "-p", str(int(voice.pitch)),
            "-a", str(amplitude), "-w", str(out), "--stdin"]


def _espeak_ng(text: str, voice: VoiceSettings, out: Path, timeout: float) -> None:
    binary = shutil.which("espeak-ng") or shutil.which("espeak")
    if binary is None:
        raise SpeechError("espeak-ng is not installed", hint="apt-get install espeak-ng")
    try:
        proc = subprocess.run(espeak_ng_command(voice, out, binary), input=text.encode("utf-8"),
                              capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpeechError(f"espeak-ng failed: {exc}") from exc
    if proc.returncode != 0 and voice.voice:
        # an unknown voice: espeak-ng exits 1 ("voice not found"); retry without the variant, then default
        base = voice.voice.split("+")[0]
        for v in dict.fromkeys((base, "en")):
            if v == voice.voice:
                continue
            retry = VoiceSettings(v, voice.rate, voice.pitch, voice.volume)
            proc = subprocess.run(espeak_ng_command(retry, out, binary), input=text.encode("utf-8"),
                                  capture_output=True, timeout=timeout, check=False)
            if proc.returncode == 0:
                break
    if proc.returncode != 0:
        raise SpeechError(f"espeak-ng exited {proc.returncode}: {proc.stderr.decode(errors='replace')[:200]}")


#: Tries pyttsx3 gets when it writes no file (see :meth:`TextToSpeech._speak`).
PYTTSX3_TRIES = 3


class _Pyttsx3:
    """The process-wide pyttsx3 engine and its quirks (see the module docstring)."""

    lock = threading.Lock()
    engine: Any = None
    broken = ""

    @classmethod
    def synth(cls, text: str, voice: VoiceSettings, out: Path, timeout: float) -> None:
        if cls.broken:
            raise SpeechError(f"pyttsx3 is unavailable: {cls.broken}")
        if not cls.lock.acquire(timeout=timeout):
            raise SpeechError("pyttsx3 is busy (a previous synthesis hung)")
        try:
            errors: list[BaseException] = []
            worker = threading.Thread(target=cls._run, args=(text, voice, out, errors, time.monotonic() + timeout),
                                      daemon=True, name="worldloom-pyttsx3")
            worker.start()
            worker.join(timeout)
            if worker.is_alive():
                cls.broken = f"a synthesis took over {timeout:.0f} s"
                raise SpeechError(f"pyttsx3 hung for {timeout:.0f} s")
            if errors:
                raise SpeechError(f"pyttsx3 failed: {errors[0]}") from errors[0]
        finally:
            if not cls.broken:
                cls.lock.release()

    @classmethod
    def _run(cls, text: str, voice: VoiceSettings, out: Path, errors: list[BaseException], deadline: float) -> None:
        try:
            import pyttsx3

            if cls.engine is None:
                cls.engine = pyttsx3.init("espeak" if sys.platform.startswith("linux") else None)
            eng = cls.engine
            cls._set_voice(eng, voice.voice)
            for name, value in (("rate", int(voice.rate)), ("volume", float(voice.volume)),
                                ("pitch", int(voice.pitch))):
                with contextlib.suppress(Exception):  # not every driver has pitch
                    eng.setProperty(name, value)
            # pyttsx3's own "finished-utterance" notice comes after the driver has written the whole
            # file; the driver's `_speaking` flag alone can read False before the synthesis starts, and
            # a file read then is half-written (a first render in a process came back 17% short)
            finished = threading.Event()
            tokens = [eng.connect(topic, lambda **_: finished.set()) for topic in ("finished-utterance", "error")]
            with contextlib.redirect_stdout(io.StringIO()):
                eng.save_to_file(text, str(out))
                try:
                    eng.runAndWait()
                except RuntimeError:  # "run loop already started" after an earlier failure
                    with contextlib.suppress(Exception):
                        eng.endLoop()
                    eng.save_to_file(text, str(out))
                    eng.runAndWait()
                driver = getattr(getattr(eng, "proxy", None), "_driver", None)
                # the engine's first runAndWait returns while espeak is still speaking (its queued
                # endLoop runs before the synthesis starts): wait for the utterance to end (its file
                # written), here where its "Audio saved to" print is still silenced
                finished.wait(max(0.0, deadline - time.monotonic()))
                while getattr(driver, "_speaking", False) and time.monotonic() < deadline:
                    time.sleep(0.005)
            for token in tokens:
                with contextlib.suppress(Exception):
                    eng.disconnect(token)
            if driver is not None and hasattr(driver, "_save_file"):
                # never None: an utterance that ends with no save file is played with `aplay` through
                # the shell (pyttsx3/drivers/espeak.py), "sh: 1: aplay: not found" on a headless machine
                driver._save_file = os.devnull
        except BaseException as exc:  # reported to the caller's thread
            errors.append(exc)

    @staticmethod
    def _set_voice(eng: Any, voice_id: str) -> None:
        for v in dict.fromkeys((voice_id, voice_id.split("+")[0])):
            if not v:
                continue
            try:
                eng.setProperty("voice", v)
                return
            except Exception:
                continue


class TextToSpeech:
    """Speaks text in a voice.

    Args:
        voice: the voice (default :class:`VoiceSettings`).
        rate: output sample rate, Hz (default the game's, :data:`GAME_AUDIO_RATE`).
        engine: ``auto`` (pyttsx3, then the espeak-ng program), ``pyttsx3`` or ``espeak-ng``.
        timeout_s: longest one sentence may take to synthesise.
    """

    def __init__(self, voice: VoiceSettings | None = None, rate: int = GAME_AUDIO_RATE, engine: Engine = "auto",
                 timeout_s: float = SYNTH_TIMEOUT_S) -> None:
        self.voice = voice or VoiceSettings()
        self.rate = int(rate)
        self.engine: Engine = engine
        self.timeout_s = timeout_s
        #: The engine that spoke last (``pyttsx3`` or ``espeak-ng``).
        self.engine_used = ""
        #: Why pyttsx3 was skipped last time, if it was.
        self.fallback_reason = ""

    def synthesise(self, text: str, voice: VoiceSettings | None = None) -> F32:
        """``(N,)`` float32 mono in [-1, 1] at :attr:`rate` Hz of ``text`` spoken (empty for blank text).

        Raises:
            SpeechError: no engine could speak it.
        """
        text = " ".join(text.split())
        if not any(c.isalnum() for c in text):
            return np.zeros(0, np.float32)
        v = voice or self.voice
        with tempfile.TemporaryDirectory(prefix="worldloom-tts-") as tmp:
            out = Path(tmp) / "speech.wav"
            audio, rate = self._speak(text, v, out)
        return resample(audio, rate, self.rate)

    def _speak(self, text: str, voice: VoiceSettings, out: Path) -> tuple[F32, int]:
        errors: list[str] = []
        if self.engine in ("auto", "pyttsx3"):
            # pyttsx3 2.99's espeak driver now and then writes no file, or an empty one (it writes
            # the file before adding the last callback's samples): seen about once in a dozen
            # calls on a loaded machine. A few more tries, then give up (auto: espeak-ng speaks).
            for _attempt in range(PYTTSX3_TRIES):
                try:
                    _Pyttsx3.synth(text, voice, out, self.timeout_s)
                except Exception as exc:  # hung or broken: no use trying again
                    errors.append(str(exc))
                    break
                try:
                    audio, rate = read_wav(out)
                except SpeechError as exc:  # no file, or half of one
                    errors.append(f"pyttsx3 wrote no usable file ({exc.why})")
                    continue
                if len(audio):
                    self.engine_used = "pyttsx3"
                    return audio, rate
                errors.append("pyttsx3 wrote no audio")
                with contextlib.suppress(OSError):
                    out.unlink()
            self.fallback_reason = errors[-1]
            if self.engine == "pyttsx3":
                raise SpeechError(f"pyttsx3 could not speak: {errors[-1]}")
            with contextlib.suppress(OSError):
                out.unlink()
        _espeak_ng(text, voice, out, self.timeout_s)
        audio, rate = read_wav(out)
        self.engine_used = "espeak-ng"
        return audio, rate

    def save(self, text: str, path: str | Path, voice: VoiceSettings | None = None) -> Path:
        """Speak ``text`` into a 16-bit WAV at :attr:`rate` Hz.

        Raises:
            SpeechError: no engine could speak it.
        """
        return write_wav(path, self.synthesise(text, voice), self.rate)

    def stream(self, sentences: Iterable[str], voice: VoiceSettings | None = None,
               lookahead: int = 2) -> Iterator[Speech]:
        """Speak sentences as they arrive; yield each :class:`Speech` as soon as it is ready.

        A background thread reads ``sentences`` (which may block, e.g. while a model
        writes the next one) and synthesises each in turn, at most ``lookahead`` ahead
        of the consumer; so the first sentence can play while later ones are still
        being written or synthesised. Blank sentences are skipped. Closing the iterator
        stops the thread after the sentence it is on.

        Raises:
            SpeechError: a sentence could not be spoken (raised where it would have been yielded).
        """
        out: queue.Queue[Speech | BaseException | None] = queue.Queue(maxsize=max(1, lookahead))
        stop = threading.Event()
        t0 = time.perf_counter()

        def produce() -> None:
            try:
                index = 0
                for sentence in sentences:
                    if stop.is_set():
                        return
                    audio = self.synthesise(sentence, voice)
                    if len(audio) == 0:
                        continue
                    item = Speech(sentence, audio, self.rate, index, self.engine_used, time.perf_counter() - t0)
                    index += 1
                    while not stop.is_set():
                        try:
                            out.put(item, timeout=0.1)
                            break
                        except queue.Full:
                            continue
            except BaseException as exc:
                _put_final(out, exc, stop)
                return
            _put_final(out, None, stop)

        thread = threading.Thread(target=produce, name="worldloom-tts", daemon=True)
        thread.start()
        try:
            while True:
                item = out.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    if isinstance(item, SpeechError):
                        raise item
                    raise SpeechError(f"speech stream failed: {item}") from item
                yield item
        finally:
            stop.set()


def _put_final(q: queue.Queue[Speech | BaseException | None], item: BaseException | None,
               stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            q.put(item, timeout=0.1)
            return
        except queue.Full:
            continue


# -- mixing -----------------------------------------------------------------------------------

def mix_voice(track: F32, voice: F32, offset: int = 0, gain: float = 1.0, duck: float = 0.5) -> F32:
    """``track`` with ``voice`` added from sample ``offset`` (both float32 mono, same rate).

    Where the voice sounds, the track is scaled by ``duck`` (0.5: -6 dB) so speech
    stays clear; the voice past the track's end is cut. The sum is clipped to [-1, 1].
    Returns a new array the length of ``track``.
    """
    out = np.array(track, np.float32, copy=True)
    if offset >= len(out) or len(voice) == 0:
        return out
    start = max(0, offset)
    seg = voice[start - offset: start - offset + len(out) - start]
    end = start + len(seg)
    out[start:end] = out[start:end] * duck + seg.astype(np.float32) * gain
    return np.clip(out, -1.0, 1.0).astype(np.float32)


class VoiceMixer:
    """Queued speech, mixed into consecutive audio tracks (one per world chunk).

    ``add`` queues a clip (played after the ones queued before, with ``gap_s`` of
    silence between sentences); ``mix(track)`` adds the next ``len(track)`` samples of
    queued speech into ``track`` and advances. All audio is float32 mono at ``rate`` Hz.

    Args:
        rate: sample rate, Hz.
        gain: voice gain. duck: track gain under the voice.
        gap_s: silence between queued clips, seconds.
    """

    def __init__(self, rate: int = GAME_AUDIO_RATE, gain: float = 1.0, duck: float = 0.5,
                 gap_s: float = 0.15) -> None:
        self.rate = rate
        self.gain = gain
        self.duck = duck
        self.gap = int(round(gap_s * rate))
        self._clips: deque[F32] = deque()
        self._pos = 0  # samples of the first clip already played

    def add(self, speech: Speech | F32) -> None:
        """Queue a clip (a :class:`Speech` is resampled to the mixer's rate if needed)."""
        if isinstance(speech, Speech):
            audio = resample(speech.audio, speech.rate, self.rate)
        else:
            audio = np.asarray(speech, np.float32)
        if len(audio) == 0:
            return
        if self._clips and self.gap:
            audio = np.concatenate([np.zeros(self.gap, np.float32), audio])
        self._clips.append(audio)

    @property
    def pending_samples(self) -> int:
        """Samples of speech still queued."""
        return sum(len(c) for c in self._clips) - self._pos

    def clear(self) -> None:
        """Drop all queued speech (she was interrupted)."""
        self._clips.clear()
        self._pos = 0

    def mix(self, track: F32 | None, n: int | None = None) -> F32:
        """The next ``len(track)`` samples (or ``n`` of silence when ``track`` is None) with speech added."""
        base = np.zeros(int(n or 0), np.float32) if track is None else np.asarray(track, np.float32)
        voice = np.zeros(len(base), np.float32)
        filled = 0
        while filled < len(base) and self._clips:
            clip = self._clips[0]
            take = min(len(clip) - self._pos, len(base) - filled)
            voice[filled:filled + take] = clip[self._pos:self._pos + take]
            filled += take
            self._pos += take
            if self._pos >= len(clip):
                self._clips.popleft()
                self._pos = 0
        if filled == 0:
            return base.copy()
        return mix_voice(base, voice[:filled], 0, self.gain, self.duck)


def espeak_ng_available() -> bool:
    """Whether the espeak-ng program is on ``PATH``."""
    return shutil.which("espeak-ng") is not None or os.path.exists("/usr/bin/espeak-ng")

"""Voice: speech to text with pocketsphinx, a grammar from the scene, free dictation as fallback.

:func:`transcribe` takes a WAV file or a sample array and returns the words; the
words then go the way typed text goes (:class:`game.inputs.meaning.Resolver`).
The window's push-to-talk (hold V) records with :class:`PushToTalk`
(``sounddevice``) and calls the same function; scripts say ``voice <file.wav>``.

Recognition (CMU pocketsphinx 5, its bundled US English acoustic model and
dictionary, Huggins-Daines et al. 2006):

1. the audio is mixed to mono, resampled to 16 kHz (band-limited FFT resampling),
   padded with 0.25 s / 0.4 s of faint dither noise (pocketsphinx drops the last
   word of a clip that ends abruptly or in digital silence) and made 16-bit;
2. a JSGF grammar of the phrases the scene can use (:func:`scene_phrases`: the
   available choices' texts, the actions' examples and keywords, gifts of what
   the player holds to who is present, and the world-edit phrases) is searched
   first; its result is kept only when it is one whole phrase of the grammar
   (a partial path means the speech was not one of them) *and* its words explain
   the speech: of the 10 ms frames loud enough to be speech (within 35 dB of the
   loudest and 15 dB above the floor), at most :data:`MAX_UNEXPLAINED` may fall in
   what the alignment calls silence. A grammar forces any sound onto some phrase;
   "purple monkey dishwasher" aligned to "let it snow" leaves half its speech
   unexplained (measured on espeak-ng clips: in-grammar 0.00-0.03, out 0.38-0.53);
3. otherwise the general language model transcribes freely, and the resolver
   decides (usually: not understood).

The decoder loads once per process (about 0.6 s) and is shared under a lock.
"""

from __future__ import annotations

import re
import threading
import wave
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from game.errors import InputError
from game.models.embedder import ModelError
from game.wav import decode_pcm

#: Sample rate pocketsphinx's acoustic model expects, Hz.
RATE = 16000
#: Longest clip accepted, seconds.
MAX_SECONDS = 30.0
#: Largest share of speech frames a grammar phrase may leave in "silence" and still be heard.
MAX_UNEXPLAINED = 0.2
_WORD = re.compile(r"[a-z']+")
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Transcript:
    """What was heard: ``text`` (lower case), ``mode`` (``grammar``, ``dictation`` or ``none``),
    the grammar's raw hypothesis, the share of speech it left ``unexplained`` (0..1), and the
    clip's length in ``seconds``."""

    text: str
    mode: str
    grammar_hyp: str
    seconds: float
    unexplained: float = 1.0


def read_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """Read a PCM WAV file.

    Returns:
        ``(samples, rate)``: ``(N,)`` float32 mono in [-1, 1], rate in Hz.

    Raises:
        game.errors.InputError: missing, not a PCM WAV, or longer than :data:`MAX_SECONDS`.
    """
    p = Path(path)
    try:
        with wave.open(str(p), "rb") as w:
            rate, width, channels, n = w.getframerate(), w.getsampwidth(), w.getnchannels(), w.getnframes()
            if n > MAX_SECONDS * rate:
                raise InputError(f"voice clip is {n / rate:.1f} s; at most {MAX_SECONDS:.0f} s", where=str(p))
            raw = w.readframes(n)
    except FileNotFoundError as exc:
        raise InputError("no such voice clip", where=str(p)) from exc
    except (wave.Error, EOFError, OSError) as exc:
        raise InputError(f"not a PCM WAV file: {exc}", where=str(p)) from exc
    x = decode_pcm(raw, width, channels)
    if x is None:
        raise InputError(f"{8 * width}-bit WAV is not supported (8, 16 or 32-bit PCM)", where=str(p))
    return x, rate


def resample(x: np.ndarray, rate: int, to: int = RATE) -> np.ndarray:
    """Band-limited resampling by FFT: ``(N,)`` at ``rate`` Hz -> ``(round(N * to / rate),)`` at ``to`` Hz."""
    if rate == to or len(x) == 0:
        return x.astype(np.float32)
    n = max(1, int(round(len(x) * to / rate)))
    spec = np.fft.rfft(x.astype(np.float64))
    out = np.zeros(n // 2 + 1, np.complex128)
    k = min(len(out), len(spec))
    out[:k] = spec[:k]
    return (np.fft.irfft(out, n) * (n / len(x))).astype(np.float32)


def prepare(audio: np.ndarray, rate: int) -> np.ndarray:
    """Mono float audio at ``rate`` -> 16 kHz int16 with dithered padding (see the module doc).

    Args:
        audio: ``(N,)`` or ``(N, C)`` samples; float in [-1, 1] or int16.
        rate: its sample rate, Hz.

    Raises:
        game.errors.InputError: empty, longer than :data:`MAX_SECONDS`, or a bad rate.
    """
    x = np.asarray(audio)
    if x.ndim == 2:
        x = x.mean(axis=1)
    if x.ndim != 1 or x.size == 0:
        raise InputError(f"voice audio must be (N,) or (N, C) samples, got shape {np.shape(audio)}")
    if rate < 4000 or rate > 192000:
        raise InputError(f"voice sample rate {rate} Hz is outside 4000..192000")
    if x.size > MAX_SECONDS * rate:
        raise InputError(f"voice clip is {x.size / rate:.1f} s; at most {MAX_SECONDS:.0f} s")
    f = x.astype(np.float32) / 32768.0 if x.dtype == np.int16 else x.astype(np.float32)
    y = resample(f, rate) * 32768.0
    rng = np.random.default_rng(len(y))  # deterministic dither: same clip, same words
    y = np.concatenate([np.zeros(RATE // 4, np.float32), y, np.zeros(int(RATE * 0.4), np.float32)])
    y = y + rng.normal(0.0, 30.0, y.size).astype(np.float32)
    return np.clip(y, -32768, 32767).astype(np.int16)


@cache
def dictionary() -> frozenset[str]:
    """Words of pocketsphinx's pronouncing dictionary (a grammar may only use these)."""
    try:
        from pocketsphinx import get_model_path
    except ImportError as exc:
        raise ModelError("speech recognition is not installed", hint="pip install pocketsphinx") from exc
    words = set()
    with open(Path(get_model_path()) / "en-us" / "cmudict-en-us.dict", encoding="utf-8") as fh:
        for line in fh:
            w = line.split(" ", 1)[0]
            words.add(w.split("(", 1)[0])
    return frozenset(words)


@cache
def _decoder() -> Any:
    """The shared pocketsphinx decoder (loaded once)."""
    try:
        from pocketsphinx import Decoder
    except ImportError as exc:
        raise ModelError("speech recognition is not installed", hint="pip install pocketsphinx") from exc
    try:
        return Decoder(samprate=RATE, loglevel="FATAL")
    except Exception as exc:  # a broken model install
        raise ModelError(f"cannot load pocketsphinx: {exc}") from exc


def _norm(phrase: str) -> str:
    return " ".join(_WORD.findall(phrase.lower().replace("’", "'")))


def grammar(phrases: Iterable[str]) -> tuple[str, list[str]]:
    """A JSGF grammar of ``phrases`` (phrases with a word outside the dictionary are left out).

    Returns:
        ``(jsgf text, the phrases kept, normalised)``.
    """
    vocab = dictionary()
    kept = []
    for p in phrases:
        n = _norm(p)
        if n and all(w in vocab for w in n.split()) and n not in kept:
            kept.append(n)
    body = " | ".join(kept) if kept else "<VOID>"
    return f"#JSGF V1.0;\ngrammar scene;\npublic <phrase> = {body};\n", kept


def _run(search: str, pcm: np.ndarray) -> tuple[str, float]:
    """Decode ``pcm`` with ``search``: ``(words, share of speech frames left unexplained)``."""
    d = _decoder()
    d.activate_search(search)
    d.start_utt()
    d.process_raw(pcm.tobytes(), no_search=False, full_utt=True)
    d.end_utt()
    hyp = d.hyp()
    if hyp is None:
        return "", 1.0
    n = len(pcm) // 160  # 10 ms frames, pocketsphinx's frame rate
    energy = 10.0 * np.log10(np.mean(pcm[:n * 160].astype(np.float64).reshape(n, 160) ** 2, axis=1) + 1e-9)
    speech = energy > max(float(energy.max()) - 35.0, float(np.percentile(energy, 10)) + 15.0)
    explained = np.zeros(n, bool)
    for seg in d.seg():
        if not seg.word.startswith(("<", "+", "[")):
            explained[seg.start_frame:seg.end_frame + 1] = True
    share = float((speech & ~explained).sum()) / max(1, int(speech.sum()))
    return _norm(hyp.hypstr), share


def recognise(audio: str | Path | np.ndarray, rate: int | None = None,
              grammar_words: Sequence[str] = ()) -> Transcript:
    """Recognise speech (see the module doc); :func:`transcribe` returns just the text.

    Args:
        audio: a WAV path, or samples ``(N,)`` / ``(N, C)`` (float in [-1, 1] or int16).
        rate: the samples' rate in Hz (required for arrays; ignored for files).
        grammar_words: the phrases to listen for first (:func:`scene_phrases`).

    Raises:
        game.errors.InputError: unreadable clip, no rate for an array, too long.
        game.errors.ModelError: pocketsphinx is not installed.
    """
    if isinstance(audio, str | Path):
        samples, rate = read_wav(audio)
    else:
        if rate is None:
            raise InputError("a sample rate is needed with raw voice samples")
        samples = np.asarray(audio)
    pcm = prepare(samples, int(rate))
    seconds = float(len(samples)) / float(rate)
    jsgf, kept = grammar(grammar_words)
    with _LOCK:
        d = _decoder()
        default = "_default"
        heard, share = "", 1.0
        if kept:
            d.add_jsgf_string("scene", jsgf)
            heard, share = _run("scene", pcm)
            if heard in kept and share <= MAX_UNEXPLAINED:
                d.activate_search(default)
                return Transcript(heard, "grammar", heard, seconds, share)
        free, _ = _run(default, pcm)
    return Transcript(free, "dictation" if free else "none", heard, seconds, share)


def transcribe(wav_path_or_array: str | Path | np.ndarray, rate: int | None = None,
               grammar_words: Sequence[str] = ()) -> str:
    """The words in a voice clip, lower case (``""`` when nothing was heard).

    Args:
        wav_path_or_array: a PCM WAV path, or samples (float in [-1, 1] or int16), mono or ``(N, C)``.
        rate: sample rate of an array, Hz.
        grammar_words: phrases the scene can use, tried first (:func:`scene_phrases`).

    Raises:
        game.errors.InputError: unreadable or too long a clip.
        game.errors.ModelError: pocketsphinx is missing.
    """
    return recognise(wav_path_or_array, rate, grammar_words).text


#: World-edit phrases always listened for.
EDIT_PHRASES = (
    "make it rain", "let it snow", "make it snow", "make it foggy", "clear the sky", "stop the rain",
    "make it night", "it is night now", "make it day", "make it dawn", "make it dusk", "add a lantern",
    "put a lantern by the tree", "light a lantern glow", "undo", "never mind",
)
_COLOURS = ("red", "blue", "green", "yellow", "white", "black", "purple", "pink")
_WEARS = ("scarf", "hat", "ribbon", "bow")


def scene_phrases(story: Any, state: Any) -> list[str]:
    """The phrases a player may say in ``state``'s scene (for :func:`transcribe`'s grammar).

    Args:
        story: a :class:`game.story.story.Story`.
        state: the :class:`game.state.GameState`.

    Returns:
        Choice texts, action examples and keywords, gifts of held items to present
        characters, the player's own objects, dressing a present character in a
        coloured scarf/hat/ribbon/bow, and :data:`EDIT_PHRASES`.
    """
    from game.story.runtime import StoryRuntime

    rt = StoryRuntime(story)
    m = story.model
    scene = m.scenes.get(state.scene)
    out: list[str] = []
    if scene is None:
        return list(EDIT_PHRASES)
    out += [rt.interpolate(state, c.text) for c in rt.available_choices(state)]
    for a in scene.actions:
        out += list(a.examples) + list(a.keywords)
    people = [m.cast[c].name if c in m.cast else c for c in scene.present]
    things = [m.items[i].name for i in state.inventory if i in m.items]
    things += [i for i in state.inventory if i in m.items]
    things += [str(o.get("name", k)) for k, o in state.objects.items()]
    for t in dict.fromkeys(things):
        for verb in ("give", "offer", "hand over"):
            out.append(f"{verb} the {t}")
            out += [f"{verb} the {t} to {p}" for p in people]
    for p in people:
        out += [f"give {p} a {c} {w}" for c in _COLOURS for w in _WEARS]
    out += list(EDIT_PHRASES)
    return out


class PushToTalk:
    """Records from the default microphone while a key is held (the window's V).

    ``start()`` on key down, ``stop()`` on key up returns ``(samples, rate)``:
    ``(N,)`` float32 mono in [-1, 1] at ``rate`` Hz, ready for :func:`transcribe`.

    Raises:
        game.errors.InputError: no microphone, or ``sounddevice`` is not installed.
    """

    def __init__(self, rate: int = RATE, max_seconds: float = MAX_SECONDS) -> None:
        self.rate = rate
        self.max_frames = int(rate * max_seconds)
        self._chunks: list[np.ndarray] = []
        self._stream: Any = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Open the microphone and start recording (a second call is ignored)."""
        if self._stream is not None:
            return
        try:
            import sounddevice
        except (ImportError, OSError) as exc:
            raise InputError("no audio input: sounddevice is not available", hint="pip install sounddevice") from exc
        self._chunks = []

        def callback(data: np.ndarray, frames: int, time: Any, status: Any) -> None:
            with self._lock:
                if sum(len(c) for c in self._chunks) < self.max_frames:
                    self._chunks.append(np.array(data[:, 0], np.float32))

        try:
            self._stream = sounddevice.InputStream(samplerate=self.rate, channels=1, dtype="float32",
                                                   callback=callback)
            self._stream.start()
        except Exception as exc:  # PortAudio raises its own error types
            self._stream = None
            raise InputError(f"cannot open the microphone: {exc}") from exc

    def stop(self) -> tuple[np.ndarray, int]:
        """Stop recording; the clip so far (empty when nothing was recorded)."""
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.stop()
            stream.close()
        with self._lock:
            clip = np.concatenate(self._chunks) if self._chunks else np.zeros(0, np.float32)
            self._chunks = []
        return clip, self.rate

"""Text to speech: pyttsx3/espeak-ng voices, length against espeak-ng's own, streaming, mixing."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from game.audio.tts import (
    GAME_AUDIO_RATE,
    Speech,
    TextToSpeech,
    VoiceMixer,
    VoiceSettings,
    espeak_ng_command,
    mix_voice,
    read_wav,
    resample,
    write_wav,
)

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")

#: Eve's card voice.
EVE = VoiceSettings(voice="en-gb-scotland+f3", rate=160, pitch=55, volume=0.9)
TEXT = "You came over the Spine with the tide already turning, so you will stay until morning."


def espeak_seconds(text: str, voice: VoiceSettings, tmp: Path) -> float:
    out = tmp / "ref.wav"
    subprocess.run(["espeak-ng", "-v", voice.voice, "-s", str(voice.rate), "-p", str(voice.pitch), "-w", str(out),
                    text], check=True, capture_output=True)
    audio, rate = read_wav(out)
    return len(audio) / rate


@pytest.mark.parametrize("engine", ["pyttsx3", "espeak-ng"])
def test_speech_length_matches_espeak_ng(engine: str, tmp_path: Path) -> None:
    if engine == "pyttsx3":
        pytest.importorskip("pyttsx3")
    tts = TextToSpeech(EVE, engine=engine)  # type: ignore[arg-type]
    audio = tts.synthesise(TEXT)
    assert tts.engine_used == engine
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert float(np.abs(audio).max()) <= 1.0 and float(np.abs(audio).max()) > 0.05
    seconds = len(audio) / tts.rate
    ref = espeak_seconds(TEXT, EVE, tmp_path)
    assert abs(seconds - ref) <= 0.3 * ref, (seconds, ref)
    assert seconds > 3.0  # ~16 words at 160 wpm


def test_rate_and_voice_settings_are_applied() -> None:
    tts = TextToSpeech(engine="espeak-ng")
    slow = tts.synthesise(TEXT, VoiceSettings("en-us", rate=110))
    fast = tts.synthesise(TEXT, VoiceSettings("en-us", rate=260))
    assert len(slow) > 1.6 * len(fast)
    odd = tts.synthesise("Hello there.", VoiceSettings("xx-nowhere+f3"))  # unknown voice: falls back, still speaks
    assert len(odd) > 0
    assert len(tts.synthesise("  ...  ")) == 0
    cmd = espeak_ng_command(EVE, "/tmp/x.wav")
    assert cmd[0] == "espeak-ng" and "--stdin" in cmd and TEXT not in cmd  # text goes on stdin, never as an argument


def test_output_rate_is_resampled(tmp_path: Path) -> None:
    tts = TextToSpeech(EVE, rate=16000, engine="espeak-ng")
    audio = tts.synthesise("Mind the third step.")
    ref = TextToSpeech(EVE, engine="espeak-ng").synthesise("Mind the third step.")
    assert abs(len(audio) - round(len(ref) * 16000 / GAME_AUDIO_RATE)) <= 1
    path = tts.save("Mind the third step.", tmp_path / "s.wav")
    back, rate = read_wav(path)
    assert rate == 16000 and len(back) == len(audio)
    tone = np.sin(np.arange(22050) / 22050 * 2 * np.pi * 220).astype(np.float32)
    assert len(resample(tone, 22050, 44100)) == 44100
    write_wav(tmp_path / "t.wav", tone, 22050)
    assert np.allclose(read_wav(tmp_path / "t.wav")[0], tone, atol=1e-4)


def test_first_sentence_is_ready_before_the_reply_ends() -> None:
    tts = TextToSpeech(EVE)
    first_played = threading.Event()
    produced: list[str] = []

    def sentences() -> Iterator[str]:
        produced.append("one")
        yield "The tide turns at ten past five."
        # the model is still writing: the next sentence comes only after the first was heard
        assert first_played.wait(20), "the first sentence was not delivered while the reply was unfinished"
        produced.append("two")
        yield "Stay for tea."

    speeches: list[Speech] = []
    for speech in tts.stream(sentences()):
        speeches.append(speech)
        if speech.index == 0:
            assert produced == ["one"]
            first_played.set()
    assert [s.text for s in speeches] == ["The tide turns at ten past five.", "Stay for tea."]
    assert all(s.rate == GAME_AUDIO_RATE and s.seconds > 0.3 for s in speeches)
    assert speeches[0].ready_s <= speeches[1].ready_s


def test_voice_is_mixed_into_consecutive_chunks() -> None:
    rate = GAME_AUDIO_RATE
    voice = np.full(rate, 0.5, np.float32)  # 1 s
    track = np.full(rate // 2, 0.2, np.float32)
    mixed = mix_voice(track, voice, offset=rate // 4, duck=0.5)
    assert mixed.shape == track.shape and mixed.dtype == np.float32
    assert np.allclose(mixed[: rate // 4], 0.2) and np.allclose(mixed[rate // 4:], 0.6)
    assert np.abs(mix_voice(np.full(10, 0.9, np.float32), np.ones(10, np.float32), duck=1.0)).max() <= 1.0
    mixer = VoiceMixer(rate, gap_s=0.0, duck=1.0)
    mixer.add(Speech("a", voice, rate))
    mixer.add(Speech("b", resample(voice, rate, 16000), 16000))
    assert mixer.pending_samples == 2 * rate
    chunks = [mixer.mix(np.zeros(rate // 2, np.float32)) for _ in range(5)]
    total = np.concatenate(chunks)
    assert np.isclose(total[: 2 * rate].mean(), 0.5, atol=0.01) and np.allclose(total[2 * rate:], 0.0)
    assert mixer.pending_samples == 0
    mixer.add(voice)
    mixer.clear()
    assert mixer.mix(None, 100).shape == (100,)

"""One PCM WAV decoder and writer (`game.wav`) for the voice's synthesis and the player's recorded
voice: 8, 16 and 32-bit PCM read the same through either room, stereo is averaged, a recorded
int16 clip is written as it is."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from game.audio.tts import SpeechError
from game.audio.tts import read_wav as read_speech
from game.errors import InputError
from game.inputs.voice import read_wav as read_voice
from game.wav import decode_pcm, pcm16, write_wav


def _raw_wav(path: Path, raw: bytes, width: int, channels: int, rate: int = 16000) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(raw)
    return path


@pytest.mark.parametrize(("width", "raw", "want"), [
    (1, bytes([0, 128, 255]), [-1.0, 0.0, 127 / 128]),
    (2, np.array([-32768, 0, 16384], "<i2").tobytes(), [-1.0, 0.0, 0.5]),
    (4, np.array([-2**31, 0, 2**30], "<i4").tobytes(), [-1.0, 0.0, 0.5]),
])
def test_every_width_reads_the_same_through_both_rooms(tmp_path: Path, width: int, raw: bytes,
                                                       want: list[float]) -> None:
    path = _raw_wav(tmp_path / f"w{width}.wav", raw, width, 1)
    speech, voice = read_speech(path), read_voice(path)
    assert speech[1] == voice[1] == 16000
    assert np.allclose(speech[0], want) and np.array_equal(speech[0], voice[0])


def test_stereo_is_averaged_and_a_bad_width_is_each_rooms_error(tmp_path: Path) -> None:
    stereo = np.array([[16384, -16384], [32767, 32767]], "<i2").tobytes()
    path = _raw_wav(tmp_path / "st.wav", stereo, 2, 2)
    assert np.allclose(read_voice(path)[0], [0.0, 32767 / 32768])
    assert decode_pcm(b"\x00\x00\x00", 3, 1) is None
    with wave.open(str(tmp_path / "w3.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(3)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00\x01" * 4)
    with pytest.raises(InputError, match="24-bit"):
        read_voice(tmp_path / "w3.wav")
    with pytest.raises(SpeechError, match="width 3"):
        read_speech(tmp_path / "w3.wav")


def test_a_recorded_int16_clip_is_written_as_it_is_and_floats_are_scaled(tmp_path: Path) -> None:
    clip = np.array([-32768, -1, 0, 1, 32767], np.int16)
    back, rate = read_voice(write_wav(tmp_path / "c.wav", clip, 8000))
    assert rate == 8000 and np.array_equal(np.round(back * 32768).astype(int), clip.astype(int))
    assert pcm16(np.array([[1, 3], [-5, -7]], np.int16)).tolist() == [2, -6]  # int16 stereo stays int16
    assert pcm16(np.array([2.0, -0.5], np.float32)).tolist() == [32767, -16383]

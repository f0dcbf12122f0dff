"""PCM WAV in and out, for every room that reads or writes a clip (the voice's synthesis in
``audio/``, the player's recorded voice in ``inputs/``): one decoder and one writer, each room
keeping its own errors.

Samples are float32 mono in [-1, 1]; 8-bit PCM is unsigned (offset 128), 16- and 32-bit are
signed little-endian (the WAV format's rule); several channels are averaged.
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
#: PCM sample widths the decoder reads, bytes: (dtype, offset, scale).
_WIDTHS: dict[int, tuple[str, float, float]] = {1: ("u1", 128.0, 128.0), 2: ("<i2", 0.0, 32768.0),
                                                 4: ("<i4", 0.0, 2147483648.0)}


def decode_pcm(raw: bytes, width: int, channels: int) -> F32 | None:
    """``raw`` PCM frames of ``width`` bytes a sample and ``channels`` channels as float32 mono in
    [-1, 1] (a trailing partial frame is dropped); ``None`` for a width other than 1, 2 or 4."""
    spec = _WIDTHS.get(width)
    if spec is None:
        return None
    dtype, offset, scale = spec
    x = (np.frombuffer(raw[: len(raw) - len(raw) % width], dtype).astype(np.float32) - offset) / scale
    if channels > 1:
        x = x[: len(x) - len(x) % channels].reshape(-1, channels).mean(axis=1)
    out: F32 = np.clip(x, -1.0, 1.0).astype(np.float32)
    return out


def pcm16(audio: npt.NDArray[np.generic]) -> npt.NDArray[np.int16]:
    """16-bit samples of ``audio``: int16 as it is, else float in [-1, 1] scaled by 32767 (clipped);
    ``(N, C)`` is averaged to mono first."""
    x = np.asarray(audio)
    if x.ndim == 2:
        x = x.mean(axis=1) if x.dtype != np.int16 else x.mean(axis=1).astype(np.int16)
    if x.dtype == np.int16:
        return x.astype("<i2")
    return (np.clip(x, -1.0, 1.0) * 32767.0).astype("<i2")


def write_wav(path: str | Path, audio: npt.NDArray[np.generic], rate: int) -> Path:
    """Write ``audio`` (see :func:`pcm16`) as a 16-bit PCM mono WAV at ``rate`` Hz; the path written."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(int(rate))
        w.writeframes(pcm16(audio).tobytes())
    return Path(path)

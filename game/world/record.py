"""Record a session to MP4: every frame shown, and the sound under it.

Frames go to ffmpeg (from ``imageio-ffmpeg``, which ships its own binary) as they
arrive; sound goes to a 16-bit WAV beside them; :meth:`Recorder.close` muxes the
two into the final file with AAC audio. Bit-exact flags keep reruns identical.
"""

from __future__ import annotations

import subprocess
import wave
from collections.abc import Generator
from pathlib import Path
from typing import Any

import imageio_ffmpeg
import numpy as np

from game.errors import BackendError, InputError


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
        self._wav = wave.open(str(self._wav_path), "wb")
        self._wav.setnchannels(1)
        self._wav.setsampwidth(2)
        self._wav.setframerate(audio_rate)
        self.frames = 0
        self.samples = 0

    def add(self, frames: np.ndarray, audio: np.ndarray | None) -> None:
        """Append ``(T, H, W, 3)`` uint8 frames and their ``(S,)`` float32 audio (or silence)."""
        for f in frames:
            self._writer.send(np.ascontiguousarray(f))
        self.frames += frames.shape[0]
        want = round(self.frames * self.audio_rate / self.fps) - self.samples
        if audio is None:
            audio = np.zeros(want, np.float32)
        pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2")
        if pcm.shape[0] < want:
            pcm = np.concatenate([pcm, np.zeros(want - pcm.shape[0], "<i2")])
        self._wav.writeframes(pcm.tobytes())
        self.samples += pcm.shape[0]

    def close(self) -> Path:
        """Finish and mux; returns the MP4 path.

        Raises:
            game.errors.BackendError: ffmpeg failed (the video-only file is kept).
        """
        self._writer.close()
        self._wav.close()
        cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-loglevel", "error", "-i", str(self._video),
               "-i", str(self._wav_path), "-c:v", "copy", "-c:a", "aac", "-b:a", "96k",
               "-map_metadata", "-1", "-fflags", "+bitexact", "-flags:a", "+bitexact",
               "-shortest", str(self.path)]
        result = subprocess.run(cmd, capture_output=True, check=False)
        if result.returncode != 0:
            raise BackendError(f"ffmpeg could not mux the recording: {result.stderr.decode()[-300:]}",
                               where=str(self.path))
        self._video.unlink(missing_ok=True)
        self._wav_path.unlink(missing_ok=True)
        return self.path

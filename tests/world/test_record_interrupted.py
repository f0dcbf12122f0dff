"""A recording stopped by Ctrl-C or by ffmpeg dying keeps what was recorded and says why,
instead of a StopIteration traceback and a video lost without its index."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import imageio_ffmpeg
import numpy as np
import pytest

from game.errors import BackendError
from game.world.record import Recorder

FRAMES = np.zeros((12, 16, 16, 3), np.uint8)


class _CtrlCWhileWriting:
    """The recorder's frame writer, with Ctrl-C pressed while a frame goes to ffmpeg."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def send(self, frame: Any) -> Any:
        os.kill(os.getpid(), signal.SIGINT)
        return self.real.send(frame)

    def close(self) -> None:
        self.real.close()


def _frame_count(path: Path) -> int:
    return sum(1 for _ in imageio_ffmpeg.read_frames(str(path)))


@pytest.fixture
def python_sigint() -> Any:
    """Python's own Ctrl-C handler, as a game run from the shell has it (a library an earlier test imported,
    e.g. for the server tests, may have left its own installed in this process)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_ctrl_c_while_frames_are_written_keeps_the_video(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        python_sigint: None) -> None:
    rec = Recorder(tmp_path / "out.mp4", 16, 16, 24.0, 8000)
    rec.add(FRAMES, None)
    monkeypatch.setattr(rec, "_writer", _CtrlCWhileWriting(rec._writer))
    with pytest.raises(KeyboardInterrupt):
        rec.add(FRAMES, None)
    rec.close()  # what play_headless's finally does on the way out
    assert _frame_count(tmp_path / "out.mp4") - 1 == 24  # the generator's metadata item, then every frame


def test_ffmpeg_dying_is_a_backend_error_that_keeps_the_sound(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "out.mp4", 16, 16, 24.0, 8000)
    rec.add(FRAMES, np.full(4000, 0.1, np.float32))
    ffmpeg = rec._writer.gi_frame.f_locals["p"]  # imageio_ffmpeg's Popen of the encoder
    ffmpeg.kill()
    ffmpeg.wait()
    big = np.zeros((48, 16, 16, 3), np.uint8)  # more than a pipe buffer, so the write cannot succeed
    with pytest.raises(BackendError, match="the recording stopped at frame 12: ffmpeg stopped taking frames"):
        for _ in range(20):
            rec.add(big, None)
    with pytest.raises(BackendError, match="stopped at frame 12") as err:
        rec.close()
    assert err.value.where == str(tmp_path / "out.mp4") and "out.audio.wav" in err.value.hint
    assert (tmp_path / "out.audio.wav").stat().st_size > 44

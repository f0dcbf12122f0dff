"""While a recorded session's lines are read, the world idles (as in the window) with its
ambience: the MP4 is not a slideshow of still frames over digital silence, and its transcript
still replays."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import imageio_ffmpeg
import numpy as np

from game.headless import play_headless
from game.inputs.script import Command
from game.replay import replay
from game.world.record import Recorder


def _frames(path: Path) -> tuple[np.ndarray, float]:
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    w, h = meta["size"]
    return np.stack([np.frombuffer(b, np.uint8).reshape(h, w, 3) for b in reader]), float(meta["fps"])


def _audio(path: Path, rate: int = 8000) -> np.ndarray:
    pcm = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-i", str(path), "-f", "s16le",
                          "-ac", "1", "-ar", str(rate), "-"], capture_output=True, check=True).stdout
    return np.frombuffer(pcm, np.int16).astype(np.float32) / 32768


def test_the_world_idles_with_its_ambience_while_lines_are_read(mini_path: Path, tmp_path: Path) -> None:
    story = tmp_path / "mini"
    shutil.copytree(mini_path, story)
    text = (story / "story.yaml").read_text(encoding="utf-8")  # an opening that takes 4 s to read
    (story / "story.yaml").write_text(text.replace('"Hello {name}."', '"Hello {name}. ' + "la " * 20 + '"'))
    out = tmp_path / "run.mp4"
    script = [Command("wait", ("0.5",), "play.txt:1"), Command("wait", ("0.5",), "play.txt:2")]
    runner = play_headless(str(story), script, backend="procedural", record=out, size=(96, 54),
                           transcript=tmp_path / "t.jsonl", save_dir=tmp_path / "s", dialogue=None, voice=False)
    rec = runner.recorder
    assert rec is not None and rec.held == 0 and rec.idled > 0  # no frame repeated: the world went on
    rows = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    idle = [r for r in rows if r["type"] == "idle"]
    assert idle and sum(r["frames"] for r in idle) == rec.idled
    frames, fps = _frames(out)
    assert frames.shape[0] == rec.frames
    first = idle[0]
    span = frames[first["frame"]:first["frame"] + first["frames"]]
    still = sum(np.array_equal(a, b) for a, b in zip(span, span[1:], strict=False))
    assert still < len(span) // 4  # it moves while the opening line is read
    sound = _audio(out)
    a, b = int(first["frame"] / fps * 8000), int((first["frame"] + first["frames"]) / fps * 8000)
    assert np.sqrt(np.mean(sound[a:b] ** 2)) > 1e-3  # the scene's ambience, not digital silence
    line = rec.describe()
    assert f"video: {rec.frames / fps:.1f} s" in line and f"idling {rec.idled / fps:.1f} s" in line
    result = replay(tmp_path / "t.jsonl", save_dir=tmp_path / "r")
    assert result.ok, result.mismatches  # the idling is in the transcript, and replays


def test_sound_past_its_frames_is_mixed_under_the_frames_that_follow(tmp_path: Path) -> None:
    rate = 8000
    tone = np.sin(np.arange(rate) * 2 * np.pi * 200 / rate).astype(np.float32)
    rec = Recorder(tmp_path / "out.mp4", 64, 36, 10.0, rate)
    rec.add(np.zeros((5, 36, 64, 3), np.uint8), 0.25 * tone)  # 1 s said over 0.5 s of frames
    assert rec.owed() == 5  # owed until it is heard
    rec.add(np.zeros((5, 36, 64, 3), np.uint8), 0.5 * tone[: rate // 2], idle=True)  # the ambience goes on
    assert rec.owed() == 0 and rec.idled == 5 and rec.held == 0
    rec.close()
    sound = _audio(tmp_path / "out.mp4", rate)
    first, second = (float(np.sqrt(np.mean(sound[a:b] ** 2))) for a, b in ((1000, 3000), (5000, 7000)))
    assert abs(first - 0.25 / 2**0.5) < 0.03 and abs(second - 0.75 / 2**0.5) < 0.06  # under, not after
    assert sound.shape[0] <= rate + 1100  # nothing pushed past the video's 1 s

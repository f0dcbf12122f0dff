"""A recording (``--record``) carries what was said: an ``.srt`` beside the MP4 and the same
cues as a subtitle track inside it, each line timed from when its turn's frames begin."""

from __future__ import annotations

import subprocess
from pathlib import Path

import imageio_ffmpeg
import numpy as np

from game.headless import play_headless
from game.inputs.script import Command
from game.world.record import MIN_CUE_S, Recorder, reading_time, timed_cues


def _streams(path: Path) -> str:
    probe = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", str(path)],
                           capture_output=True, check=False)
    return probe.stderr.decode()


def test_lines_said_become_timed_subtitles_beside_and_inside_the_mp4(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "out.mp4", 64, 36, 24.0, 16000)
    frames = np.zeros((24, 36, 64, 3), np.uint8)
    rec.caption("Dusk on the Spine.")
    rec.caption("The light comes on.")
    for _ in range(3):
        rec.add(frames, None)
    rec.caption("Come in, walker.", speaker="Eve")
    rec.add(frames, None)
    rec.close()
    text = (tmp_path / "out.srt").read_text(encoding="utf-8")
    assert "1\n00:00:00,000 --> 00:00:01,200\nDusk on the Spine.\n" in text
    assert "2\n00:00:01,200 --> 00:00:02,467\nThe light comes on.\n" in text  # 19 characters at 15/s
    assert "3\n00:00:03,000 --> 00:00:04,400\nEve: Come in, walker.\n" in text  # from her turn's frames, 1.4 s to read
    assert "Subtitle: mov_text" in _streams(tmp_path / "out.mp4")


def test_a_turn_s_lines_end_when_the_next_turn_begins_and_none_is_lost() -> None:
    long = "x" * 90  # 6 s to read
    cues = timed_cues([(0.0, [long, long]), (4.0, ["next"]), (4.5, ["a", "b", "c"])], end=10.0)
    assert [c.text for c in cues] == [long, long, "next", "a", "b", "c"]
    assert cues[0].start == 0.0 and cues[1].end == 4.0  # squeezed into the 4 s its turn lasted
    assert cues[2].start == 4.0 and cues[2].end - cues[2].start >= MIN_CUE_S
    assert cues[3].start == cues[2].end  # the next turn waits rather than overlap or drop a line
    assert all(b.start >= a.end for a, b in zip(cues, cues[1:], strict=False))
    assert reading_time("y" * 1000) <= 7.0


def test_headless_record_writes_the_story_s_lines_as_subtitles(mini_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.mp4"
    play_headless(mini_path, [Command("wait", ("1",), "play.txt:1")], backend="null", record=out,
                  save_dir=tmp_path / "s", dialogue=None, voice=False)
    text = (tmp_path / "run.srt").read_text(encoding="utf-8")
    assert text.startswith("1\n00:00:00,000 --> ") and "\nHello Ada.\n" in text  # the opening line, as shown
    assert "Subtitle: mov_text" in _streams(out)


def _duration(path: Path) -> float:
    text = _streams(path)
    hms = text.split("Duration: ")[1].split(",")[0]
    h, m, s = hms.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def test_a_turn_holds_its_last_frame_until_its_lines_are_read(tmp_path: Path) -> None:
    # Zero Mark's kite run: 48 narrated lines needed 82 s to read over 36 s of frames, so the
    # subtitles ran past the end of the video and the ending was never shown.
    rec = Recorder(tmp_path / "out.mp4", 64, 36, 10.0, 16000)
    long = "x" * 90  # 6 s to read
    rec.caption(long)
    rec.caption(long)
    rec.add(np.full((10, 36, 64, 3), 7, np.uint8), None)  # 1 s of frames for 12 s of text
    rec.caption("next")  # holds 11 s, then 1.2 s to read
    rec.add(np.full((5, 36, 64, 3), 9, np.uint8), None)
    rec.caption(long)  # holds 0.7 s; the last turn: 6 s of text over 0.5 s of frames
    rec.add(np.full((5, 36, 64, 3), 11, np.uint8), None)
    rec.close()
    assert rec.held == 110 + 7 + 55
    text = (tmp_path / "out.srt").read_text(encoding="utf-8")
    assert "00:00:00,000 --> 00:00:06,000\n" + long in text and "00:00:06,000 --> 00:00:12,000\n" + long in text
    assert "00:00:12,000 --> 00:00:13,200\nnext\n" in text  # its turn's frames begin once the text is read
    assert "00:00:13,200 --> 00:00:19,200\n" + long in text
    assert abs(_duration(tmp_path / "out.mp4") - 19.2) < 0.1  # the video lasts until the last line is read


def test_sound_longer_than_its_frames_is_heard_before_the_next_turn(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "out.mp4", 64, 36, 10.0, 16000)
    rec.add(np.zeros((5, 36, 64, 3), np.uint8), np.full(32000, 0.1, np.float32))  # 2 s said over 0.5 s
    rec.caption("Eve answers.")  # holds until the sound ends, then 1.2 s to read
    rec.add(np.zeros((5, 36, 64, 3), np.uint8), None)
    rec.close()
    assert rec.held == 15 + 7 and rec.samples == rec.frames * 1600
    assert "00:00:02,000 --> 00:00:03,200\nEve answers." in (tmp_path / "out.srt").read_text(encoding="utf-8")

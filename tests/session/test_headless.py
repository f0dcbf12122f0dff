"""Headless play on the frame clock: byte-identical reruns, recording, replay, CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from game.cli import main
from game.headless import play_headless
from game.inputs.script import parse_script
from game.replay import replay

SCRIPT = """# a short playthrough
give stone creature
say I hum softly
say don't offer the leaf
move a 0.5
choose Offer the kite
save s1
choose 1
rollback
wait 0.5
load s1
choose finish_bad
"""


def play(mini: Path, tmp: Path, name: str, record: bool = False) -> tuple[Any, Path]:
    out = tmp / name
    out.mkdir()
    runner = play_headless(str(mini), parse_script(SCRIPT), backend="procedural", seed=7,
                           save_dir=out / "saves", transcript=out / "t.jsonl",
                           record=out / "out.mp4" if record else None, size=(96, 54))
    return runner, out


def run(mini: Path, tmp: Path, name: str, record: bool = False) -> tuple[str, Path]:
    runner, out = play(mini, tmp, name, record)
    return runner.frame_hash.hexdigest(), out


def test_reruns_are_byte_identical(mini_path: Path, tmp_path: Path) -> None:
    h1, a = run(mini_path, tmp_path, "a", record=True)
    h2, b = run(mini_path, tmp_path, "b", record=True)
    assert h1 == h2
    assert (a / "t.jsonl").read_bytes() == (b / "t.jsonl").read_bytes()
    assert (a / "out.mp4").read_bytes() == (b / "out.mp4").read_bytes()


def test_transcript_rows_and_recording(mini_path: Path, tmp_path: Path) -> None:
    runner, out = play(mini_path, tmp_path, "a", record=True)
    rows = [json.loads(x) for x in (out / "t.jsonl").read_text().splitlines()]
    assert rows[0]["type"] == "header" and rows[0]["seed"] == 7
    kinds = [r["type"] for r in rows]
    for k in ("input", "scene", "line", "choice", "reaction", "chunk", "rollback", "load", "ending",
              "action", "not_understood", "move"):
        assert k in kinds, k
    neg = next(r for r in rows if r["type"] == "not_understood")
    assert neg["reason"] == "negated"
    chunk = next(r for r in rows if r["type"] == "chunk")
    assert {"seq", "min_frames", "switch", "event", "prompt"} <= set(chunk["request"])
    frames = sum(r["frames"] for r in rows if r["type"] in ("chunk", "idle"))
    import imageio_ffmpeg

    n, _secs = imageio_ffmpeg.count_frames_and_secs(str(out / "out.mp4"))
    assert n == frames  # every frame shown: the turns' and the world idling while lines are read
    assert runner.recorder.held == 0 and any(r["type"] == "idle" for r in rows)  # never a still hold
    reader = imageio_ffmpeg.read_frames(str(out / "out.mp4"))
    meta = next(reader)
    assert meta["size"] == (96, 54) and meta.get("audio_codec")
    first = np.frombuffer(next(reader), np.uint8)
    assert first.std() > 5  # a picture, not a flat frame


def test_replay_matches_without_models(mini_path: Path, tmp_path: Path) -> None:
    _, out = run(mini_path, tmp_path, "a")
    result = replay(out / "t.jsonl")
    assert result.ok, result.mismatches
    assert result.matched > 20
    assert any("Kyaa!" in line for line in result.lines)


def test_replay_detects_a_tampered_transcript(mini_path: Path, tmp_path: Path) -> None:
    _, out = run(mini_path, tmp_path, "a")
    path = out / "t.jsonl"
    path.write_text(path.read_text().replace("Kyaa!", "Hello!"))
    assert not replay(path).ok


def test_cli_headless_and_lint(mini_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "play.txt"
    script.write_text("choose offer_kite\nchoose finish_good\n")
    code = main(["play", str(mini_path), "--headless", "--inputs", str(script), "--backend", "null",
                 "--transcript", str(tmp_path / "t.jsonl"), "--save-dir", str(tmp_path / "s")])
    assert code == 0
    assert main(["replay", "--quiet", str(tmp_path / "t.jsonl")]) == 0
    assert main(["lint", str(mini_path)]) == 0
    bad = tmp_path / "bad.txt"
    bad.write_text("choose offer_kite\nfly away\n")
    assert main(["play", str(mini_path), "--headless", "--inputs", str(bad), "--backend", "null"]) == 2
    err = capsys.readouterr().err
    assert "bad.txt:2" in err and "unknown command 'fly'" in err


def test_cli_reports_an_unavailable_choice_with_the_options(mini_path: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "play.txt"
    script.write_text("choose offer_leaf\nchoose finish_good\n")
    assert main(["play", str(mini_path), "--headless", "--inputs", str(script), "--backend", "null",
                 "--save-dir", str(tmp_path)]) == 1  # played to the end; a line could not apply
    err = capsys.readouterr().err
    assert "play.txt:2" in err and "finish_bad" in err and "1 script line could not apply" in err


def test_bad_output_paths_are_clear_errors(mini_path: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "play.txt"
    script.write_text("save s1\n")
    base = ["play", str(mini_path), "--headless", "--inputs", str(script), "--backend", "null", "--no-errorbank"]
    assert main([*base, "--transcript", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main([*base, "--record", str(tmp_path)]) == 2
    assert ".mp4" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main([*base, "--save-dir", str(blocker)]) == 2
    assert "cannot write saves here" in capsys.readouterr().err
    assert main(["play", str(mini_path), "--inputs", str(script)]) == 2
    assert "--headless only" in capsys.readouterr().err
    nested = tmp_path / "new" / "dir" / "t.jsonl"
    assert main([*base, "--transcript", str(nested)]) == 0 and nested.is_file()

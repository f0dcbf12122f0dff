"""A headless run's output does not depend on how busy the machine is: with the error bank's
guard on, the same script gives the same transcript and the same frames beside two processes
that keep both cores busy (the guard judges a hang by the backend's own progress, never by the
wall clock)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from game.errorbank import ErrorStore
from game.headless import play_headless
from game.inputs.script import parse_script

SCRIPT = """give stone creature
say I hum softly
move a 0.5
choose Offer the kite
save s1
choose 1
rollback
wait 1
load s1
choose finish_bad
"""


def run(mini: Path, out: Path) -> tuple[str, bytes, int]:
    out.mkdir()
    runner = play_headless(str(mini), parse_script(SCRIPT), backend="procedural", seed=3,
                           save_dir=out / "saves", transcript=out / "t.jsonl", size=(96, 54),
                           errorbank=out / "bank.db", voice=False)
    return runner.frame_hash.hexdigest(), (out / "t.jsonl").read_bytes(), runner.session.state.frame


def test_transcript_and_frames_are_identical_with_the_machine_loaded(mini_path: Path, tmp_path: Path) -> None:
    quiet = run(mini_path, tmp_path / "quiet")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        loaded = run(mini_path, tmp_path / "loaded")
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert quiet[2] > 0
    assert loaded[0] == quiet[0], "the frames differ under load"
    assert loaded[1] == quiet[1], "the transcript differs under load"
    cases = ErrorStore(tmp_path / "loaded" / "bank.db").cases()
    assert not [c for c in cases if c.kind.startswith("backend.")], "the busy machine was taken for a hung backend"

"""A TTS render never plays anything: pyttsx3's espeak driver plays an utterance that ends with no
save file through the shell (``os.system("aplay ...")``), which on a headless machine prints
``sh: 1: aplay: not found``; the engine's first run in a process ends that way unless it is waited for."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Run in a fresh interpreter: the driver's first run (the one that returns early) happens once a process.
RENDER = """
import sys, time
from game.audio import tts as T
runs = []
synth = T._Pyttsx3.synth
T._Pyttsx3.synth = classmethod(lambda cls, *a: (runs.append(1), synth(*a))[1])  # counts the engine's runs
tts = T.TextToSpeech(engine="pyttsx3")
line = "Two white flashes every fifteen seconds, seen eighteen miles out on a clear night. " * 4
first = tts.synthesise(line)
tries = len(runs)
time.sleep(1.0)  # an utterance left speaking ends here
again = tts.synthesise(line)
tts.save("Ten past five tomorrow morning.", sys.argv[1])
time.sleep(1.0)
unset = not T._Pyttsx3.engine.proxy._driver._save_file  # the driver's branch that runs aplay
print(tries, len(first), len(again), tts.engine_used, unset)
"""


def test_a_headless_render_never_shells_out_to_aplay(tmp_path: Path) -> None:
    pytest.importorskip("pyttsx3")
    if shutil.which("espeak-ng") is None and shutil.which("espeak") is None:
        pytest.skip("espeak-ng is not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    played = tmp_path / "played.txt"
    aplay = bin_dir / "aplay"  # found first on PATH: records any playback instead of making a sound
    aplay.write_text(f"#!/bin/sh\necho \"$@\" >> {played}\n")
    aplay.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", RENDER, str(tmp_path / "out.wav")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert not played.exists(), f"aplay was run: {played.read_text()}"
    assert "aplay" not in done.stderr and "Audio saved" not in done.stdout, (done.stdout, done.stderr)
    tries, first, again, engine, unset = done.stdout.split()
    assert unset == "False"  # an utterance ending later still has a file to go to, so it is not played
    # the first render is the whole utterance at the first run, not a retry after a run that returned early
    assert (tries, engine) == ("1", "pyttsx3"), done.stdout
    assert abs(int(first) - int(again)) < 0.01 * int(again), done.stdout
    assert (tmp_path / "out.wav").stat().st_size > 1000

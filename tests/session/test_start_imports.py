"""What a headless start imports: a story without character cards plays to its first choice
without the cast room (game.cast, its models and checks), which is most of a cached start's
CPU (a story with cards still gets its cast: tests/cast/test_eve.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Runs ``worldloom play --headless`` in this interpreter, then prints the ``game.*`` modules it imported.
PROBE = """
import json, sys
from game import cli
code = cli.main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(m for m in sys.modules if m.startswith("game."))}))
"""


def _modules(story: Path, tmp_path: Path, *extra: str) -> tuple[int, list[str]]:
    argv = ["play", str(story), "--headless", "--backend", "null", "--no-errorbank", "--no-voice",
            "--dialogue", "none", "--save-dir", str(tmp_path / "saves"), *extra]
    env = {"WORLDLOOM_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    row = json.loads(done.stdout.strip().splitlines()[-1])
    return int(row["code"]), list(row["modules"])


def test_a_story_without_cards_starts_without_the_cast_room(tmp_path: Path) -> None:
    code, modules = _modules(ROOT / "stories" / "zero_mark", tmp_path)
    assert code == 0
    assert "game.headless" in modules and "game.session.session" in modules  # it did play
    assert [m for m in modules if m == "game.cast" or m.startswith("game.cast.")] == []


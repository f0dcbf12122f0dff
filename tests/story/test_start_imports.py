"""`worldloom lint` and `worldloom play --headless` import only what their command needs.

A start's CPU on a big story was half imports: the parser of every command (the explorer,
the map, the error bank's CLI, cards, the server) and the cast room for a lint or a headless
start of a story without cards. Each run here is a fresh interpreter, as a player's is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
#: Rooms a lint or a headless start of a story without cards has no use for.
HEAVY = ("game.story.explorer", "game.story.storymap", "game.errorbank.cli", "game.cast.card_cli",
         "game.world.server", "game.inputs.channels", "game.world.record", "game.world.backends.procedural",
         "torch", "transformers", "pygame", "rich")


def _imported(argv: list[str], tmp: Path) -> tuple[int, list[str]]:
    """Run ``game.cli.main(argv)`` in a fresh interpreter: its exit code and every module it imported."""
    code = (f"import json, sys\nfrom game.cli import main\ncode = main({argv!r})\n"
            "print(json.dumps([code, sorted(sys.modules)]))")
    env = {**os.environ, "WORLDLOOM_CACHE": str(tmp / "cache"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=True)
    got, modules = json.loads(done.stdout.strip().splitlines()[-1])
    return got, modules


def _story(tmp: Path) -> Path:
    path = tmp / "story.yaml"
    path.write_text(yaml.safe_dump({"id": "small", "title": "Small", "start": "a",
                                    "locations": {"road": {"name": "Road"}}, "scenes": {
        "a": {"location": "road", "lines": ["Hello."], "choices": [{"id": "on", "text": "On", "goto": "b"}]},
        "b": {"location": "road", "ending": "done", "lines": ["Bye."]}}}), encoding="utf-8")
    return path


def test_lint_imports_neither_other_commands_nor_the_cast(tmp_path: Path) -> None:
    path = _story(tmp_path)
    for _ in range(2):  # the first lint checks the story, the second reads lint's memo
        code, modules = _imported(["lint", str(path)], tmp_path)
        assert code == 0
        assert not [m for m in modules if m.startswith(HEAVY) or m.startswith("game.cast")]
        assert "numpy" not in modules  # a story's limits are checked without it


def test_headless_start_imports_no_other_command_nor_the_cast(tmp_path: Path) -> None:
    path = _story(tmp_path)
    for _ in range(2):  # the first start fills the story cache, the second reads it
        code, modules = _imported(["play", str(path), "--headless", "--backend", "null", "--no-errorbank",
                                   "--no-voice", "--dialogue", "none"], tmp_path)
        assert code == 0
        assert "game.session.session" in modules  # it played
        # a story without character cards has no use for the cast room, its models and checks
        assert not [m for m in modules if m.startswith(HEAVY) or m.startswith("game.cast")]


def test_every_command_is_still_listed_and_parsed(tmp_path: Path) -> None:
    from game.cli import build_parser

    text = build_parser().format_help()
    for name in ("play", "replay", "strings", "lint", "explore", "map", "errorbank", "card", "serve"):
        assert name in text
    args = build_parser("map").parse_args(["map", "stories/zero_mark", "-o", str(tmp_path / "m.dot")])
    assert args.command == "map" and callable(args.func)


def test_play_keeps_the_story_from_the_collector_and_gives_it_back_to_a_python_caller(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from game import cli

    frozen: list[int] = []
    collecting: list[bool] = []
    real = gc.freeze

    def freeze() -> None:
        collecting.append(gc.isenabled())
        real()
        frozen.append(gc.get_freeze_count())

    monkeypatch.setattr(cli.gc, "freeze", freeze)
    monkeypatch.setenv("WORLDLOOM_CACHE", str(tmp_path / "cache"))
    assert cli.main(["play", str(_story(tmp_path)), "--headless", "--backend", "null", "--no-errorbank",
                     "--no-voice", "--dialogue", "none"]) == 0
    assert frozen and frozen[0] > 0  # the loaded story (and what came before it) left the generations
    assert collecting == [False]  # and no collection scanned it between its load and the freeze
    assert gc.get_freeze_count() == 0  # and main() gave it back: a test or a launcher keeps no frozen heap


def test_an_error_prints_as_it_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from game.cli import main

    missing = tmp_path / "[draft] story"
    assert main(["play", str(missing), "--headless"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {missing}: no story here")  # brackets kept, no colour codes off a terminal
    assert "\x1b[" not in err

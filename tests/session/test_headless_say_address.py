"""A script's `say @eve ...` (and `say Eve, ...`) is said to her, as the same line typed in the window
is: the newcomer's `say @eve what is your gull called?` came back `not_understood`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from game.headless import play_headless
from game.inputs.script import parse_script

ROOT = Path(__file__).parents[2]
EVE = ROOT / "stories" / "eve"


def _replies(tmp: Path, name: str, script: str, embedder: Any) -> list[dict[str, Any]]:
    out = tmp / name
    out.mkdir()
    play_headless(str(EVE), parse_script(script, f"{name}.txt"), backend="null", seed=3, save_dir=out / "saves",
                  transcript=out / "t.jsonl", dialogue=f"scripted:{EVE / 'scripted.yaml'}", voice=False,
                  cast_options={"embedder": embedder, "show_progress": False})
    rows = [json.loads(x) for x in (out / "t.jsonl").read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if r["type"] == "reply"]


def test_say_at_her_name_is_said_to_her(tmp_path: Path, embedder: Any) -> None:
    asked = _replies(tmp_path, "ask", "choose knock\nask eve What is that light for?\n"
                                      "ask eve My name is Ada, by the way.\n", embedder)
    said = _replies(tmp_path, "say", "choose knock\nsay @eve What is that light for?\n"
                                     "say Eve, my name is Ada, by the way.\n", embedder)
    assert len(asked) == 2 and all(r["speaker"] == "eve" for r in said)
    assert [r["text"] for r in said] == [r["text"] for r in asked]

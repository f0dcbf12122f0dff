"""A scripted `load` that fails names the script line, leaves the game as it was, and the run goes on."""

from __future__ import annotations

import json
from pathlib import Path

from game.headless import play_headless
from game.inputs.script import read_script
from game.replay import replay

STORY = str(Path(__file__).resolve().parents[2] / "stories" / "zero_mark")


def test_load_previous_without_a_previous_copy_names_the_line_and_goes_on(tmp_path: Path) -> None:
    script = tmp_path / "play.txt"
    script.write_text("choose offer_kite\nsave s1\nload s1 previous\nload nothing_here\nchoose 1\n", encoding="utf-8")
    told: list[str] = []
    runner = play_headless(STORY, read_script(str(script)), backend="null", size=(64, 36), dialogue=None,
                           voice=False, save_dir=tmp_path / "saves", transcript=tmp_path / "t.jsonl",
                           on_warning=told.append)
    assert len(runner.errors) == 2 and told == runner.errors
    assert runner.errors[0].startswith(f"{script}:3: `load s1 previous` failed") and "s1.json.bak" in runner.errors[0]
    assert runner.errors[1].startswith(f"{script}:4: `load nothing_here` failed")
    assert runner.session.state.scene == "creek"  # the script's last line ran after the failed loads
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()]
    errors = [r for r in rows if r["type"] == "error"]
    assert [r["where"] for r in errors] == [f"{script}:3", f"{script}:4"]
    assert replay(tmp_path / "t.jsonl", STORY).ok  # a replay meets the same failures

"""Every script line that cannot apply is handled the same way: named by its line, the game left
as it was, the rest of the script played, and ``play --headless`` exiting 1.

Last session scripts stopped at a ``rollback`` with no checkpoint or a ``rollforward`` with nothing
ahead, but only warned at a failed ``load`` and went on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from game.cli import main
from game.headless import play_headless
from game.inputs.script import read_script
from game.replay import replay

STORY = str(Path(__file__).resolve().parents[2] / "stories" / "zero_mark")
#: One line of each kind that cannot apply, between lines that can.
SCRIPT = """choose offer_kite
rollforward
choose no_such_choice
rollback 9
load never_saved
give stone nobody
image missing.png
choose 1
"""


def test_each_kind_of_line_that_cannot_apply_is_named_and_the_script_goes_on(tmp_path: Path) -> None:
    script = tmp_path / "play.txt"
    script.write_text(SCRIPT, encoding="utf-8")
    told: list[str] = []
    runner = play_headless(STORY, read_script(script), backend="null", size=(64, 36), dialogue=None, voice=False,
                           save_dir=tmp_path / "saves", transcript=tmp_path / "t.jsonl", on_warning=told.append)
    failed = [line.split(": `")[0] for line in runner.errors]
    assert failed == [f"{script}:{n}" for n in (2, 3, 4, 5, 6, 7)], runner.errors
    assert told == runner.errors and all(line.endswith("the game goes on as it was") for line in runner.errors)
    assert "cannot roll forward" in runner.errors[0] and "no available choice" in runner.errors[1]
    assert "cannot roll back 9" in runner.errors[2] and "no such save" in runner.errors[3]
    assert runner.session.state.scene == "creek"  # line 8 ran: the kite flight's first choice
    rows = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["where"] for r in rows if r["type"] == "error"] == [f"{script}:{n}" for n in (2, 3, 4, 5, 6, 7)]
    assert replay(tmp_path / "t.jsonl", STORY).ok  # a replay meets the same refusals


def test_the_cli_plays_on_names_the_lines_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "play.txt"
    script.write_text(SCRIPT, encoding="utf-8")
    code = main(["play", STORY, "--headless", "--inputs", str(script), "--backend", "null", "--no-errorbank",
                 "--dialogue", "none", "--no-voice", "--save-dir", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert code == 1
    for n in (2, 3, 4, 5, 6, 7):
        assert f"play.txt:{n}: `" in err
    assert "6 script lines could not apply" in err and "played 8 inputs" in err
    good = tmp_path / "good.txt"
    good.write_text("choose offer_kite\nchoose 1\n", encoding="utf-8")
    assert main(["play", STORY, "--headless", "--inputs", str(good), "--backend", "null", "--no-errorbank",
                 "--dialogue", "none", "--no-voice", "--save-dir", str(tmp_path / "s")]) == 0


def test_a_malformed_line_still_stops_before_anything_is_played(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "play.txt"
    script.write_text("choose offer_kite\nfly away\n", encoding="utf-8")
    assert main(["play", STORY, "--headless", "--inputs", str(script), "--backend", "null", "--no-errorbank",
                 "--dialogue", "none", "--no-voice"]) == 2
    err = capsys.readouterr().err
    assert "play.txt:2" in err and "unknown command 'fly'" in err and "played" not in err

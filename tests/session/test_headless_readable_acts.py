"""Headless play prints what the player does and sees happen, as the window shows it: a ``give``
line's echo by display names, the inventory when it changes, characters acting in view, and a
quest's new stage (``game.readable.Reader``); a replay prints the same acts."""

from __future__ import annotations

from pathlib import Path

from game.headless import play_headless
from game.inputs.script import parse_script, read_script
from game.replay import replay

ROOT = Path(__file__).resolve().parents[2]


def test_give_echoes_by_display_names(mini_path: Path, tmp_path: Path) -> None:
    lines: list[str] = []
    play_headless(str(mini_path), parse_script("give stone creature\n"), backend="null", dialogue=None,
                  voice=False, save_dir=tmp_path, on_text=lines.append)
    assert "> Give the grey stone to the creature" in lines
    assert not any(x.startswith("(you now carry") for x in lines)  # mini's creature gives it back: no change


def test_gullhaven_prints_acts_in_view_quests_and_what_is_carried(tmp_path: Path) -> None:
    story = ROOT / "stories" / "gullhaven"
    lines: list[str] = []
    play_headless(str(story), read_script(story / "playthroughs" / "the_light_holds.txt"), backend="null",
                  dialogue=None, voice=False, save_dir=tmp_path / "s", transcript=tmp_path / "t.jsonl",
                  on_text=lines.append)
    assert "Ysolde gives you the tower key." in lines
    assert lines.index("(you now carry: tower key)") > lines.index("Ysolde gives you the tower key.")
    assert "Quest: Get the oil and a wick up to the lamp room." in lines
    assert "> Use the oil flask on the spare wick" in lines
    assert "(you now carry: tower key, oiled wick)" in lines
    assert "Quest done: Light the lamp before high water" in lines
    shown = replay(tmp_path / "t.jsonl")
    assert shown.ok, shown.mismatches
    assert any(line.endswith("] Ysolde gives you the tower key.") for line in shown.lines)

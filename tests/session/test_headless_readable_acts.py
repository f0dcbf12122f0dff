"""Headless play prints what the player does and sees happen, as the window shows it: a ``give``
line's echo by display names, the inventory when it changes, characters acting in view, and a
quest's new stage (``game.readable.Reader``); a replay prints the same lines, made by the same code,
up to its first difference."""

from __future__ import annotations

import json
import re
import shutil
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


def _unstamped(lines: list[str]) -> list[str]:
    """Replay's lines without their ``[  12.50s] `` time stamps."""
    out = []
    for line in lines:
        stamp = re.match(r"\[ *\d+\.\d\ds\] ", line)
        assert stamp is not None, line
        out.append(line[stamp.end():])
    return out


def test_replay_prints_what_headless_play_printed_give_echo_and_carried_included(tmp_path: Path) -> None:
    story = ROOT / "stories" / "zero_mark"
    played: list[str] = []
    play_headless(str(story), read_script(story / "kite.txt"), backend="null", dialogue=None, voice=False,
                  save_dir=tmp_path / "s", transcript=tmp_path / "t.jsonl", on_text=played.append)
    echoed: list[str] = []
    shown = replay(tmp_path / "t.jsonl", echo=echoed.append)
    assert shown.ok, shown.mismatches
    assert echoed == shown.lines
    assert _unstamped(shown.lines) == played  # the same lines, in the same order
    assert "> Give the smooth stone to the creature" in played and "(you now carry: green leaf)" in played
    assert any(x.endswith("s] > Give the smooth stone to the creature") for x in shown.lines)


def test_replay_prints_nothing_past_its_first_difference(mini_path: Path, tmp_path: Path) -> None:
    story = tmp_path / "mini"
    shutil.copytree(mini_path, story)
    played: list[str] = []
    play_headless(str(story), parse_script("choose offer_kite\nchoose finish_good\n"), backend="null", dialogue=None,
                  voice=False, save_dir=tmp_path / "s", transcript=tmp_path / "t.jsonl", on_text=played.append)
    rows = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    ending = next(i for i, r in enumerate(rows) if r["type"] == "ending")
    rows[ending]["text"] = "some_other_ending"  # as if the recorded run had ended elsewhere
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    shown = replay(tmp_path / "t.jsonl")
    assert not shown.ok
    lines = _unstamped(shown.lines)
    assert lines == played[:len(lines)] and len(lines) < len(played)
    assert any("ENDING" in x for x in played) and not any("ENDING" in x for x in lines)

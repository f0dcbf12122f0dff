"""`worldloom map` of a story whose goto names no scene: a "missing" note, named in the legend,
each such goto named at its file:line, and exit 1 (lint's WL001 is an error)."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.cli import main as cli_main
from game.story.loader import load_story
from game.story.storymap import COLOURS, build_map, to_dot

BROKEN = Path(__file__).resolve().parents[1] / "data" / "explore_error"


def test_map_of_a_missing_target_names_the_goto_and_exits_1(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "map.dot"
    assert cli_main(["map", str(BROKEN), "-o", str(out)]) == 1
    assert out.is_file()  # drawn all the same
    err = capsys.readouterr().err
    assert f"{BROKEN / 'story.yaml'}:27:" in err and "goto 'cellar_missing' names no scene" in err


def test_the_legend_calls_the_missing_box_missing_not_unreachable() -> None:
    smap = build_map(load_story(BROKEN, use_cache=False))
    assert "missing" in smap.caption and "1 goto target that is not a scene" in smap.caption
    note = next(line for line in to_dot(smap).splitlines() if line.startswith('  "s_cellar_missing"'))
    assert 'shape="note"' in note and f'fillcolor="{COLOURS["missing"]}"' in note
    assert "dashed" not in note  # "red dashed" is the legend's unreachable scene


def test_a_story_with_every_target_declared_still_exits_0(tmp_path: Path) -> None:
    mini = Path(__file__).resolve().parents[1] / "data" / "mini"
    assert cli_main(["map", str(mini), "-o", str(tmp_path / "m.dot")]) == 0
    assert not build_map(load_story(mini, use_cache=False)).missing_at

"""The story map: DOT text, SVG and PNG (graphviz and the built-in layout), escaping, coverage colours."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import cast

import pytest
from PIL import Image

from game.cli import main as cli_main
from game.story import storymap
from game.story.explorer import explore_path
from game.story.loader import load_story, story_from_dict
from game.story.storymap import COLOURS, build_map, dot_quote, to_dot, write_map

DATA = Path(__file__).parents[1] / "data"
MAZE = DATA / "explore_maze"
HAS_DOT = shutil.which("dot") is not None


def test_dot_has_the_scenes_edges_and_labels(mini_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "map.dot"
    assert cli_main(["map", str(mini_path), "-o", str(out)]) == 0
    dot = out.read_text()
    assert dot.startswith('digraph "Mini" {')
    for sid in ("meadow", "after", "creek_scene", "good_end", "bad_end"):
        assert f'"s_{sid}" [' in dot
    assert '"s_meadow" -> "s_after" [label="Offer the kite\\n[if has(\'kite\')]"' in dot
    assert '"s_meadow" -> "s_creek_scene" [label="[d] exit"' in dot
    assert '"s_creek_scene" -> "s_meadow" [label="[a] exit"' in dot
    assert '"s_meadow" -> "s_meadow" [label=<' in dot and '>Wave</font>' in dot  # a choice that stays (one loop)
    assert '>say: sing</font>' in dot and dot.count('"s_meadow" -> "s_meadow"') == 1  # both on one loop
    assert 'label="Afterwards.' not in dot  # lines are not edges
    assert '"s_good_end" [label="good_end\\nending: good"' in dot and 'peripheries="2"' in dot
    assert "__start -> \"s_meadow\";" in dot


def test_unreachable_and_missing_scenes_are_marked() -> None:
    smap = build_map(load_story(MAZE, use_cache=False))
    nodes = {n.id: n for n in smap.nodes}
    assert {i for i, n in nodes.items() if n.unreachable} == {"attic", "vault"}
    assert nodes["vault"].ending == "treasure"
    dot = to_dot(smap)
    attic = next(line for line in dot.splitlines() if line.startswith('  "s_attic"'))
    assert f'color="{COLOURS["unreachable"]}"' in attic and "dashed" in attic
    assert any(e.kind == "gift" and e.text == "give food to guard" and e.dst == "yard" for e in smap.edges)
    broken = build_map(load_story(DATA / "explore_error", use_cache=False))
    assert [n.id for n in broken.nodes if n.missing] == ["cellar_missing"]


def test_labels_are_escaped_for_dot(tmp_path: Path) -> None:
    tricky = 'Say "hi" \\N {x}; ] [ -> }\nnext line'
    story = story_from_dict({
        "id": "esc", "title": 'A "quoted" \\ title', "start": "a", "locations": {"here": {"name": "Here"}},
        "scenes": {"a": {"title": 'Scene "A"', "location": "here",
                         "choices": [{"id": "c", "text": tricky, "if": "1 < 2", "goto": "b"}]},
                   "b": {"location": "here", "ending": "done"}}})
    assert dot_quote('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    assert dot_quote("bell\x07") == '"bell "'
    dot = to_dot(build_map(story))
    assert '\\"hi\\" \\\\N' in dot
    if HAS_DOT:
        res = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True, timeout=60, check=False)
        assert res.returncode == 0, res.stderr.decode()
        svg = res.stdout.decode()
        ET.fromstring(svg)
        assert "Say &quot;hi&quot; \\N {x}" in svg or 'Say "hi" \\N {x}' in svg


@pytest.mark.parametrize("engine", ["auto", "builtin"])
def test_svg_is_valid_xml_with_the_scene_ids(mini_path: Path, tmp_path: Path, engine: str) -> None:
    out = tmp_path / "map.svg"
    assert cli_main(["map", str(mini_path), "-o", str(out), "--engine", engine]) == 0
    root = ET.parse(out).getroot()
    assert root.tag.endswith("svg")
    text = out.read_text()
    for sid in ("meadow", "after", "creek_scene", "good_end", "bad_end"):
        assert f"s_{sid}" in text


@pytest.mark.parametrize("engine", ["auto", "builtin"])
def test_png_is_readable_and_of_sensible_size(mini_path: Path, tmp_path: Path, engine: str) -> None:
    out = tmp_path / "map.png"
    how = write_map(build_map(load_story(mini_path, use_cache=False)), out, engine)  # type: ignore[arg-type]
    assert how == ("graphviz dot" if HAS_DOT and engine == "auto" else "built-in layout")
    with Image.open(out) as im:
        assert im.format == "PNG"
        w, h = im.size
        assert 150 <= w <= 4000 and 150 <= h <= 4000
        lo, hi = cast(tuple[int, int], im.convert("L").getextrema())
        assert lo < 100 and hi > 200  # dark text on a light background


def test_without_graphviz_the_builtin_layout_is_used(mini_path: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storymap, "dot_binary", lambda: None)
    smap = build_map(load_story(mini_path, use_cache=False))
    assert write_map(smap, tmp_path / "m.png") == "built-in layout"
    assert write_map(smap, tmp_path / "m.dot") == "dot source"
    with pytest.raises(storymap.MapError, match="not installed"):
        write_map(smap, tmp_path / "m.svg", "dot")


def test_coverage_colours_the_dot(tmp_path: Path) -> None:
    report = explore_path(MAZE, n_random=0)
    smap = build_map(load_story(MAZE, use_cache=False), report.reached)
    nodes = {n.id: n for n in smap.nodes}
    assert nodes["gate"].reached and nodes["pit"].reached and not nodes["attic"].reached
    climb = next(e for e in smap.edges if e.text == "Climb down")
    assert climb.reached is False
    assert all(e.reached for e in smap.edges if e.src != "attic")
    dot = to_dot(smap)
    assert f'fillcolor="{COLOURS["reached"]}"' in dot and f'fillcolor="{COLOURS["unreached"]}"' in dot
    climb_line = next(line for line in dot.splitlines() if 'label="Climb down"' in line)
    assert f'color="{COLOURS["unreached_edge"]}"' in climb_line and 'style="dashed"' in climb_line
    assert "Explorer: 9/11 scenes" in dot
    out = tmp_path / "cov.dot"
    assert cli_main(["map", str(MAZE), "-o", str(out), "--coverage", "--random", "3"]) == 0
    assert COLOURS["reached_edge"] in out.read_text()


def test_bad_suffix_is_a_named_error(mini_path: Path, tmp_path: Path) -> None:
    assert cli_main(["map", str(mini_path), "-o", str(tmp_path / "map.gif")]) == 2


def test_authoring_docs_list_every_lint_code() -> None:
    from game.story.diagnostics import CODES

    text = (Path(__file__).parents[2] / "docs" / "authoring-tools.md").read_text()
    for code, c in CODES.items():
        assert f"| `{code}` | {c.severity} |" in text, f"docs/authoring-tools.md: add {code} to the codes table"

"""In the graphviz map, a scene's loops (choices, actions and exits that stay in it) are one loop
with one stacked label: graphviz draws several loops of one node on top of each other, and their
labels overlapped (Zero Mark's Creek has four)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from game.story.loader import load_story
from game.story.storymap import build_map, to_dot

ROOT = Path(__file__).resolve().parents[2]


def test_each_scene_has_one_loop_listing_all_of_its_loops() -> None:
    smap = build_map(load_story(ROOT / "stories" / "zero_mark"))
    creek = [e for e in smap.edges if e.src == e.dst == "creek"]
    assert len(creek) >= 3
    dot = to_dot(smap)
    loops = re.findall(r'^  "s_(\w+)" -> "s_\1" (.*)$', dot, flags=re.M)
    nodes = [n for n, _ in loops]
    assert len(nodes) == len(set(nodes)), "one loop per scene"
    label = next(attrs for n, attrs in loops if n == "creek")
    for e in creek:
        first = e.label.split("\n")[0].split(" ")[0]
        assert first in label
    if shutil.which("dot"):  # graphviz accepts it (the HTML label is well formed)
        done = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True, check=False)
        assert done.returncode == 0, done.stderr.decode()


def test_a_loop_label_cannot_break_the_html(tmp_path: Path) -> None:
    (tmp_path / "story.yaml").write_text(
        'id: t\ntitle: T\nstart: a\nlocations:\n  l: {name: L, palette: dusk}\nscenes:\n  a:\n    location: l\n'
        '    lines: ["x"]\n    choices:\n      - {id: c1, text: "say <b>&amp; \\"hi\\"</b>"}\n'
        '      - {id: c2, text: "wait > 2"}\n      - {id: end, text: go, goto: b}\n'
        '  b: {location: l, ending: over, lines: ["y"]}\n')
    dot = to_dot(build_map(load_story(tmp_path)))
    assert "&lt;b&gt;&amp;amp; &quot;hi&quot;&lt;/b&gt;" in dot and "wait &gt; 2" in dot
    if shutil.which("dot") is None:
        pytest.skip("graphviz not installed")
    done = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()

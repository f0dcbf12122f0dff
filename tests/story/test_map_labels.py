"""The built-in story map lays its edge labels (loops included) out without overlap: no label on
another label or on a scene's box, every label on the canvas."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.story.loader import load_story
from game.story.storymap import build_map, label_rects, layered_layout

STORIES = Path(__file__).resolve().parents[2] / "stories"


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("name", ["eve", "gullhaven", "zero_mark"])
def test_edge_labels_do_not_overlap(name: str) -> None:
    lay = layered_layout(build_map(load_story(STORIES / name)))
    labels = label_rects(lay)
    boxes = [(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2) for cx, cy, w, h in lay.boxes.values()]
    loops = sum(e.src == e.dst for e, _, _ in lay.edges)
    assert loops >= 1 or name == "zero_mark"
    clashes = [(i, j) for i in range(len(labels)) for j in range(i + 1, len(labels)) if _overlap(labels[i], labels[j])]
    assert not clashes, [(lay.edges[i][0].label, lay.edges[j][0].label) for i, j in clashes]
    on_boxes = [lay.edges[i][0].label for i, r in enumerate(labels) if any(_overlap(r, b) for b in boxes)]
    assert not on_boxes, on_boxes
    assert all(r[0] >= 0 and r[1] >= 0 and r[2] <= lay.width and r[3] <= lay.height for r in labels)

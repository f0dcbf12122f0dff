"""Author art: a background plate, a parallax layer and a sprite sheet, composed by the
procedural world, with a fallback to the vocabulary and lint for missing or mis-sized art
(the example of docs/story-format.md, docs/examples/author_art/)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from PIL import Image

from game.story import load_story
from game.story.lint import lint_story
from game.story.runtime import StoryRuntime
from game.world.backends.layout import Layout
from game.world.backends.procedural import ProceduralBackend
from game.world.director import Director

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "author_art"
W, H = 320, 180


def draw(folder: Path, reaction: str = "idle") -> tuple[np.ndarray, Layout, tuple[str, ...]]:
    story = load_story(folder)
    rt = StoryRuntime(story)
    b = ProceduralBackend(width=W, height=H)
    d = Director(story, b.capabilities(), "s")
    state = rt.new_state(1)
    events = rt.begin(state)
    state.reactions["fox"] = reaction
    b.start(d.session_start(state, 1))
    chunk = next(iter(b.generate(d.build(state, events, d.cause(events)))))
    assert b.layout is not None
    return chunk.frames[-1], b.layout, chunk.ignored


def box_pixels(frame: np.ndarray, layout: Layout, name: str) -> np.ndarray:
    part = layout.get(name)
    assert part is not None and part.visible, name
    x0, y0, x1, y1 = part.box
    return frame[max(0, y0):y1, max(0, x0):x1].reshape(-1, 3).astype(np.int16)


def test_the_example_lints_clean() -> None:
    assert [d.format() for d in lint_story(EXAMPLE) if d.code in ("WL009", "WL030")] == []


def test_plate_layer_and_sheet_are_drawn() -> None:
    frame, layout, _ = draw(EXAMPLE)
    assert {"plate", "layer0", "fox"} <= layout.visible()
    hedge = box_pixels(frame, layout, "layer0")
    assert (np.abs(hedge - (40, 70, 44)).max(axis=1) < 40).mean() > 0.3  # the hedge, in front
    fox = box_pixels(frame, layout, "fox")
    orange = (fox[:, 0] - fox[:, 2] > 80) & (fox[:, 0] > 120)
    assert orange.mean() > 0.2  # the fox of the sheet, not a drawn figure


def test_the_sheet_cell_follows_the_reaction() -> None:
    calm, l1, _ = draw(EXAMPLE, "idle")
    glad, l2, _ = draw(EXAMPLE, "leap")
    scared, l3, _ = draw(EXAMPLE, "recoil")
    a, b, c = (box_pixels(f, lay, "fox") for f, lay in ((calm, l1), (glad, l2), (scared, l3)))
    assert a.shape != b.shape or np.abs(a - b).max() > 40  # smile, not neutral
    assert c[:, 0].mean() < a[:, 0].mean() - 10  # surprised and shrinking back (darker)


def test_missing_art_falls_back_to_the_vocabulary_and_lint_reports_it(tmp_path: Path) -> None:
    folder = tmp_path / "art"
    shutil.copytree(EXAMPLE, folder)
    (folder / "lane.png").unlink()
    (folder / "fox.png").unlink()
    frame, layout, notes = draw(folder)
    assert "plate" not in layout.visible() and "fox" in layout.visible()
    assert any("lane.png" in n for n in notes) and any("sheet fox" in n for n in notes)
    codes = {(d.code, d.where.split(":")[0]) for d in lint_story(folder)}
    assert {c for c, _ in codes} >= {"WL009"}


def test_lint_reports_mis_sized_art(tmp_path: Path) -> None:
    folder = tmp_path / "art"
    shutil.copytree(EXAMPLE, folder)
    Image.new("RGB", (300, 300), (9, 9, 9)).save(folder / "lane.png")  # square, too small
    Image.new("RGBA", (200, 100), (0, 0, 0, 0)).save(folder / "hedge.png")  # not the plate's size
    index = (folder / "fox.yaml").read_text().replace("walk: [1, 1]", "walk: [9, 1]\n  dance: [0, 0]")
    (folder / "fox.yaml").write_text(index)
    found = [d.format() for d in lint_story(folder) if d.code == "WL030"]
    assert any("plate lane.png is 300x300" in f for f in found)
    assert any("layer hedge.png is 200x100" in f for f in found)
    assert any("'walk' at [9, 1] is outside" in f for f in found)
    assert any("'dance' names no expression or pose" in f for f in found)

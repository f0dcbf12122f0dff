"""Each supported world edit (docs/inputs.md) changes the frame where its target is, the way it
says: light warms or silvers the land and the figure, snow whitens, fog flattens, an object a
player removed is gone from its place, one made bigger is drawn bigger, a recoloured thing takes
its colour, a dropped picture is drawn from its pixels where the layout record puts it. (Rain,
night, a blue creature, a scarf and a campfire are in test_figures_and_edits.py.)"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from game.session import Session
from game.state import AddReference, Instruct
from game.story import load_story
from game.world.backends.layout import Layout
from game.world.backends.null import NullBackend
from game.world.backends.procedural import ProceduralBackend
from game.world.director import Cause
from game.world.protocol import SessionStart

ROOT = Path(__file__).resolve().parents[2]
W, H = 320, 180


@pytest.fixture
def clearing(tmp_path: Path) -> Session:
    s = Session(load_story(ROOT / "stories" / "zero_mark"), NullBackend(), seed=5, save_dir=tmp_path)
    s.start()
    return s


def render(s: Session) -> tuple[np.ndarray, Layout]:
    """Frame 6 of the current state by a fresh procedural backend (same seed, no fade), and its layout."""
    req = dataclasses.replace(s.director.build(s.state, [], Cause("idle")), switch_mode=None, references=(), seq=1)
    b = ProceduralBackend(width=W, height=H)
    b.start(SessionStart("main", 5, "p"))
    chunk = next(iter(b.generate(req)))
    assert b.layout is not None
    return chunk.frames[6].astype(np.int16), b.layout


def edit(s: Session, kind: str, **params: str) -> str:
    """Apply an edit; the id of what it made or changed."""
    evs = [e for e in s.submit(Instruct(edit=kind, params=params)).events if e.kind == "edit"]
    assert evs, f"edit {kind} {params} was not applied"
    return str(evs[0].ids.get("target", ""))


def box_of(layout: Layout, name: str) -> tuple[int, int, int, int]:
    part = layout.get(name)
    assert part is not None and part.visible, name
    return part.box


def cut(frame: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    x0, y0, x1, y1 = box
    return frame[max(0, y0):y1, max(0, x0):x1]


def warmth(px: np.ndarray) -> float:
    return float((px[..., 0] - px[..., 2]).mean())


LAND = slice(int(0.62 * H), H)


def test_a_lantern_light_warms_the_land_and_the_creature(clearing: Session) -> None:
    before, layout = render(clearing)
    edit(clearing, "light", value="lantern")
    after, layout2 = render(clearing)
    assert warmth(after[LAND]) > warmth(before[LAND]) + 8
    box = box_of(layout, "creature")
    assert box_of(layout2, "creature") == box
    assert warmth(cut(after, box)) > warmth(cut(before, box)) + 5


def test_moonlight_silvers_the_land(clearing: Session) -> None:
    before, _ = render(clearing)
    edit(clearing, "light", value="moonlight")
    after, _ = render(clearing)
    assert warmth(after[LAND]) < warmth(before[LAND]) - 5


def test_snow_whitens_and_fog_flattens_the_picture(clearing: Session) -> None:
    before, _ = render(clearing)
    edit(clearing, "weather", value="snow")
    snow, _ = render(clearing)
    grey = lambda px: float(px.max(axis=2).mean() - px.min(axis=2).mean())  # noqa: E731  (saturation)
    assert snow[LAND].mean() > before[LAND].mean() + 10 and grey(snow) < grey(before)
    edit(clearing, "weather", value="fog")
    fog, _ = render(clearing)
    assert fog.mean(axis=2).std() < before.mean(axis=2).std() - 3  # less contrast overall
    assert fog[LAND].mean(axis=2).std() < before[LAND].mean(axis=2).std()  # and less detail on the land


def test_a_removed_object_is_gone_from_where_it_stood(clearing: Session) -> None:
    base, _ = render(clearing)
    ident = edit(clearing, "add_object", name="lantern", relation="near", near="creature")
    added, layout = render(clearing)
    box = box_of(layout, ident)
    assert np.abs(cut(added, box) - cut(base, box)).max() > 40
    edit(clearing, "remove_object", target=ident)
    gone, layout2 = render(clearing)
    assert layout2.get(ident) is None
    assert np.abs(cut(gone, box) - cut(base, box)).max() < 4  # the place is as it was


def test_an_object_made_bigger_is_drawn_bigger_and_a_recoloured_one_takes_its_colour(clearing: Session) -> None:
    ident = edit(clearing, "add_object", name="box", relation="near", near="creature")
    _, layout = render(clearing)
    x0, y0, x1, y1 = box_of(layout, ident)
    edit(clearing, "change_object", target=ident, size="big")
    _, bigger = render(clearing)
    a0, b0, a1, b1 = box_of(bigger, ident)
    assert (a1 - a0) * (b1 - b0) > 1.8 * (x1 - x0) * (y1 - y0)
    edit(clearing, "change_object", target=ident, colour="green")
    green, layout3 = render(clearing)
    px = cut(green, box_of(layout3, ident))
    solid = px[(px.max(axis=2) - px.min(axis=2)) > 30]
    assert (solid[:, 1] - np.maximum(solid[:, 0], solid[:, 2])).mean() > 15


def test_a_dropped_picture_is_drawn_from_its_pixels_where_the_layout_puts_it(clearing: Session,
                                                                            tmp_path: Path) -> None:
    base, _ = render(clearing)
    pic = tmp_path / "drop.png"
    Image.new("RGBA", (64, 64), (30, 60, 230, 255)).save(pic)
    clearing.submit(AddReference(path=str(pic)))
    frame, layout = render(clearing)
    part = next(p for p in layout.parts if p.kind == "object" and p.visible)
    px = cut(frame, part.box)
    changed = np.abs(px - cut(base, part.box)).max(axis=2) > 30
    assert changed.mean() > 0.5
    assert (px[changed][:, 2] - px[changed][:, 0]).mean() > 80  # the blue of the picture

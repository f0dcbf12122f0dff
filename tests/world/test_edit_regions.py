"""Each supported world edit (docs/inputs.md) changes the frame where its target is, the way it
says: light warms or silvers the land and the figure, snow whitens, fog flattens, an object a
player removed is gone from its place, one made bigger is drawn bigger, a recoloured thing takes
its colour, a dropped picture is drawn from its pixels where the layout record puts it. (Rain,
night, a blue creature, a scarf and a campfire are in test_figures_and_edits.py.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from game.session import Session
from game.state import AddReference, Instruct
from game.world.backends.layout import Layout

H = 180  # the height of the frames the ``still`` fixture draws
#: The ``render`` fixture: frame 6 of the session's current state (int16) and its layout.
Render = Callable[[Session], tuple[np.ndarray, Layout]]


@pytest.fixture
def render(still: Callable[[Session, int], tuple[np.ndarray, Layout]]) -> Render:
    """Frame 6 of the current state (int16, for differences) and its layout (the ``still`` fixture)."""

    def at_six(s: Session) -> tuple[np.ndarray, Layout]:
        frame, layout = still(s, 6)
        return frame.astype(np.int16), layout

    return at_six


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


def test_a_lantern_light_warms_the_land_and_the_creature(zero_mark: Session, render: Render) -> None:
    before, layout = render(zero_mark)
    edit(zero_mark, "light", value="lantern")
    after, layout2 = render(zero_mark)
    assert warmth(after[LAND]) > warmth(before[LAND]) + 8
    box = box_of(layout, "creature")
    assert box_of(layout2, "creature") == box
    assert warmth(cut(after, box)) > warmth(cut(before, box)) + 5


def test_moonlight_silvers_the_land(zero_mark: Session, render: Render) -> None:
    before, _ = render(zero_mark)
    edit(zero_mark, "light", value="moonlight")
    after, _ = render(zero_mark)
    assert warmth(after[LAND]) < warmth(before[LAND]) - 5


def test_snow_whitens_and_fog_flattens_the_picture(zero_mark: Session, render: Render) -> None:
    before, _ = render(zero_mark)
    edit(zero_mark, "weather", value="snow")
    snow, _ = render(zero_mark)
    grey = lambda px: float(px.max(axis=2).mean() - px.min(axis=2).mean())  # noqa: E731  (saturation)
    assert snow[LAND].mean() > before[LAND].mean() + 10 and grey(snow) < grey(before)
    edit(zero_mark, "weather", value="fog")
    fog, _ = render(zero_mark)
    assert fog.mean(axis=2).std() < before.mean(axis=2).std() - 3  # less contrast overall
    assert fog[LAND].mean(axis=2).std() < before[LAND].mean(axis=2).std()  # and less detail on the land


def test_a_removed_object_is_gone_from_where_it_stood(zero_mark: Session, render: Render) -> None:
    base, _ = render(zero_mark)
    ident = edit(zero_mark, "add_object", name="lantern", relation="near", near="creature")
    added, layout = render(zero_mark)
    box = box_of(layout, ident)
    assert np.abs(cut(added, box) - cut(base, box)).max() > 40
    edit(zero_mark, "remove_object", target=ident)
    gone, layout2 = render(zero_mark)
    assert layout2.get(ident) is None
    assert np.abs(cut(gone, box) - cut(base, box)).max() < 4  # the place is as it was


def test_an_object_made_bigger_is_drawn_bigger_and_a_recoloured_one_takes_its_colour(zero_mark: Session,
                                                                                     render: Render) -> None:
    ident = edit(zero_mark, "add_object", name="box", relation="near", near="creature")
    _, layout = render(zero_mark)
    x0, y0, x1, y1 = box_of(layout, ident)
    edit(zero_mark, "change_object", target=ident, size="big")
    _, bigger = render(zero_mark)
    a0, b0, a1, b1 = box_of(bigger, ident)
    assert (a1 - a0) * (b1 - b0) > 1.8 * (x1 - x0) * (y1 - y0)
    edit(zero_mark, "change_object", target=ident, colour="green")
    green, layout3 = render(zero_mark)
    px = cut(green, box_of(layout3, ident))
    solid = px[(px.max(axis=2) - px.min(axis=2)) > 30]
    assert (solid[:, 1] - np.maximum(solid[:, 0], solid[:, 2])).mean() > 15


def test_a_dropped_picture_is_drawn_from_its_pixels_where_the_layout_puts_it(zero_mark: Session, render: Render,
                                                                            tmp_path: Path) -> None:
    base, _ = render(zero_mark)
    pic = tmp_path / "drop.png"
    Image.new("RGBA", (64, 64), (30, 60, 230, 255)).save(pic)
    zero_mark.submit(AddReference(path=str(pic)))
    frame, layout = render(zero_mark)
    part = next(p for p in layout.parts if p.kind == "object" and p.visible)
    px = cut(frame, part.box)
    changed = np.abs(px - cut(base, part.box)).max(axis=2) > 30
    assert changed.mean() > 0.5
    assert (px[changed][:, 2] - px[changed][:, 0]).mean() > 80  # the blue of the picture

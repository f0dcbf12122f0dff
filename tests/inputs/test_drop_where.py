"""A dropped picture lands where the player dropped it: the window maps the mouse across the world
view to a fraction of the frame, and the picture stands there in the world (camera included); a
script's ``image`` line, which has no place, puts it where pictures go."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from pydantic import ValidationError

from game.session import Session
from game.state import AddReference
from game.story import load_story
from game.world.backends.null import NullBackend

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture
def listen(tmp_path: Path) -> Session:
    s = Session(load_story(DATA / "listen"), NullBackend(), seed=2, save_dir=tmp_path)
    s.start()
    return s


def _png(path: Path) -> str:
    Image.new("RGB", (40, 30), (30, 120, 200)).save(path)
    return str(path)


def _placed(s: Session, img: str) -> float:
    (obj,) = [o for o in s.state.objects.values() if o.get("image") == str(Path(img).resolve())]
    return float(obj["x"])


def test_a_picture_dropped_on_the_left_or_the_right_stands_there(listen: Session, tmp_path: Path) -> None:
    left, right = _png(tmp_path / "left.png"), _png(tmp_path / "right.png")
    listen.submit(AddReference(path=left, x=0.1))
    listen.submit(AddReference(path=right, x=0.9))
    cam = listen.state.camera_x
    assert _placed(listen, left) == pytest.approx(cam + 0.1)
    assert _placed(listen, right) == pytest.approx(cam + 0.9)


def test_the_camera_is_counted(listen: Session, tmp_path: Path) -> None:
    listen.state.camera_x = 2.5  # the view has panned: the drop is in view, not at the world's start
    img = _png(tmp_path / "far.png")
    listen.submit(AddReference(path=img, x=0.3))
    assert _placed(listen, img) == pytest.approx(2.8)


def test_a_script_image_with_no_place_goes_where_pictures_go(listen: Session, tmp_path: Path) -> None:
    img = _png(tmp_path / "script.png")
    listen.submit(AddReference(path=img))
    assert _placed(listen, img) == pytest.approx(listen.state.camera_x + 0.42)


def test_a_place_outside_the_view_is_refused() -> None:
    with pytest.raises(ValidationError):
        AddReference(path="a.png", x=1.5)

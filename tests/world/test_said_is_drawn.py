"""What the narration says is where the picture shows it: a gift Eve "sets on the shelf" stands
on the painted shelf, not in her hands; a dropped picture is drawn as that picture, at the place
it was dropped, and is named from its file name or caption, never from its colour."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, PngImagePlugin

from game.session.assembly import Game, open_game
from game.state import AddReference, Choose
from game.world.backends.procedural import ProceduralBackend

ROOT = Path(__file__).resolve().parents[2]
EVE = ROOT / "stories" / "eve"
SIZE = (320, 180)


def _eve(tmp_path: Path, embedder: Any) -> Game:
    game = open_game(EVE, size=SIZE, dialogue=None, voice=False, save_dir=tmp_path / "saves",
                     backend_options={"embed": None}, cast_options={"embedder": embedder})
    game.session.start()
    for _ in game.session.stream():
        pass
    game.session.submit(Choose(choice_id="knock"))
    return game


def _settle(game: Game) -> ProceduralBackend:
    """Play out the pending request; the backend's layout is then that of its last block's first frame."""
    for _ in game.session.stream():
        pass
    backend = game.session.backend
    assert isinstance(backend, ProceduralBackend)
    assert backend.layout is not None
    return backend


def _lines(game: Game) -> list[str]:
    return [text for _, text in game.session.history(200)]


def _picture(path: Path, colour: tuple[int, int, int] = (220, 20, 20), caption: str = "") -> Path:
    info = PngImagePlugin.PngInfo()
    if caption:
        info.add_text("Title", caption)
    Image.new("RGB", (64, 64), colour).save(path, pnginfo=info)
    return path


def test_a_gift_she_sets_on_the_shelf_is_drawn_on_the_shelf(tmp_path: Path, embedder: Any) -> None:
    game = _eve(tmp_path, embedder)
    try:
        _settle(game)
        game.session.submit(AddReference(path=str(_picture(tmp_path / "harbour_at_dusk.png")), entity_id="eve"))
        assert any("sets it on the shelf" in t for t in _lines(game))
        layout = _settle(game).layout
        assert layout is not None
        shelf, eve = layout.get("shelf"), layout.get("eve")
        pic = next(p for p in layout.parts if p.name.startswith("picture"))
        assert shelf is not None and eve is not None and pic.visible
        a, top, c, _ = shelf.box
        px0, _, px1, pbottom = pic.box
        assert a <= (px0 + px1) / 2 <= c, "stands within the shelf's width"
        assert abs(pbottom - top) <= 3, "stands on the shelf's top"
        ex0, _, ex1, _ = eve.box
        assert px1 <= ex0 or px0 >= ex1, "not in her hands"
    finally:
        game.close()


def test_a_dropped_picture_is_named_from_its_file_or_caption_never_its_colour(
        tmp_path: Path, embedder: Any) -> None:
    game = _eve(tmp_path, embedder)
    try:
        game.session.submit(AddReference(path=str(_picture(tmp_path / "red.png")), x=0.2))
        game.session.submit(AddReference(path=str(_picture(tmp_path / "my_dog-Rex.png", (30, 90, 200))), x=0.3))
        game.session.submit(AddReference(path=str(_picture(tmp_path / "IMG_2034.png", (200, 180, 40),
                                                           caption="Rex asleep by the fire")), x=0.4))
        said = [t for t in _lines(game) if "picture" in t.lower()]
        assert said[-3:] == ["Your picture is there now, as if it had always been.",
                             "A picture of my dog Rex is there now, as if it had always been.",
                             "A picture, “Rex asleep by the fire”, is there now, as if it had always been."]
        assert not any("of red" in t for t in said)
    finally:
        game.close()


def test_a_dropped_picture_is_drawn_as_itself_where_it_was_dropped(tmp_path: Path, embedder: Any) -> None:
    game = _eve(tmp_path, embedder)
    try:
        _settle(game)
        game.session.submit(AddReference(path=str(_picture(tmp_path / "red.png")), x=0.2))
        game.session.submit(AddReference(path=str(_picture(tmp_path / "blue.png", (30, 60, 220))), x=0.8))
        frames = [c.frames for c in game.session.stream()]
        backend = _settle(game)
        assert backend.layout is not None
        pics = sorted((p for p in backend.layout.parts if p.name.startswith("picture")), key=lambda p: p.box[0])
        assert len(pics) == 2 and all(p.visible for p in pics), "a second drop does not hide the first"
        (r0, _, r1, _), (b0, _, b1, _) = pics[0].box, pics[1].box
        w = SIZE[0]
        assert abs((r0 + r1) / 2 - 0.2 * w) < 0.06 * w and abs((b0 + b1) / 2 - 0.8 * w) < 0.06 * w
        for p in pics:  # a 64x64 square is drawn as a small square, not blown up over the room
            x0, y0, x1, y1 = p.box
            assert 0.7 < (x1 - x0) / max(1, y1 - y0) < 1.4 and (y1 - y0) < 0.25 * SIZE[1]
        last = frames[-1][-1].astype(int)  # (H, W, 3): the pictures' own colours at their places
        for p, colour in zip(pics, ((220, 20, 20), (30, 60, 220)), strict=True):
            x0, y0, x1, y1 = p.box
            inner = last[y0 + 2:y1 - 2, x0 + 2:x1 - 2].reshape(-1, 3)
            assert np.abs(np.median(inner, axis=0) - colour).max() < 60
    finally:
        game.close()

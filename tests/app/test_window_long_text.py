"""Long names and choices are wrapped in the window, not cut (set WORLDLOOM_SHOTS=DIR to keep screenshots).

A newcomer saw "piece of se…" in the inventory and "Stop and watch the tide come round the …" on a
choice button in Eve's opening (1280x720). Chips and buttons now grow to as many lines as their
words need (at most three; only then does the last line end in "…").
"""

from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from pathlib import Path  # noqa: E402

import pygame  # noqa: E402
import pytest  # noqa: E402

from game.app import panels  # noqa: E402
from game.app.app import App  # noqa: E402
from game.app.fonts import Fonts  # noqa: E402
from game.app.layout import make_layout  # noqa: E402
from game.app.panels import Hit  # noqa: E402
from game.inputs.channels import Channels  # noqa: E402
from game.inputs.meaning import LexicalEmbedder, Resolver  # noqa: E402
from game.session import Session  # noqa: E402
from game.story.loader import load_story  # noqa: E402
from game.world.backends.null import NullBackend  # noqa: E402

ROOT = Path(__file__).parents[2]


def _words(rows: tuple[str, ...]) -> list[str]:
    return " ".join(rows).split()


def _whole(hit: Hit, face_width: int, width: int) -> None:
    """The hit's label was drawn whole, each line inside its rect."""
    assert _words(hit.rows) == hit.label.split(), hit
    assert not any("…" in r for r in hit.rows), hit
    assert face_width <= width, hit


def _apart(rects: list[pygame.Rect]) -> None:
    for a, b in zip(rects, rects[1:], strict=False):
        assert a.bottom <= b.top, (a, b)


@pytest.mark.parametrize("size", [(1280, 720), (960, 540), (640, 360)])
def test_eves_opening_shows_every_name_and_choice_whole(tmp_path: Path, size: tuple[int, int]) -> None:
    session = Session(load_story(ROOT / "stories" / "eve"), NullBackend(), save_dir=tmp_path / "saves")
    channels = Channels(session, Resolver(session.story, LexicalEmbedder()), voice_dir=tmp_path / "voice")
    app = App(session, size, threaded=False, audio=False, channels=channels)
    app.start()
    for _ in range(3):
        app.step()
    fonts = app.fonts
    names = {h.key: h for h in app.chip_hits}
    assert set(names) == {"seaglass", "lemon", "lamp_oil", "almanac"}
    for hit in app.chip_hits:
        widest = max(fonts.small.width(r) for r in hit.rows)
        _whole(hit, widest, hit.rect.width - app.layout.px(30))
        assert len(hit.rows) * fonts.small.line_height <= hit.rect.height
        assert app.screen.get_rect().contains(hit.rect)
        assert hit.rect.right == app.layout.inventory.right
    _apart([h.rect for h in app.chip_hits])
    assert len(names["lemon"].rows) >= 2 or size != (1280, 720)  # it did not fit on one line there
    choices = {h.key: h for h in app.choice_hits}
    assert set(choices) == {"knock", "wait_on_stones"}
    for hit in app.choice_hits:
        face = fonts.choice if len(hit.rows) == 1 and fonts.choice.width(hit.rows[0]) <= hit.rect.width \
            else fonts.small
        _whole(hit, max(face.width(r) for r in hit.rows), hit.rect.width)
        assert len(hit.rows) * face.line_height <= hit.rect.height
    _apart([h.rect for h in app.choice_hits])
    shots = os.environ.get("WORLDLOOM_SHOTS")
    if shots:
        pygame.image.save(app.screen, str(Path(shots) / f"eve_opening_{size[0]}x{size[1]}.png"))
    app.close()


def test_a_choice_longer_than_three_lines_ends_in_an_ellipsis() -> None:
    pygame.init()
    lay = make_layout((640, 360), (960, 540))
    fonts = Fonts(lay.scale)
    surface = pygame.Surface(lay.size)
    long = " ".join(["the tide comes round the black stones"] * 6)
    hits = panels.choices(surface, lay, fonts, [(1, "a", "Knock"), (2, "b", long)], None)
    short, wrapped = hits
    assert short.rows == ("Knock",)
    assert len(wrapped.rows) == panels.MAX_ROWS and wrapped.rows[-1].endswith("…")
    assert _words(wrapped.rows)[:-1] == long.split()[:len(_words(wrapped.rows)) - 1]
    assert wrapped.rect.height >= panels.MAX_ROWS * fonts.small.line_height
    assert short.rect.bottom <= wrapped.rect.top


def test_one_choice_column_uses_one_size_of_type() -> None:
    # Eve's opening: "Hurry up the steps and knock" in the large face over "Stop and watch the tide
    # come round the stones" in the small one looked like two kinds of button.
    pygame.init()
    fonts = Fonts(1.0)
    short, longer = "Hurry up the steps and knock", "Stop and watch the tide come round the stones"
    room = fonts.choice.width(short) + 4  # the short one fits the large face, the longer does not
    assert fonts.choice.width(longer) > room
    shapes = panels.choice_shapes(fonts, [short, longer], room)
    assert [face for face, _ in shapes] == [fonts.small, fonts.small]
    assert [" ".join(rows) for _, rows in shapes] == [short, longer]
    alone = panels.choice_shapes(fonts, [short], room)
    assert alone == [(fonts.choice, [short])]  # a column that fits keeps the large face

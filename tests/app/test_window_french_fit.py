"""French in the window at 1280x720 (``--lang fr``): the inventory's names read on one line where
they fit in a chip, balanced over two where not (never a word alone on a third line), and the
"more" marker (▼) is always drawn inside the text column, after the line's last row."""

from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from pathlib import Path  # noqa: E402

import polib  # noqa: E402
import pygame  # noqa: E402
import pytest  # noqa: E402

from game.app import paint, panels  # noqa: E402
from game.app.fonts import Fonts  # noqa: E402
from game.app.layout import make_layout  # noqa: E402

STORIES = Path(__file__).parents[2] / "stories"


def _names(demo: str) -> list[str]:
    return [e.msgstr for e in polib.pofile(str(STORIES / demo / "locale" / "fr.po"))
            if (e.msgctxt or "").startswith("item.") and e.msgstr]


@pytest.fixture(scope="module")
def screen() -> tuple[pygame.Surface, object, Fonts]:
    pygame.init()
    layout = make_layout((1280, 720), (960, 540))
    return pygame.Surface((1280, 720)), layout, Fonts(layout.scale)


def test_french_item_names_read_on_one_line_or_two_balanced(screen: tuple) -> None:
    surface, layout, fonts = screen
    for demo, one_line in (("zero_mark", 3), ("eve", 1)):
        names = _names(demo)
        hits = panels.inventory(surface, layout, fonts, [(f"i{k}", n) for k, n in enumerate(names)], "", None)
        rows = [h.rows for h in hits]
        assert all(" ".join(r).split() == n.split() for r, n in zip(rows, names, strict=True))  # whole
        assert sum(len(r) == 1 for r in rows) >= one_line, rows  # "le cerf-volant rouge" on one line
        assert all(len(r) <= 2 for r in rows), rows
        for r in rows:
            if len(r) == 2:  # balanced: the last line is not one short word ("mer")
                assert fonts.small.width(r[1]) >= 0.4 * fonts.small.width(r[0]), r
        assert all(h.rect.right == layout.inventory.right and surface.get_rect().contains(h.rect) for h in hits)


def test_the_more_marker_is_inside_the_text_column_for_every_french_line(screen: tuple) -> None:
    surface, layout, fonts = screen
    lost = []
    lines = [e.msgstr for demo in ("zero_mark", "eve") for e in polib.pofile(str(STORIES / demo / "locale" / "fr.po"))
             if len(e.msgstr) >= 20]
    for text in lines:
        for speaker in ("", "Eve"):
            surface.fill((0, 0, 0))
            area = panels.dialogue(surface, layout, fonts, speaker, text, text, True, True, True)
            px = pygame.surfarray.pixels3d(surface)[area.x:area.right, area.y:area.bottom]
            r, g, b = paint.ACCENT
            marker = ((abs(px[..., 0].astype(int) - r) < 40) & (abs(px[..., 1].astype(int) - g) < 40)
                      & (abs(px[..., 2].astype(int) - b) < 40)).sum()
            del px
            if marker < 5:
                lost.append(text)
    assert lost == [], f"{len(lost)} of {2 * len(lines)} lines lost their marker"


def test_dropping_an_item_back_on_a_chip_over_the_world_keeps_it(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from game.app.app import App
    from game.inputs.channels import Channels
    from game.inputs.meaning import LexicalEmbedder, Resolver
    from game.session import open_game
    from game.state import Choose
    from game.story.strings import LANG_ENV

    monkeypatch.setenv(LANG_ENV, "fr")
    game = open_game(STORIES / "eve", backend="null", dialogue=None, voice=False, save_dir=tmp_path / "s",
                     size=(960, 540))
    session = game.session
    channels = Channels(session, Resolver(session.story, LexicalEmbedder()), voice_dir=tmp_path / "voice")
    app = App(session, (1280, 720), threaded=False, audio=False, channels=channels)
    try:
        app.start()
        session.submit(Choose(choice_id="knock"))  # into her kitchen: someone to give it to
        app.step()
        assert session.view().characters
        lemon = next(h for h in app.chip_hits if h.key == "lemon")
        assert lemon.rect.left < app.layout.world.right  # the long name's chip reaches over the world
        spot = (lemon.rect.left + 4, lemon.rect.centery)
        assert app.layout.world.collidepoint(spot) and not app.drop("lemon", spot)
        assert "lemon" in session.state.inventory
    finally:
        app.close()
        game.close()

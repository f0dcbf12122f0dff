"""The window plays a translated demo (``worldloom play --lang fr``): French text, titles and names
on screen, with a glyph for every character of the catalogue."""

from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from pathlib import Path  # noqa: E402

import polib  # noqa: E402
import pygame  # noqa: E402
import pytest  # noqa: E402

from game.app.app import App  # noqa: E402
from game.app.fonts import Typeface  # noqa: E402
from game.inputs.channels import Channels  # noqa: E402
from game.inputs.meaning import LexicalEmbedder, Resolver  # noqa: E402
from game.session import open_game  # noqa: E402
from game.story.strings import LANG_ENV  # noqa: E402

STORIES = Path(__file__).parents[2] / "stories"


@pytest.mark.parametrize(("demo", "opening", "title"), [
    ("zero_mark", "Le crépuscule. L'herbe est devenue bleue, et les fougères retiennent leur souffle.", "Crépuscule"),
    ("eve", "Le soir sur l'Échine. Pierres noires, varech, et la mer qui revient déjà en murmurant des deux côtés.",
     "L'Échine"),
])
def test_the_window_plays_the_demo_in_french(demo: str, opening: str, title: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LANG_ENV, "fr")
    game = open_game(STORIES / demo, backend="null", dialogue=None, voice=False, save_dir=tmp_path / "saves",
                     size=(64, 36))
    session = game.session
    channels = Channels(session, Resolver(session.story, LexicalEmbedder()), voice_dir=tmp_path / "voice")
    app = App(session, (640, 360), threaded=False, audio=False, channels=channels)
    try:
        app.start()
        blank = pygame.image.tobytes(app.screen.subsurface(app.layout.text), "RGB")
        for _ in range(48):
            app.step()
        assert app.reader.current == ("", opening)
        assert session.view().scene_title == title
        assert pygame.image.tobytes(app.screen.subsurface(app.layout.text), "RGB") != blank
    finally:
        app.close()
        game.close()


def test_every_character_of_the_french_catalogues_has_a_glyph() -> None:
    face = Typeface(20)
    text = "".join(e.msgstr for demo in ("zero_mark", "eve")
                   for e in polib.pofile(str(STORIES / demo / "locale" / "fr.po")))
    missing = sorted({ch for ch in text if not ch.isspace() and not face.has_glyph(ch)})
    assert missing == []

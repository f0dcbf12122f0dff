"""Characters an agent brought into the scene (Gullhaven's Brann and Ysolde on the slipway, where
the scene places nobody by hand) get a name label and a drop target while an item is dragged, as
the scene's own characters do, each where it is drawn and not one on top of the other."""

from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from pathlib import Path  # noqa: E402

import pygame  # noqa: E402

from game.app.app import App  # noqa: E402
from game.inputs.channels import Channels  # noqa: E402
from game.inputs.meaning import LexicalEmbedder, Resolver  # noqa: E402
from game.session import Session  # noqa: E402
from game.state import Choose  # noqa: E402
from game.story.loader import load_story  # noqa: E402
from game.world.backends.null import NullBackend  # noqa: E402

GULLHAVEN = Path(__file__).parents[2] / "stories" / "gullhaven"


def test_every_character_drawn_gets_a_name_while_dragging(tmp_path: Path) -> None:
    session = Session(load_story(GULLHAVEN, use_cache=False), NullBackend(), save_dir=tmp_path / "saves")
    channels = Channels(session, Resolver(session.story, LexicalEmbedder()), voice_dir=tmp_path / "voice")
    app = App(session, (640, 360), threaded=False, audio=False, channels=channels)
    app.start()
    app.step()
    try:
        for turn in (None, Choose(choice_id="be_apprentice")):  # the slipway, then the quay
            if turn is not None:
                session.submit(turn)
                app.step()
            here = dict(session.view().characters)
            boxes = app.character_boxes()
            assert set(boxes) == set(here) == {"ysolde", "brann"}, session.state.scene
            assert not boxes["ysolde"].colliderect(boxes["brann"])  # apart, so both names read
            app.dragging, app.mouse = "key", boxes["brann"].center
            app.draw()
            above = boxes["brann"].move(0, -boxes["brann"].height // 6)
            above.height = boxes["brann"].height // 6
            before = pygame.image.tobytes(app.screen.subsurface(above), "RGB")
            app.dragging = ""
            app.draw()
            assert pygame.image.tobytes(app.screen.subsurface(above), "RGB") != before  # his name, above him
    finally:
        app.close()

"""In the window, a picture dropped on the world view stands where the mouse let it go: the mouse's x
across the world view is that fraction of the frame (headless SDL, the null backend)."""

from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from pathlib import Path  # noqa: E402

import pygame  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from game.app.app import App  # noqa: E402
from game.inputs.channels import Channels  # noqa: E402
from game.inputs.meaning import LexicalEmbedder, Resolver  # noqa: E402
from game.session import Session  # noqa: E402
from game.story.loader import load_story  # noqa: E402
from game.world.backends.null import NullBackend  # noqa: E402


def test_a_picture_lands_where_it_was_dropped(mini_path: Path, tmp_path: Path) -> None:
    session = Session(load_story(mini_path, use_cache=False), NullBackend(), save_dir=tmp_path / "saves")
    channels = Channels(session, Resolver(session.story, LexicalEmbedder()), voice_dir=tmp_path / "voice")
    app = App(session, (640, 360), threaded=False, audio=False, channels=channels)
    app.start()
    app.step()
    try:
        world = app.layout.world
        placed = []
        for name, frac in (("left", 0.1), ("right", 0.85)):
            png = tmp_path / f"{name}.png"
            Image.new("RGB", (32, 24), (40, 160, 90)).save(png)
            pos = (world.x + round(frac * world.w), world.bottom - 3)
            assert not app.character_at(pos)  # on the ground, not on a character
            app.step([pygame.event.Event(pygame.MOUSEMOTION, pos=pos, rel=(0, 0), buttons=(0, 0, 0)),
                      pygame.event.Event(pygame.DROPFILE, file=str(png))])
            (obj,) = [o for o in session.state.objects.values() if o.get("image") == str(png.resolve())]
            placed.append(float(obj["x"]) - session.state.camera_x)
        assert placed == [pytest.approx(0.1, abs=0.01), pytest.approx(0.85, abs=0.01)]
    finally:
        app.close()

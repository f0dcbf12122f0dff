"""The ending card shows the ending scene's authored title ("Brann's share"), not its id
title-cased ("Brann S Share"); an ending with no title shows its id title-cased ("Walked Home")."""

from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pygame  # noqa: E402
import pytest  # noqa: E402

from game.app import overlays  # noqa: E402
from game.app.app import App  # noqa: E402
from game.inputs.channels import Channels  # noqa: E402
from game.inputs.meaning import LexicalEmbedder, Resolver  # noqa: E402
from game.session import Session  # noqa: E402
from game.story.loader import load_story  # noqa: E402
from game.world.backends.null import NullBackend  # noqa: E402

STORY = """\
id: share
title: Share
start: quay
locations:
  quay: {name: The Quay, palette: dusk}
scenes:
  quay:
    location: quay
    lines: ["The boats are in."]
    choices:
      - {id: row, text: Row out with Brann, goto: brann_s_share}
      - {id: walk, text: Walk home, goto: walked_home}
  brann_s_share:
    title: Brann's share
    location: quay
    ending: brann_s_share
    lines: ["Your share is heavy."]
  walked_home:
    location: quay
    ending: walked_home
    lines: ["You walk home."]
"""


@pytest.mark.parametrize(("choice", "title"), [("row", "Brann's share"), ("walk", "Walked Home")])
def test_the_ending_card_shows_the_authored_title(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  choice: str, title: str) -> None:
    (tmp_path / "story.yaml").write_text(STORY)
    story = load_story(tmp_path)
    session = Session(story, NullBackend(), save_dir=tmp_path / "s")
    drawn: list[str] = []
    real = overlays.paint.text

    def spy(surface: pygame.Surface, face: Any, value: str, *args: Any, **kw: Any) -> pygame.Rect:
        drawn.append(value)
        return real(surface, face, value, *args, **kw)

    pygame.display.init()
    app = App(session, (640, 360), screen=pygame.Surface((640, 360)), threaded=False, audio=False,
              channels=Channels(session, Resolver(story, LexicalEmbedder())))
    try:
        app.start()
        assert app.choose(1 if choice == "row" else 2)
        for _ in range(200):  # the ending's line is read to its end (the card waits for it)
            app.reader.advance()
            app.step([], dt=0.05)
            if not app.reader.more:
                break
        assert session.view().ending
        monkeypatch.setattr(overlays.paint, "text", spy)
        app.draw()
    finally:
        app.close()
        session.close()
    assert title in drawn
    assert "Brann S Share" not in drawn

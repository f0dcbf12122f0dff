"""While the player types a line in the window, the line so far goes to the cast room at each word's end
(so the dialogue model encodes it ahead, game.cast.castroom.Castroom.typing), never per key, never with an
empty line, and off the window's thread."""

from __future__ import annotations

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

import threading  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pygame  # noqa: E402

from tests.app.test_window_channels import key, make_app  # noqa: E402


class Cast:
    """A cast extension recording what the window hands it while the player types."""

    def __init__(self) -> None:
        self.typed: list[tuple[str, str | None, str]] = []
        self.done = threading.Event()

    def save_extra(self) -> dict[str, Any]:
        return {}

    def restore_extra(self, data: dict[str, Any] | None) -> Callable[[], None]:
        return lambda: None

    def typing(self, text: str, target: str | None = None) -> int:
        self.typed.append((text, target, threading.current_thread().name))
        self.done.set()
        return 1


def test_the_line_so_far_goes_to_the_cast_room_at_each_words_end(mini_path: Path, tmp_path: Path) -> None:
    cast = Cast()
    app, _ = make_app(mini_path, tmp_path, extensions={"cast": cast})
    try:
        app.step([key(pygame.K_RETURN), pygame.event.Event(pygame.TEXTINPUT, text=" ")])  # nothing typed yet
        app.step([pygame.event.Event(pygame.TEXTINPUT, text=c) for c in "Who"])
        assert not cast.typed  # not per key, and not the word still being typed
        app.step([pygame.event.Event(pygame.TEXTINPUT, text=" ")])
        assert cast.done.wait(10)
        text, target, thread = cast.typed[0]
        assert text == " Who " and target is None
        assert thread != threading.current_thread().name  # the window does not wait for it
        cast.done.clear()
        app.step([pygame.event.Event(pygame.TEXTINPUT, text=c) for c in "taught "])
        assert cast.done.wait(10)
        assert [t for t, _, _ in cast.typed] == [" Who ", " Who taught "]
    finally:
        app.close()

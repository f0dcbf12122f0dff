"""The window opens at once and draws a loading screen while the game is built (a living
character's models take tens of seconds on a CPU), keeps pumping events, and keeps what the
player types meanwhile: lines sent with Enter are said once the game is ready, in order, and
an unfinished line is put back in the text line."""

from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import threading  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pygame  # noqa: E402
import pytest  # noqa: E402

import game.app.window as window  # noqa: E402
from game.app import paint  # noqa: E402
from game.app.app import App  # noqa: E402
from game.errors import StoryError  # noqa: E402
from game.session import Game, open_game  # noqa: E402

WINDOW = (640, 360)
WAIT = 60.0  # generous: a loaded machine; the test fails fast if the screen never draws


class _Spy:
    """Counts the loading screen's draws and keeps a copy of the screen at each."""

    def __init__(self) -> None:
        self.draws = 0
        self.shots: list[np.ndarray] = []
        self.drawn = threading.Condition()

    def __call__(self, loading: Any, surface: pygame.Surface, fonts: Any) -> None:
        loading.draw(surface, fonts)
        with self.drawn:
            self.draws += 1
            self.shots.append(pygame.surfarray.array3d(surface).copy())
            self.drawn.notify_all()

    def wait_for(self, n: int) -> None:
        with self.drawn:
            assert self.drawn.wait_for(lambda: self.draws >= n, WAIT), "the loading screen was not drawn"


class _Recording(App):
    """The window's App, recording the lines it is asked to say (no model runs)."""

    made: list[_Recording] = []

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.said: list[str] = []
        _Recording.made.append(self)

    def say(self, text: str) -> bool:
        self.said.append(text)
        return True


def _post_text(text: str) -> None:
    pygame.event.post(pygame.event.Event(pygame.TEXTINPUT, text=text))


def _post_key(key: int) -> None:
    pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=key, mod=0, unicode="", scancode=0))


def test_loading_screen_draws_at_once_and_keeps_what_is_typed(
        mini_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _Spy()
    seen: dict[str, Any] = {}

    def slow_open_game(story: Any, **kw: Any) -> Game:
        kw["progress"]("dialogue", "loading converted weights (cached)", 0.5)
        spy.wait_for(2)  # the window is up and drawn while the game is still being built
        seen["drawn_before_built"] = spy.draws
        seen["shot"] = spy.shots[-1]
        for ch in "hello":
            _post_text(ch)
        _post_key(pygame.K_RETURN)
        _post_text("and ")
        _post_text("you")
        spy.wait_for(spy.draws + 3)  # the loop pumped them while still loading
        kw.update(backend="null", dialogue=None, voice=False)
        return open_game(story, **kw)

    monkeypatch.setattr(window, "open_game", slow_open_game)
    monkeypatch.setattr(window, "draw_loading", spy)
    monkeypatch.setattr(window, "App", _Recording)
    _Recording.made.clear()
    code = window.run_window(mini_path, size=(192, 108), save_dir=tmp_path / "s", max_frames=3,
                             window_size=WINDOW, screenshot=tmp_path / "shot.png")
    assert code == 0
    assert seen["drawn_before_built"] >= 2
    shot = seen["shot"]  # (W, H, 3): the loading screen, not a blank window
    assert shot.shape[:2] == WINDOW
    assert shot.max(axis=2).mean() < 100, "the loading screen is dark, not a white window"
    bar = np.all(shot == np.array(paint.ACCENT, np.uint8), axis=2)
    assert bar.sum() > 50, "the dialogue model's progress bar is drawn"
    bright = shot.min(axis=2) > 200  # the title's letters
    assert bright[:, : WINDOW[1] // 3].sum() > 30
    app = _Recording.made[-1]
    assert app.said == ["hello"]  # the line sent while loading is said once the game is ready
    assert app.entry_text == "and you" and app.entry_focus  # the unfinished one is in the text line


def test_closing_the_window_while_loading_quits_at_once(
        mini_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _Spy()
    release = threading.Event()

    def never_ready(story: Any, **kw: Any) -> Game:
        spy.wait_for(1)
        pygame.event.post(pygame.event.Event(pygame.QUIT))
        release.wait(WAIT)
        raise StoryError("abandoned", where="test")

    monkeypatch.setattr(window, "open_game", never_ready)
    monkeypatch.setattr(window, "draw_loading", spy)
    try:
        assert window.run_window(mini_path, save_dir=tmp_path / "s", window_size=WINDOW) == 0
    finally:
        release.set()


def test_a_build_that_fails_raises_its_named_error(
        mini_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(story: Any, **kw: Any) -> Game:
        raise StoryError("no such scene 'x'", where="story.yaml:3")

    monkeypatch.setattr(window, "open_game", broken)
    with pytest.raises(StoryError, match="no such scene"):
        window.run_window(mini_path, save_dir=tmp_path / "s", window_size=WINDOW)

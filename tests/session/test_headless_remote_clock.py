"""Headless play guards a backend outside this process on the session's frame time, as the guard's
docstring says, so a loaded machine's slow loopback block is not called a hang; a backend in this
process keeps the default clock (its own CPU progress)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import game.headless as headless
from game.errorbank.clock import FrameClock, Worker
from game.session import open_game

STORY = str(Path(__file__).resolve().parents[2] / "stories" / "zero_mark")


def _clock_given(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **kw: Any) -> tuple[Any, Any]:
    """Play an empty script with ``kw``; the clock open_game got, and the game it built."""
    seen: dict[str, Any] = {}

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen["clock"] = kwargs.get("clock")
        kwargs.update(backend="null", backend_options=None)  # no server needed to see the clock
        seen["game"] = open_game(*args, **kwargs)
        return seen["game"]

    monkeypatch.setattr(headless, "open_game", spy)
    headless.play_headless(STORY, [], size=(64, 36), dialogue=None, voice=False, save_dir=tmp_path, **kw)
    return seen["clock"], seen["game"]


def test_a_remote_backend_is_guarded_on_frame_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clock, game = _clock_given(monkeypatch, tmp_path, backend="remote",
                               backend_options={"url": "ws://127.0.0.1:9"})
    assert isinstance(clock, FrameClock)
    watch = clock.watch(Worker())
    time.sleep(0.2)  # real time passing (a loaded machine) is not time on this clock
    assert watch.elapsed() == 0.0
    s = game.session
    assert clock.frames() == s.state.frame / s.caps.fps and s.state.frame > 0  # the session's frame time


def test_an_in_process_backend_keeps_the_default_clock(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clock, _ = _clock_given(monkeypatch, tmp_path, backend="null")
    assert clock is None  # open_game's default: WorkClock for a backend in this process

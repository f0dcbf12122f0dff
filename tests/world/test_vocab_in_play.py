"""In real play (the window and headless both build through ``open_game``) the procedural
painter maps a noun its vocabulary does not know to the nearest thing it draws, by meaning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from game.session.assembly import open_game
from game.world.backends.procedural import ProceduralBackend

STORY = """\
id: kettle
title: Kettle
start: kitchen
locations:
  kitchen: {name: Kitchen, palette: day, prompt: "a warm kitchen, a singing kettle"}
scenes:
  kitchen:
    location: kitchen
    lines: ["The kettle sings."]
"""


def test_open_game_maps_an_unknown_noun_by_meaning(tmp_path: Path, embedder: Any) -> None:
    (tmp_path / "story.yaml").write_text(STORY)
    game = open_game(tmp_path, size=(160, 90), dialogue=None, voice=False, save_dir=tmp_path / "saves")
    try:
        backend = game.session.backend
        assert isinstance(backend, ProceduralBackend)  # nothing stacked on it in this story
        game.session.start()
        chunk = next(iter(game.session.stream()))
        assert backend.layout is not None and backend.layout.get("stove") is not None  # the kettle's stove
        assert not any("singing kettle" in note for note in chunk.ignored)
    finally:
        game.close()

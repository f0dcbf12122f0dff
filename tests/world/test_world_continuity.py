"""Continuity: the world shows the new scene from the first frame of the chunk that changes it,
the loaded scene right after a load, and time of day never runs back by itself."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from game.session import Session
from game.state import Choose
from game.story import load_story
from game.world.backends.procedural import ProceduralBackend
from game.world.director import next_scenes, opening
from game.world.protocol import FrameChunk, Scene, SessionStart, WorldRequest

ROOT = Path(__file__).resolve().parents[2]


def session(tmp_path: Path) -> tuple[Session, ProceduralBackend]:
    b = ProceduralBackend(width=192, height=108)
    s = Session(load_story(ROOT / "stories" / "zero_mark"), b, seed=4, save_dir=tmp_path)
    s.start()
    list(s.stream())
    return s, b


def first_block(s: Session) -> FrameChunk:
    return next(iter(s.stream()))


def luma(frame: np.ndarray) -> float:
    return float((frame.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)).mean())


def test_the_first_frame_after_a_scene_change_shows_the_new_scene(tmp_path: Path) -> None:
    s, b = session(tmp_path)
    s.submit(Choose(choice_id="offer_kite"))
    assert s.state.scene == "kite_flight"
    chunk = first_block(s)
    assert b.layout is not None and {"kite", "creature"} <= b.layout.visible()
    assert luma(chunk.frames[0]) > 0.45 * luma(chunk.frames[-1])  # visible at once, not black
    s.submit(Choose(choice_id="run_with_it"))
    assert s.state.scene == "creek"
    first_block(s)
    assert {"creek", "stepping_stones"} <= b.layout.visible() and "ash_trees" not in b.layout.visible()


def test_after_a_load_the_first_block_draws_the_loaded_scene(tmp_path: Path) -> None:
    s, b = session(tmp_path)
    s.submit(Choose(choice_id="offer_kite"))
    list(s.stream())
    s.submit(Choose(choice_id="run_with_it"))
    list(s.stream())
    s.save("at_creek")
    s.submit(Choose(choice_id="follow_upstream"))
    list(s.stream())
    assert b.layout is not None and "oak" in b.layout.visible()
    s.load("at_creek")
    first_block(s)
    assert "creek" in b.layout.visible() and "oak" not in b.layout.visible()


def test_time_of_day_does_not_run_back_unless_loaded_or_edited() -> None:
    b = ProceduralBackend(width=96, height=54)
    b.start(SessionStart("s", 1, "p"))

    def draw(seq: int, time: str, event: str) -> tuple[float, tuple[str, ...]]:
        req = WorldRequest("s", seq, 12, "p", scene=Scene("hill", time_of_day=time), event=event)
        chunk = next(iter(b.generate(req)))
        return luma(chunk.frames[-1]), chunk.ignored

    night, _ = draw(1, "night", "scene")
    after, notes = draw(2, "dusk", "scene")  # a place's default dusk after moonrise
    assert abs(after - night) < 1.0 and any("kept night" in n for n in notes)
    dawn, notes = draw(3, "dawn", "scene")  # forward, to the next morning
    assert dawn > night + 20 and not notes
    loaded, _ = draw(4, "night", "load")  # a load puts the clock where the save was
    assert abs(loaded - night) < 1.0


def test_the_scenes_one_choice_away_are_painted_while_the_player_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    b = ProceduralBackend(width=96, height=54)
    b.start(SessionStart("s", 1, "p"))
    painted: list[tuple[str, str]] = []
    painter = b._painter  # the test watches which thread paints each stage
    build = painter.build_stage

    def watched(location: str, *args: object) -> object:
        painted.append((location, threading.current_thread().name))
        return build(location, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(painter, "build_stage", watched)
    oak = Scene("hollow", palette="hollow", time_of_day="night", setting="an old oak, hollow at its foot")
    room = Scene("kitchen", setting="a kitchen with a stove")
    here = WorldRequest("s", 1, 12, "p", scene=Scene("clearing", setting="an old stump"), ahead=(oak, room))
    list(b.generate(here))
    b.settle()
    assert {loc for loc, _ in painted} == {"clearing", "hollow", "kitchen"}
    list(b.generate(WorldRequest("s", 2, 12, "p", scene=oak)))
    assert b.layout is not None and {"oak", "hollow"} <= b.layout.visible()
    assert [t.startswith("paint-ahead") for loc, t in painted if loc != "clearing"] == [True, True]


def test_the_scenes_ahead_are_prepared_as_they_will_look_once_entered(tmp_path: Path) -> None:
    s, _ = session(tmp_path)
    s.submit(Choose(choice_id="offer_kite"))
    s.submit(Choose(choice_id="run_with_it"))
    assert s.state.scene == "creek"
    ahead = {sc.location + "/" + sc.time_of_day for sc in s.director.ahead(s.state)}
    assert "clearing/night" in ahead  # clearing_night sets the night on entry
    assert "hollow/night" in ahead


def test_the_opening_scenes_are_painted_while_the_game_opens(tmp_path: Path) -> None:
    from game.session.assembly import open_game

    game = open_game(ROOT / "stories" / "zero_mark", size=(96, 54), dialogue=None, voice=False,
                     save_dir=tmp_path, backend_options={"embed": None})
    try:
        b = game.session.backend
        assert isinstance(b, ProceduralBackend)
        b.settle()  # the window opens, the title shows
        painted = b._painter.backdrops_built
        scenes = opening(game.session.story, game.session.state)
        assert 2 <= painted <= len(scenes)  # the clearing, and the scenes one choice away (some share it)
        game.session.start()
        chunk = first_block(game.session)
        assert chunk.memory["backdrops_built"] == painted  # the first block painted no stage itself
        assert b.layout is not None and "stump" in b.layout.visible()
    finally:
        game.close()


def test_the_endings_outcomes_lead_to_are_painted_ahead_too(tmp_path: Path) -> None:
    s = Session(load_story(ROOT / "stories" / "gullhaven"), ProceduralBackend(width=96, height=54), seed=2,
                save_dir=tmp_path)
    s.start()
    ahead = next_scenes(s.story, s.state.scene)
    assert {"the_light_holds", "the_wreck", "brann_s_share", "cut_off"} <= set(ahead)  # by rule, from anywhere
    assert not next_scenes(s.story, "cut_off")  # an ending leads nowhere

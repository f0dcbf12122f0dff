"""What a newcomer saw wrong in the procedural world: the oak's crown cut flat at the top of the
hollow's frame, and "an hour before dusk" drawn as the blue hour with stars."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from game.state import Wait
from game.story import load_story
from game.story.runtime import StoryRuntime
from game.world.backends.landmarks import oak
from game.world.backends.palette import palette_for, resolve_look, resolve_time
from game.world.backends.procedural import ProceduralBackend
from game.world.director import Director

ROOT = Path(__file__).resolve().parents[2]
W, H = 320, 180


def _entered(story_id: str, scene_id: str, turns: int = 0) -> tuple[ProceduralBackend, Director, object, list]:
    story = load_story(ROOT / "stories" / story_id)
    rt = StoryRuntime(story)
    state = rt.new_state(3)
    rt.begin(state)
    events = list(rt.enter(state, scene_id, "goto"))
    for _ in range(turns):
        events = list(rt.apply(state, Wait(seconds=1.0)))
    backend = ProceduralBackend(width=W, height=H)
    director = Director(story, backend.capabilities(), "s")
    backend.start(director.session_start(rt.new_state(3), 3))
    return backend, director, state, events


def test_the_oak_s_crown_is_round_inside_its_picture_and_the_frame() -> None:
    look = resolve_look("forest", "night", "clear")
    spr = oak(300, look)
    cover = spr.alpha > 32
    assert not cover[0].any()  # nothing runs past the picture's top edge (it was cut flat there)
    rows = np.nonzero(cover.any(axis=1))[0]
    top_width = int(cover[rows[0]].sum())
    assert top_width < 0.25 * int(cover.sum(axis=1).max())  # a rounded crown, not a flat lid
    backend, director, state, events = _entered("zero_mark", "hollow")
    request = director.build(state, events, director.cause(events))
    next(iter(backend.generate(request)))
    oak_box = next(p.box for p in backend.layout.parts if p.name == "oak")
    assert oak_box[1] >= 2  # the crown's top is in the frame at the level look, with sky above it


def test_an_hour_before_dusk_is_drawn_without_stars_and_the_tide_brings_dusk() -> None:
    coast = palette_for("coast")
    for words in ("late afternoon", "an hour before dusk", "Golden  hour", "afternoon"):
        assert resolve_time(words, coast) == "golden", words
        assert resolve_look("coast", words, "clear").sky.stars == 0.0
    assert resolve_look("coast", "dusk", "clear").sky.stars > 0.0
    # Gullhaven opens "an hour before dusk": a low sun, no stars
    backend, director, state, events = _entered("gullhaven", "slipway")
    request = director.build(state, events, director.cause(events))
    assert resolve_time(request.scene.time_of_day, coast) == "golden"
    frame = next(iter(backend.generate(request))).frames[0]
    sky = frame[: H // 3].astype(float) @ np.array([0.299, 0.587, 0.114])
    assert sky.mean() > 110  # a lit evening sky, not the blue hour's dark top
    # once the tide turns (8 turns before high water) the sun is down: dusk
    _, director, state, events = _entered("gullhaven", "quay", turns=9)
    request = director.build(state, events, director.cause(events))
    assert resolve_time(request.scene.time_of_day, coast) == "dusk"

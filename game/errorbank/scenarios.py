"""Request sequences for measuring the monitors: varied good play, and the night-then-pans case.

Used by the tests (false-positive rate on good chunks), by ``bench/drift.py`` and
by anyone calibrating a new backend: the requests look like what the
:class:`~game.world.director.Director` sends (a location, its time of day and
weather, characters with reaction states, items, camera pans, scene cuts, the
global and current sink anchors), drawn from a seeded generator.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from game.state.events import Event
from game.state.gamestate import REACTIONS, GameState
from game.world.director import Director
from game.world.protocol import Anchor, Entity, Scene, WorldRequest

LOCATIONS = (("clearing", "dusk"), ("creek", "creek"), ("hollow", "hollow"), ("meadow", "day"), ("ridge", "night"))
TIMES = ("dawn", "day", "dusk", "night")
WEATHERS = ("clear", "clear", "rain", "snow", "fog")
#: A character's drawn reaction state: one of the state's reactions (:data:`~game.state.gamestate.REACTIONS`,
#: the one list lint allows and the world draws), ``idle`` twice as often as each other one.
STATES = ("idle", *REACTIONS)
GLOBAL_ANCHORS = (Anchor("world.style", "text", "style", "painterly nature film, soft gouache textures"),
                  Anchor("char.creature", "text", "character", "a small horned creature, fawn-grey fur"))


def current_anchor(scene: Scene) -> Anchor:
    """The current-sink anchor of ``scene`` (the location as it now is), as the Director builds it."""
    extra = f", {scene.weather}" if scene.weather not in ("", "clear") else ""
    return Anchor(f"location.{scene.location}", "text", "location",
                  f"{scene.location}, at {scene.time_of_day}{extra}", tier="sink_current")


def make_request(seq: int, scene: Scene, *, min_frames: int = 12, camera_x: float = 0.0, camera_dx: float = 0.0,
                 switch_mode: str | None = None, event: str = "move", session_id: str = "s",
                 actions: tuple[str, ...] = ()) -> WorldRequest:
    """A request as the Director would send it for ``scene`` (prompt, anchors, tiers)."""
    prompt = f"painterly nature film. {scene.location}, at {scene.time_of_day}, {scene.weather}. " + ". ".join(
        f"{e.name} {e.state}" for e in scene.entities)
    return WorldRequest(session_id=session_id, seq=seq, min_frames=min_frames, prompt=prompt,
                        switch_mode=switch_mode,  # type: ignore[arg-type]
                        scene=scene, actions=actions, camera_x=camera_x, camera_dx=camera_dx, event=event,
                        event_id=scene.location, anchors=GLOBAL_ANCHORS + (current_anchor(scene),),
                        tiers={"anchors.global": "sink_global", "anchors.current": "sink_current"})


def _entities(gen: np.random.Generator, camera_x: float) -> tuple[Entity, ...]:
    out = [Entity("creature", "character", "the creature", "a small horned creature, fawn-grey fur",
                  x=camera_x + float(gen.uniform(0.3, 0.7)), state=str(gen.choice(STATES)))]
    if gen.random() < 0.5:
        out.append(Entity("heron", "character", "the heron", "a tall grey heron",
                          x=camera_x + float(gen.uniform(0.2, 0.8))))
    if gen.random() < 0.6:
        out.append(Entity("kite", "item", "red kite", "a red paper diamond kite",
                          x=camera_x + float(gen.uniform(0.2, 0.8))))
    return tuple(out)


def good_requests(n: int, seed: int = 0, *, min_frames: int = 12, session_id: str = "s") -> Iterator[WorldRequest]:
    """``n`` requests of varied good play: every few requests a scene cut to another
    location, time and weather; in between camera pans (both ways, several speeds),
    still shots, reaction states and weather changes. ``seq`` counts from 1."""
    gen = np.random.default_rng(seed)
    camera = 0.0
    scene = Scene("clearing", "dusk")
    for seq in range(1, n + 1):
        switch: str | None = None
        event = "move"
        if seq == 1 or gen.random() < 0.15:
            loc, palette = LOCATIONS[int(gen.integers(len(LOCATIONS)))]
            scene = Scene(loc, palette, str(gen.choice(TIMES)), str(gen.choice(WEATHERS)), _entities(gen, camera))
            switch, event = ("scene_cut" if gen.random() < 0.5 else "recache"), "scene"
        elif gen.random() < 0.2:
            scene = replace(scene, weather=str(gen.choice(WEATHERS)), entities=_entities(gen, camera))
            switch, event = "plain", "action"
        dx = float(gen.choice([0.0, 0.0, 1 / 240, -1 / 240, 1 / 60, -1 / 60, 1 / 30]))
        yield make_request(seq, scene, min_frames=min_frames, camera_x=camera, camera_dx=dx, switch_mode=switch,
                           event=event, session_id=session_id)
        camera += dx * min_frames


def night_then_pans(n_pans: int = 200, *, min_frames: int = 12, session_id: str = "s") -> Iterator[WorldRequest]:
    """The player asks for night (a ``plain`` switch to night, light rain), then ``n_pans``
    requests of camera pans, alternating direction every 10 requests."""
    ents = (Entity("creature", "character", "the creature", "a small horned creature", x=0.5),)
    night = Scene("clearing", "dusk", "night", "clear", ents)
    yield make_request(1, Scene("clearing", "dusk", "dusk", "clear", ents), min_frames=min_frames,
                       switch_mode="scene_cut", event="scene", session_id=session_id)
    yield make_request(2, night, min_frames=min_frames, switch_mode="plain", event="action", session_id=session_id)
    camera = 0.0
    for i in range(n_pans):
        dx = (1 / 60) * (1 if (i // 10) % 2 == 0 else -1)
        yield make_request(3 + i, night, min_frames=min_frames, camera_x=camera, camera_dx=dx,
                           session_id=session_id)
        camera += dx * min_frames


def session_requests(frames: int, *, block: int = 12, fps: float = 24.0, seed: int = 0,
                     session_id: str = "s") -> Iterator[WorldRequest]:
    """Requests covering ``frames`` frames of a calm session, as ``bench/drift.py`` plays it:
    turns of 1-4 s (pans both ways, still shots, reactions), a new location every 15-25 s
    (a ``recache`` or ``scene_cut``), and the player changing the time or weather every
    20-40 s (``plain`` switch: night, rain...). ``min_frames`` are whole blocks."""
    gen = np.random.default_rng(seed)
    loc, palette = LOCATIONS[0]
    scene = Scene(loc, palette, "dusk", "clear", _entities(gen, 0.0))
    camera, done, seq = 0.0, 0, 0
    next_place = int(fps * gen.uniform(15, 25))
    next_world = int(fps * gen.uniform(20, 40))
    while done < frames:
        seq += 1
        switch: str | None = "scene_cut" if seq == 1 else None
        event = "scene" if seq == 1 else "move"
        if done >= next_place:
            loc, palette = LOCATIONS[int(gen.integers(len(LOCATIONS)))]
            scene = Scene(loc, palette, scene.time_of_day, scene.weather, _entities(gen, camera))
            switch, event = ("scene_cut" if gen.random() < 0.5 else "recache"), "scene"
            next_place = done + int(fps * gen.uniform(15, 25))
        elif done >= next_world:
            scene = replace(scene, time_of_day=str(gen.choice(TIMES)), weather=str(gen.choice(WEATHERS)))
            switch, event = "plain", "action"
            next_world = done + int(fps * gen.uniform(20, 40))
        elif gen.random() < 0.3:
            ents = tuple(replace(e, state=str(gen.choice(STATES))) if e.kind == "character" else e
                         for e in scene.entities)
            scene = replace(scene, entities=ents)
        n = min(frames - done, block * int(gen.integers(2, 9)))
        n = max(block, -(-n // block) * block)
        dx = float(gen.choice([0.0, 1 / 120, -1 / 120, 1 / 60, -1 / 60]))
        yield make_request(seq, scene, min_frames=n, camera_x=camera, camera_dx=dx, switch_mode=switch, event=event,
                           session_id=session_id)
        camera += dx * n
        done += n


def story_walk(director: Director, *, blocks: int = 3, min_frames: int = 12) -> Iterator[WorldRequest]:
    """Requests of a walk through every scene of ``director``'s story, as its Director builds them:
    per scene a cut into it (its place, setting, time, weather, light and the characters it
    shows), then ``blocks - 1`` blocks panning right and back. The good chunks of a real story
    (interiors, settings, lamps) that :func:`good_requests`' made-up places do not cover."""
    model = director.story.model
    for sid, scene in model.scenes.items():
        state = GameState(story_id=director.story.id, scene=sid, location=scene.location)
        events = [Event(kind="scene", scene=sid, ids={"scene": sid}, data={"cut": True})]
        cut = director.build(state, events, director.cause(events))
        yield replace(cut, min_frames=min_frames)
        for k in range(1, blocks):
            start = state.camera_x
            state = state.model_copy(update={"camera_x": start + (0.1 if k % 2 else -0.1)})
            pan = director.build(state, [], director.cause([], "move", direction="d" if k % 2 else "a",
                                                            camera_from=start))
            yield replace(pan, min_frames=min_frames)

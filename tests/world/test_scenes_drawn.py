"""Every demo scene draws what its text names: the painter's layout record of its first block.

Each scene of The Zero Mark, The Keeper of Skerrow and Gullhaven is reached by playing its
story (breadth-first over choices and exits), its first request is built by the
Director and drawn by the procedural backend at a small size, and the layout
record of the first frame must hold every landmark, prop and character the
scene's text names, inside the frame and not covered.
"""

from __future__ import annotations

import json
from collections import deque
from functools import cache
from pathlib import Path

import pytest

from game.state import Choose, Event, GameState, Move
from game.story import load_story
from game.story.runtime import StoryRuntime
from game.world.backends.layout import Layout
from game.world.backends.procedural import ProceduralBackend
from game.world.director import Director

ROOT = Path(__file__).resolve().parents[2]
W, H = 240, 135

#: What each scene's text names (read from stories/*/: lines, location prompts).
NAMED: dict[str, dict[str, set[str]]] = {
    "zero_mark": {
        "clearing": {"ash_trees", "stump", "bracken", "creature"},
        "kite_flight": {"ash_trees", "creature", "kite"},
        "leaf_fallen": {"bracken", "creature", "leaf"},
        "creek": {"creek", "stepping_stones", "reeds", "creature"},
        "clearing_night": {"stump", "bracken", "ash_trees", "creature"},
        "hollow": {"oak", "hollow", "leaf_bed", "creature"},
        "nest": {"oak", "hollow", "leaf_bed", "creature"},
        "moonrise": {"oak", "hollow", "creature"},
        "ending_marked": {"oak", "hollow", "creature"},
        "ending_unmarked": {"ash_trees"},
        "ending_gone": {"creek", "reeds"},
    },
    "eve": {
        "spine": {"causeway", "sea", "lighthouse"},
        "kitchen": {"kitchen", "stove", "table", "window", "eve"},
        "glasshouse": {"glasshouse", "plants", "eve"},
        "watchroom": {"watch_room", "chart", "desk", "window", "eve"},
        "gallery": {"railing", "sea", "eve"},
        "lantern": {"lantern_room", "lens", "eve"},
        "letter": {"lantern_room", "lens", "eve"},
        "dawn": {"causeway", "sea", "eve"},
    },
    "gullhaven": {
        "slipway": {"sea"},
        "quay": {"sea", "ysolde", "brann"},
        "net_shed": {"hut", "nets", "table"},
        "inn": {"hut", "campfire"},
        "causeway": {"causeway", "sea"},
        "tower_base": {"lighthouse"},
        "lamp_room": {"lantern_room", "lens", "window"},
        "the_light_holds": {"lighthouse", "beam", "sea"},
        "the_wreck": {"causeway", "sea"},
        "brann_s_share": {"sea"},
        "cut_off": {"causeway", "sea"},
    },
}


#: Scenes a breadth-first search reaches only after many turns of talk: the scene they open from,
#: the relationship that opens them, and the choice.
DEEP: dict[str, dict[str, tuple[str, dict[str, dict[str, float]], str]]] = {
    "eve": {"letter": ("lantern", {"eve": {"trust": 6.0, "affinity": 4.0}}, "open_bottle")},
}
#: Endings the clock or an outcome opens (not a choice): entered from the scene they end in.
ENDED: dict[str, dict[str, str]] = {
    "gullhaven": {"the_wreck": "causeway", "brann_s_share": "quay", "cut_off": "causeway"},
}


def _key(state: GameState) -> str:
    return json.dumps([state.scene, state.variables, state.holders, state.relationships, state.inventory],
                      sort_keys=True, default=str)


@cache
def reached(story_id: str) -> dict[str, tuple[GameState, tuple[Event, ...]]]:
    """The first way into each scene found breadth-first over choices and exits: the state and the
    events of that turn (a scene behind a long climb of trust, :data:`DEEP`, from its door)."""
    story = load_story(ROOT / "stories" / story_id)
    rt = StoryRuntime(story)
    start = rt.new_state(3)
    events = rt.begin(start)
    found: dict[str, tuple[GameState, tuple[Event, ...]]] = {start.scene: (start.copy_state(), tuple(events))}
    queue = deque([(start, 0)])
    seen = {_key(start)}
    while queue and len(found) < len(story.model.scenes):
        state, depth = queue.popleft()
        if depth >= 12 or rt.is_ending(state):
            continue
        scene = story.model.scenes[state.scene]
        intents = [Choose(choice_id=c.id) for c in rt.available_choices(state)]
        intents += [Move(direction=d, seconds=0.5) for d in scene.exits]
        for intent in intents:
            nxt = state.copy_state()
            evs = rt.apply(nxt, intent)
            if nxt.scene not in found and nxt.scene != state.scene:
                found[nxt.scene] = (nxt.copy_state(), tuple(evs))
            k = _key(nxt)
            if k not in seen:
                seen.add(k)
                queue.append((nxt, depth + 1))
    for scene_id, (door, rel, choice) in DEEP.get(story_id, {}).items():
        state = found[door][0].copy_state()
        for who, axes in rel.items():
            state.relationships[who].update(axes)
        found[scene_id] = (state, tuple(rt.apply(state, Choose(choice_id=choice))))
    for scene_id, door in ENDED.get(story_id, {}).items():
        if scene_id not in found:
            state = found[door][0].copy_state()
            found[scene_id] = (state, tuple(rt.enter(state, scene_id, "goto")))
    return found


@cache
def _world(story_id: str) -> tuple[ProceduralBackend, Director]:
    story = load_story(ROOT / "stories" / story_id)
    backend = ProceduralBackend(width=W, height=H)
    director = Director(story, backend.capabilities(), "s")
    backend.start(director.session_start(StoryRuntime(story).new_state(3), 3))
    return backend, director


def first_layout(story_id: str, scene_id: str) -> tuple[Layout, tuple[str, ...]]:
    """The layout of the first frame of the scene's first block, and the backend's notes."""
    backend, director = _world(story_id)
    state, events = reached(story_id)[scene_id]
    request = director.build(state, list(events), director.cause(list(events)))
    chunk = next(iter(backend.generate(request)))
    assert chunk.frames.shape == (12, H, W, 3)
    assert backend.layout is not None
    return backend.layout, chunk.ignored


CASES = [(story, scene) for story, scenes in NAMED.items() for scene in scenes]


@pytest.mark.parametrize(("story_id", "scene_id"), CASES)
def test_each_demo_scene_draws_what_its_text_names(story_id: str, scene_id: str) -> None:
    layout, notes = first_layout(story_id, scene_id)
    shown = layout.visible()
    missing = NAMED[story_id][scene_id] - shown
    assert not missing, f"{story_id}/{scene_id}: not drawn or not visible: {sorted(missing)}; notes {notes}"


def test_every_scene_of_both_demos_is_covered() -> None:
    for story_id, scenes in NAMED.items():
        story = load_story(ROOT / "stories" / story_id)
        assert set(scenes) == set(story.model.scenes)
        assert set(reached(story_id)) == set(story.model.scenes)


def test_the_kite_flies_high_on_its_string_when_flown() -> None:
    layout, _ = first_layout("zero_mark", "kite_flight")
    kite, creature = layout.get("kite"), layout.get("creature")
    assert kite is not None and creature is not None and kite.visible
    assert kite.box[3] < creature.box[1]  # wholly above the creature
    assert kite.box[1] < 0.35 * H  # up in the sky


def test_inside_is_a_room_and_outside_is_not() -> None:
    kitchen, _ = first_layout("eve", "kitchen")
    spine, _ = first_layout("eve", "spine")
    assert kitchen.get("kitchen") is not None and kitchen.get("sea") is None
    assert spine.get("kitchen") is None and spine.get("sea") is not None


def test_the_kite_that_got_away_lies_in_the_reeds_not_in_the_creatures_mouth() -> None:
    story = load_story(ROOT / "stories" / "zero_mark")
    rt = StoryRuntime(story)
    state = rt.new_state(3)
    rt.begin(state)
    rt.apply(state, Choose(choice_id="offer_kite"))
    events = rt.apply(state, Choose(choice_id="call_it_back"))
    assert state.scene == "creek" and "kite" not in state.holders
    backend, director = _world("zero_mark")
    next(iter(backend.generate(director.build(state, events, director.cause(events)))))
    assert backend.layout is not None
    kite, reeds = backend.layout.get("kite"), backend.layout.get("reeds")
    assert kite is not None and reeds is not None and kite.visible
    assert reeds.box[0] <= (kite.box[0] + kite.box[2]) / 2 <= reeds.box[2]  # down among the reeds

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
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from game.state import Choose, Event, GameState, Give, Move
from game.story import load_story
from game.story.runtime import StoryRuntime
from game.world.backends.landmarks import ash_trees
from game.world.backends.layout import Layout
from game.world.backends.palette import resolve_look
from game.world.backends.procedural import ProceduralBackend
from game.world.director import Cause, Director

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
        "nest": {"oak", "hollow", "creature"},  # it lies on its leaf bed (drawn, under it)
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
        "slipway": {"sea", "lighthouse", "cobles", "lobster_pots"},
        "quay": {"sea", "ysolde", "brann", "cobles", "lobster_pots"},
        "net_shed": {"hut", "nets", "table"},
        "inn": {"hut", "campfire"},
        "causeway": {"causeway", "sea"},
        "tower_base": {"tower_foot"},
        "lamp_room": {"lantern_room", "lens", "window"},
        "the_light_holds": {"tower_foot", "beam", "sea"},
        "the_wreck": {"causeway", "sea"},
        "brann_s_share": {"sea", "cobles", "lobster_pots"},
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


def first_frame(story_id: str, scene_id: str) -> tuple[np.ndarray, Layout]:
    """Frame 6 of the scene's first block (after a cut's fade) and its layout record."""
    backend, director = _world(story_id)
    state, events = reached(story_id)[scene_id]
    chunk = next(iter(backend.generate(director.build(state, list(events), director.cause(list(events))))))
    assert backend.layout is not None
    return chunk.frames[6], backend.layout


def _part(layout: Layout, name: str) -> tuple[int, int, int, int]:
    part = layout.get(name)
    assert part is not None and part.visible, f"{name} not drawn or not visible: {layout.parts}"
    return part.box


def test_the_creature_waits_by_the_old_stump() -> None:
    # "By the old stump: two short horns": the creature stands beside the stump, not across the clearing
    layout, _ = first_layout("zero_mark", "clearing")
    creature, stump = _part(layout, "creature"), _part(layout, "stump")
    gap = max(creature[0] - stump[2], stump[0] - creature[2], 0)
    assert gap <= 0.03 * W, (creature, stump)


def test_a_held_stone_is_smaller_than_the_head_that_holds_it() -> None:
    story = load_story(ROOT / "stories" / "zero_mark")
    rt = StoryRuntime(story)
    state = rt.new_state(3)
    rt.begin(state)
    events = rt.apply(state, Give(item_id="stone", character_id="creature"))
    assert state.holders.get("stone") == "creature"
    backend, director = _world("zero_mark")
    next(iter(backend.generate(director.build(state, events, director.cause(events)))))
    assert backend.layout is not None
    stone, creature = _part(backend.layout, "stone"), _part(backend.layout, "creature")
    # its head is about half its height: a stone worn smooth in a paw is a fraction of that
    assert stone[3] - stone[1] <= 0.25 * (creature[3] - creature[1]), (stone, creature)


def test_the_glasshouse_at_dusk_shows_a_dusk_sky_through_its_glass() -> None:
    frame, layout = first_frame("eve", "glasshouse")
    x0, y0, x1, y1 = _part(layout, "window")
    top = frame[max(0, y0):y0 + (y1 - y0) // 4, max(0, x0):min(W, x1)].reshape(-1, 3).astype(float)
    luma = float((top @ np.array([0.299, 0.587, 0.114])).mean())
    assert luma < 100, f"the glass shows a day sky (luma {luma:.0f}) at dusk"


def test_a_lamp_the_text_calls_unlit_or_dark_is_not_lit() -> None:
    slipway, _ = first_layout("gullhaven", "slipway")  # "the lighthouse stands on its rock, unlit"
    assert slipway.get("lighthouse") is not None and slipway.get("lit_lamp") is None
    spine, _ = first_layout("eve", "spine")  # Skerrow's light at dusk burns
    assert spine.get("lit_lamp") is not None
    lamp_room, _ = first_layout("gullhaven", "lamp_room")  # "the great lens in the middle, dark and cold"
    assert lamp_room.get("lens") is not None and lamp_room.get("lit_lamp") is None
    lantern, _ = first_layout("eve", "lantern")
    assert lantern.get("lit_lamp") is not None


def test_the_tower_is_seen_from_its_foot() -> None:
    layout, _ = first_layout("gullhaven", "tower_base")  # "The white tower goes up into the haze"
    foot = _part(layout, "tower_foot")
    assert layout.get("lighthouse") is None  # not the far tower on its island
    assert foot[1] < 0 and foot[3] >= 0.75 * H  # from the ground out of the top of the frame


def test_brann_has_his_beard_and_ysolde_none() -> None:
    layout, _ = first_layout("gullhaven", "quay")
    brann, beard = _part(layout, "brann"), _part(layout, "brann.beard")
    assert brann[0] <= beard[0] and beard[2] <= brann[2]
    assert brann[1] <= beard[1] and beard[3] <= brann[1] + 0.3 * (brann[3] - brann[1])  # on his face
    assert layout.get("ysolde.beard") is None


def test_the_ash_trees_are_a_stand_of_leafy_trees_not_one_ball_on_a_stick() -> None:
    layout, _ = first_layout("zero_mark", "clearing")
    x0, y0, x1, y1 = _part(layout, "ash_trees")
    assert x1 - x0 >= 0.8 * (y1 - y0)  # a stand, as wide as it is tall
    spr = ash_trees(200, resolve_look("dusk", "day", "clear"))
    solid = spr.alpha > 128
    trunks = np.diff(solid[int(0.9 * spr.height)].astype(np.int8)) == 1  # where a trunk starts, near the ground
    assert int(trunks.sum()) >= 3
    crown = solid[: int(0.45 * spr.height)]
    rows, cols = np.nonzero(crown)
    box = crown[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    assert box.mean() < 0.75  # sprays of leaf with sky between them, not one filled disc
    leaves = spr.rgb[: int(0.45 * spr.height)][crown].astype(int)
    assert (leaves[:, 1] > leaves[:, 0]).mean() > 0.8 and (leaves[:, 1] > leaves[:, 2]).mean() > 0.8  # green


def test_the_moon_rises_in_the_story_not_before() -> None:
    # no moon over the clearing at nightfall; at the oak it is rising on the hill; at "moonrise" it has cleared it
    night, _ = first_layout("zero_mark", "clearing_night")
    assert night.get("moon") is None
    hollow, _ = first_layout("zero_mark", "hollow")
    moonrise, _ = first_layout("zero_mark", "moonrise")
    rising, risen = _part(hollow, "moon"), _part(moonrise, "moon")
    assert rising[3] - rising[1] < 0.7 * (rising[2] - rising[0])  # half behind the hill
    assert risen[3] - risen[1] >= 0.9 * (risen[2] - risen[0]) and risen[3] < rising[1]  # whole, and higher


def _idle_block(story_id: str, scene_id: str) -> Layout:
    """The layout of a block in the scene once its entering reaction is over (every entity idle)."""
    backend, director = _world(story_id)
    state, _ = reached(story_id)[scene_id]
    request = director.build(state, [], Cause("idle"))
    request = replace(request, scene=replace(request.scene, entities=tuple(
        replace(e, state="idle") if e.kind == "character" else e for e in request.scene.entities)))
    next(iter(backend.generate(request)))
    assert backend.layout is not None
    return backend.layout


def test_the_creature_leaps_after_the_kite_even_once_its_joy_has_settled() -> None:
    _, notes = first_layout("zero_mark", "kite_flight")
    assert not [n for n in notes if "leaping" in n]  # "the creature leaping after it" is read, not reported
    layout = _idle_block("zero_mark", "kite_flight")
    assert layout.poses["creature"] == "leap"
    clearing = _idle_block("zero_mark", "clearing")  # no leaping in the clearing's words
    assert clearing.poses["creature"] != "leap"


def test_in_the_hollow_it_lies_down_on_the_kite() -> None:
    # "It climbs on, turns three times, and lies down on the kite": the kite is spread in the oak's
    # door over the old leaves, and the creature lies on it
    story = load_story(ROOT / "stories" / "zero_mark")
    rt = StoryRuntime(story)
    state = rt.new_state(3)
    rt.begin(state)
    for choice in ("offer_kite", "run_with_it"):
        rt.apply(state, Choose(choice_id=choice))
    rt.apply(state, Move(direction="w", seconds=0.5))
    events = rt.apply(state, Choose(choice_id="fold_kite"))
    assert state.scene == "nest" and state.holders.get("kite") == "creature"
    backend, director = _world("zero_mark")
    next(iter(backend.generate(director.build(state, events, director.cause(events)))))
    layout = backend.layout
    assert layout is not None and layout.poses["creature"] == "lie"
    names = [p.name for p in layout.parts]
    assert names.index("leaf_bed") < names.index("kite") < names.index("creature")  # leaves, kite, creature
    hollow, kite, creature = _part(layout, "hollow"), _part(layout, "kite"), _part(layout, "creature")
    assert hollow[0] <= (creature[0] + creature[2]) / 2 <= hollow[2]  # in the door of the oak
    assert kite[0] <= (creature[0] + creature[2]) / 2 <= kite[2] and kite[1] < creature[3] < kite[3]  # on it
    assert kite[2] - kite[0] > hollow[2] - hollow[0]  # "the kite is wider than the door"


def test_rain_runs_down_the_watch_room_windows() -> None:
    layout, _ = first_layout("eve", "watchroom")  # "a logbook open under a brass lamp, rain on the windows"
    rain, window = _part(layout, "rain_on_glass"), _part(layout, "window")
    assert window[0] <= rain[0] and rain[2] <= window[2] and window[1] <= rain[1] and rain[3] <= window[3]
    kitchen, _ = first_layout("eve", "kitchen")  # a dry evening at the kitchen window
    assert kitchen.get("rain_on_glass") is None


def test_gulls_wheel_in_the_sky_at_dawn() -> None:
    layout, _ = first_layout("eve", "dawn")  # "the tide drawn back, gulls"
    gulls, sea = _part(layout, "gulls"), _part(layout, "sea")
    assert gulls[3] <= sea[1]  # in the sky over the water
    kitchen, _ = first_layout("eve", "kitchen")  # the gull at the kitchen window is the room's own
    assert kitchen.get("gulls") is None


@pytest.mark.parametrize("scene_id", ["kitchen", "watchroom", "gallery", "lantern"])
def test_gifts_eve_holds_are_on_a_table_or_in_her_arms_not_on_the_floor(scene_id: str) -> None:
    state = reached("eve")[scene_id][0].copy_state()
    rt = StoryRuntime(load_story(ROOT / "stories" / "eve"))
    events: list[Event] = []
    for item in ("seaglass", "lemon", "lamp_oil"):
        events = rt.apply(state, Give(item_id=item, character_id="eve"))
    assert all(state.holders.get(i) == "eve" for i in ("seaglass", "lemon", "lamp_oil"))
    backend, director = _world("eve")
    next(iter(backend.generate(director.build(state, events, director.cause(events)))))
    layout = backend.layout
    assert layout is not None
    eve = _part(layout, "eve")
    surfaces = [p.box for p in layout.parts if p.name in ("table", "desk")]
    for item in ("seaglass", "lemon", "lamp_oil"):
        box = _part(layout, item)
        on_surface = any(s[0] <= (box[0] + box[2]) / 2 <= s[2] and abs(box[3] - s[1] - (s[3] - s[1]) * (
            0.43 if s == next((p.box for p in layout.parts if p.name == "desk"), None) else 0.0)) <= 2
            for s in surfaces)
        in_arms = box[3] <= eve[1] + 0.6 * (eve[3] - eve[1])  # above her knees
        assert on_surface or in_arms, f"{scene_id}: {item} at {box}, eve {eve}, surfaces {surfaces}"

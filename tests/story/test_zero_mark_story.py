"""The demo story "The Zero Mark" (stories/zero_mark) meets the interactive-film demo brief.

The brief: offering the creature the kite or the leaf gives clearly different
reactions (on screen, in sound, in text) and different continuations; the first
choice changes an event two or more scenes later; at least 8 scenes and 2 endings;
WASD exits between 3 locations; a free-text action; an ``on_give`` default whose
answer is remembered; every scene reachable, no dead ends but endings.
"""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from game.state import Choose, Event, GameState, Give, Move, Say
from game.story import Story, load_story
from game.story.runtime import StoryRuntime

STORY_DIR = Path(__file__).resolve().parents[2] / "stories" / "zero_mark"
REACTIONS = {"leap", "recoil", "nuzzle", "tilt", "idle", "sleep", "flee"}
CHUNK_HINTS = {"step", "short", "medium", "long", "cut"}

Intent = Choose | Give | Move | Say


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLDLOOM_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def story() -> Story:
    return load_story(STORY_DIR)


def play(story: Story, inputs: list[Intent], seed: int = 3) -> tuple[GameState, list[Event]]:
    rt = StoryRuntime(story)
    state = rt.new_state(seed)
    events = rt.begin(state)
    for intent in inputs:
        events += rt.apply(state, intent)
    return state, events


def scene_events(events: list[Event], scene: str) -> list[Event]:
    """Events that happened while in ``scene`` (its entry lines and what was done there)."""
    return [e for e in events if e.scene == scene]


def texts(events: list[Event]) -> list[str]:
    return [e.text for e in events if e.kind == "line"]


def reactions(events: list[Event], who: str = "creature") -> list[str]:
    return [e.data["reaction"] for e in events if e.kind == "reaction" and e.speaker == who]


def scene_path(events: list[Event]) -> list[str]:
    return [e.ids["scene"] for e in events if e.kind == "scene"]


# -- shape ---------------------------------------------------------------------------------
def test_loads_with_enough_scenes_and_endings(story: Story) -> None:
    m = story.model
    assert m.id == "zero_mark"
    assert len(m.scenes) >= 8
    endings = {s.ending for s in m.scenes.values() if s.ending}
    assert len(endings) >= 2
    assert {"kite", "leaf"} <= set(m.inventory)
    assert len(set(m.inventory)) >= 3, "a third item, for the on_give default to meet"


def test_cache_is_the_tmp_one(story: Story, tmp_path: Path) -> None:
    assert list((tmp_path / "cache").rglob("*.json")), "the validated story was cached under $WORLDLOOM_CACHE"
    again = load_story(STORY_DIR)
    assert again.digest == story.digest and again.model == story.model


def test_exits_connect_three_locations_with_wasd(story: Story) -> None:
    m = story.model
    links: dict[str, set[str]] = {}
    for scene in m.scenes.values():
        for key, exit_ in scene.exits.items():
            assert key in "wasd"
            assert exit_.goto in m.scenes
            target = m.scenes[exit_.goto].location
            if target != scene.location:
                links.setdefault(scene.location, set()).add(target)
    locations = set(links) | {t for ts in links.values() for t in ts}
    assert len(locations) >= 3
    palettes = {m.locations[loc].palette for loc in locations}
    assert len(palettes) >= 3, "each location looks different"
    for src in locations:  # every location reaches every other through exits
        seen, queue = {src}, deque([src])
        while queue:
            for nxt in links.get(queue.popleft(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        assert seen == locations, f"from {src} the exits reach only {seen}"


def test_has_an_action_and_an_on_give_default(story: Story) -> None:
    m = story.model
    actions = [a for s in m.scenes.values() for a in s.actions]
    assert actions and all(a.keywords and a.examples for a in actions)
    defaults = [t["default"] for t in m.on_give.values() if "default" in t]
    defaults += [t["default"] for s in m.scenes.values() for t in s.on_give.values() if "default" in t]
    assert defaults


def test_ids_lines_reactions_and_chunks_are_well_formed(story: Story) -> None:
    m = story.model
    choice_ids = [c.id for s in m.scenes.values() for c in s.choices]
    assert len(choice_ids) == len(set(choice_ids)), "choice ids are unique"
    line_ids = [story.line_id(sid, i, ln) for sid, s in m.scenes.items() for i, ln in enumerate(s.lines)]
    assert len(line_ids) == len(set(line_ids))
    for path, line in story.lines():
        assert len(line.text) < 140, (path, line.text)
        assert line.speaker in {"narrator", "player", *m.cast}
    for path, r in story.reactions():
        assert set(r.react.values()) <= REACTIONS, path
        assert r.chunk is None or r.chunk in CHUNK_HINTS, path
        assert not r.goto or r.goto in m.scenes, path
    for sid, scene in m.scenes.items():
        assert scene.location in m.locations, sid
        assert set(scene.present) <= set(m.cast), sid
    hints = {r.chunk for _, r in story.reactions()} | {s.chunk for s in m.scenes.values()}
    assert "long" in hints
    offer_kite = next(c for c in m.scenes[m.start].choices if c.id == "offer_kite")
    assert offer_kite.chunk is not None
    assert any(c.chunk == "long" for c in m.scenes["kite_flight"].choices) or m.scenes["kite_flight"].chunk == "long"


def test_interpolation_and_relationship_conditions_are_used(story: Story) -> None:
    m = story.model
    assert any("{" + v + "}" in line.text for _, line in story.lines() for v in m.variables)
    conds = [r.if_ for _, r in story.reactions() if r.if_] + [ln.if_ for _, ln in story.lines() if ln.if_]
    assert any("trust('creature')" in c for c in conds)
    assert any("affinity('creature')" in c for c in conds)
    effects = [e for _, r in story.reactions() for e in r.do]
    assert any(e.startswith("trust('creature')") for e in effects)
    assert any(e.startswith("affinity('creature')") for e in effects)


def test_art_exists_is_small_and_has_alpha(story: Story) -> None:
    m = story.model
    images = [it.image for it in m.items.values()] + [c.image for c in m.cast.values()]
    assert all(images)
    for rel in images:
        with Image.open(STORY_DIR / rel) as im:
            assert im.mode == "RGBA", rel
            assert im.width <= 128 and im.height <= 128, rel
            alpha = im.getchannel("A")
            assert alpha.getextrema() == (0, 255), f"{rel} has transparent and opaque parts"
    assert m.world.anchors
    for rel in m.world.anchors:
        with Image.open(STORY_DIR / rel) as im:
            assert im.size == (320, 180)
    assert (STORY_DIR / "assets" / "make_art.py").is_file()


# -- the graph -----------------------------------------------------------------------------
def test_every_scene_reachable_and_only_endings_are_dead_ends(story: Story) -> None:
    m = story.model
    graph: dict[str, set[str]] = {sid: set() for sid in m.scenes}
    for path, r in story.reactions():
        if r.goto and path[0] == "scenes":
            graph[str(path[1])].add(r.goto)
    seen, queue = {m.start}, deque([m.start])
    while queue:
        for nxt in graph[queue.popleft()]:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    assert seen == set(m.scenes)
    for sid, scene in m.scenes.items():
        if scene.ending:
            assert not scene.choices and not scene.exits
        else:
            # at least one unconditional, reusable way on
            ways = [c for c in scene.choices if c.goto and not c.if_ and not c.once]
            ways += [x for x in scene.exits.values() if not x.if_]
            assert ways, f"{sid} could strand the player"


def _moves(rt: StoryRuntime, state: GameState) -> list[Intent]:
    scene = rt.story.model.scenes[state.scene]
    out: list[Intent] = [Choose(choice_id=c.id) for c in rt.available_choices(state)]
    out += [Move(direction=d) for d, x in scene.exits.items() if rt.check(state, x.if_, "")]
    out += [Give(item_id=i, character_id=who) for i in sorted(set(state.inventory)) for who in scene.present]
    out += [Say(text=a.keywords[0], action_id=a.id) for a in scene.actions
            if not (a.once and state.chosen.get(a.id))]
    return out


def _key(state: GameState) -> str:
    """What the available moves depend on (lines may read more; moves never do)."""
    d: dict[str, Any] = state.to_json()
    return json.dumps([d["scene"], {k: v for k, v in d["variables"].items() if k != "stars"},
                       sorted(d["inventory"]), d["holders"], state.relationship("creature", "trust"),
                       sorted(k for k, v in d["chosen"].items() if v)], sort_keys=True)


def test_explore_every_input_no_state_is_stuck_and_every_ending_is_reached(story: Story) -> None:
    """Breadth-first over every possible input (choices, exits, gifts, actions) to a depth."""
    rt = StoryRuntime(story)
    start = rt.new_state(0)
    rt.begin(start)
    queue: deque[tuple[GameState, int]] = deque([(start, 0)])
    seen = {_key(start)}
    endings: set[tuple[str, str]] = set()
    visited: set[str] = set()
    while queue:
        state, depth = queue.popleft()
        visited.add(state.scene)
        if rt.is_ending(state):
            endings.add((state.scene, str(state.variables["first_gift"])))
            continue
        moves = _moves(rt, state)
        assert moves, f"stuck in {state.scene}"
        if depth >= 6:  # enough to reach every ending on both paths
            continue
        for intent in moves:
            nxt = state.copy_state()
            rt.apply(nxt, intent)
            k = _key(nxt)
            if k not in seen:
                seen.add(k)
                queue.append((nxt, depth + 1))
    assert visited == set(story.model.scenes)
    ending_scenes = {sid for sid, s in story.model.scenes.items() if s.ending}
    for gift in ("kite", "leaf"):
        assert {sid for sid, g in endings if g == gift} == ending_scenes, gift


# -- the demo: kite versus leaf -----------------------------------------------------------
def test_kite_and_leaf_react_differently_on_screen_in_sound_and_in_text(story: Story) -> None:
    _, kite = play(story, [Choose(choice_id="offer_kite")])
    _, leaf = play(story, [Choose(choice_id="offer_leaf")])
    kite_now = scene_events(kite, "clearing")
    leaf_now = scene_events(leaf, "clearing")
    # on screen: the reaction the renderer animates (also the chunk's sound cue)
    assert reactions(kite_now) == ["leap"]
    assert reactions(leaf_now) == ["recoil"]
    # in sound: the creature's own voice differs
    kite_voice = [e.text for e in kite_now if e.kind == "line" and e.speaker == "creature"]
    leaf_voice = [e.text for e in leaf_now if e.kind == "line" and e.speaker == "creature"]
    assert kite_voice and leaf_voice and set(kite_voice).isdisjoint(leaf_voice)
    # in text
    opening = len(story.model.scenes["clearing"].lines)
    kite_text, leaf_text = texts(kite_now)[opening:], texts(leaf_now)[opening:]
    assert kite_text and leaf_text and set(kite_text).isdisjoint(leaf_text)
    # and different continuations
    assert scene_path(kite)[1] == "kite_flight"
    assert scene_path(leaf)[1] == "leaf_fallen"
    choose = next(e for e in kite if e.kind == "choice")
    assert choose.data["chunk"] is not None


def test_dragging_the_item_onto_the_creature_does_the_same(story: Story) -> None:
    _, by_choice = play(story, [Choose(choice_id="offer_kite")])
    state, by_give = play(story, [Give(item_id="kite", character_id="creature")])
    assert reactions(by_give) == reactions(by_choice) == ["leap"]
    assert scene_path(by_give) == scene_path(by_choice)
    assert state.variables["first_gift"] == "kite"
    _, leaf = play(story, [Give(item_id="leaf", character_id="creature")])
    assert reactions(leaf) == ["recoil"] and scene_path(leaf)[1] == "leaf_fallen"


SAME_LATER = [Move(direction="d"), Move(direction="w"), Choose(choice_id="crouch_at_door"),
              Choose(choice_id="stay_till_sleep")]


def test_first_choice_changes_events_two_or_more_scenes_later(story: Story) -> None:
    kite_state, kite = play(story, [Choose(choice_id="offer_kite"), *SAME_LATER])
    leaf_state, leaf = play(story, [Choose(choice_id="offer_leaf"), *SAME_LATER])
    path = ["clearing", None, "creek", "hollow", "nest", "moonrise"]
    assert [p for p in scene_path(kite) if p] == ["clearing", "kite_flight", *path[2:]]
    assert [p for p in scene_path(leaf) if p] == ["clearing", "leaf_fallen", *path[2:]]
    # the same later inputs, the same scenes, different events in each, two to five scenes on
    for distance, scene in enumerate(path[2:], start=2):
        k, lf = texts(scene_events(kite, scene)), texts(scene_events(leaf, scene))
        assert k != lf, f"{scene} ({distance} scenes after the first choice) is the same on both paths"
    kite_nest = {e.ids["line"] for e in scene_events(kite, "nest") if e.kind == "line"}
    leaf_nest = {e.ids["line"] for e in scene_events(leaf, "nest") if e.kind == "line"}
    assert "nest_kite_turn" in kite_nest and "nest_kite_turn" not in leaf_nest
    assert "nest_leaf_turn" in leaf_nest and "nest_leaf_turn" not in kite_nest
    assert kite_state.holders.get("kite") == "creature"
    assert leaf_state.holders.get("leaf") == "creature"


def test_kite_and_leaf_each_reach_both_main_endings(story: Story) -> None:
    kite_marked = [Choose(choice_id="offer_kite"), Choose(choice_id="run_with_it"),
                   Say(text="hum to it", action_id="hum_creek"), Move(direction="w"),
                   Choose(choice_id="fold_kite"), Choose(choice_id="open_hand")]
    leaf_marked = [Choose(choice_id="offer_leaf"), Choose(choice_id="step_back"),
                   Say(text="sing a lullaby", action_id="hum_creek"), Choose(choice_id="sit_by_water"),
                   Choose(choice_id="follow_upstream"), Choose(choice_id="watch_leaf"),
                   Choose(choice_id="open_hand")]
    kite_home = [Choose(choice_id="offer_kite"), Choose(choice_id="call_it_back"), Move(direction="a"),
                 Choose(choice_id="go_home")]
    leaf_home = [Choose(choice_id="offer_leaf"), Move(direction="d"), Move(direction="w"),
                 Choose(choice_id="crouch_at_door"), Choose(choice_id="leave_quietly")]
    leaf_gone = [Choose(choice_id="offer_leaf"), Choose(choice_id="pick_leaf_up"),
                 Choose(choice_id="reach_too_soon")]
    results = {}
    for name, inputs in [("kite_marked", kite_marked), ("leaf_marked", leaf_marked),
                         ("kite_home", kite_home), ("leaf_home", leaf_home), ("leaf_gone", leaf_gone)]:
        state, events = play(story, inputs)
        ending = [e for e in events if e.kind == "ending"]
        assert len(ending) == 1 and events[-1].kind == "ending", name
        results[name] = ending[0].ids["ending"]
    assert results == {"kite_marked": "marked", "leaf_marked": "marked", "kite_home": "unmarked",
                       "leaf_home": "unmarked", "leaf_gone": "gone"}


def test_the_mark_needs_trust(story: Story) -> None:
    """The same gesture (an open hand) is refused until the creature trusts you."""
    state, events = play(story, [Choose(choice_id="offer_kite"), *SAME_LATER[:3]])
    rt = StoryRuntime(story)
    ids = [c.id for c in rt.available_choices(state)]
    assert "open_hand_too_soon" in ids and "open_hand" not in ids
    events = rt.apply(state, Choose(choice_id="open_hand_too_soon"))
    assert reactions(events) == ["recoil"] and state.scene == "nest"


def test_an_unforeseen_gift_is_answered_and_remembered(story: Story) -> None:
    state, events = play(story, [Give(item_id="stone", character_id="creature")])
    give = next(e for e in events if e.kind == "give")
    assert give.data["matched"] == "default"
    assert reactions(events) == ["tilt"]
    answer = texts(events)[-1]
    assert "smooth stone" in answer and "{item}" not in answer
    assert state.scene == "clearing" and state.holders["stone"] == "creature"
    # remembered: later scenes speak of it, and only when it was given
    later = [Choose(choice_id="offer_kite"), Move(direction="d"), Move(direction="w")]
    _, with_stone = play(story, [Give(item_id="stone", character_id="creature"), *later])
    _, without = play(story, later)
    ids_with = {e.ids.get("line") for e in with_stone}
    ids_without = {e.ids.get("line") for e in without}
    assert "hollow_stone" in ids_with and "hollow_stone" not in ids_without


def test_free_text_action_hum(story: Story) -> None:
    state, events = play(story, [Choose(choice_id="offer_kite"), Move(direction="d"),
                                 Say(text="hum something soft", action_id="hum_creek")])
    assert any(e.kind == "action" and e.ids["action"] == "hum_creek" for e in events)
    assert state.variables["hummed"] is True
    assert state.relationship("creature", "trust") == 2.0
    again = StoryRuntime(story).apply(state, Say(text="hum again", action_id="hum_creek"))
    assert again[-1].kind == "not_understood"


def test_interpolated_lines_show_values(story: Story) -> None:
    _, events = play(story, [Choose(choice_id="offer_kite"), Move(direction="d")])
    for e in events:
        if e.kind == "line":
            assert "{" not in e.text, e.text
    assert any(e.ids.get("line") == "creek_stars" and e.text.startswith("3 stars") for e in events)


# -- the author's guide's example stays true ------------------------------------------------
def test_story_format_guide_example_loads_and_plays(tmp_path: Path) -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "story-format.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in guide.split("```yaml\n")[1:]]
    files = {b.splitlines()[0].removeprefix("# stories/meadow/"): b for b in blocks
             if b.startswith("# stories/meadow/")}
    assert set(files) == {"story.yaml", "chapter2.yaml"}
    folder = tmp_path / "meadow"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    story = load_story(folder)
    assert story.model.id == "meadow" and len(story.model.scenes) == 5
    state, events = play(story, [Choose(choice_id="offer_kite"), Choose(choice_id="stay")])
    assert state.scene == "good_end" and events[-1].ids == {"ending": "good"}
    assert "The end, Ada." in texts(events)[-1]
    state, events = play(story, [Give(item_id="stone", character_id="creature"),
                                 Say(text="hum", action_id="sing"), Move(direction="d"),
                                 Move(direction="a"), Choose(choice_id="offer_leaf"),
                                 Choose(choice_id="leave")])
    assert events[-1].ids == {"ending": "lonely"}
    assert "It sniffs the grey stone and keeps it." in texts(events)
    assert reactions(events)[:1] == ["tilt"] and "recoil" in reactions(events)

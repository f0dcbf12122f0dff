"""Ink stories: compiled in the test setup with the npm ``inkjs`` compiler, played through bink.

The compiler is installed once into ``~/.cache/worldloom/npm`` (or
``$WORLDLOOM_NPM_CACHE``) and reused; each test session compiles
``tests/data/ink/kite.ink`` once. Skipped only when node or npm is missing.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from game.cli import main
from game.errors import InputError, StoryError, StoryRuntimeError
from game.session import Session
from game.state import Choose, GameState, Give
from game.story.ink import ROOT_SCENE, InkStory, is_ink_path, load_ink, location_of, slug
from game.story.ink_runtime import INK_STATE, InkRuntime
from game.story.loader import load_story
from game.world.chunking import ChunkPolicy

INK = Path(__file__).parents[1] / "data" / "ink"
InkCompile = Callable[[Path, Path], Path]


@pytest.fixture(scope="session")
def kite_json(ink_compile: InkCompile, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ink_compile(INK / "kite.ink", tmp_path_factory.mktemp("ink") / "kite.ink.json")


def session(path: Path, tmp: Path, seed: int = 5) -> Session:
    return Session(load_story(path), "null", seed=seed, save_dir=tmp / "saves")


def choose(s: Session, text: str) -> list[object]:
    picked = next(c for c in s.choices() if c.text == text)
    return list(s.submit(Choose(choice_id=picked.id)).events)


# -- the static mapping -------------------------------------------------------------
def test_compiled_story_maps_onto_a_story_model(kite_json: Path) -> None:
    story = load_story(kite_json)
    assert isinstance(story, InkStory) and is_ink_path(kite_json)
    m = story.model
    assert m.title == "The Kite" and m.start == ROOT_SCENE
    assert {"meadow", "kite", "leaf", "forest", "bug", "home"} <= set(m.scenes)
    assert "on_give" not in m.scenes  # an Ink function is not a scene
    assert m.locations["meadow_at_dusk"].time_of_day == "dusk" and m.locations["meadow_at_dusk"].prompt == "meadow"
    assert m.locations["forest_at_night"].time_of_day == "night"
    assert m.scenes["forest"].location == "forest_at_night" and m.scenes["forest"].chunk == "long"
    assert m.scenes["kite"].location == "meadow_at_dusk"  # continues the place it is entered from
    assert "creature" in m.scenes["meadow"].present and "creature" in m.scenes["kite"].present
    assert m.scenes["home"].ending == "home"
    assert m.cast["creature"].look.startswith("a small blue creature") and "guide" in m.cast
    assert set(m.items) == {"kite", "leaf"} and m.inventory == ("kite", "leaf")
    assert (m.variables["courage"].type, m.variables["courage"].default) == ("int", 0)
    assert (m.variables["mood"].type, m.variables["mood"].default) == ("str", "calm")
    assert m.variables["met"].type == "bool"
    # the knot graph is visible to lint and the map
    assert {c.goto for c in m.scenes["meadow"].choices} == {"kite", "leaf"}
    assert story.where(("scenes", "forest")).endswith("kite.ink.json#forest")


def test_location_tags_and_ids() -> None:
    assert location_of("forest at dusk") == ("forest_at_dusk", {"name": "Forest", "prompt": "forest",
                                                                "palette": "forest", "time_of_day": "dusk"})
    assert location_of("the old mill")[1].get("time_of_day") is None
    assert slug("Offer the kite!") == "offer_the_kite" and slug("") .startswith("x_")


def test_ink_source_and_garbage_are_named_errors(tmp_path: Path) -> None:
    src = tmp_path / "a.ink"
    src.write_text("Hello.\n")
    with pytest.raises(StoryError, match="compiled Ink"):
        load_story(src)
    bad = tmp_path / "b.ink.json"
    bad.write_text('{"inkVersion": 21, "root": ')
    with pytest.raises(StoryError, match="not valid JSON"):
        load_story(bad)


# -- playing --------------------------------------------------------------------------
def test_lines_tags_and_choices_reach_the_world_request(kite_json: Path, tmp_path: Path) -> None:
    s = session(kite_json, tmp_path)
    events = s.start().events
    lines = [e for e in events if e.kind == "line"]
    assert [e.ids["line"] for e in lines] == ["meadow.l0", "meadow.l1"]
    assert lines[1].speaker == "guide" and lines[1].text == "The creature watches you from the grass."
    assert s.speaker_name("guide") == "Guide"
    assert s.state.variables["met"] is True and s.state.scene == "meadow"
    req = s.pending
    assert req is not None
    assert (req.event, req.event_id, req.switch_mode) == ("scene", "meadow", "scene_cut")
    assert req.scene.location == "meadow_at_dusk" and req.scene.time_of_day == "dusk"
    assert [e.id for e in req.scene.entities] == ["creature"]
    assert "meadow" in req.prompt and "small blue creature" in req.prompt
    assert req.cue == "music:soft strings"
    assert [c.id for c in s.choices()] == ["meadow.offer_the_kite", "meadow.offer_a_leaf", "meadow.wait"]

    events = choose(s, "Wait")
    assert any(getattr(e, "text", "") == "You wait. Its trust is 0." for e in events)
    assert [c.id for c in s.choices()] == ["meadow.offer_the_kite"]

    events = s.submit(Choose(choice_id="meadow.offer_the_kite")).events
    kinds = [e.kind for e in events]
    assert kinds[0] == "choice" and "give" in kinds and "reaction" in kinds
    assert s.state.holders == {"kite": "creature"} and s.state.inventory == ["leaf"]
    assert s.state.relationship("creature", "trust") == 0.5
    assert s.state.variables["courage"] == 1 and s.state.scene == "forest"
    assert s.state.visits["forest"] == 1 and s.state.chosen["meadow.offer_the_kite"] == 1
    assert any(e.kind == "line" and e.text == "The forest is dark. You feel brave." for e in events)
    req = s.pending
    assert req is not None
    assert (req.event, req.event_id, req.switch_mode) == ("scene", "forest", "scene_cut")
    assert req.min_frames == ChunkPolicy().frames("scene", s.caps, "long")
    assert req.scene.location == "forest_at_night" and "forest" in req.prompt
    assert {e.id for e in req.scene.entities} == {"creature", "kite"}  # the kite is held by the creature
    assert req.cue == "leap"
    with pytest.raises(InputError, match="no current choice"):
        s.submit(Choose(choice_id="meadow.offer_a_leaf"))


def test_external_functions_and_errors_are_reported(kite_json: Path, tmp_path: Path) -> None:
    s = session(kite_json, tmp_path)
    assert isinstance(s.runtime, InkRuntime)
    seen: list[str] = []

    def explode(state: GameState) -> None:
        seen.append(state.scene)
        raise ValueError("boom")

    s.runtime.bind("explode", explode)
    s.start()
    choose(s, "Offer a leaf")
    assert s.state.variables["mood"] == "wary"
    before = s.state.copy_state()
    with pytest.raises(StoryRuntimeError, match="external function 'explode' raised ValueError: boom") as err:
        choose(s, "Poke the glowing bug")
    assert isinstance(err.value.__cause__, ValueError) and seen == ["bug"]
    assert "#bug" in err.value.where
    # the session put the state back; the story plays on from the same choice
    assert s.state.scene == "forest" and s.state.to_json() == before.to_json()
    assert [c.text for c in s.choices()] == ["Go home", "Poke the glowing bug"]
    events = choose(s, "Go home")
    assert [e.text for e in events if e.kind == "ending"] == ["home"]
    assert s.runtime.is_ending(s.state) and s.view().ending == "home"


def test_unbound_external_is_a_warning_not_a_crash(kite_json: Path, tmp_path: Path) -> None:
    s = session(kite_json, tmp_path)
    s.start()
    choose(s, "Offer the kite")
    events = choose(s, "Poke the glowing bug")
    warn = [e for e in events if e.kind == "warning"]
    assert warn and "explode" in warn[0].text
    assert s.state.scene == "home"


def test_give_calls_the_ink_on_give_function(kite_json: Path, tmp_path: Path) -> None:
    s = session(kite_json, tmp_path)
    s.start()
    events = s.submit(Give(item_id="leaf", character_id="creature")).events
    assert [e.text for e in events if e.kind == "line"] == ["The creature turns the leaf over in its paws."]
    assert s.state.holders["leaf"] == "creature" and s.state.relationship("creature", "affinity") == 1.0
    assert [c.id for c in s.choices()][0] == "meadow.offer_the_kite"  # the flow did not move
    with pytest.raises(InputError):
        s.submit(Give(item_id="leaf", character_id="creature"))


def test_save_load_and_rollback_round_trip(kite_json: Path, tmp_path: Path) -> None:
    s = session(kite_json, tmp_path)
    s.start()
    choose(s, "Offer the kite")
    owl = [e.text for e in s.log.since(0) if e.kind == "line"][-1]
    s.save("slot1")
    doc = json.loads((tmp_path / "saves" / "slot1.json").read_text())
    assert json.loads(doc["state"]["world"][INK_STATE])["inkSaveVersion"] >= 8  # bink's state, as JSON
    choose(s, "Go home")
    assert s.runtime.is_ending(s.state)

    fresh = session(kite_json, tmp_path)
    fresh.load("slot1")
    assert fresh.state.scene == "forest" and fresh.state.variables["courage"] == 1
    assert fresh.state.holders == {"kite": "creature"}
    assert [c.text for c in fresh.choices()] == ["Go home", "Poke the glowing bug"]
    assert [e.text for e in fresh.log.since(0) if e.kind == "line"][-1] == owl
    events = choose(fresh, "Go home")
    assert [e.text for e in events if e.kind == "line"] == ["You go home with 1 courage."]

    # rollback restores Ink's position too
    fresh.rollback()
    assert fresh.state.scene == "forest" and not fresh.runtime.is_ending(fresh.state)
    assert [c.text for c in fresh.choices()] == ["Go home", "Poke the glowing bug"]
    fresh.rollback()
    assert fresh.state.scene == "meadow" and fresh.state.variables["courage"] == 0
    assert "meadow.offer_a_leaf" in [c.id for c in fresh.choices()]


def test_same_seed_same_shuffle(kite_json: Path, tmp_path: Path) -> None:
    texts = []
    for seed in (11, 11):
        s = session(kite_json, tmp_path, seed)
        s.start()
        choose(s, "Offer a leaf")
        texts.append([e.text for e in s.log.since(0)])
    assert texts[0] == texts[1]


def test_headless_cli_plays_an_ink_story(kite_json: Path, tmp_path: Path) -> None:
    script = tmp_path / "play.txt"
    script.write_text("choose Wait\nchoose 1\nsave s1\nchoose go home\nload s1\nchoose 2\n")
    out = tmp_path / "t.jsonl"
    code = main(["play", str(kite_json), "--headless", "--inputs", str(script), "--transcript", str(out),
                 "--save-dir", str(tmp_path / "saves"), "--no-errorbank", "--size", "32x18", "--backend", "null"])
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    endings = [r["text"] for r in rows if r["type"] == "ending"]
    assert endings == ["home", "home"]
    chunks = [r["request"] for r in rows if r["type"] == "chunk"]
    assert chunks[0]["switch"] == "scene_cut" and chunks[0]["location"] == "meadow_at_dusk"
    assert any(r["type"] == "warning" and "explode" in r["text"] for r in rows)


# -- hot reload of an Ink story ---------------------------------------------------------
def test_reload_recompiled_ink_keeps_state(ink_compile: InkCompile, kite_json: Path, tmp_path: Path) -> None:
    path = tmp_path / "kite.ink.json"
    shutil.copy(kite_json, path)
    s = session(path, tmp_path)
    s.start()
    choose(s, "Offer the kite")
    edited = tmp_path / "kite.ink"
    edited.write_text((INK / "kite.ink").read_text().replace("You go home with", "You walk home carrying"))
    ink_compile(edited, path)
    result = s.reload()
    assert result.ok, result.diagnostics
    assert result.events[0].kind == "reload" and s.story.digest != load_ink(kite_json).digest
    assert s.state.scene == "forest" and s.state.variables["courage"] == 1
    assert [c.text for c in s.choices()] == ["Go home", "Poke the glowing bug"]
    events = choose(s, "Go home")
    assert [e.text for e in events if e.kind == "line"] == ["You walk home carrying 1 courage."]

    path.write_text('{"inkVersion": 21, "root": [')  # a broken export
    result = s.reload()
    assert not result.ok and result.diagnostics[0].code == "WL018"
    assert s.runtime.is_ending(s.state)  # the old story is still the one playing


def test_every_sound_and_custom_tag_of_a_turn_reaches_the_request(ink_compile: InkCompile, tmp_path: Path) -> None:
    src = tmp_path / "bells.ink"
    src.write_text("-> yard\n=== yard ===\n# scene: yard at dusk\nThe bells hang still.\n"
                   "* [Ring the bells #camera: low]\n  -> bells\n"
                   "=== bells ===\nThe first bell. # sound: bell\n"
                   "The second, and a hymn. # sound: gong # music: hymn # mood: bright\n-> END\n", encoding="utf-8")
    from game.world.backends import make_backend

    s = Session(load_story(ink_compile(src, tmp_path / "bells.ink.json")),
                make_backend("procedural", width=64, height=36), save_dir=tmp_path / "saves")
    s.start()
    list(s.stream())
    result = s.submit(Choose(choice_id=s.choices()[0].id))
    request = result.request
    assert request is not None
    assert request.sounds == ("sound:bell", "sound:gong", "music:hymn")  # every cue of the turn, in order
    assert request.cue == "sound:bell"
    assert set(request.directives) == {"camera: low", "mood: bright"}
    chunks = list(s.stream())
    ignored = [i for c in chunks for i in c.ignored]
    assert any("directive camera: low" in i for i in ignored)  # the backend says what it did not use
    assert any("sound music:hymn" in i for i in ignored)


def test_old_save_into_a_recompiled_story_then_rollback(ink_compile: InkCompile, kite_json: Path,
                                                         tmp_path: Path) -> None:
    """A save of the old story loads into the recompiled one (a new VAR read by a line),
    and rolling back after the load works: the checkpoints were fitted too."""
    path = tmp_path / "kite.ink.json"
    shutil.copy(kite_json, path)
    s = session(path, tmp_path)
    s.start()
    choose(s, "Offer the kite")
    s.save("old")
    edited = tmp_path / "kite.ink"
    source = (INK / "kite.ink").read_text().replace('VAR mood = "calm"', 'VAR mood = "calm"\nVAR gold = 5')
    edited.write_text(source.replace("The forest is dark.", "The forest is dark. {gold > 3: Coins clink.}"))
    ink_compile(edited, path)
    fresh = session(path, tmp_path)
    events = fresh.load("old")
    assert any(e.kind == "warning" for e in events)
    assert fresh.state.scene == "forest" and fresh.state.variables["gold"] == 5
    assert [c.text for c in fresh.choices()] == ["Go home", "Poke the glowing bug"]
    fresh.rollback()  # to before the kite: the checkpoint, fitted to the new story, knows gold
    assert fresh.state.scene == "meadow" and fresh.state.variables["courage"] == 0
    assert fresh.state.variables["gold"] == 5 and fresh.state.holders == {}
    assert [c.text for c in fresh.choices()] == ["Offer the kite", "Offer a leaf", "Wait"]  # as bink saved them
    events = choose(fresh, "Offer the kite")
    said = " ".join(str(getattr(e, "text", "")) for e in events)
    assert "You feel brave." in said and "Coins clink." in said
    assert fresh.state.variables["gold"] == 5 and fresh.state.variables["courage"] == 1
    fresh.rollback()
    assert fresh.state.scene == "meadow" and fresh.state.variables["gold"] == 5


@pytest.mark.parametrize("engine", ["vm", "bink"])
def test_repeated_choice_texts_get_numbered_ids_on_every_visit(ink_compile: InkCompile, tmp_path: Path,
                                                               engine: str) -> None:
    """Two choices with one text share a base id: the second is ``_2``. A once-only choice gone
    on the next visit leaves the others' ids as they were, and a menu that now repeats a text
    numbers it again (choices are remembered per place in the menu, not per menu)."""
    src = tmp_path / "pier.ink"
    src.write_text("-> pier\n=== pier ===\nThe pier creaks.\n* [Wait] -> pier\n+ [Wait] -> pier\n"
                   "+ [Look] -> pier\n+ {pier > 2} [Look] -> END\n", encoding="utf-8")
    story = load_story(ink_compile(src, tmp_path / "pier.ink.json"))
    rt = InkRuntime(story, engine=engine)  # type: ignore[arg-type]
    state = rt.new_state(1)
    rt.begin(state)
    assert [(c.id, c.text) for c in rt.available_choices(state)] == [
        ("pier.wait", "Wait"), ("pier.wait_2", "Wait"), ("pier.look", "Look")]
    rt.choose(state, "pier.wait")  # the once-only one: gone from here on
    assert [c.id for c in rt.available_choices(state)] == ["pier.wait", "pier.look"]
    rt.choose(state, "pier.wait")
    assert [c.id for c in rt.available_choices(state)] == ["pier.wait", "pier.look", "pier.look_2"]
    rt.choose(state, "pier.look_2")
    assert rt.is_ending(state)


def test_the_decoded_story_leaves_the_collector_when_the_process_froze_the_loaded_one(kite_json: Path) -> None:
    """``worldloom play`` freezes the loaded story (``gc.freeze``); the interpreter's decoded story,
    made later on first use, is frozen with it (else every collection rescans it), and is left
    alone where nothing was frozen."""
    import gc

    assert gc.get_freeze_count() == 0
    story = load_story(kite_json)
    assert isinstance(story, InkStory) and story.vm_root is not None
    assert gc.is_tracked(story.vm_root) and gc.get_freeze_count() == 0  # nothing frozen: nothing done
    gc.freeze()
    try:
        later = load_story(kite_json, use_cache=False)
        assert isinstance(later, InkStory)
        frozen = gc.get_freeze_count()
        root = later.vm_root
        assert root is not None and gc.get_freeze_count() > frozen
        assert not any(o is root for o in gc.get_objects())  # the permanent generation is not listed
    finally:
        gc.unfreeze()

"""Saves that cannot half-fail: all-or-nothing loads, crash-safe writes, damaged copies kept,
checkpoints with every extension's snapshot, and a fuzz test that gets only SaveError."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.savekill import kill_loop
from game.cast.castroom import Castroom, dialogue_spec
from game.errors import SaveError
from game.headless import play_headless
from game.inputs.script import parse_script
from game.session import Session, open_game
from game.state import Choose, Event, Give, Say
from game.state import saves as saves_mod
from game.state.saves import damaged_paths, previous_path, section_at
from game.story import load_story
from game.world.backends.null import NullBackend

ROOT = Path(__file__).parents[2]
EVE = ROOT / "stories" / "eve"
SCHEMA1 = Path(__file__).parents[1] / "data" / "saves" / "mini_schema1.json"


class Notes:
    """A toy extension whose snapshot must be a list of strings."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def save_extra(self) -> dict[str, Any]:
        return {"notes": list(self.notes)}

    def restore_extra(self, data: dict[str, Any] | None) -> Callable[[], None]:
        notes = (data or {}).get("notes", [])
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            raise SaveError("notes must be a list of text")

        def commit() -> None:
            self.notes = list(notes)

        return commit


def played(mini_path: Path, save_dir: Path) -> tuple[Session, Notes]:
    notes = Notes()
    s = Session(load_story(mini_path), NullBackend(), seed=5, save_dir=save_dir, extensions={"notes": notes})
    s.start()
    notes.notes.append("arrived")
    s.submit(Give(item_id="stone", character_id="creature"))
    notes.notes.append("offered a stone")
    s.submit(Choose(choice_id="offer_kite"))
    notes.notes.append("gave the kite")
    return s, notes


def picture(s: Session, notes: Notes) -> tuple[Any, ...]:
    """Everything a failed load must leave as it was."""
    return (s.state.to_json(), [e.model_dump() for e in s.log.since(0)], len(s.checkpoints),
            [c.state.to_json() for c in s.checkpoints], list(notes.notes))


# -- crash safety ------------------------------------------------------------------------------------

@pytest.mark.skipif(sys.platform == "win32", reason="fork and SIGKILL are POSIX")
def test_sigkill_at_random_instants_never_leaves_a_slot_unloadable(tmp_path: Path) -> None:
    report = kill_loop(tmp_path, kills=50, seed=1)
    assert report.kills == 50 and report.turns > 0  # saves did land between the kills
    assert report.unloadable == 0, report.problems
    assert report.lost_more_than_last == 0, report.problems


def test_the_previous_copy_is_linked_before_the_replace(mini_path: Path, tmp_path: Path) -> None:
    s, _ = played(mini_path, tmp_path)
    path = s.save("a")
    first = path.read_bytes()
    s.rollback()
    s.save("a")
    assert previous_path(path).read_bytes() == first and path.read_bytes() != first
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert s.has_previous("a") and [slot for slot, _ in s.saves()] == ["a"]


def test_a_damaged_slot_is_kept_aside_never_overwritten(mini_path: Path, tmp_path: Path) -> None:
    s, _ = played(mini_path, tmp_path)
    path = s.save("a")
    good = path.read_bytes()
    s.save("a")
    for n in (1, 2):
        path.write_bytes(good[: len(good) // 2])  # damaged by something else
        damaged = path.read_bytes()
        with pytest.raises(SaveError, match="corrupt.*previous copy is kept"):
            s.load("a")
        s.save("a")  # saving over it keeps the damaged copy aside and the good .bak as it was
        assert [p.name for p in damaged_paths(path)] == [f"a.json.damaged-{i}" for i in range(1, n + 1)]
        assert damaged_paths(path)[-1].read_bytes() == damaged
        assert previous_path(path).read_bytes() == good
        s.load("a")
        s.load("a", previous=True)


def test_headless_play_is_offered_the_previous_copy(mini_path: Path, tmp_path: Path) -> None:
    play_headless(str(mini_path), parse_script("save a\nchoose offer_kite\nsave a\n"), backend="null",
                  save_dir=tmp_path)
    (tmp_path / "a.json").write_text("{")
    failed = play_headless(str(mini_path), parse_script("load a\n"), backend="null", save_dir=tmp_path)
    assert len(failed.errors) == 1 and "corrupt" in failed.errors[0] and "`load a previous`" in failed.errors[0]
    runner = play_headless(str(mini_path), parse_script("load a previous\n"), backend="null", save_dir=tmp_path)
    assert runner.session.state.scene == "meadow"


# -- all or nothing ------------------------------------------------------------------------------------

def deep(n: int) -> Any:
    out: Any = 0
    for _ in range(n):
        out = [out]
    return out


@pytest.mark.parametrize("mutate,section", [
    (lambda d: d.update(events="lines"), "events"),
    (lambda d: d["events"].update(turn=["x"] * len(d["events"]["turn"])), "events.turn.0"),
    (lambda d: d["events"]["kind"].pop(), "columns differ"),
    (lambda d: d["events"]["data"].__setitem__(0, {"x": deep(100)}), "events.data: nests deeper"),
    (lambda d: d.update(checkpoints={"a": 1}), "checkpoints: must be a list"),
    (lambda d: d["checkpoints"][1].update(label=7), "checkpoints.1"),
    (lambda d: d["checkpoints"][1]["state"]["d"].update(turn={"=": "soon"}), "checkpoints.1.state.turn"),
    (lambda d: d["checkpoints"][1]["state"]["d"].update(visits={"a": [1]}), "checkpoints.1.state.visits"),
    (lambda d: d["checkpoints"][1]["state"]["d"].update(colour={"=": 1}), "checkpoints.1.state.colour"),
    (lambda d: d["checkpoints"][0].update(state={"d": {}}), "checkpoints.0.state"),
    (lambda d: d["checkpoints"][1]["state"]["d"].update(log_offset={"=": 10**6}), "checkpoints.1.state.log_offset"),
    (lambda d: d["checkpoints"][1]["state"]["d"].update(scene={"=": "nowhere"}), "checkpoints.1.state: scene"),
    (lambda d: d["checkpoints"][1].update(extra={"d": {"notes": {"d": {"notes": {"=": [1]}}}}}),
     "checkpoints.1.extra.notes"),
    (lambda d: d.update(extra=[]), "extra: must map"),
    (lambda d: d["extra"].update(notes={"notes": "x"}), "extra.notes: notes must be a list"),
    (lambda d: d["extra"].update(notes={"deep": deep(500)}), "extra: nests deeper"),
    (lambda d: d["state"].update(draws=-1), "state.draws"),
    (lambda d: d.update(story_hash=5), "story_hash: must be text"),
])
def test_a_malformed_section_is_a_save_error_and_the_game_is_unchanged(
        mini_path: Path, tmp_path: Path, mutate: Callable[[dict[str, Any]], None], section: str) -> None:
    s, notes = played(mini_path, tmp_path)
    path = s.save("a")
    doc = json.loads(path.read_text())
    mutate(doc)
    path.write_text(json.dumps(doc))
    s.submit(Choose(choice_id="finish_bad"))  # the game goes on after the save
    notes.notes.append("ran off")
    before = picture(s, notes)
    with pytest.raises(SaveError, match=section) as err:
        s.load("a")
    assert str(path) in str(err.value)
    assert picture(s, notes) == before


def test_nesting_too_deep_for_the_parser_is_a_save_error(mini_path: Path, tmp_path: Path) -> None:
    s, notes = played(mini_path, tmp_path)
    before = picture(s, notes)
    path = s.save("deep")
    text = path.read_text()
    for section in ("extra", "events", "checkpoints", "state"):
        doc = json.loads(text)
        doc[section] = "DEEP"
        path.write_text(json.dumps(doc).replace('"DEEP"', "[" * 100_000 + "]" * 100_000))
        with pytest.raises(SaveError, match=f"corrupt \\({section}"):
            s.load("deep")
    assert picture(s, notes) == before


# -- checkpoints with extensions, stored as differences -------------------------------------------------

def test_rollback_after_a_load_is_rollback_before_it(mini_path: Path, tmp_path: Path) -> None:
    s, notes = played(mini_path, tmp_path)
    s.save("a")
    other_notes = Notes()
    other = Session(load_story(mini_path), NullBackend(), seed=5, save_dir=tmp_path,
                    extensions={"notes": other_notes})
    other.load("a")
    assert other_notes.notes == notes.notes
    for _ in range(2):
        assert picture(other, other_notes) == picture(s, notes)
        s.rollback()
        other.rollback()
    assert other_notes.notes == ["arrived"] and picture(other, other_notes) == picture(s, notes)


LOOP = """id: loop
title: Loop
start: s0
variables: {laps: {type: int, default: 0}}
locations: {here: {name: Here}}
scenes:
""" + "".join(f"""  s{i}:
    location: here
    lines: ["Scene {i}, lap {{laps}}."]
    choices: [{{id: on{i}, text: On, goto: s{(i + 1) % 40}, do: ["laps += 1"]}}]
""" for i in range(40))


def test_checkpoints_are_stored_as_differences(tmp_path: Path) -> None:
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop" / "story.yaml").write_text(LOOP)
    s = Session(load_story(tmp_path / "loop"), NullBackend(), save_dir=tmp_path / "saves")
    s.start()
    for _ in range(120):
        s.submit(Choose(choice_id=s.choices()[0].id))
    doc = json.loads(s.save("a").read_text())
    whole = len(json.dumps(doc["state"]))
    first, *rest = doc["checkpoints"]
    assert set(first["state"]) == {"="} and len(rest) == 119
    assert all(set(cp["state"]) == {"d"} for cp in rest)
    assert max(len(json.dumps(cp)) for cp in rest) < whole / 3  # a turn changes little of the state
    assert isinstance(doc["events"]["kind"], list) and len(doc["events"]["kind"]) == len(s.log)
    s.rollback(60)
    assert s.state.variables["laps"] == 60 and s.state.scene == "s20"


def test_events_read_by_column_equal_validated_events(mini_path: Path, tmp_path: Path) -> None:
    s, _ = played(mini_path, tmp_path)
    s.log.append(Event(kind="reply", turn=3, frame=9, speaker="creature", text="Kyaa", ids={"a": "b"},
                       data={"nested": {"x": [1, 2.5, True, None]}}))
    s.state.log_offset = len(s.log)
    data = saves_mod.read_save(s.save("a"))
    assert data.events == [Event.model_validate(e.model_dump()) for e in s.log.since(0)]
    assert data.events[-1].data == {"nested": {"x": [1, 2.5, True, None]}}
    with pytest.raises(Exception, match="frozen"):
        data.events[-1].text = "changed"  # type: ignore[misc]


# -- a damaged memory section ---------------------------------------------------------------------------

def eve_session(tmp: Path, embedder: Any) -> tuple[Session, Castroom]:
    game = open_game(EVE, backend="null", seed=3, save_dir=tmp / "saves",
                     dialogue=dialogue_spec(f"scripted:{EVE / 'scripted.yaml'}"), voice=False,
                     cast_options={"embedder": embedder, "show_progress": False})
    assert game.cast is not None
    return game.session, game.cast


def memories(room: Castroom) -> dict[str, Any]:
    return {cid: ch.memory.to_json() for cid, ch in room.characters.items()}


@pytest.mark.parametrize("where", ["extra", "checkpoint"])
def test_a_damaged_memory_section_leaves_the_game_as_it_was(tmp_path: Path, embedder: Any, where: str) -> None:
    s, room = eve_session(tmp_path, embedder)
    s.start()
    s.submit(Choose(choice_id="knock"))
    s.submit(Say(target="eve", text="My name is Ada, by the way."))
    path = s.save("night")
    doc = json.loads(path.read_text())
    if where == "extra":
        doc["extra"]["cast"]["memories"]["eve"]["texts"] = 5
    else:
        doc["checkpoints"][0]["extra"] = {"=": {"cast": {"memories": {"eve": {"card": "someone else"}}}}}
    path.write_text(json.dumps(doc))
    s.submit(Say(target="eve", text="Actually, call me Bo."))
    state, log, mem = s.state.to_json(), len(s.log), memories(room)
    with pytest.raises(SaveError, match="extra.cast" if where == "extra" else "checkpoints.0.extra.cast"):
        s.load("night")
    assert s.state.to_json() == state and len(s.log) == log and memories(room) == mem
    assert room.characters["eve"].memory.player_name == "Bo"
    s.close()


def test_memory_rolls_back_after_a_load_as_before_it(tmp_path: Path, embedder: Any) -> None:
    s, room = eve_session(tmp_path, embedder)
    s.start()
    s.submit(Choose(choice_id="knock"))
    s.submit(Say(target="eve", text="My name is Ada, by the way."))
    s.submit(Choose(choice_id="came_for_light"))  # a checkpoint: her memory as it was then goes with it
    s.submit(Say(target="eve", text="Actually, call me Bo."))
    s.save("night")
    other, room2 = eve_session(tmp_path, embedder)
    other.load("night")
    assert room2.characters["eve"].memory.player_name == "Bo"
    other.rollback()
    s.rollback()
    assert room2.characters["eve"].memory.player_name == room.characters["eve"].memory.player_name == "Ada"
    assert memories(room2) == memories(room)
    s.close()
    other.close()


# -- fuzz -----------------------------------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False, width=32)
                    | st.text(max_size=4), lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3),
                                                                                               c, max_size=3),
                    max_leaves=5)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:4]):
            out += paths(v, (*prefix, i))
    return out


@pytest.fixture(scope="module")
def fuzz_world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("fuzz")
    mini = Path(__file__).parents[1] / "data" / "mini"
    s, notes = played(mini, folder)
    v2 = json.loads(s.save("base").read_text())
    v1 = json.loads(SCHEMA1.read_text())
    return {"session": s, "notes": notes, "docs": [v2, v1], "paths": [paths(v2), paths(v1)], "folder": folder}


MUTATION = st.tuples(st.integers(0, 10**6), st.booleans(), JSON)  # (which path, remove it?, new value)


@settings(max_examples=int(os.environ.get("WORLDLOOM_FUZZ_EXAMPLES", "2000")), deadline=None, derandomize=True,
          database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(which=st.integers(0, 1), mutations=st.lists(MUTATION, min_size=1, max_size=3),
       damage=st.none() | st.tuples(st.floats(0, 1), st.binary(max_size=3)))
def test_fuzzed_save_files_get_only_save_error(fuzz_world: dict[str, Any], which: int,
                                               mutations: list[tuple[int, bool, Any]],
                                               damage: tuple[float, bytes] | None) -> None:
    s, notes = fuzz_world["session"], fuzz_world["notes"]
    doc = json.loads(json.dumps(fuzz_world["docs"][which]))
    places = fuzz_world["paths"][which][1:]
    for pick, remove, value in mutations:
        path = places[pick % len(places)]
        parent: Any = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            if remove and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            pass  # an earlier change removed that path
    raw = json.dumps(doc).encode()
    if damage is not None:  # bytes changed or cut short, as a bad disk would
        cut = int(damage[0] * len(raw))
        raw = raw[:cut] + damage[1] + raw[cut + 1:]
    (fuzz_world["folder"] / "f.json").write_bytes(raw)
    before = picture(s, notes)
    try:
        s.load("f")
    except SaveError:
        assert picture(s, notes) == before
    else:  # whatever loads plays on: choices, the view, rollbacks and a save all work
        s.choices()
        s.view()
        saves_mod.encode(saves_mod.SaveData(s.story.id, s.story.digest, s.state, s.log.since(0), s.checkpoints))
        while s.checkpoints:
            s.rollback()
            s.choices()
        s.load("base")


def test_the_section_named_is_the_one_that_holds_the_position() -> None:
    raw = b'{"label": "a \\" b: [", "state": {"x": [1, 2]}, "events": [[[['
    assert section_at(raw, len(raw) - 1) == "events"
    assert section_at(raw, raw.index(b"[1")) == "state"
    assert section_at(raw, raw.index(b"b:")) == "label"
    assert section_at(b"[[[[", 3) == ""

"""Saves, checkpoints, rollback, migrations, corrupt saves, resume after story edits."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from game.errors import InputError, SaveError
from game.session import Session
from game.state import Choose, Give
from game.state import saves as saves_mod
from game.story import load_story
from game.world.backends.null import NullBackend


def new_session(story_dir: Path, save_dir: Path) -> Session:
    s = Session(load_story(story_dir), NullBackend(), seed=5, save_dir=save_dir)
    s.start()
    return s


def drain(s: Session) -> None:
    for _ in s.stream():
        pass


def test_save_load_round_trip(mini_path: Path, tmp_path: Path) -> None:
    s = new_session(mini_path, tmp_path)
    s.submit(Give(item_id="stone", character_id="creature"))
    s.submit(Choose(choice_id="offer_kite"))
    drain(s)
    before = s.state.to_json()
    history = s.history()
    s.save("slot1")
    s.submit(Choose(choice_id="finish_bad"))
    assert s.state.scene == "bad_end"
    events = s.load("slot1")
    assert events[0].kind == "load"
    after = s.state.to_json()
    assert {k: v for k, v in after.items() if k != "frame"} == {k: v for k, v in before.items() if k != "frame"}
    assert s.history() == history
    assert len(s.checkpoints) == 2


def test_rollback_restores_the_checkpoint(mini_path: Path, tmp_path: Path) -> None:
    s = new_session(mini_path, tmp_path)
    start = s.state.to_json()
    log_len = len(s.log)
    s.submit(Choose(choice_id="offer_kite"))
    assert s.state.scene == "after"
    s.rollback()
    now = s.state.to_json()
    assert {k: v for k, v in now.items() if k != "frame"} == {k: v for k, v in start.items() if k != "frame"}
    assert len(s.log) == log_len
    with pytest.raises(InputError, match="cannot roll back"):
        s.rollback()


def test_frame_clock_never_goes_back(mini_path: Path, tmp_path: Path) -> None:
    s = new_session(mini_path, tmp_path)
    drain(s)
    s.submit(Choose(choice_id="offer_kite"))
    drain(s)
    frame = s.state.frame
    s.rollback()
    assert s.state.frame == frame


def test_atomic_write_keeps_previous_copy(mini_path: Path, tmp_path: Path) -> None:
    s = new_session(mini_path, tmp_path)
    path = s.save("a")
    s.submit(Choose(choice_id="offer_kite"))
    s.save("a")
    bak = path.with_name("a.json.bak")
    assert bak.is_file()
    assert json.loads(bak.read_text())["state"]["scene"] == "meadow"
    assert json.loads(path.read_text())["state"]["scene"] == "after"
    assert not list(tmp_path.glob("*.tmp"))


def test_corrupt_save_is_refused_and_previous_loads(mini_path: Path, tmp_path: Path) -> None:
    s = new_session(mini_path, tmp_path)
    s.save("a")
    s.submit(Choose(choice_id="offer_kite"))
    path = s.save("a")
    path.write_bytes(path.read_bytes()[:-40])  # truncated mid-write by something else
    scene = s.state.scene
    with pytest.raises(SaveError) as err:
        s.load("a")
    assert "corrupt" in str(err.value) and str(path) in str(err.value) and "previous" in str(err.value)
    assert s.state.scene == scene  # nothing the player had is lost
    s.load("a", previous=True)
    assert s.state.scene == "meadow"


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d.update(format="other"), "not a worldloom save"),
    (lambda d: d.update(schema_version=99), "newer"),
    (lambda d: d["state"].update(turn="many"), "state.turn"),
    (lambda d: d["state"].update(log_offset=10**6), "event log shorter"),
    (lambda d: d.pop("state"), "missing field"),
])
def test_bad_saves_say_why(mini_path: Path, tmp_path: Path, mutate, match: str) -> None:  # type: ignore[no-untyped-def]
    s = new_session(mini_path, tmp_path)
    path = s.save("a")
    doc = json.loads(path.read_text())
    mutate(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(SaveError, match=match):
        s.load("a")


def test_bad_slot_names_are_refused(mini_path: Path, tmp_path: Path) -> None:
    s = new_session(mini_path, tmp_path)
    for slot in ("../x", "", "a/b", "x" * 80):
        with pytest.raises(SaveError, match="slot"):
            s.save(slot)


SCHEMA1 = Path(__file__).parents[1] / "data" / "saves" / "mini_schema1.json"  # written by the schema 1 code


def test_a_schema_1_save_loads_rolls_back_and_draws_on(mini_path: Path, tmp_path: Path) -> None:
    s = new_session(mini_path, tmp_path)
    shutil.copy(SCHEMA1, tmp_path / "old.json")
    s.load("old")
    assert s.state.scene == "after" and s.state.draws == 2  # every drawn value is now a count
    assert s.state.random() == random.Random(5 * 1_000_003 + 2).random()  # the stream goes on where it was
    assert len(s.checkpoints) == 2 and len(s.log) == s.state.log_offset > 0
    s.rollback()
    assert s.state.scene == "meadow" and s.state.holders == {} and s.state.draws == 2
    path = s.save("old")  # written back in the current schema
    assert json.loads(path.read_text())["schema_version"] == saves_mod.SCHEMA_VERSION


def test_migrations_chain_from_older_schemas(mini_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = new_session(mini_path, tmp_path)
    doc = json.loads(SCHEMA1.read_text())
    doc["schema_version"] = 0
    doc["state"]["bag"] = doc["state"].pop("inventory")  # an imagined v0 field name
    (tmp_path / "a.json").write_text(json.dumps(doc))

    def v0_to_v1(d: dict) -> dict:  # type: ignore[type-arg]
        d["state"]["inventory"] = d["state"].pop("bag")
        return d

    monkeypatch.setitem(saves_mod.MIGRATIONS, 0, v0_to_v1)
    s.load("a")
    assert s.state.inventory == ["leaf", "stone"] and s.state.draws == 2


def test_saves_hold_no_derived_data(mini_path: Path, tmp_path: Path) -> None:
    s = new_session(mini_path, tmp_path)
    drain(s)
    s.submit(Choose(choice_id="offer_kite"))
    drain(s)
    doc = json.loads(s.save("a").read_text())
    assert set(doc) == {"format", "schema_version", "story_id", "story_hash", "label", "state",
                        "events", "checkpoints", "extra"}

    def walk(x: object) -> None:
        if isinstance(x, dict):
            assert not {"frames", "embedding", "sprite", "cache", "pixels"} & set(x)
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            assert len(x) < 1000 or not all(isinstance(v, float) for v in x)  # no vectors
            for v in x:
                walk(v)
        elif isinstance(x, str):
            assert len(x) < 2000
    walk(doc)


def test_resume_after_story_edit(mini_path: Path, tmp_path: Path) -> None:
    story_dir = tmp_path / "story"
    shutil.copytree(mini_path, story_dir)
    s = new_session(story_dir, tmp_path / "saves")
    s.submit(Choose(choice_id="offer_kite"))
    s.save("a")
    text = (story_dir / "chapter2.yaml").read_text()
    (story_dir / "chapter2.yaml").write_text(text.replace("Afterwards.", "Later, quietly."))
    s2 = new_session(story_dir, tmp_path / "saves")
    events = s2.load("a")
    assert s2.state.scene == "after" and s2.state.holders == {"kite": "creature"}
    assert any(e.kind == "warning" and "resumed at scene 'after'" in e.text for e in events)
    # the scene is removed altogether: fall back to the start scene, with a warning
    (story_dir / "chapter2.yaml").write_text(text.replace("  after:", "  later:").replace("goto: after", "goto: later"))
    (story_dir / "story.yaml").write_text((story_dir / "story.yaml").read_text().replace("goto: after", "goto: later"))
    s3 = new_session(story_dir, tmp_path / "saves")
    events = s3.load("a")
    assert s3.state.scene == "meadow"
    assert any(e.kind == "warning" and "is gone" in e.text for e in events)


def test_save_for_another_story_is_refused(mini_path: Path, tmp_path: Path) -> None:
    s = new_session(mini_path, tmp_path)
    path = s.save("a")
    doc = json.loads(path.read_text())
    doc["story_id"] = "other"
    path.write_text(json.dumps(doc))
    with pytest.raises(SaveError, match="story 'other'"):
        s.load("a")


class Notebook:
    """A toy extension: a list of notes that saves, loads and rolls back with the game."""

    def __init__(self) -> None:
        self.notes: list[tuple[int, str]] = []

    def save_extra(self) -> dict[str, object]:
        return {"notes": [list(n) for n in self.notes]}

    def restore_extra(self, data: dict[str, object] | None) -> Callable[[], None]:
        rows = (data or {}).get("notes", [])
        if not isinstance(rows, list) or not all(isinstance(r, list) and len(r) == 2 for r in rows):
            raise SaveError("notes must be [turn, text] pairs")
        notes = [(int(t), str(x)) for t, x in rows]

        def commit() -> None:
            self.notes = notes

        return commit


def test_extensions_save_load_and_roll_back(mini_path: Path, tmp_path: Path) -> None:
    book = Notebook()
    s = Session(load_story(mini_path), NullBackend(), seed=5, save_dir=tmp_path, extensions={"notebook": book})
    s.start()
    book.notes.append((0, "arrived"))
    s.submit(Choose(choice_id="offer_kite"))
    book.notes.append((s.state.turn, "gave the kite"))
    s.save("a")
    s.rollback()
    assert book.notes == [(0, "arrived")]
    s.load("a")
    assert book.notes == [(0, "arrived"), (1, "gave the kite")]


@pytest.mark.parametrize("field,value,match", [
    ("scene", "nowhere", "scene 'nowhere'"),
    ("variables", {"courage": "lots", "name": "Ada"}, "variable courage"),
    ("inventory", ["ghost"], "item 'ghost'"),
])
def test_a_hand_edited_save_is_refused(mini_path: Path, tmp_path: Path, field: str, value: object,
                                       match: str) -> None:
    s = new_session(mini_path, tmp_path)
    path = s.save("a")
    doc = json.loads(path.read_text())
    doc["state"][field] = value
    path.write_text(json.dumps(doc))
    scene = s.state.scene
    with pytest.raises(SaveError, match=match):
        s.load("a")
    assert s.state.scene == scene


def test_the_previous_copy_loads_from_a_script(mini_path: Path, tmp_path: Path) -> None:
    from game.headless import play_headless
    from game.inputs.script import parse_script

    runner = play_headless(str(mini_path), parse_script("save a\nchoose offer_kite\nsave a\nload a previous\n"),
                           backend="null", save_dir=tmp_path)
    assert runner.session.state.scene == "meadow"


def test_a_missing_image_warns_at_start_and_play_goes_on(mini_path: Path, tmp_path: Path) -> None:
    import shutil

    shutil.copytree(mini_path, tmp_path / "s")
    path = tmp_path / "s" / "story.yaml"
    text = path.read_text().replace("look: \"a red diamond kite\"}", "look: \"a red diamond kite\", image: gone.png}")
    path.write_text(text)
    s = Session(load_story(tmp_path / "s"), NullBackend(), save_dir=tmp_path / "saves")
    events = s.start().events
    assert [e.ids["asset"] for e in events if e.kind == "warning"] == ["gone.png"]
    assert "gone.png" in s.view().notice
    s.submit(Choose(choice_id="offer_kite"))
    assert s.state.scene == "after"

"""Hot reload: an edited story keeps the game's state; a broken edit is a diagnostic, not a crash."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from game.session import Session
from game.session.reload import StoryWatcher, watch_paths
from game.state import Choose

STORY: dict[str, Any] = {
    "id": "hall",
    "title": "Hall",
    "start": "hall",
    "variables": {"strength": {"type": "int", "default": 0}},
    "locations": {"inside": {"name": "Inside"}, "outside": {"name": "Outside"}},
    "cast": {"fox": {"name": "the fox"}},
    "include": ["yard.yaml"],
    "scenes": {
        "hall": {"location": "inside", "lines": ["Welcome."],
                 "choices": [{"id": "train", "text": "Train", "do": ["strength += 1"]},
                             {"id": "out", "text": "Go out", "goto": "yard"}]},
    },
}
YARD: dict[str, Any] = {"scenes": {"yard": {
    "location": "outside", "present": ["fox"], "lines": ["The yard."],
    "choices": [{"id": "back", "text": "Back in", "goto": "hall"},
                {"id": "rest", "text": "Rest", "once": True},
                {"id": "leave", "text": "Leave", "goto": "gate"}]},
    "gate": {"location": "outside", "ending": "gone"}}}


def write(folder: Path, story: dict[str, Any] | None = None, yard: dict[str, Any] | None = None) -> None:
    for name, doc in (("story.yaml", story), ("yard.yaml", yard)):
        if doc is not None:
            path = folder / name
            before = path.stat().st_mtime_ns if path.exists() else 0
            path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
            os.utime(path, ns=(before + 10_000_000, before + 10_000_000))  # a visibly newer mtime


@pytest.fixture
def played(tmp_path: Path) -> Session:
    """A session in the yard, having trained once and rested."""
    folder = tmp_path / "hall"
    folder.mkdir()
    write(folder, STORY, YARD)
    s = Session.from_path(folder, "null", save_dir=tmp_path / "saves")
    s.start()
    for cid in ("train", "out", "rest"):
        s.submit(Choose(choice_id=cid))
    assert s.state.scene == "yard" and s.state.variables["strength"] == 1
    return s


def lines(events: list[Any]) -> list[str]:
    return [e.text for e in events if e.kind == "line"]


def test_edit_keeps_state_and_shows_new_text(played: Session) -> None:
    s = played
    folder = s.story.folder
    old_story = s.story
    edited = {**STORY, "variables": {**STORY["variables"], "gold": {"type": "int", "default": 7}}}
    edited["scenes"] = {"hall": {**STORY["scenes"]["hall"], "lines": ["Welcome back, strong one."]}}
    write(folder, edited)
    result = s.reload()
    assert result.ok, result.diagnostics
    assert result.path == folder / "story.yaml" and result.message == "reloaded story.yaml"
    assert [e.kind for e in result.events] == ["reload"] and s.story is not old_story
    assert s.log.since(0)[-1].kind == "reload"  # recorded like any event
    assert s.state.scene == "yard" and s.state.location == "outside"
    assert s.state.variables == {"strength": 1, "gold": 7}
    assert [c.id for c in s.choices()] == ["back", "leave"]  # the once-only rest stays used, by id
    assert s.pending is not None and s.pending.event == "load"
    events = s.submit(Choose(choice_id="back")).events
    assert lines(events) == ["Welcome back, strong one."]
    assert s.state.visits["hall"] == 2
    s.rollback()  # checkpoints made before the reload still work
    assert s.state.scene == "yard"


def test_include_edit_reloads_the_story(played: Session) -> None:
    s = played
    yard = {"scenes": {**YARD["scenes"], "yard": {**YARD["scenes"]["yard"], "lines": ["The yard, in rain."]}}}
    write(s.story.folder, yard=yard)
    result = s.reload(s.story.folder / "yard.yaml")
    assert result.ok and result.path == s.story.folder / "story.yaml"
    s.submit(Choose(choice_id="back"))
    assert lines(s.submit(Choose(choice_id="out")).events) == ["The yard, in rain."]


@pytest.mark.parametrize("broken, code", [
    ("scenes: [unclosed\n", "WL018"),
    (None, "WL001"),
])
def test_broken_edit_is_a_diagnostic_and_the_old_story_plays_on(played: Session, broken: str | None,
                                                                 code: str) -> None:
    s = played
    old_story, old_state = s.story, s.state.to_json()
    path = s.story.folder / "story.yaml"
    if broken is None:
        bad = {**STORY, "scenes": {"hall": {**STORY["scenes"]["hall"],
                                            "choices": [{"id": "out", "text": "Go out", "goto": "nowhere"}]}}}
        write(s.story.folder, bad)
    else:
        path.write_text(broken, encoding="utf-8")
    result = s.reload()
    assert not result.ok and result.events == []
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert errors and errors[0].code == code and str(path) in errors[0].where
    assert code in result.message
    assert s.story is old_story and s.state.to_json() == old_state
    assert lines(s.submit(Choose(choice_id="back")).events) == ["Welcome."]


def test_scene_gone_falls_back_to_the_start(played: Session) -> None:
    s = played
    write(s.story.folder, yard={"scenes": {"gate": YARD["scenes"]["gate"]}},
          story={**STORY, "scenes": {"hall": {**STORY["scenes"]["hall"],
                                              "choices": [{"id": "out", "text": "Go out", "goto": "gate"}]}}})
    result = s.reload()
    assert result.ok, result.diagnostics
    kinds = [e.kind for e in result.events]
    assert kinds[:3] == ["reload", "warning", "scene"] and "yard" in result.events[1].text
    assert s.state.scene == "hall" and s.state.variables["strength"] == 1
    assert lines(result.events) == ["Welcome."]
    assert all(cp.state.scene != "yard" for cp in s.checkpoints)


def test_card_reload_reaches_extensions(played: Session) -> None:
    seen: list[str] = []

    class Listener:
        def save_extra(self) -> dict[str, Any]:
            return {}

        def restore_extra(self, data: dict[str, Any] | None) -> Any:
            return lambda: None

        def on_card_reload(self, card: Any, path: Path) -> None:
            seen.append(card.id)

    s = Session(played.story, "null", save_dir=played.save_dir, extensions={"listener": Listener()})
    s.start()
    chars = s.story.folder / "characters"
    chars.mkdir()
    card = chars / "fox.yaml"
    card.write_text("id: fox\nname: Fox\n", encoding="utf-8")
    result = s.reload(card)
    assert result.ok and seen == ["fox"] and result.events[0].ids == {"card": "fox"}
    card.write_text("id: fox\nname: [unclosed\n", encoding="utf-8")
    result = s.reload(card)
    assert not result.ok and "card does not load" in result.diagnostics[0].message and seen == ["fox"]


def test_watcher_sees_writes_once(played: Session, tmp_path: Path) -> None:
    s = played
    paths = watch_paths(s.story)
    folder = s.story.folder
    assert folder / "story.yaml" in paths and folder / "yard.yaml" in paths and folder / "worldloom.toml" in paths
    watcher = StoryWatcher(paths)
    assert not watcher.changed()
    write(folder, yard=YARD)
    assert watcher.changed() and watcher.changed_paths == [folder / "yard.yaml"]
    assert not watcher.changed()
    (folder / "worldloom.toml").write_text("[lint.severity]\nWL015 = 'off'\n")
    assert watcher.changed() and watcher.changed_paths == [folder / "worldloom.toml"]


def test_an_old_save_loads_into_the_changed_story_and_rolls_back(played: Session) -> None:
    """The save's checkpoints are fitted to the new story too: rolling back after the load
    reaches states that know the new variable (before, a condition on it stopped the game)."""
    s = played
    s.save("before_edit")
    folder = s.story.folder
    hall = {**STORY["scenes"]["hall"], "choices": [*STORY["scenes"]["hall"]["choices"],
                                                   {"id": "spend", "text": "Spend", "if": "gold > 3"}]}
    write(folder, {**STORY, "variables": {**STORY["variables"], "gold": {"type": "int", "default": 7}},
                   "scenes": {"hall": hall}})
    fresh = Session.from_path(folder, "null", save_dir=s.save_dir)
    events = fresh.load("before_edit")
    assert any(e.kind == "warning" and "story changed" in e.text for e in events)
    assert fresh.state.scene == "yard" and fresh.state.variables == {"strength": 1, "gold": 7}
    assert len(fresh.checkpoints) == 3
    fresh.rollback(2)  # back in the hall, before going out
    assert fresh.state.scene == "hall" and fresh.state.variables == {"strength": 1, "gold": 7}
    assert [c.id for c in fresh.choices()] == ["train", "out", "spend"]
    fresh.rollback()
    assert fresh.state.variables == {"strength": 0, "gold": 7}
    fresh.submit(Choose(choice_id="spend"))
    assert fresh.state.scene == "hall" and fresh.state.chosen["spend"] == 1

"""The turn as `Session` runs it: steps in order, the one checkpoint rule, the prepare phase,
an empty menu told to the player, a choice's chunk hint, and `open_game`'s backend stack."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from game.errors import InputError
from game.session import Session, Turn, open_game
from game.state import (
    AddReference,
    AnyIntent,
    Choose,
    Event,
    GameState,
    Give,
    Instruct,
    Move,
    Say,
    Wait,
    takes_checkpoint,
)
from game.story.lint import lint_story
from game.story.loader import load_story
from game.world.backends.null import NullBackend

LOOP: dict[str, Any] = {
    "id": "loop", "title": "Loop", "start": "hall",
    "locations": {"hall": {"name": "Hall"}},
    "scenes": {
        "hall": {"location": "hall", "title": "The Hall", "chunk": "long",
                 "choices": [{"id": "knock", "text": "Knock", "once": True, "goto": "hall", "chunk": "short"},
                             {"id": "shout", "text": "Shout", "once": True, "goto": "hall"}]},
    },
}


def story_at(tmp: Path, doc: dict[str, Any]) -> Path:
    folder = tmp / str(doc["id"])
    folder.mkdir()
    (folder / "story.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return folder


def test_an_empty_menu_is_a_story_error_the_player_is_told(tmp_path: Path) -> None:
    folder = story_at(tmp_path, LOOP)
    assert [d.code for d in lint_story(folder)] == ["WL013"]  # lint warns the author before any player meets it
    s = Session(load_story(folder), NullBackend(), save_dir=tmp_path / "saves")
    s.start()
    first = s.submit(Choose(choice_id="knock")).events
    assert not any(e.kind == "warning" for e in first) and [c.id for c in s.choices()] == ["shout"]
    last = s.submit(Choose(choice_id="shout")).events
    warning = [e for e in last if e.kind == "warning"]
    assert s.choices() == [] and len(warning) == 1 and warning[0].ids == {"code": "empty_menu", "scene": "hall"}
    assert "Nothing is left to choose in The Hall" in s.view().notice
    s.rollback()  # the way out the notice names
    assert [c.id for c in s.choices()] == ["shout"]


def test_the_choice_chunk_hint_wins_over_the_scene_it_enters(tmp_path: Path) -> None:
    s = Session(load_story(story_at(tmp_path, LOOP)), NullBackend(), save_dir=tmp_path / "saves")
    s.start()
    short = s.submit(Choose(choice_id="knock")).request
    plain = s.submit(Choose(choice_id="shout")).request  # no hint of its own: the scene's "long"
    assert short is not None and plain is not None
    assert short.min_frames < plain.min_frames
    assert s.director.policy.frames("scene", s.caps, "short") == short.min_frames


@pytest.mark.parametrize("intent,checkpoint", [
    (Choose(choice_id="x"), True), (Give(item_id="kite", character_id="c"), True),
    (Instruct(text="make it rain", edit="weather"), True), (AddReference(path="a.png"), True),
    (Say(text="sing", action_id="sing"), True), (Say(text="hello"), False), (Move(direction="w"), False),
    (Wait(seconds=1.0), False)])
def test_one_rule_decides_which_intents_take_a_checkpoint(intent: AnyIntent, checkpoint: bool) -> None:
    assert takes_checkpoint(intent) is checkpoint


class Recorder:
    """A step that records what it saw, prepares for lines, and refuses one word."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log
        self.prepared: list[tuple[int, str]] = []

    def begin(self, state: GameState) -> None:
        state.variables.setdefault("seen_by_" + self.name, 0)

    def prepares(self, intent: AnyIntent) -> bool:
        return isinstance(intent, Say)

    def prepare(self, host: Turn, intent: AnyIntent, events: list[Event]) -> None:
        self.prepared.append((host.state.turn, [e.kind for e in events][0]))

    def on_turn(self, host: Turn, intent: AnyIntent, events: list[Event]) -> list[Event]:
        if isinstance(intent, Say) and intent.text == "forbidden":
            host.state.variables["courage"] = 99
            raise InputError("not that word")
        self.log.append(f"{self.name}:{[e.kind for e in events]}")
        return [Event(kind="effect", turn=host.state.turn, ids={"target": self.name})]

    def observe(self, event: Event) -> None:
        self.log.append(f"{self.name} saw {event.kind}")


def test_steps_run_in_order_prepare_off_the_lock_and_a_refusal_restores_the_state(mini_path: Path,
                                                                                    tmp_path: Path) -> None:
    log: list[str] = []
    first, second = Recorder("a", log), Recorder("b", log)
    s = Session(load_story(mini_path), NullBackend(), save_dir=tmp_path, steps=[first, second])
    assert s.state.variables["seen_by_a"] == 0  # begin() filled in the new game's state
    s.start()
    log.clear()
    s.submit(Say(text="hello there", target="creature"))
    # the rules' events, then each step sees the events before it (the first step's effect included)
    assert log[:2] == ["a:['say']", "b:['say', 'effect']"]
    assert "a saw say" in log and "b saw effect" in log
    # both prepared on a copy the rules were applied to, for the turn about to happen
    assert first.prepared == second.prepared == [(1, "say")]
    courage = s.state.variables["courage"]
    with pytest.raises(InputError, match="not that word"):
        s.submit(Say(text="forbidden"))
    assert s.state.variables["courage"] == courage and s.state.turn == 1


def test_the_rules_run_on_the_prepare_copy_under_the_lock_and_the_step_prepares_off_it(mini_path: Path,
                                                                                        tmp_path: Path) -> None:
    # an Ink story has one bink story object that the window thread's choices() also drives
    s = Session(load_story(mini_path), NullBackend(), save_dir=tmp_path, steps=[Recorder("a", [])])
    s.start()
    held: list[bool] = []

    def lock_held_elsewhere() -> bool:
        out: list[bool] = []

        def try_it() -> None:
            got = s._lock.acquire(blocking=False)
            out.append(not got)
            if got:
                s._lock.release()

        probe = threading.Thread(target=try_it)
        probe.start()
        probe.join()
        return out[0]

    apply = s.runtime.apply

    def watched(state: GameState, intent: AnyIntent) -> list[Event]:
        held.append(lock_held_elsewhere())
        return apply(state, intent)

    step = s.steps[0]
    prepare = step.prepare

    def prepare_watched(host: Turn, intent: AnyIntent, events: list[Event]) -> None:
        held.append(lock_held_elsewhere())
        prepare(host, intent, events)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(s.runtime, "apply", watched)
        mp.setattr(step, "prepare", prepare_watched)
        s.submit(Say(text="hello there", target="creature"))
    # rules on the copy (locked), the step's slow work (free), the real turn's rules (locked)
    assert held == [True, False, True]


def test_open_game_builds_the_stack_voice_over_guard_over_backend(tmp_path: Path) -> None:
    eve = Path(__file__).parents[2] / "stories" / "eve"
    game = open_game(eve, backend="null", save_dir=tmp_path / "saves", errorbank=tmp_path / "bank.db",
                     dialogue="scripted:/no/such/file.yaml", voice=True, cast_options={"show_progress": False})
    try:
        assert game.stack == ("voice", "guard", "null")
        # a dialogue model that does not load: authored lines, said in every front end
        assert game.cast is not None and game.cast.model is None
        assert game.warnings and "authored lines only" in game.warnings[0]
        assert game.warnings[0] in game.session.view().notice
        assert game.session.extension("cast") is game.cast
    finally:
        game.close()
    bare = open_game(Path(__file__).parents[2] / "stories" / "zero_mark", backend="null", save_dir=tmp_path)
    assert bare.stack == ("null",) and bare.cast is None
    bare.close()


def test_an_agent_who_walks_off_is_no_longer_drawn_or_shown(tmp_path: Path) -> None:
    doc: dict[str, Any] = {
        "id": "quay", "title": "Quay", "start": "quay",
        "locations": {"quay": {"name": "Quay"}, "tower": {"name": "Tower"}},
        "cast": {"mara": {"name": "Mara"}},
        "agents": {"mara": {"at": "quay", "schedule": [{"turn": 2, "at": "tower"}],
                            "actions": {"go_tower": {"kind": "move", "to": "tower"}}}},
        "scenes": {"quay": {"location": "quay", "present": {"mara": 0.3},
                            "choices": [{"id": "look", "text": "look"}]}},
    }
    s = Session(load_story(story_at(tmp_path, doc)), NullBackend(), save_dir=tmp_path / "saves")
    first = s.start().request
    assert first is not None and "mara" in [e.id for e in first.scene.entities]
    assert dict(s.view().characters) == {"mara": "Mara"}
    request = None
    for _ in range(4):
        request = s.submit(Choose(choice_id="look")).request
        if "mara" not in s.runtime.present(s.state):
            break
    assert request is not None and "mara" not in s.runtime.present(s.state)  # her schedule took her up
    leaving = [e for e in request.scene.entities if e.id == "mara"]  # the chunk of that turn shows her going
    assert leaving and leaving[0].state != "idle"
    later = s.submit(Choose(choice_id="look")).request
    assert later is not None
    assert "mara" not in [e.id for e in later.scene.entities] and "Mara" not in later.prompt
    assert "Mara" in first.prompt
    assert s.view().characters == ()

"""Roll-forward after rollback (#17): step forward again along the path a rollback undid, until the
player does something else; kept in saves; in headless scripts and replays."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from game.errors import InputError, SaveError
from game.headless import play_headless
from game.inputs.script import parse_line, parse_script
from game.replay import replay
from game.session import Session
from game.state import Choose, Give, Wait
from game.story import load_story
from game.world.backends.null import NullBackend


class Counter:
    """An extension whose snapshot is how many turns it has seen (a memory, say)."""

    def __init__(self) -> None:
        self.seen = 0

    def save_extra(self) -> dict[str, Any]:
        return {"seen": self.seen}

    def restore_extra(self, data: dict[str, Any] | None) -> Callable[[], None]:
        seen = int((data or {}).get("seen", 0))

        def commit() -> None:
            self.seen = seen

        return commit


def session(mini: Path, tmp: Path, counter: Counter | None = None) -> Session:
    s = Session(load_story(mini), NullBackend(), seed=5, save_dir=tmp / "saves",
                extensions={"counter": counter} if counter else None)
    s.start()
    return s


def snap(s: Session) -> tuple[dict[str, Any], list[str], int]:
    state = {k: v for k, v in s.state.to_json().items() if k not in ("frame", "reactions")}  # transient
    return state, [f"{e.kind}:{e.text}" for e in s.log.since(0)], len(s.checkpoints)


def three_turns(s: Session, counter: Counter | None = None) -> list[tuple[dict[str, Any], list[str], int]]:
    """Give the stone, offer the kite, stay: the snapshot after each (and before the first)."""
    out = [snap(s)]
    for intent in (Give(item_id="stone", character_id="creature"), Choose(choice_id="offer_kite"),
                   Choose(choice_id="finish_good")):
        s.submit(intent)
        if counter:
            counter.seen += 1
        out.append(snap(s))
    return out


def test_roll_forward_puts_back_each_step_exactly(mini_path: Path, tmp_path: Path) -> None:
    counter = Counter()
    s = session(mini_path, tmp_path, counter)
    path = three_turns(s, counter)
    assert s.state.scene == "good_end" and counter.seen == 3
    s.rollback(2)
    assert snap(s) == path[1] and counter.seen == 1 and len(s.forward) == 2
    events = s.roll_forward()
    assert events[0].kind == "rollforward" and events[0].text.endswith("offer_kite")
    assert "Kyaa!" in [e.text for e in events]  # the lines of the step come back with it
    assert snap(s) == path[2] and counter.seen == 2
    s.rollback()  # a rollback along the path ahead keeps what is further on
    assert snap(s) == path[1] and len(s.forward) == 2
    s.roll_forward(2)
    assert snap(s) == path[3] and counter.seen == 3 and len(s.forward) == 0
    with pytest.raises(InputError, match="cannot roll forward 1: 0 step"):
        s.roll_forward()
    s.rollback(3)
    assert snap(s) == path[0]
    s.roll_forward(3)
    assert snap(s) == path[3]


def test_another_choice_discards_the_path_ahead(mini_path: Path, tmp_path: Path) -> None:
    s = session(mini_path, tmp_path)
    three_turns(s)
    s.rollback()
    s.submit(Choose(choice_id="finish_bad"))  # not the step ahead (finish_good)
    assert s.state.scene == "bad_end" and len(s.forward) == 0
    with pytest.raises(InputError, match="cannot roll forward"):
        s.roll_forward()
    s.rollback()
    s.submit(Wait(seconds=0.5))  # any other turn discards it too
    assert len(s.forward) == 0


def test_the_same_choice_again_keeps_the_rest_of_the_path(mini_path: Path, tmp_path: Path) -> None:
    s = session(mini_path, tmp_path)
    path = three_turns(s)
    s.rollback(2)
    result = s.submit(Choose(choice_id="offer_kite"))  # runs the turn: it comes to the same state
    assert result.events[0].kind != "rollforward" and result.checkpoint
    assert snap(s) == path[2] and len(s.forward) == 1  # the step after it is still ahead
    s.roll_forward()
    assert snap(s) == path[3]


def test_the_same_choice_to_another_state_discards_the_path(mini_path: Path, tmp_path: Path) -> None:
    counter = Counter()
    s = session(mini_path, tmp_path, counter)
    three_turns(s, counter)
    s.rollback(2)
    counter.seen = 99  # what a character's new reply would do: her memory is not what it was
    s.submit(Choose(choice_id="offer_kite"))
    assert len(s.forward) == 0


def test_a_refused_intent_keeps_the_path_ahead(mini_path: Path, tmp_path: Path) -> None:
    s = session(mini_path, tmp_path)
    three_turns(s)
    s.rollback()
    with pytest.raises(InputError):
        s.submit(Choose(choice_id="no_such_choice"))
    assert len(s.forward) == 1


def test_the_path_ahead_is_saved_and_loaded(mini_path: Path, tmp_path: Path) -> None:
    counter = Counter()
    s = session(mini_path, tmp_path, counter)
    path = three_turns(s, counter)
    s.rollback(2)
    s.save("s1")
    doc = json.loads((tmp_path / "saves" / "s1.json").read_text())
    assert len(doc["forward"]["steps"]) == 3
    other_counter = Counter()
    other = session(mini_path, tmp_path, other_counter)
    other.load("s1")
    assert snap(other) == path[1] and other_counter.seen == 1 and len(other.forward) == 2
    other.roll_forward(2)
    assert snap(other) == path[3] and other_counter.seen == 3
    s.roll_forward()
    s.save("s2")  # without a rollback outstanding: no forward section
    s.roll_forward()
    s.save("s3")
    assert "forward" in json.loads((tmp_path / "saves" / "s2.json").read_text())
    assert "forward" not in json.loads((tmp_path / "saves" / "s3.json").read_text())


@pytest.mark.parametrize("damage, section", [
    (lambda f: f.update(steps=f["steps"][:1]), "forward.steps"),
    (lambda f: f.update(extra=1), "forward"),
    (lambda f: f["steps"][0]["state"]["="].update(log_offset=0), "forward.steps.0.state.log_offset"),
    (lambda f: f["events"].update(kind=f["events"]["kind"][:-1]), "forward"),
])
def test_a_damaged_path_ahead_is_a_save_error_naming_it(mini_path: Path, tmp_path: Path,
                                                        damage: Callable[[dict[str, Any]], None],
                                                        section: str) -> None:
    s = session(mini_path, tmp_path)
    three_turns(s)
    s.rollback(2)
    path = s.save("s1")
    doc = json.loads(path.read_text())
    damage(doc["forward"])
    path.write_text(json.dumps(doc))
    before = snap(s)
    with pytest.raises(SaveError, match=f"corrupt \\({section}"):
        s.load("s1")
    assert snap(s) == before and len(s.forward) == 2  # nothing changed


SCRIPT = """give stone creature
choose offer_kite
choose finish_good
rollback 2
save back
rollforward
rollback
rollforward 2
load back
rollforward
"""


def test_headless_scripts_roll_forward_and_replay(mini_path: Path, tmp_path: Path) -> None:
    runner = play_headless(str(mini_path), parse_script(SCRIPT), backend="null", seed=3,
                           save_dir=tmp_path / "saves", transcript=tmp_path / "t.jsonl", dialogue=None)
    assert runner.session.state.scene == "after" and len(runner.session.forward) == 1
    rows = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert sum(r["type"] == "rollforward" for r in rows) == 3
    result = replay(tmp_path / "t.jsonl")
    assert result.ok, result.mismatches


def test_script_rollforward_takes_a_count() -> None:
    cmd = parse_line("rollforward 2", "s:1")
    assert cmd is not None and cmd.args == ("2",)
    with pytest.raises(InputError, match="rollforward takes a number of turns"):
        parse_line("rollforward two", "s:2")

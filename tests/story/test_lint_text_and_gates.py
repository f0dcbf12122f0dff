"""Lint of what the player reads and where they can go: ``{name}`` typos (WL019), ways on that can
never open (WL020); the behaviour the docs describe (choice texts interpolated, ``if:`` on ``say:``
lines evaluated); ``worldloom replay --save-dir`` for transcripts that load an earlier run's save."""

from __future__ import annotations

import json
from pathlib import Path

from game.cli import main
from game.session import Session
from game.state import Choose
from game.story.lint import lint_story
from game.story.loader import load_story, story_from_dict

BASE = {"id": "t", "title": "T", "start": "a", "locations": {"here": {"name": "Here"}},
        "variables": {"name": {"type": "str", "default": "Ann"}, "coins": {"type": "int", "default": 0},
                      "door_open": {"type": "bool", "default": False}},
        "items": {"kite": {"name": "red kite"}}, "inventory": ["kite"], "cast": {"fox": {"name": "the fox"}}}


def lint(tmp: Path, scenes: dict[str, object], **extra: object) -> list[tuple[str, str]]:
    (tmp / "story.yaml").write_text(json.dumps({**BASE, **extra, "scenes": scenes}))
    return [(d.code, d.message) for d in lint_story(tmp) if d.code in ("WL019", "WL020")]


def test_interpolation_names_that_are_not_variables_are_reported(tmp_path: Path) -> None:
    found = lint(tmp_path, {
        "a": {"location": "here", "present": ["fox"],
              "lines": ["Hello {name}, it is {time_of_day}.", "Hello {nmae}."],
              "choices": [{"id": "c", "text": "Pay {coins} coins to {recieve}", "goto": "b"}],
              "on_give": {"fox": {"kite": {"say": "The {character} takes the {item}."}}}},
        "b": {"location": "here", "ending": "e", "lines": ["The {item} is gone."]}})
    assert sorted(m for c, m in found) == sorted([
        "{nmae} in the text is not a variable or world key: the player sees it as typed",
        "{recieve} in the text is not a variable or world key: the player sees it as typed",
        "{item} in the text is not a variable or world key: the player sees it as typed"])  # not a gift line


def test_a_way_on_gated_on_a_variable_nothing_assigns_is_an_error(tmp_path: Path) -> None:
    gated = {"a": {"location": "here", "choices": [{"id": "c", "text": "go", "if": "door_open", "goto": "b"},
                                                    {"id": "w", "text": "wait"}]},
             "b": {"location": "here", "ending": "e"}}
    assert [c for c, _ in lint(tmp_path, gated)] == ["WL020"]
    # once something can open the door, the gate may hold
    gated["a"]["choices"].append({"id": "k", "text": "kick", "do": ["door_open = True"]})  # type: ignore[index]
    assert lint(tmp_path, gated) == []
    # a second, open way on: not stuck
    also = {"a": {"location": "here", "choices": [{"id": "c", "text": "go", "if": "door_open", "goto": "b"},
                                                   {"id": "d", "text": "climb", "goto": "b"}]},
            "b": {"location": "here", "ending": "e"}}
    assert lint(tmp_path, also) == []
    # a gate that holds at the default is fine
    fine = {"a": {"location": "here", "choices": [{"id": "c", "text": "go", "if": "not door_open", "goto": "b"}]},
            "b": {"location": "here", "ending": "e"}}
    assert lint(tmp_path, fine) == []


def test_choice_texts_are_interpolated_and_say_line_conditions_evaluated(tmp_path: Path) -> None:
    story = story_from_dict({**BASE, "scenes": {
        "a": {"location": "here", "choices": [
            {"id": "c", "text": "Pay {coins} coins", "do": ["coins += 2"],
             "say": [{"text": "Rich!", "if": "coins > 1"}, {"text": "Poor.", "if": "coins < 1"}], "goto": "b"}]},
        "b": {"location": "here", "ending": "e"}}}, tmp_path)
    s = Session(story, "null", save_dir=tmp_path / "saves")
    s.start()
    assert [c.text for c in s.choices()] == ["Pay 0 coins"]
    events = s.submit(Choose(choice_id="c")).events
    assert [e.text for e in events if e.kind == "line"] == ["Rich!"]


def test_replay_save_dir_loads_a_save_an_earlier_run_made(mini_path: Path, tmp_path: Path) -> None:
    saves = tmp_path / "saves"
    common = ["--headless", "--no-errorbank", "--size", "32x18", "--backend", "null", "--save-dir", str(saves),
              "--no-voice"]
    first = tmp_path / "first.txt"
    first.write_text("choose offer_kite\nsave s1\n")
    assert main(["play", str(mini_path), "--inputs", str(first), *common]) == 0
    second = tmp_path / "second.txt"
    second.write_text("load s1\n")
    transcript = tmp_path / "t.jsonl"
    assert main(["play", str(mini_path), "--inputs", str(second), "--transcript", str(transcript), *common]) == 0
    assert main(["replay", str(transcript), "--quiet", "--save-dir", str(saves)]) == 0
    # in a fresh folder the save is not there: the replay cannot match
    assert main(["replay", str(transcript), "--quiet", "--save-dir", str(tmp_path / "empty")]) != 0
    assert load_story(mini_path).id == "mini"

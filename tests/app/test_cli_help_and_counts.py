"""What `worldloom --help` and the tools' summaries say: every option has a help text, and every count
agrees with its number ("1 ending", "2 endings"; never "1 endings" or "1 error(s)")."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from game.cli import build_parser, main
from game.words import agree, counted, plural


def _options(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, argparse.Action]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                out += _options(p, f"{name} {sub}")
        elif not isinstance(action, argparse._HelpAction):
            out.append((name, action))
    return out


def test_every_option_of_every_command_says_what_it_does() -> None:
    bare = [f"{name} {a.option_strings or a.dest}" for name, a in _options(build_parser(), "worldloom")
            if not a.help]
    assert bare == []


def test_play_help_explains_seed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["play", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--seed SEED seed of every random draw" in text


def test_counted_agrees_with_its_number() -> None:
    assert [counted(n, "ending") for n in (0, 1, 2)] == ["0 endings", "1 ending", "2 endings"]
    assert counted(1, "lore entry") == "1 lore entry" and counted(3, "lore entry") == "3 lore entries"
    assert plural("match") == "matches" and plural("day") == "days" and counted(2, "person", "people") == "2 people"
    assert agree(1, "is") == "is" and agree(4, "is") == "are"


ONE_ENDING = """id: t
title: T
start: a
locations: {here: {name: Here}}
scenes:
  a: {location: here, choices: [{id: c, text: go, goto: b}, {id: d, text: lost, goto: nowhere}]}
  b: {location: here, ending: e}
"""


def test_map_and_lint_summaries_count_in_the_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from game.story.loader import load_story
    from game.story.storymap import build_map

    (tmp_path / "story.yaml").write_text(ONE_ENDING, encoding="utf-8")
    caption = build_map(load_story(tmp_path, use_cache=False)).caption
    assert "2 scenes, 2 edges, 1 ending." in caption
    assert "1 goto target that is not a scene" in caption
    assert main(["lint", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "1 error, 0 other findings" in err and "(s)" not in err


def _commands(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                out += [(f"{name} {sub}", p), *_commands(p, f"{name} {sub}")]
    return out


def test_every_command_help_says_what_it_does_and_every_default_is_given() -> None:
    parser = build_parser()
    assert [name for name, p in _commands(parser, "worldloom") if not p.description] == []
    quiet = [f"{name} {a.option_strings}" for name, a in _options(parser, "worldloom")
             if a.default not in (None, False, [], "") and "default" not in (a.help or "")]
    assert quiet == []


def test_lint_help_gives_exit_codes_and_play_help_explains_backends_and_the_error_bank(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def help_of(*argv: str) -> str:
        with pytest.raises(SystemExit):
            main([*argv, "--help"])
        return " ".join(capsys.readouterr().out.split())

    lint = help_of("lint")
    assert "exit codes: 0 no errors" in lint and "1 at least one error" in lint and "2 no story" in lint
    play = help_of("play")
    for backend in ("null (flat grey frames", "causal (block-causal", "action (keyboard + mouse",
                    "drifting (simulates"):
        assert backend in play
    assert "do not guard the backend" not in play and "not caught and corrected" in play
    assert "--save-dir DIR where saves go (default ~/.local/share/worldloom/saves/STORY_ID)" in play
    from game.errorbank.cli import ENV_DB, default_db

    monkeypatch.delenv(ENV_DB, raising=False)  # the default itself, as a player without the variable has it
    bank = f"(default ${ENV_DB} or ~/{default_db().relative_to(Path.home())})"
    assert bank in play and bank in help_of("errorbank", "stats")  # one default: a file, said the same in both

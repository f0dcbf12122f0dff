"""Every lint code fires on its failing example; overrides; JSON output; clean stories."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from game.cli import main
from game.errors import StoryError
from game.lint import lint
from game.story.diagnostics import CODES
from game.story.lint import lint_story


def story(tmp: Path, text: str) -> Path:
    (tmp / "story.yaml").write_text(text)
    return tmp


@pytest.mark.parametrize("code", sorted(CODES))
def test_each_code_fires_on_its_example(code: str, tmp_path: Path) -> None:
    for name, text in CODES[code].files:  # a catalogue beside the story, for the catalogue codes
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    diags = lint(story(tmp_path, CODES[code].example))  # the story's findings and its cards'
    hits = [d for d in diags if d.code == code]
    assert hits, [d.format() for d in diags]
    d = hits[0]
    assert d.severity == CODES[code].severity
    assert (str(tmp_path / "story.yaml") in d.where and d.where.count(":") >= 2) or \
        d.where == str(tmp_path / "locale" / "fr.po") or \
        re.fullmatch(re.escape(str(tmp_path / "locale" / "fr.po")) + r":\d+", d.where) is not None or \
        (str(tmp_path / "fox.yaml") in d.where and d.where.count(":") >= 2)  # a catalogue / card code names its file
    assert d.format().startswith(d.where + f": {code} {d.severity}: ")


def test_a_clean_story_has_no_errors(mini_path: Path) -> None:
    assert [d.format() for d in lint_story(mini_path) if d.severity == "error"] == []


def test_severity_overrides_from_worldloom_toml(tmp_path: Path) -> None:
    story(tmp_path, CODES["WL008"].example)
    (tmp_path / "worldloom.toml").write_text('[lint.severity]\nWL008 = "error"\nWL015 = "off"\n')
    diags = lint_story(tmp_path)
    assert [d.severity for d in diags if d.code == "WL008"] == ["error"]
    (tmp_path / "worldloom.toml").write_text('[lint.severity]\nWL008 = "off"\n')
    assert not [d for d in lint_story(tmp_path) if d.code == "WL008"]
    (tmp_path / "worldloom.toml").write_text('[lint.severity]\nWL999 = "off"\n')
    with pytest.raises(StoryError, match="unknown lint code"):
        lint_story(tmp_path)


def test_cli_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    story(tmp_path, CODES["WL001"].example)
    assert main(["lint", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "WL001 error: undefined scene 'kite_flght' (did you mean 'kite_flight'? check the goto" in out
    assert main(["lint", str(tmp_path), "--format", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["code"] == "WL001" and rows[0]["severity"] == "error" and ":6:" in rows[0]["where"]
    story(tmp_path, CODES["WL008"].example)  # warnings only
    assert main(["lint", str(tmp_path)]) == 0


def test_an_unknown_reaction_is_named_with_the_near_one_and_the_reactions_the_world_draws(tmp_path: Path) -> None:
    from game.state.gamestate import REACTIONS
    from game.world.backends.motion import STATES

    assert STATES is REACTIONS  # one list: what lint allows is what the world draws
    story(tmp_path, "id: t\ntitle: T\nstart: a\nlocations: {here: {name: Here}}\ncast: {cat: {name: Cat}}\n"
                    "scenes:\n  a: {location: here, on_enter: [\"react('cat', 'nuzle')\"], choices: ["
                    "{id: c, text: pet, react: {cat: purr}, goto: b},"
                    " {id: d, text: pat, react: {cat: leap}, goto: b}]}\n"
                    "  b: {location: here, ending: e}\n")
    found = {d.message: d for d in lint_story(tmp_path) if d.code == "WL028"}
    assert set(found) == {"unknown reaction 'purr': the world draws it as idle",
                          "unknown reaction 'nuzle': the world draws it as idle"}  # leap is one
    listed = "the reactions are " + ", ".join(REACTIONS)
    assert found["unknown reaction 'purr': the world draws it as idle"].hint == listed
    assert found["unknown reaction 'nuzle': the world draws it as idle"].hint == "did you mean 'nuzzle'? " + listed
    purr = found["unknown reaction 'purr': the world draws it as idle"]
    assert purr.where.endswith("story.yaml:7:97")  # at its entry (cat: purr)


def test_a_misspelt_goto_is_one_finding_not_three_and_a_far_one_still_leaves_it_unreached(tmp_path: Path) -> None:
    head = "id: t\ntitle: T\nstart: a\nlocations: {here: {name: Here}}\nscenes:\n"
    rest = ("  light_end: {location: here, choices: [{id: e, text: on, goto: after}]}\n"
            "  after: {location: here, ending: light}\n  dark_end: {location: here, ending: dark}\n")
    story(tmp_path, head + "  a: {location: here, choices: [{id: c, text: light, goto: light_ending},"
                           " {id: d, text: dark, goto: dark_end}]}\n" + rest)
    codes = [(d.code, d.message) for d in lint_story(tmp_path)]
    assert codes == [("WL001", "undefined scene 'light_ending'")]  # not WL005/WL015 for light_end (nor after)
    story(tmp_path, head + "  a: {location: here, choices: [{id: c, text: light, goto: zzz},"
                           " {id: d, text: dark, goto: dark_end}]}\n" + rest)
    found = {(d.code, d.message) for d in lint_story(tmp_path)}
    assert {("WL005", "scene 'light_end' is unreachable from the start"),
            ("WL015", "scene 'light_end' is never the target of a goto or exit"),
            ("WL005", "scene 'after' is unreachable from the start")} <= found  # no scene is near 'zzz'
    story(tmp_path, head.replace("start: a", "start: aa") + "  a: {location: here, choices: [{id: d, text: dark, "
                                                           "goto: dark_end}]}\n" + rest.replace("light_end: ", "lit: "))
    assert {d.code for d in lint_story(tmp_path) if "'dark_end'" in d.message or "'a'" in d.message} == set()


def test_undefined_scene_suggests_the_near_id_and_nothing_when_none_is_near(tmp_path: Path) -> None:
    story(tmp_path, "id: t\ntitle: T\nstart: a\nlocations: {here: {name: Here}}\nscenes:\n"
                    "  a: {location: here, choices: [{id: c, text: go, goto: kite_flght},"
                    " {id: d, text: far, goto: zzz, if: \"visited('kite_fligt') > 0\"}]}\n"
                    "  kite_flight: {location: here, ending: e}\n")
    hints = {d.message: d.hint for d in lint_story(tmp_path) if d.code == "WL001"}
    assert hints["undefined scene 'kite_flght'"].startswith("did you mean 'kite_flight'? ")
    assert hints["undefined scene 'kite_fligt'"].startswith("did you mean 'kite_flight'? ")
    assert hints["undefined scene 'zzz'"] == CODES["WL001"].hint

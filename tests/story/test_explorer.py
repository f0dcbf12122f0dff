"""The explorer: endings, dead ends, loops, coverage, the bound, runtime errors and their scripts, --jobs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from game.cli import main as cli_main
from game.errors import StoryRuntimeError
from game.headless import play_headless
from game.inputs.script import read_script
from game.story.explorer import Report, explore, explore_path, key_spec
from game.story.loader import story_from_dict
from game.world.backends import BACKENDS

DATA = Path(__file__).parents[1] / "data"
MAZE = DATA / "explore_maze"
ERRORS = DATA / "explore_error"
BACKEND = "null" if "null" in BACKENDS else "procedural"


def counts(report: Report) -> dict[str, tuple[int, int]]:
    return {k: (c.reached, c.total) for k, c in report.coverage.items()}


def test_maze_finds_exactly_the_endings_the_dead_end_and_the_loop() -> None:
    report = explore_path(MAZE, n_random=10)
    assert not report.bound_hit
    assert report.endings == ["crowned", "home", "lost_at_sea"]
    assert report.all_endings == ["crowned", "home", "lost_at_sea", "treasure"]
    assert [d.scene for d in report.dead_ends] == ["pit"]
    assert report.dead_ends[0].path == ("choose jump_in_pit",)
    assert ":53:" in report.dead_ends[0].where  # the pit's line in story.yaml
    assert [lp.scenes for lp in report.loops] == [("maze_a", "maze_b")]
    assert report.loops[0].path == ("choose enter_maze",)
    assert report.failures == []
    assert not report.ok
    assert counts(report) == {"scenes": (9, 11), "choices": (10, 11), "actions": (1, 1), "lines": (8, 9),
                              "overall": (28, 32)}
    assert {(k, i) for k, i, _ in report.unreached} == {("scene", "attic"), ("scene", "vault")}
    text = report.format()
    assert "endings: 3 (crowned, home, lost_at_sea)" in text
    assert "coverage: 88% (scenes 9/11 82%, choices 10/11 91%, actions 1/1 100%, lines 8/9 89%)" in text
    assert "dead ends: 1" in text and "loops without exit: 1" in text and "runtime errors: 0" in text


def test_scripts_reproduce_the_dead_end_and_the_loop(tmp_path: Path) -> None:
    report = explore_path(MAZE, n_random=0)
    scripts = report.save_scripts(tmp_path / "out")
    assert sorted(scripts) == ["dead_end_1_pit", "loop_1_maze_a"]
    runner = play_headless(str(MAZE), read_script(scripts["dead_end_1_pit"]), backend=BACKEND, size=(32, 32))
    assert runner.session.state.scene == "pit" and not runner.session.choices()
    runner = play_headless(str(MAZE), read_script(scripts["loop_1_maze_a"]), backend=BACKEND, size=(32, 32))
    assert runner.session.state.scene == "maze_a"


def test_mini_is_clean_with_known_coverage(mini_path: Path) -> None:
    report = explore_path(mini_path, n_random=10)
    assert report.ok and not report.bound_hit
    assert report.endings == ["good", "lonely"]
    # "You feel brave." needs courage > 0, which only the kite (leaving the meadow for good) gives.
    assert counts(report) == {"scenes": (5, 5), "choices": (5, 5), "actions": (1, 1), "lines": (7, 8),
                              "overall": (18, 19)}
    assert [i for k, i, _ in report.unreached] == ["meadow_cond"]
    assert "trust(creature) capped at 2" in report.key and "chosen(wave) capped at 1" in report.key


def test_key_caps_follow_the_comparisons_and_effect_reads() -> None:
    story = story_from_dict({
        "id": "caps", "title": "Caps", "start": "a",
        "variables": {"a_var": {"type": "int", "default": 0}, "b_var": {"type": "int", "default": 0},
                      "noise": {"type": "int", "default": 0}},
        "locations": {"here": {"name": "Here"}},
        "scenes": {
            "a": {"location": "here", "on_enter": ["noise += 1", "a_var = b_var"], "choices": [
                {"id": "c1", "text": "x", "if": "visited('a') >= 2", "goto": "a"},
                {"id": "c2", "text": "y", "if": "visited('b')", "goto": "b"},
                {"id": "c3", "text": "z", "if": "visited('c') == 1 and a_var > 3", "goto": "c"}]},
            "b": {"location": "here", "ending": "b"},
            "c": {"location": "here", "ending": "c"},
        }})
    spec = key_spec(story)
    assert spec.caps[("visited", "a")] == (2.0, True)  # min(v, 2)
    assert spec.caps[("visited", "b")] == (1.0, True)  # bare truthiness: min(v, 1)
    assert spec.caps[("visited", "c")] == (1.0, False)  # == 1: 0, 1, "more"
    assert ("var", "a_var") in spec.slots and ("var", "a_var") not in spec.caps  # a_var = b_var: not monotone
    assert ("var", "b_var") in spec.slots  # read to change a keyed variable
    assert ("var", "noise") not in spec.slots  # nothing reads it
    report = explore(story, n_random=0)
    assert not report.bound_hit and report.states < 10
    dice = story_from_dict({
        "id": "dice", "title": "Dice", "start": "a", "locations": {"here": {"name": "Here"}},
        "scenes": {"a": {"location": "here", "choices": [{"id": "r", "text": "roll", "if": "random() < 0.5"}]}}})
    spec = key_spec(dice)
    assert spec.uses_random and ("draws",) in spec.slots and ("draws",) not in spec.caps  # never capped


def test_bound_is_reported_and_invents_no_loops(tmp_path: Path) -> None:
    report = explore_path(MAZE, max_states=3, n_random=0)
    assert report.bound_hit and report.states == 3
    assert report.loops == []
    assert "hit the bound of 3 states" in report.format()
    assert report.to_json()["bound_hit"] is True


def test_runtime_errors_come_with_reproducing_scripts(tmp_path: Path) -> None:
    report = explore_path(ERRORS, n_random=5)
    by_why = {f.why: f for f in report.failures}
    assert set(by_why) == {"goto to unknown scene 'cellar_missing'",
                           "effect \"counter += 'a'\" failed: cannot apply += to 1 and 'a'"}
    assert by_why["goto to unknown scene 'cellar_missing'"].path == ("choose go_study", "move w")
    assert by_why["effect \"counter += 'a'\" failed: cannot apply += to 1 and 'a'"].path == (
        "choose count_up", "choose go_study", "choose break_counter")
    scripts = report.save_scripts(tmp_path)
    assert sorted(scripts) == ["error_1", "error_2"]
    for n, failure in enumerate(report.failures, 1):
        text = Path(scripts[f"error_{n}"]).read_text()
        assert text.startswith("# worldloom explore: StoryRuntimeError")
        with pytest.raises(StoryRuntimeError) as caught:
            play_headless(str(ERRORS), read_script(scripts[f"error_{n}"]), backend=BACKEND, size=(32, 32))
        assert caught.value.why == failure.why
    assert not report.ok


def test_jobs_two_gives_the_same_results_as_one() -> None:
    # A tiny bound leaves the random playthroughs to do the finding.
    one = explore_path(MAZE, max_states=2, n_random=12, max_steps=40, jobs=1)
    two = explore_path(MAZE, max_states=2, n_random=12, max_steps=40, jobs=2)
    assert one.endings == two.endings and one.endings
    assert counts(one) == counts(two)
    assert one.dead_ends == two.dead_ends
    assert one.reached == two.reached
    assert one.random_steps == two.random_steps


def test_cli_text_json_and_exit_codes(mini_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert cli_main(["explore", str(mini_path), "--random", "5", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "endings: 2 (good, lonely)" in text and "coverage: 95%" in text
    assert not out.exists()  # nothing to reproduce
    assert cli_main(["explore", str(MAZE), "--random", "5", "--out", str(out), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["endings"] == ["crowned", "home", "lost_at_sea"]
    assert [d["scene"] for d in doc["dead_ends"]] == ["pit"]
    assert [lp["scenes"] for lp in doc["loops"]] == [["maze_a", "maze_b"]]
    assert Path(doc["scripts"]["dead_end_1_pit"]).is_file()
    assert cli_main(["explore", str(tmp_path / "nowhere"), "--random", "0"]) == 2


def test_explore_never_imports_torch(mini_path: Path, tmp_path: Path) -> None:
    code = ("import sys\nfrom game.cli import main\n"
            f"main(['explore', {str(mini_path)!r}, '--random', '3', '--out', {str(tmp_path)!r}])\n"
            "print('torch' in sys.modules)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith("False")

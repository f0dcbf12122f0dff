"""#17 "Big stories": lint and play share the parse cache (a story play loaded lints without a YAML
parse; an unchanged story lints again without loading), and a long chain of scenes starts by
compiling only what its first step uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from game.story import lint as lint_mod
from game.story import loader
from game.story import story as story_mod
from game.story.lint import lint_story
from game.story.loader import load_story
from game.story.runtime import StoryRuntime


def chain(folder: Path, n: int) -> Path:
    """A story of ``n`` scenes in a row, each with a condition and an effect of its own."""
    lines = ["id: chain", "title: Chain", "start: s0", "locations: {here: {name: Here}}",
             "variables: {steps: {type: int, default: 0}}", "scenes:"]
    for i in range(n - 1):
        lines.append(f"  s{i}: {{location: here, lines: ['Step {i}.'], choices: [{{id: c{i}, text: On, "
                     f"if: 'steps >= {i}', do: ['steps += 1'], goto: s{i + 1}}}]}}")
    lines.append(f"  s{n - 1}: {{location: here, ending: end}}")
    (folder / "story.yaml").write_text("\n".join(lines) + "\n")
    return folder


def refuse(*_: Any, **__: Any) -> Any:
    raise AssertionError("the story was parsed again")


def test_lint_reads_what_play_loaded_and_lints_again_from_its_findings(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    chain(tmp_path, 50)
    load_story(tmp_path)  # play fills the cache
    with monkeypatch.context() as m:
        m.setattr(loader, "read_sources", refuse)  # no YAML parse: lint takes the story from the cache
        first = lint_story(tmp_path)
    assert [d for d in first if d.severity == "error"] == []
    with monkeypatch.context() as m:
        m.setattr(lint_mod, "load_story", refuse)  # unchanged: its findings are read back, nothing loads
        assert lint_story(tmp_path) == first


def test_a_chain_of_1000_scenes_starts_compiling_only_its_first_step(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    chain(tmp_path, 1000)
    load_story(tmp_path)  # the cache is filled once
    compiled: list[str] = []
    real_condition, real_effect = story_mod.compile_condition, story_mod.compile_effect
    monkeypatch.setattr(story_mod, "compile_condition", lambda src, where="": (compiled.append(src),
                                                                               real_condition(src, where))[1])
    monkeypatch.setattr(story_mod, "compile_effect", lambda src, where="": (compiled.append(src),
                                                                            real_effect(src, where))[1])
    monkeypatch.setattr(loader, "read_sources", refuse)
    story = load_story(tmp_path)
    rt = StoryRuntime(story)
    state = rt.new_state(0)
    rt.begin(state)
    assert [c.id for c in rt.available_choices(state)] == ["c0"]
    assert len(compiled) <= 3, compiled  # the first scene's condition (and its effect), not 999 scenes' worth

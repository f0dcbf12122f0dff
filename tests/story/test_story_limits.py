"""Story files, expressions and effects past the limits of game.limits: refused, named, cheaply."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from game import limits
from game.errors import ExpressionError, StoryError, StoryRuntimeError
from game.state import Choose
from game.story import load_story, story_from_dict
from game.story.expr import compile_condition, compile_effect
from game.story.lint import lint_story
from game.story.runtime import StoryRuntime
from game.story.yamlio import compose_marked

HEAD = "id: t\ntitle: T\nstart: a\nlocations: {h: {name: H}}\nscenes:\n  a:\n    location: h\n"


def write(tmp_path: Path, text: str, **files: str) -> Path:
    (tmp_path / "story.yaml").write_text(text)
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    return tmp_path


@pytest.mark.parametrize("depth", [65, 300, 100_000])
def test_deep_nesting_is_refused_with_its_line(depth: int) -> None:
    flow = "a: " + "[" * depth + "]" * depth + "\n"
    block = "a:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(min(depth, 2000)))
    for text in (flow, block):
        with pytest.raises(StoryError, match=f"more than {limits.MAX_DEPTH} levels") as err:
            compose_marked(text, "deep.yaml")
        assert err.value.where.startswith("deep.yaml:")


def test_nesting_at_the_limit_still_loads() -> None:
    depth = limits.MAX_DEPTH - 1  # the top mapping is one level
    value = compose_marked("a: " + "[" * depth + "]" * depth, "ok.yaml").value
    for _ in range(depth):
        value = value["a"] if isinstance(value, dict) else value[0]
    assert value == []


def test_alias_bomb_is_refused_before_it_is_built() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(9))
    tracemalloc.start()
    try:
        with pytest.raises(StoryError, match="alias bomb"):
            compose_marked(bomb, "bomb.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20  # the expanded document would be 10**10 values


def test_aliases_share_values_and_keep_their_marks() -> None:
    m = compose_marked("a: &x {b: [1, 2]}\nc: *x\n", "f.yaml")
    assert m.value == {"a": {"b": [1, 2]}, "c": {"b": [1, 2]}}
    assert m.where(("c", "b", 1)) == "f.yaml:1:15"  # the anchored line, not the alias


@pytest.mark.parametrize("text, why", [
    ("a: 1e999", "overflowed"), ("a: 99999999999999999999", "largest whole number"),
    ("a: " + "9" * 5000, "too many digits"), ("- 1\n---\n- 2", "single YAML document"),
    ("a: *nowhere", "undefined alias"), ("a: !!binary aGk=", "not allowed"),
])
def test_bad_scalars_and_documents_are_named(text: str, why: str) -> None:
    with pytest.raises(StoryError, match=why):
        compose_marked(text, "x.yaml")


@pytest.mark.parametrize("body", [
    "    choices:\n      - {id: c, text: go, say: 5}\n",
    "    lines: 7\n",
    "    choices:\n      - {id: c, text: go, say: 2.5}\n",
])
def test_say_or_lines_given_a_number_is_a_story_error(tmp_path: Path, body: str) -> None:
    with pytest.raises(StoryError, match="valid tuple") as err:
        load_story(write(tmp_path, HEAD + body), use_cache=False)
    assert "story.yaml:" in err.value.where


def test_include_naming_a_folder_is_a_story_error(tmp_path: Path) -> None:
    (tmp_path / "chapters").mkdir()
    with pytest.raises(StoryError, match="is a folder"):
        load_story(write(tmp_path, "include: [chapters]\n" + HEAD), use_cache=False)


def test_include_with_a_nul_byte_is_a_story_error(tmp_path: Path) -> None:
    with pytest.raises(StoryError, match="not a usable file name"):
        load_story(write(tmp_path, 'include: ["a\\0b.yaml"]\n' + HEAD), use_cache=False)


def runtime_with(do: list[str], variables: dict[str, Any]) -> tuple[StoryRuntime, Any]:
    story = story_from_dict({"id": "e", "title": "E", "start": "a", "locations": {"h": {"name": "H"}},
                             "cast": {"c": {"name": "C"}}, "variables": variables,
                             "scenes": {"a": {"location": "h", "choices": [{"id": "go", "text": "Go", "do": do}]}}})
    rt = StoryRuntime(story)
    state = rt.new_state(seed=1)
    rt.begin(state)
    return rt, state


@pytest.mark.parametrize("do, variables, why", [
    (["name *= 100000000"], {"name": {"type": "str", "default": "Ada"}}, "over the 100,000-character limit"),
    (["x *= 10000000000", "x *= 10000000000"], {"x": {"type": "int", "default": 1}}, "largest whole number"),
    (["f *= 1e200", "f *= 1e200"], {"f": {"type": "float", "default": 1.0}}, "overflowed"),
    (["f = 1e300 * 1e300"], {"f": {"type": "float", "default": 1.0}}, "overflowed"),
    (["trust('c') = 'abc'"], {}, "is a number"),
    (["trust('c') += 'abc'"], {}, "is a number"),
])
def test_effects_past_a_limit_fail_before_the_state_changes(do: list[str], variables: dict[str, Any],
                                                            why: str) -> None:
    rt, state = runtime_with(do, variables)
    before = json.dumps(state.to_json())
    tracemalloc.start()
    try:
        with pytest.raises((StoryRuntimeError, ExpressionError), match=why):
            rt.apply(state, Choose(choice_id="go"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20
    after = json.dumps(state.to_json())
    assert len(after) < len(before) + 10_000  # the state still saves, small


def test_format_string_bomb_in_a_condition_is_refused_cheaply() -> None:
    cond = compile_condition("'%0999999999d' % 1 == ''")
    tracemalloc.start()
    try:
        with pytest.raises(ExpressionError, match="string formatting"):
            cond(_Env())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_lint_of_a_format_string_bomb_is_cheap(tmp_path: Path) -> None:
    body = "    choices:\n      - {id: c, text: go, if: \"'%0999999999d' % 1 == ''\"}\n"
    tracemalloc.start()
    try:
        report = lint_story(write(tmp_path, HEAD + body))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20  # it used to build a gigabyte string while checking for always-false conditions
    assert sorted(d.code for d in report) == ["WL006", "WL024"]  # a dead end, and the bomb named (not swallowed)


def test_huge_number_literals_are_refused_at_compile_time() -> None:
    with pytest.raises(ExpressionError, match="largest whole number"):
        compile_effect("x = " + "9" * 30)
    assert compile_effect("x = 9223372036854775807").kind == "assign"


class _Env:
    def name(self, key: str) -> Any:
        return 1

    def call(self, fn: str, args: tuple[Any, ...]) -> Any:
        return 0

    def assign(self, *a: Any) -> None: ...

    def effect_call(self, *a: Any) -> None: ...

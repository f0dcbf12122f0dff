"""Lint's WL024: a part of an expression that fails every time it runs (the `%` and repeat bombs)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from game.errors import ExpressionError
from game.story.expr import compile_condition, compile_effect, constant_failure
from game.story.lint import lint_story

HEAD = """id: t
title: T
start: a
locations: {here: {name: Here}}
variables: {n: {type: int, default: 1}, name: {type: str, default: Ann}, flag: {type: bool, default: true}}
scenes:
"""


def lint_with(tmp: Path, condition: str = "n > 0", effect: str = "n = 2") -> list[str]:
    """WL024 findings of a story whose one choice has ``condition`` and ``effect``."""
    (tmp / "story.yaml").write_text(HEAD + f'  a: {{location: here, choices: [{{id: c, text: go, if: "{condition}", '
                                    f'do: ["{effect}"], goto: a}}, {{id: d, text: stay, goto: a}}]}}\n')
    return [d.format() for d in lint_story(tmp, use_cache=False) if d.code == "WL024"]


class Env:
    """The story's variables at their defaults, as play would read them."""

    values: dict[str, Any] = {"n": 1, "name": "Ann", "flag": True}

    def name(self, key: str) -> Any:
        return self.values[key]

    def call(self, fn: str, args: tuple[Any, ...]) -> Any:
        raise AssertionError(fn)

    def assign(self, target: Any, op: str, value: Any) -> None:
        from game.story.expr import combine

        combine(self.values[target.name], op, value)

    def effect_call(self, fn: str, args: tuple[Any, ...]) -> None:
        raise AssertionError(fn)


@pytest.mark.parametrize("condition, why", [
    ("'%0999999999d' % n == ''", "string formatting"),  # the format bomb: refused whatever n holds
    ("'%0999999999d' % 1 == ''", "string formatting"),  # constant: lint used to swallow it as 'not always false'
    ("n > 0 and 'ab' * 100000000 == ''", "100,000-character limit"),
    ("n == 1 // 0", "cannot evaluate"),
])
def test_a_condition_that_always_fails_is_reported(condition: str, why: str, tmp_path: Path) -> None:
    found = lint_with(tmp_path, condition=condition)
    assert len(found) == 1 and why in found[0], found
    assert "story.yaml:7:" in found[0]  # file:line of the scene that holds it
    with pytest.raises(ExpressionError):  # and play does refuse it, at the defaults
        compile_condition(condition)(Env())


@pytest.mark.parametrize("effect, why", [
    ("name *= 100000000", "100,000-character limit"),  # the repeat bomb: any text it holds is too long
    ("name = 'ab' * 100000000", "100,000-character limit"),
    ("n = 5 + '%d' % 2", "string formatting"),
])
def test_an_effect_that_always_fails_is_reported(effect: str, why: str, tmp_path: Path) -> None:
    found = lint_with(tmp_path, effect=effect)
    assert len(found) == 1 and why in found[0], found
    with pytest.raises(ExpressionError):
        compile_effect(effect).apply(Env())


@pytest.mark.parametrize("condition, effect", [
    ("n % 3 == 1", "n = n % 2"),  # % on numbers
    ("name == 'Ann' + ''", "name += 'y'"),
    ("n if flag else 1 // 1", "n *= 100000000"),  # a number times a count: within MAX_INT
    ("'ab' * 3 == name", "name *= 3"),
])
def test_sound_expressions_are_not_reported(condition: str, effect: str, tmp_path: Path) -> None:
    assert lint_with(tmp_path, condition=condition, effect=effect) == []


def test_lint_never_builds_the_bomb() -> None:
    tracemalloc.start()
    try:
        for src in ("'%0999999999d' % 1", "'x' * 100000000", "'ab' * 99999999 + 'c'"):
            assert constant_failure(compile_condition(src).tree) is not None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak  # the gigabyte is refused before it is made

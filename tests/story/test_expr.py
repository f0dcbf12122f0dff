"""The safe expression language."""

from __future__ import annotations

from typing import Any

import pytest

from game.errors import ExpressionError
from game.story.expr import Target, compile_condition, compile_effect


class Env:
    def __init__(self) -> None:
        self.vars: dict[str, Any] = {"courage": 1, "mood": "calm"}
        self.rel: dict[tuple[str, str], float] = {}
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def name(self, key: str) -> Any:
        if key not in self.vars:
            raise ExpressionError(f"unknown name {key}")
        return self.vars[key]

    def call(self, fn: str, args: tuple[Any, ...]) -> Any:
        if fn == "has":
            return args[0] == "kite"
        if fn == "trust":
            return self.rel.get((args[0], "trust"), 0.0)
        return 0

    def assign(self, target: Target, op: str, value: Any) -> None:
        if target.kind == "relation":
            key = (target.name, target.axis)
            old = self.rel.get(key, 0.0)
            self.rel[key] = old + value if op == "+=" else value
        else:
            old = self.vars.get(target.name, 0)
            self.vars[target.name] = value if op == "=" else old + value

    def effect_call(self, fn: str, args: tuple[Any, ...]) -> None:
        self.calls.append((fn, args))


@pytest.mark.parametrize("src,expected", [
    ("has('kite')", True),
    ("has('leaf')", False),
    ("courage >= 1 and not has('leaf')", True),
    ("mood == 'calm' or courage > 5", True),
    ("trust('creature') >= 2", False),
    ("courage + 1 if has('kite') else 0", True),
])
def test_conditions(src: str, expected: Any) -> None:
    assert compile_condition(src)(Env()) == expected  # type: ignore[arg-type]


def test_effects_change_variables_relations_and_call() -> None:
    env = Env()
    for src in ("courage += 2", "mood = 'bold'", "trust('creature') += 1.5", "give('kite', 'creature')"):
        compile_effect(src).apply(env)  # type: ignore[arg-type]
    assert env.vars["courage"] == 3 and env.vars["mood"] == "bold"
    assert env.rel[("creature", "trust")] == 1.5
    assert env.calls == [("give", ("kite", "creature"))]


def test_equality_in_rhs_is_not_an_assignment() -> None:
    env = Env()
    compile_effect("courage = mood == 'calm'").apply(env)  # type: ignore[arg-type]
    assert env.vars["courage"] is True


@pytest.mark.parametrize("src", [
    "__import__('os').system('true')",
    "courage.__class__",
    "open('/etc/passwd')",
    "[x for x in range(10)]",
    "lambda: 1",
    "(1).real",
    "has('kite')[0]",
])
def test_dangerous_or_foreign_constructs_are_refused(src: str) -> None:
    with pytest.raises(ExpressionError):
        compile_condition(src)


@pytest.mark.parametrize("src", [
    "courage", "x = y = 1", "del courage", "import os", "courage += 1; mood = 'x'",
    "len('a') = 2", "give('kite')", "exec('x')",
])
def test_bad_effects_are_refused(src: str) -> None:
    with pytest.raises(ExpressionError):
        compile_effect(src)


def test_overlong_expression_is_refused() -> None:
    with pytest.raises(ExpressionError, match="longer"):
        compile_condition("1 + " * 200 + "1")


def test_errors_carry_where() -> None:
    with pytest.raises(ExpressionError) as err:
        compile_condition("has(", where="story.yaml:3:4")
    assert str(err.value).startswith("story.yaml:3:4")

"""Checkpoint differences: applying diff(a, b) to a gives b exactly, and typed patches refuse wrong values."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from game.state.delta import DeltaError, depth_within, diff, patch, same

JSON = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2) | st.text(max_size=2),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=2), c, max_size=4),
                    max_leaves=12)


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(a=JSON, b=JSON)
def test_patch_of_diff_gives_the_new_value_and_leaves_the_old(a: Any, b: Any) -> None:
    kept = copy.deepcopy(a)
    d = diff(a, b)
    got = b if d is None else patch(a, d)
    assert same(got, b)
    assert same(a, kept)
    assert d is None or not same(a, b)


def test_one_and_true_and_one_point_oh_are_different_values() -> None:
    assert diff({"x": 1}, {"x": True}) == {"d": {"x": {"=": True}}}
    assert diff([1, 2], [1.0, 2]) == {"=": [1.0, 2]}
    assert diff({"x": [1]}, {"x": [1]}) is None


def test_an_append_only_list_costs_its_tail() -> None:
    old = [f"memory {i}" for i in range(500)]
    assert diff(old, [*old, "new"]) == {"n": 500, "a": ["new"]}
    assert patch(old, {"n": 2, "a": ["z"]}) == ["memory 0", "memory 1", "z"]


@pytest.mark.parametrize("old,delta,tp,match", [
    ({"a": 1}, {"d": {"a": {"=": "x"}}}, dict[str, int], "a: Input should be a valid integer"),
    ({"a": 1}, {"d": {"b": {"d": {}}}}, dict[str, int], "b: changes a key that is not there"),
    ({"a": 1}, {"d": {}, "x": ["b"]}, dict[str, int], "removes 'b'"),
    (["a"], {"n": 5, "a": []}, list[str], "a list difference"),
    (["a"], {"n": 0, "a": [3]}, list[str], "Input should be a valid string"),
    ("a", {"d": {}}, Any, "not a mapping"),
    ({}, {"=": 1, "d": {}}, Any, "stands alone"),
    ({}, [], Any, "non-empty object"),
    ({}, {"q": 1}, Any, "unknown difference"),
])
def test_a_bad_difference_says_where_and_why(old: Any, delta: Any, tp: Any, match: str) -> None:
    with pytest.raises(DeltaError, match=match):
        patch(old, delta, tp)


def test_depth_is_checked_without_recursion() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    assert not depth_within(deep, 64) and depth_within([[1], {"a": [2]}], 3) and not depth_within([[[]]], 2)

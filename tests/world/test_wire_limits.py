"""Wire messages are bounded before they are parsed (game.limits.parse_json through wire.loads)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from game import limits
from game.world.wire import WireError, loads


def depth_of(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    return 0


@pytest.mark.parametrize("value", [
    {"op": "x"}, {"op": "x", "a": [1, [2, [3]]], "b": {"c": {}}}, {"op": "[[[[", "s": "]]]]{{{"},
    {"op": "x", "s": "quote \" and backslash \\ inside", "t": [[["\\\"["]]]}, [], [[], [[]]], "plain",
])
def test_json_depth_is_the_nesting_and_ignores_brackets_in_strings(value: Any) -> None:
    assert limits.json_depth(json.dumps(value)) == depth_of(value)


def test_a_deep_message_is_refused_before_json_recurses() -> None:
    deep = '{"op": "ping", "x": ' + "[" * 1_000_000 + "]" * 1_000_000 + "}"
    with pytest.raises(WireError, match="nests 1000001 levels deep"):
        loads(deep, limit=4 << 20)
    unterminated = '{"op": "ping", "x": "' + '\\"' * 200_000 + "\\"  # a string that never ends: still linear
    with pytest.raises(WireError, match="not valid JSON"):
        loads(unterminated, limit=4 << 20)


@pytest.mark.parametrize("text, why", [
    ('{"op": "x", "v": NaN}', "not valid JSON"), ('{"op": "x", "v": Infinity}', "not valid JSON"),
    ('{"op": "x", "v": "\\udc00"}', "lone UTF-16 surrogate"), (b'{"op": "\xff"}', "not UTF-8"),
    ('{"op": 5}', "with an 'op'"), ("[1]", "with an 'op'"),
])
def test_bad_messages_are_wire_errors(text: str | bytes, why: str) -> None:
    with pytest.raises(WireError, match=why):
        loads(text)


def test_size_is_checked_in_bytes() -> None:
    msg = json.dumps({"op": "x", "s": "é" * 600}, ensure_ascii=False)  # 600 characters, 1,200 bytes of them
    assert loads(msg, limit=2000)["op"] == "x"
    with pytest.raises(WireError, match="over the 1,000-byte limit"):
        loads(msg, limit=1000)
    emoji = json.dumps({"op": "x", "s": "\U0001f642" * 300}, ensure_ascii=False)  # 300 characters of 4 bytes each
    assert len(emoji) * 3 < 1000 < len(emoji.encode("utf-8"))
    with pytest.raises(WireError, match="over the 1,000-byte limit"):
        loads(emoji, limit=1000)

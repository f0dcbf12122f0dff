"""Differences between two JSON-able values, and their typed application.

A save stores each checkpoint as its difference from the one before it (the first
from nothing), so 200 checkpoints of a long game cost little more than one state.
A difference ("delta") is a JSON object with one of three shapes:

* ``{"=": value}``: the new value, whole;
* ``{"d": {key: delta, ...}, "x": [key, ...]}``: a mapping with the keys in ``d``
  changed (a new key's delta is ``{"=": value}``) and the keys in ``x`` removed;
* ``{"n": k, "a": [item, ...]}``: a list that keeps its first ``k`` items and has
  ``a`` appended (append-only lists such as a memory's texts cost only their tail).

No delta means "unchanged". This is RFC 7386 merge-patch extended with removal
that does not need ``null`` and with list tails; RFC 6902 JSON Patch (``jsonpatch``)
was measured too slow to apply 200 times within a 50 ms load. :func:`patch`
checks every value it puts in against the field's type (a pydantic
``TypeAdapter``), so a checkpoint is validated by what changed, not re-validated
whole, and unchanged parts are shared with the previous checkpoint (checkpoint
states are never mutated: a rollback copies).
"""

from __future__ import annotations

from functools import lru_cache
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import TypeAdapter, ValidationError

#: A delta, as described in the module docstring.
Delta = dict[str, Any]
_SCALARS = frozenset({str, int, float, bool})


class DeltaError(ValueError):
    """A delta does not fit the value it is applied to; ``where`` is the dotted path."""

    def __init__(self, where: str, why: str) -> None:
        self.where = where
        self.why = why
        super().__init__(f"{where}: {why}" if where else why)


def exact_equality(tp: Any) -> bool:
    """Whether ``==`` is exact for values of type ``tp`` (no union mixing ``bool``, ``int``
    and ``float``, whose ``1 == 1.0 == True`` would hide a change of JSON type)."""
    args = get_args(tp)
    if get_origin(tp) in (Union, UnionType) and len({bool, int, float} & set(args)) > 1:
        return False
    return tp is not Any and all(exact_equality(a) for a in args)


def same(a: Any, b: Any) -> bool:
    """JSON equality that tells ``1``, ``1.0`` and ``True`` apart (``==`` does not)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return len(a) == len(b) and all(k in b and same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def diff(old: Any, new: Any) -> Delta | None:
    """The delta turning ``old`` into ``new`` (``None``: they are the same)."""
    if old is new:
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        changed: dict[str, Delta] = {}
        missing = object()
        for key, value in new.items():
            was = old.get(key, missing)
            if was is value or (type(was) is type(value) and type(value) in _SCALARS and was == value):
                continue  # the common case, without a call
            if was is missing:
                changed[key] = {"=": value}
            else:
                sub = diff(was, value)
                if sub is not None:
                    changed[key] = sub
        gone = [key for key in old if key not in new]
        if not changed and not gone:
            return None
        return {"d": changed, "x": gone} if gone else {"d": changed}
    if isinstance(old, list) and isinstance(new, list):
        keep = 0
        for x, y in zip(old, new, strict=False):
            if not same(x, y):
                break
            keep += 1
        if keep == len(old) == len(new):
            return None
        if keep == 0 and old:
            return {"=": new}
        return {"n": keep, "a": new[keep:]}
    return None if same(old, new) else {"=": new}


@lru_cache(maxsize=256)
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def _check(tp: Any, value: Any, where: str) -> Any:
    if tp is Any:
        return value
    try:
        return _adapter(tp).validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join([where, *(str(p) for p in first["loc"])]).strip(".")
        raise DeltaError(loc, first["msg"]) from None


def patch(old: Any, delta: Any, tp: Any = Any, where: str = "") -> Any:
    """``old`` with ``delta`` applied, as a new value (``old`` is never changed).

    Args:
        old: the previous value (already valid for ``tp``).
        delta: a delta (see the module docstring), as read from a file.
        tp: the value's type (``dict[str, int]``...); new values are validated
            against it. ``Any``: JSON, unchecked.
        where: dotted path of the value, for errors.

    Raises:
        DeltaError: the delta is malformed, does not fit ``old``, or puts in a
            value of the wrong type.
    """
    if not isinstance(delta, dict) or not delta:
        raise DeltaError(where, "a difference must be a non-empty object")
    if "=" in delta:
        if len(delta) != 1:
            raise DeltaError(where, "'=' stands alone in a difference")
        return _check(tp, delta["="], where)
    origin = get_origin(tp)
    if "d" in delta:
        if not isinstance(old, dict) or (tp is not Any and origin is not dict):
            raise DeltaError(where, "changes keys of something that is not a mapping")
        changed, gone = delta["d"], delta.get("x", [])
        if set(delta) - {"d", "x"} or not isinstance(changed, dict) or not isinstance(gone, list):
            raise DeltaError(where, "a mapping difference is {'d': {...}, 'x': [...]}")
        sub_tp = get_args(tp)[1] if origin is dict else Any
        new = dict(old)
        for key in gone:
            if not isinstance(key, str) or key not in new:
                raise DeltaError(where, f"removes {key!r}, which is not there")
            del new[key]
        whole: dict[str, Any] = {}  # new values, checked together (one call, not one per key)
        for key, sub in changed.items():
            if isinstance(sub, dict) and len(sub) == 1 and "=" in sub:
                whole[key] = sub["="]
            elif key in new:
                new[key] = patch(new[key], sub, sub_tp, f"{where}.{key}" if where else key)
            else:
                raise DeltaError(f"{where}.{key}" if where else key, "changes a key that is not there")
        if whole:
            new.update(whole if sub_tp is Any else _check(dict[str, sub_tp], whole, where))  # type: ignore[valid-type]
        return new
    if "a" in delta:
        if not isinstance(old, list) or (tp is not Any and origin is not list):
            raise DeltaError(where, "appends to something that is not a list")
        keep, tail = delta.get("n", len(old)), delta["a"]
        if set(delta) - {"n", "a"} or not isinstance(tail, list) or type(keep) is not int \
                or not 0 <= keep <= len(old):
            raise DeltaError(where, "a list difference is {'n': kept items, 'a': [new items]}")
        item_tp = get_args(tp)[0] if origin is list else Any
        return old[:keep] + (tail if item_tp is Any else _check(list[item_tp], tail, where))  # type: ignore[valid-type]
    raise DeltaError(where, f"unknown difference {sorted(delta)[:3]}")


def depth_within(value: Any, limit: int) -> bool:
    """Whether ``value`` nests at most ``limit`` lists or mappings deep (iterative: any depth is safe)."""
    if not isinstance(value, dict | list):
        return True
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return True

"""Build a pydantic model from values the code itself made: no validation, no defaults resolved.

``Model.model_construct`` skips validation but still walks every field to resolve defaults
(calling ``default_factory`` through ``inspect``), and ``model_copy(update=...)`` copies the
private and extra slots it then overwrites: 3-5 µs a model. The runtime builds several
events, choices and a state copy on every Ink step, so this does what ``model_construct``
does at its end (pydantic 2, ``pydantic/main.py``): set the instance's ``__dict__`` and its
fields-set, no extra, no private attributes. For models without private attributes or
extras only (the ones it is used for: :class:`~game.state.Event`,
:class:`~game.state.GameState`, the story schema's ``Choice``).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
#: The setters of pydantic's four instance slots, taken once (``object.__setattr__`` would look each
#: up on the class every time: half of what building an event cost).
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def trusted(cls: type[M], values: dict[str, Any], fields_set: set[str]) -> M:
    """An instance of ``cls`` holding ``values`` (every field, already of its type) as they are.

    ``values`` becomes the instance's ``__dict__`` (not copied); ``fields_set`` its
    ``model_fields_set`` (shared: pass a set that already names every field). ``cls`` must not
    define ``__new__`` (pydantic models do not; ``tests/state/test_trusted_layout.py`` pins it).
    """
    model: M = _new(cls)
    _set_dict(model, values)
    _set_fields(model, fields_set)
    _set_extra(model, None)
    _set_private(model, None)
    return model


__all__ = ["trusted"]

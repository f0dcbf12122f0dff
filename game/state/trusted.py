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

_set = object.__setattr__


def trusted(cls: type[M], values: dict[str, Any], fields_set: set[str]) -> M:
    """An instance of ``cls`` holding ``values`` (every field, already of its type) as they are.

    ``values`` becomes the instance's ``__dict__`` (not copied); ``fields_set`` its
    ``model_fields_set`` (shared: pass a set that already names every field).
    """
    model = cls.__new__(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", fields_set)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


__all__ = ["trusted"]

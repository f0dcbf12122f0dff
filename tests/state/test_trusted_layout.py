"""``game.state.trusted`` builds pydantic models by setting pydantic 2's instance slots itself.

It relies on pydantic's layout: a model instance holds exactly ``__dict__``,
``__pydantic_fields_set__``, ``__pydantic_extra__`` and ``__pydantic_private__``, and the
models it is used for have no private attributes and forbid extras. These tests pin each of
those, and hold a trusted instance to one pydantic validates itself, so a pydantic upgrade
that changes any of it fails here, loudly, not as a corrupt event or save.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import BaseModel

from game.state import Event, GameState
from game.state.trusted import trusted
from game.story.schema import Choice

#: The instance slots ``trusted`` sets (``pydantic/main.py``, ``BaseModel.__slots__``).
SLOTS = {"__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"}

#: Every model ``trusted`` is used for, with values of every field (already of its type).
CASES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (Event, {"kind": "line", "turn": 3, "frame": 40, "scene": "camp", "speaker": "ann", "text": "Hello.",
             "ids": {"line": "camp.l0"}, "data": {"tags": ["mood: warm"]}}),
    (Choice, dict(Choice.model_validate({"id": "walk_north", "text": "Walk north"}).__dict__)),
    (GameState, dict(GameState.model_validate({"scene": "camp", "variables": {"courage": 2},
                                                "inventory": ["lamp"], "world": {"ink": "{}"}}).__dict__)),
]


def test_pydantic_models_hold_exactly_the_slots_trusted_sets() -> None:
    assert set(BaseModel.__slots__) == SLOTS, "pydantic's instance layout changed: game/state/trusted.py must follow"


@pytest.mark.parametrize(("cls", "values"), CASES, ids=lambda x: getattr(x, "__name__", ""))
def test_the_models_trusted_builds_have_no_private_attributes_or_extras(cls: type[BaseModel],
                                                                      values: dict[str, Any]) -> None:
    assert not cls.__private_attributes__
    assert cls.__new__ is object.__new__  # trusted makes the instance with object.__new__ itself
    assert cls.model_config.get("extra") in (None, "ignore", "forbid")
    assert set(values) == set(cls.model_fields)


@pytest.mark.parametrize(("cls", "values"), CASES, ids=lambda x: getattr(x, "__name__", ""))
def test_a_trusted_instance_is_the_one_pydantic_validates(cls: type[BaseModel], values: dict[str, Any]) -> None:
    made = trusted(cls, copy.deepcopy(values), set(cls.model_fields))
    checked = cls.model_validate(copy.deepcopy(values))
    assert type(made) is cls and made == checked
    for slot in SLOTS:  # slot by slot, as pydantic's own constructor leaves them
        assert object.__getattribute__(made, slot) == object.__getattribute__(checked, slot), slot
    assert made.model_dump(mode="json") == checked.model_dump(mode="json")
    assert made.model_dump_json() == checked.model_dump_json()
    assert made.model_fields_set == set(cls.model_fields)
    again = made.model_copy(deep=True)
    assert again == made and again.__dict__ is not made.__dict__
    assert cls.model_validate_json(made.model_dump_json()) == checked  # it saves and loads back


def test_a_trusted_state_takes_assignment_and_copies_like_a_validated_one() -> None:
    values = dict(CASES[2][1])
    made = trusted(GameState, copy.deepcopy(values), set(GameState.model_fields))
    made.scene = "north"
    made.variables["courage"] = 3
    copied = made.copy_state()
    assert copied == made and copied.variables is not made.variables
    assert copied.to_json()["scene"] == "north" and copied.to_json()["variables"] == {"courage": 3}


def test_setting_a_state_field_is_pydantic_assignment_and_a_misspelt_one_is_refused() -> None:
    """``GameState.__setattr__`` sets a field directly (marked set, as pydantic does); any other name
    still goes to pydantic, which refuses it (a misspelt field must not become a silent attribute)."""
    state = GameState()
    assert "scene" not in state.model_fields_set
    state.scene = "camp"
    assert state.scene == "camp" and "scene" in state.model_fields_set and state.to_json()["scene"] == "camp"
    with pytest.raises(ValueError, match="no field"):
        state.scen = "north"  # type: ignore[attr-defined]
    assert "scen" not in state.__dict__ and state.to_json()["scene"] == "camp"

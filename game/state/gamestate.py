"""`GameState`: everything that changes while a story is played.

Plain data, JSON-able, no derived data (no embeddings, sprites or caches). The
compiled :class:`game.story.Story` is read-only; this is the only thing a save
holds, after Ink's ``Story``/``StoryState`` split (inkle/ink,
``ink-engine-runtime/StoryState.cs``).
"""

from __future__ import annotations

import copy
import random
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field

from game.state.trusted import trusted

#: Version of the save schema. Bump it and add a migration in
#: :mod:`game.state.saves` when a field changes meaning.
SCHEMA_VERSION = 2
#: The reactions a character can show: the values of :attr:`GameState.reactions` and of a story's
#: ``react:``. The world draws each with its own motion (:mod:`game.world.backends.motion`); lint
#: (``WL028``) refuses any other name, which the world would draw as ``idle``.
REACTIONS = ("idle", "leap", "recoil", "nuzzle", "tilt", "sleep", "flee")

Value = bool | int | float | str


def _copy_leaf(value: dict[Any, Any] | list[Any]) -> dict[Any, Any] | list[Any]:
    """A copy of a field's inner dict or list (deeper containers, which no field declares, deep-copied)."""
    items = value.values() if isinstance(value, dict) else value
    if any(isinstance(x, dict | list) for x in items):
        return copy.deepcopy(value)
    return value.copy()


class GameState(BaseModel):
    """The mutable state of one playthrough.

    Attributes:
        story_id: id of the story being played.
        scene: id of the current scene.
        variables: the story's typed variables by name.
        inventory: item ids the player holds, in pick-up order.
        holders: item id -> character id for items given away.
        visits: scene id -> number of times entered.
        chosen: choice id -> number of times taken (once-only choices hide at 1).
        relationships: character id -> axis (``trust``, ``affinity``, ...) -> value.
        reactions: character id -> current reaction name (``leap``, ``recoil``...).
        gifts: character id -> item ids received, in order (remembered for later scenes).
        world: world edits by key (``weather``, ``time_of_day``...), read by conditions.
        objects: things the player added (typed words or a dropped image), by object id:
            ``{name, noun, look, colour, size, x, y, location, image, on, kind, turn}``
            (``on`` is the character wearing or holding it, ``""`` when it stands in
            ``location``); see :mod:`game.world.edits`.
        looks: changes to authored entities by id (``{"colour": "blue", "removed": True}``).
        location: id of the current location.
        camera_x: camera position along the location, in world units (1.0 = a screen).
        seed: the playthrough's RNG seed.
        draws: how many random draws were made so far; the n-th draw is a pure function
            of ``(seed, n)`` (see :meth:`random`), so the count is all a save needs
            (schema 1 saves kept every value; :mod:`game.state.saves` migrates them).
        turn: number of intents applied.
        frame: index of the next frame on the frame clock.
        log_offset: number of events in the append-only event log at this state.
        role: the role the player took (``""``: none yet); see ``roles:`` in the story.
        timers: running timers: timer id -> turns left.
        quests: started quests: quest id -> current stage id, ``"done"`` when complete.
        agents: characters who act: character id -> ``{"at": location, "doing": action id,
            "need.<n>": value, "goal.<g>": achieved, "rule.<i>": once-rule used,
            "heard.<speaker>": lines heard from them, "last.<speaker>": the last one}``.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    schema_version: int = SCHEMA_VERSION
    story_id: str = ""
    scene: str = ""
    variables: dict[str, Value] = Field(default_factory=dict)
    inventory: list[str] = Field(default_factory=list)
    holders: dict[str, str] = Field(default_factory=dict)
    visits: dict[str, int] = Field(default_factory=dict)
    chosen: dict[str, int] = Field(default_factory=dict)
    relationships: dict[str, dict[str, float]] = Field(default_factory=dict)
    reactions: dict[str, str] = Field(default_factory=dict)
    gifts: dict[str, list[str]] = Field(default_factory=dict)
    world: dict[str, Value] = Field(default_factory=dict)
    objects: dict[str, dict[str, Value]] = Field(default_factory=dict)
    looks: dict[str, dict[str, Value]] = Field(default_factory=dict)
    location: str = ""
    camera_x: float = 0.0
    seed: int = 0
    draws: int = Field(default=0, ge=0)
    turn: int = 0
    frame: int = 0
    log_offset: int = 0
    role: str = ""
    timers: dict[str, int] = Field(default_factory=dict)
    quests: dict[str, str] = Field(default_factory=dict)
    agents: dict[str, dict[str, Value]] = Field(default_factory=dict)

    def __setattr__(self, name: str, value: Any) -> None:
        """Set a field as pydantic does with ``validate_assignment=False`` (the value as it is, the
        name marked set), in one call instead of pydantic's handler lookup: the runtime sets
        ``scene``, ``turn`` and ``location`` on every step. Other names go to pydantic (which
        refuses unknown ones: ``extra="forbid"``)."""
        if name in _FIELD_NAMES:
            self.__dict__[name] = value
            self.__pydantic_fields_set__.add(name)
        else:
            super().__setattr__(name, value)

    def copy_state(self) -> GameState:
        """A deep copy (a checkpoint's snapshot), sharing nothing mutable with this state.

        Every field is a scalar, a list of scalars, or a dict whose values are scalars,
        lists of scalars or dicts of scalars, so copying two levels down is a deep copy;
        it is several times faster than ``model_copy(deep=True)`` (no ``deepcopy`` memo,
        no validation, no default resolved: :func:`~game.state.trusted.trusted`). A value
        nested deeper than that is copied with ``deepcopy``. The copy's ``model_fields_set``
        names every field (one set shared by all copies, as ``trusted`` asks).
        """
        values = self.__dict__.copy()  # scalars as they are
        for k in _FLAT_FIELDS:
            values[k] = values[k].copy()  # a dict or list of scalars (declared so): a shallow copy is a deep one
        for k in _NESTED_FIELDS:
            v = values[k]
            if not v:
                values[k] = {} if type(v) is dict else []
            elif isinstance(v, dict):
                values[k] = {a: (_copy_leaf(b) if isinstance(b, dict | list) else b) for a, b in v.items()}
            elif isinstance(v, list):
                values[k] = [copy.deepcopy(x) if isinstance(x, dict | list) else x for x in v]
        return trusted(GameState, values, _EVERY_FIELD)

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict of every field."""
        return self.model_dump(mode="json")

    def random(self) -> float:
        """Draw a float in [0, 1) from the seeded stream and count it in :attr:`draws`.

        The n-th draw is ``random.Random(seed * 1_000_003 + n).random()``, a pure
        function of ``(seed, n)``, so a rollback followed by the same inputs replays
        the same draws (Ren'Py ``renpy/rollback.py`` records draws for the same
        reason; here the count is enough).
        """
        value = random.Random(self.seed * 1_000_003 + self.draws).random()
        self.draws += 1
        return value

    def relationship(self, character: str, axis: str) -> float:
        """Current value of ``axis`` towards ``character`` (0.0 when unset)."""
        return self.relationships.get(character, {}).get(axis, 0.0)


def _flat_fields() -> frozenset[str]:
    """Fields declared as a dict or list of scalars only (``visits: dict[str, int]``, ``inventory``...)."""
    scalars = {bool, int, float, str}
    out = set()
    for name, f in GameState.model_fields.items():
        origin, args = get_origin(f.annotation), get_args(f.annotation)
        leaf = args[-1] if origin is dict and len(args) == 2 else args[0] if origin is list and args else None
        leaves = set(get_args(leaf)) if get_origin(leaf) in (Union, UnionType) else {leaf}
        if leaf is not None and leaves <= scalars:
            out.add(name)
    return frozenset(out)


#: Fields ``copy_state`` copies with one shallow copy (their values are scalars by declaration).
_FLAT_FIELDS = tuple(sorted(_flat_fields()))
#: The other dict and list fields (``relationships``, ``objects``...): ``copy_state`` copies them two levels down.
_NESTED_FIELDS = tuple(name for name, f in GameState.model_fields.items()
                       if get_origin(f.annotation) in (dict, list) and name not in _FLAT_FIELDS)
#: Every field's name (``GameState.__setattr__`` sets these directly).
_FIELD_NAMES = frozenset(GameState.model_fields)
#: The ``model_fields_set`` of every ``copy_state`` copy: every field (adding a name to it changes nothing).
_EVERY_FIELD = set(GameState.model_fields)

"""The story file format, v1, as typed models (pydantic).

See ``docs/story-format.md`` for the author's view with a complete example.
Everything here is read-only data after loading; what changes lives in
:class:`game.state.GameState`.
"""

from __future__ import annotations

import re
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

FORMAT_VERSION = 1

ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
Id = Annotated[str, Field(pattern=ID_RE.pattern, min_length=1, max_length=64)]
Direction = Literal["w", "a", "s", "d"]
#: Chunk hints: a named length or an explicit number of frames.
ChunkHint = Literal["step", "short", "medium", "long", "cut"] | Annotated[int, Field(ge=1, le=2400)]
#: World edits a player may ask for by words or by dropping an image (``allow_edits:``).
EditName = Literal["weather", "time_of_day", "light", "add_object", "remove_object", "change_object", "look"]


def _as_lines(v: Any) -> Any:
    """``say:`` / ``lines:`` shorthand: one text or map, or a list of them (texts become ``{text: ...}``).

    Anything else is passed on unchanged for pydantic to refuse with its own message.
    """
    if isinstance(v, str | dict):
        v = [v]
    if not isinstance(v, list | tuple):
        return v
    return [{"text": x} if isinstance(x, str) else x for x in v]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class VariableDef(_Model):
    """A typed story variable with its default."""

    type: Literal["int", "float", "bool", "str"]
    default: bool | int | float | str
    #: Bounds of a stat or resource (``int``/``float`` only): every assignment is clamped to them.
    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _default_matches(self) -> VariableDef:
        ok = {
            "int": isinstance(self.default, int) and not isinstance(self.default, bool),
            "float": isinstance(self.default, int | float) and not isinstance(self.default, bool),
            "bool": isinstance(self.default, bool),
            "str": isinstance(self.default, str),
        }[self.type]
        if not ok:
            raise ValueError(f"default {self.default!r} is not of type {self.type}")
        if (self.min is not None or self.max is not None) and self.type not in ("int", "float"):
            raise ValueError(f"min:/max: bound numbers; {self.type} has no bounds")
        return self


class ItemDef(_Model):
    """An item: display name, tags (``on_give`` matches on them), look, image.

    ``locked: true`` refuses player edits to it (recolour, remove) with an in-world line.
    """

    name: str
    tags: tuple[str, ...] = ()
    look: str = ""
    image: str = ""
    locked: bool = False


class SheetDef(_Model):
    """A character's sprite sheet: one PNG of equal cells, each named for an expression, a pose or
    ``pose.expression`` (``smile``, ``sit``, ``sit.sleeping``); ``frame`` is a cell's
    ``[width, height]`` in pixels and each cell is ``[column, row]`` (see docs/story-format.md)."""

    image: str
    frame: tuple[int, int]
    cells: dict[str, tuple[int, int]]


class CastMember(_Model):
    """A character in this story.

    ``card`` names a character card file (``characters/<id>.yaml``) relative to the
    story folder; ``relationship`` gives starting values per axis; ``locked: true``
    refuses player edits to the character's look with an in-world line. ``sheet`` is
    her sprite sheet: a :class:`SheetDef` here, or the path of a YAML/JSON file holding one.
    """

    name: str
    look: str = ""
    image: str = ""
    card: str = ""
    sheet: SheetDef | str | None = None
    locked: bool = False
    relationship: dict[str, float] = Field(default_factory=lambda: {"trust": 0.0, "affinity": 0.0})


class LocationDef(_Model):
    """A place: its name, its prompt, the procedural palette, the time of day; optional author
    art: ``plate`` (a background PNG, 16:9, at least 480x270) and ``layers`` (PNGs of the plate's
    size with transparency, drawn in front of it back to front, each moving faster with the camera)."""

    name: str
    prompt: str = ""
    palette: str = "dusk"
    time_of_day: str = "dusk"
    weather: str = "clear"
    plate: str = ""
    layers: tuple[str, ...] = ()
    #: Whether the place is a room (weather is then outside its windows); ``None``: read from the
    #: prompt and name (a kitchen, a hut, a watch room...: :func:`game.world.director.indoors`).
    indoors: bool | None = None


class WorldDef(_Model):
    """World-wide conditioning: the style prompt and anchor images (global sink)."""

    style: str = ""
    anchors: tuple[str, ...] = ()
    negative: str = ""


class Line(_Model):
    """A line shown on entering a scene. ``text`` may use ``{variable}``."""

    id: str = ""
    speaker: str = "narrator"
    text: str
    if_: str = Field("", alias="if")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _one_or_many(v: Any) -> Any:
    """``do:`` / ``on_enter:`` shorthand: one effect, or a list of them."""
    return (v,) if isinstance(v, str) else v


#: Effects, in order (``do:``, ``on_enter:``): one expression or a list of them.
Effects = Annotated[tuple[str, ...], BeforeValidator(_one_or_many)]
#: Lines, in order (``say:``, ``lines:``): see :func:`_as_lines`.
Lines = Annotated[tuple[Line, ...], BeforeValidator(_as_lines)]


class Reaction(_Model):
    """What happens after a choice, action, gift or exit.

    Attributes:
        if_: condition (``if:``) that must hold.
        do: effects, in order.
        react: character id -> reaction name (``leap``, ``recoil``, ``nuzzle``...).
        say: lines shown, in order (strings are narration; ``{speaker, text}`` maps).
        goto: next scene id, or empty to stay.
        chunk: chunk hint for the world request.
        keep: for gifts: whether the character keeps the item (else it comes back).
        put: for gifts of things made in play (a typed "give her a lantern", a dropped
            picture): the place feature she sets it on (``shelf``, ``table``), as its lines
            say, instead of holding it; ``""``: she holds it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    if_: str = Field("", alias="if")
    do: Effects = ()
    react: dict[str, str] = Field(default_factory=dict)
    say: Lines = ()
    goto: str = ""
    chunk: ChunkHint | None = None
    keep: bool = True
    put: str = ""
    #: Player roles this is open to (``[]``: every role); see ``roles:``.
    roles: tuple[Id, ...] = ()


class Choice(Reaction):
    """An authored option: a stable ``id`` and its ``text``; ``once`` hides it after use."""

    id: Id
    text: str
    once: bool = False


class Action(Reaction):
    """A free-text action, matched by ``keywords`` (and by meaning on ``examples``)."""

    id: Id
    examples: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    once: bool = False


class Exit(Reaction):
    """A WASD exit to another scene (``goto`` required)."""

    label: str = ""

    @model_validator(mode="after")
    def _needs_goto(self) -> Exit:
        if not self.goto:
            raise ValueError("an exit needs goto: (the scene it leads to)")
        return self


class Scene(_Model):
    """A node of the story graph.

    Attributes:
        title: heading shown in the window.
        location: location id (what the world shows).
        prompt: text prompt for this scene, added to the location's and the style.
        present: characters in the scene: id -> horizontal position (world units).
        items: items lying in the scene: id -> position.
        on_enter: effects applied on every entry.
        lines: lines shown on entry.
        choices, actions, exits, on_give: see their types.
        ending: an ending's name (non-empty marks an ending).
        chunk: chunk hint for entering this scene.
        allow_edits: world edits the player may make here (``None``: the story's
            ``allow_edits``; ``[]``: none).
        refuse: in-world line per refused edit name (or ``default``), replacing the built-in one.
    """

    title: str = ""
    location: str
    prompt: str = ""
    present: dict[str, float] = Field(default_factory=dict)
    items: dict[str, float] = Field(default_factory=dict)
    on_enter: Effects = ()
    lines: Lines = ()
    choices: tuple[Choice, ...] = ()
    actions: tuple[Action, ...] = ()
    exits: dict[Direction, Exit] = Field(default_factory=dict)
    on_give: dict[str, dict[str, Reaction]] = Field(default_factory=dict)
    ending: str = ""
    chunk: ChunkHint | None = None
    allow_edits: tuple[EditName, ...] | None = None
    refuse: dict[str, str] = Field(default_factory=dict)

    @field_validator("present", "items", mode="before")
    @classmethod
    def _list_to_positions(cls, v: Any) -> Any:
        if isinstance(v, list):
            n = len(v)
            return {str(x): round(0.35 + 0.3 * (i + 1) / (n + 1), 3) for i, x in enumerate(v)}
        return v

    @field_validator("exits", mode="before")
    @classmethod
    def _exit_shorthand(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: ({"goto": x} if isinstance(x, str) else x) for k, x in v.items()}
        return v


# -- game mechanics ------------------------------------------------------------------------------

class RoleDef(_Model):
    """A role the player may take (``become('id')``, usually in the start scene).

    Attributes:
        name: display name.
        text: a line shown when the role is taken.
        do: effects applied on taking it.
        treat: how characters take to the role: character id -> axis -> change
            added to the relationship on taking it (``{keeper: {trust: 2}}``).
    """

    name: str
    text: str = ""
    do: Effects = ()
    treat: dict[str, dict[str, float]] = Field(default_factory=dict)


class TimerDef(Reaction):
    """A clock counted in turns (every intent that lets time pass: not a camera pan).

    When it runs out its reaction fires (``do``, ``say``, ``react``, ``goto``; ``if``
    must hold, else it fires nothing). ``start: true`` runs it from the first turn,
    else ``start('id')`` starts it; ``repeat: true`` restarts it after it fires.
    ``warn`` maps turns left to a reaction (``{3: {say: "The water is at the steps."}}``).
    """

    turns: Annotated[int, Field(ge=1, le=100_000)]
    start: bool = False
    repeat: bool = False
    warn: dict[int, Reaction] = Field(default_factory=dict)


class StageDef(_Model):
    """One stage of a quest: its text, the condition that completes it, what completing does."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    text: str = ""
    done: str = ""
    do: Effects = ()
    say: Lines = ()


class QuestDef(_Model):
    """An objective: ordered stages; complete when the last stage is done.

    ``start: true`` makes it active from the start, else ``quest('id')`` starts it.
    A stage is done when its ``done`` condition holds after a turn, or by ``advance('id')``.
    """

    name: str
    start: bool = False
    stages: dict[str, StageDef]

    @field_validator("stages", mode="after")
    @classmethod
    def _has_stages(cls, v: dict[str, StageDef]) -> dict[str, StageDef]:
        if not v:
            raise ValueError("a quest needs at least one stage")
        for key in v:
            if not ID_RE.match(str(key)) or key == "done":
                raise ValueError(f"{key!r} is not a valid stage id")
        return v


class OutcomeDef(Reaction):
    """A win or lose condition: when ``if`` holds after a turn, ``goto`` (an ending scene) runs."""

    kind: Literal["win", "lose"] = "win"

    @model_validator(mode="after")
    def _needs_if_goto(self) -> OutcomeDef:
        if not self.if_ or not self.goto:
            raise ValueError("an outcome needs if: (when) and goto: (its ending scene)")
        return self


class RecipeDef(Reaction):
    """Combining two items the player holds (``give <item> <item>``).

    ``make`` is the item made (may be empty); the two items are used up unless ``keep``.
    """

    items: tuple[Id, Id]
    make: str = ""
    keep: bool = False


AgentActionKind = Literal["move", "take", "drop", "give", "use", "talk", "wait"]


class AgentAction(Reaction):
    """One action an agent may take: the fixed set of what it can ever do.

    Attributes:
        kind: ``move`` (to location ``to``), ``take``/``drop``/``use`` (``item``),
            ``give`` (``item`` to character ``to`` or ``player``), ``talk`` (to ``to``:
            a character, ``player`` or ``all``; its ``say`` lines are spoken by the
            agent unless they name another speaker: a group scene), ``wait``.
        to, item: as above.
        (``if``, ``do``, ``say``, ``react``, ``goto``, ``chunk``: as for any reaction.)
    """

    kind: AgentActionKind
    to: str = ""
    item: str = ""


class AgentRule(_Model):
    """An authored rule: when ``if`` holds, the agent does action ``act`` (first rule wins)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    if_: str = Field("", alias="if")
    act: Id
    once: bool = False


class ScheduleEntry(_Model):
    """From turn ``turn`` on, the agent wants to be at location ``at``."""

    turn: Annotated[int, Field(ge=0)]
    at: Id


class NeedDef(_Model):
    """A need: starts at ``start``, changes by ``per_turn`` each turn, stays in ``[min, max]``."""

    start: float = 0.0
    per_turn: float = 0.0
    min: float = 0.0
    max: float = 10.0

    @model_validator(mode="after")
    def _bounds(self) -> NeedDef:
        if self.min > self.max or not self.min <= self.start <= self.max:
            raise ValueError(f"need bounds: min {self.min} <= start {self.start} <= max {self.max} must hold")
        return self


class GoalDef(_Model):
    """A goal: what the agent wants (for its dialogue model) and when it is achieved."""

    text: str
    done: str = ""


class AgentDef(_Model):
    """A character who acts between the player's turns.

    Attributes:
        at: the location it starts at.
        carries: items it holds at the start.
        goals, needs, schedule: see their types.
        actions: the only actions it may take, by id.
        rules: authored rules, tried in order; then the schedule; then ``fallback``.
        fallback: ``wait`` (do nothing), ``random`` (a seeded pick among the
            possible actions) or ``model`` (its dialogue model picks among them;
            without one, it waits).
    """

    at: Id
    carries: tuple[Id, ...] = ()
    goals: dict[str, GoalDef] = Field(default_factory=dict)
    needs: dict[str, NeedDef] = Field(default_factory=dict)
    schedule: tuple[ScheduleEntry, ...] = ()
    actions: dict[str, AgentAction] = Field(default_factory=dict)
    rules: tuple[AgentRule, ...] = ()
    fallback: Literal["wait", "random", "model"] = "wait"

    @field_validator("goals", "needs", "actions", mode="after")
    @classmethod
    def _ids(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in v:
            if not ID_RE.match(str(key)):
                raise ValueError(f"{key!r} is not a valid id")
        return v


class StoryModel(_Model):
    """A whole story file (after ``include:`` files are merged in)."""

    format: int = FORMAT_VERSION
    id: Id
    title: str
    start: str
    world: WorldDef = Field(default_factory=WorldDef)
    variables: dict[str, VariableDef] = Field(default_factory=dict)
    items: dict[str, ItemDef] = Field(default_factory=dict)
    inventory: tuple[str, ...] = ()
    cast: dict[str, CastMember] = Field(default_factory=dict)
    locations: dict[str, LocationDef] = Field(default_factory=dict)
    scenes: dict[str, Scene]
    on_give: dict[str, dict[str, Reaction]] = Field(default_factory=dict)
    #: World edits allowed in scenes that do not say (``None``: every edit).
    allow_edits: tuple[EditName, ...] | None = None
    # -- game mechanics (docs/story-format.md, "Game mechanics") --------------------------
    #: Roles the player picks at the start (``become('id')``).
    roles: dict[str, RoleDef] = Field(default_factory=dict)
    #: Timers and clocks, counted in turns, that fire when they run out.
    timers: dict[str, TimerDef] = Field(default_factory=dict)
    #: Objectives with ordered stages.
    quests: dict[str, QuestDef] = Field(default_factory=dict)
    #: Win and lose conditions, checked after every turn in order.
    outcomes: dict[str, OutcomeDef] = Field(default_factory=dict)
    #: Item combinations (``give <item> <item>``).
    recipes: dict[str, RecipeDef] = Field(default_factory=dict)
    #: Characters who act between the player's turns, by cast id (:mod:`game.story.agents`).
    agents: dict[str, AgentDef] = Field(default_factory=dict)

    @field_validator("format")
    @classmethod
    def _known_format(cls, v: int) -> int:
        if v != FORMAT_VERSION:
            raise ValueError(f"story format {v} is not supported (this build reads {FORMAT_VERSION})")
        return v

    @field_validator("variables", "items", "cast", "locations", "scenes", "roles", "timers", "quests",
                     "outcomes", "recipes", "agents", mode="after")
    @classmethod
    def _ids(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in v:
            if not ID_RE.match(str(key)):
                raise ValueError(f"{key!r} is not a valid id (letters, digits, '_'; not starting with a digit)")
        return v


def _step(kind: Any, part: str | int) -> Any:
    """The type found at key or index ``part`` of a value of type ``kind`` (``None``: nothing there)."""
    origin = get_origin(kind)
    if origin is Annotated:
        return _step(get_args(kind)[0], part)
    if origin is Union or origin is types.UnionType:
        return next((t for t in (_step(k, part) for k in get_args(kind)) if t is not None), None)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        field = next((f for n, f in kind.model_fields.items() if part in (n, f.alias)), None)
        return None if field is None else field.annotation
    if origin is dict:
        return get_args(kind)[1]
    if origin in (tuple, list) and isinstance(part, int):
        return get_args(kind)[0]
    return None


def _model_in(kind: Any) -> type[BaseModel] | None:
    """The model ``kind`` is, or the first model of its union, or ``None``."""
    origin = get_origin(kind)
    if origin is Annotated:
        return _model_in(get_args(kind)[0])
    if origin is Union or origin is types.UnionType:
        return next((m for m in map(_model_in, get_args(kind)) if m is not None), None)
    return kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None


def keys_at(loc: tuple[str | int, ...], root: type[BaseModel] = StoryModel) -> tuple[str, ...]:
    """The keys a file may write in the mapping at ``loc`` (a path of keys and list indexes from
    the top of the file, as pydantic's error ``loc``, union tags left out), the file read as
    ``root`` (default :class:`StoryModel`; a card reader passes its card model): ``("scenes", "a")``
    -> a scene's keys (``title``, ``location``, ... ``choices``), each as the file spells it (``if``,
    not ``if_``), a field excluded from dumps (set by the reader, never written) left out; ``()``
    when ``loc`` does not lead to a model."""
    kind: Any = root
    for part in loc:
        kind = _step(kind, part)
        if kind is None:
            return ()
    model = _model_in(kind)
    return () if model is None else tuple(f.alias or n for n, f in model.model_fields.items() if not f.exclude)

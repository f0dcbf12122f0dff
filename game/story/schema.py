"""The story file format, v1, as typed models (pydantic).

See ``docs/story-format.md`` for the author's view with a complete example.
Everything here is read-only data after loading; what changes lives in
:class:`game.state.GameState`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

FORMAT_VERSION = 1

ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
Id = Annotated[str, Field(pattern=ID_RE.pattern, min_length=1, max_length=64)]
Direction = Literal["w", "a", "s", "d"]
#: Chunk hints: a named length or an explicit number of frames.
ChunkHint = Literal["step", "short", "medium", "long", "cut"] | Annotated[int, Field(ge=1, le=2400)]
#: World edits a player may ask for by words or by dropping an image (``allow_edits:``).
EditName = Literal["weather", "time_of_day", "light", "add_object", "remove_object", "change_object", "look"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class VariableDef(_Model):
    """A typed story variable with its default."""

    type: Literal["int", "float", "bool", "str"]
    default: bool | int | float | str

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
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    if_: str = Field("", alias="if")
    do: tuple[str, ...] = ()
    react: dict[str, str] = Field(default_factory=dict)
    say: tuple[Line, ...] = ()
    goto: str = ""
    chunk: ChunkHint | None = None
    keep: bool = True

    @field_validator("do", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return (v,) if isinstance(v, str) else v

    @field_validator("say", mode="before")
    @classmethod
    def _lines(cls, v: Any) -> Any:
        if isinstance(v, str | dict):
            v = [v]
        return [{"text": x} if isinstance(x, str) else x for x in v]


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
    on_enter: tuple[str, ...] = ()
    lines: tuple[Line, ...] = ()
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

    @field_validator("lines", mode="before")
    @classmethod
    def _lines(cls, v: Any) -> Any:
        return [{"text": x} if isinstance(x, str) else x for x in v]

    @field_validator("on_enter", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return (v,) if isinstance(v, str) else v

    @field_validator("exits", mode="before")
    @classmethod
    def _exit_shorthand(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: ({"goto": x} if isinstance(x, str) else x) for k, x in v.items()}
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

    @field_validator("format")
    @classmethod
    def _known_format(cls, v: int) -> int:
        if v != FORMAT_VERSION:
            raise ValueError(f"story format {v} is not supported (this build reads {FORMAT_VERSION})")
        return v

    @field_validator("variables", "items", "cast", "locations", "scenes", mode="after")
    @classmethod
    def _ids(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in v:
            if not ID_RE.match(str(key)):
                raise ValueError(f"{key!r} is not a valid id (letters, digits, '_'; not starting with a digit)")
        return v

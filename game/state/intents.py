"""Intents: what the player wants, carrying ids only.

``game.inputs`` turns keys, clicks, typed lines, voice and dropped images into
these; the story runtime only ever sees ids.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Intent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Move(_Intent):
    """Move or pan: ``direction`` is one of ``w a s d``; ``seconds`` of holding."""

    type: Literal["move"] = "move"
    direction: Literal["w", "a", "s", "d"]
    seconds: float = 0.5


class Choose(_Intent):
    """Take the authored choice ``choice_id`` of the current scene."""

    type: Literal["choose"] = "choose"
    choice_id: str


class Say(_Intent):
    """Free text resolved to an authored action (``action_id``) or said to someone."""

    type: Literal["say"] = "say"
    text: str
    action_id: str = ""
    target: str = ""


class Give(_Intent):
    """Give item ``item_id`` to character ``character_id``."""

    type: Literal["give"] = "give"
    item_id: str
    character_id: str


class Instruct(_Intent):
    """A world edit: ``edit`` (``weather``, ``time_of_day``, ``add_object``...) + params."""

    type: Literal["instruct"] = "instruct"
    edit: str
    params: dict[str, str] = Field(default_factory=dict)
    text: str = ""


class AddReference(_Intent):
    """A dropped image that becomes an object with the image as its reference.

    ``x`` is where in the view it was dropped: a fraction of the world picture's width from its
    left edge, 0 to 1 (the window maps the mouse there); ``None`` (a script's ``image``): the
    place every such picture takes (:func:`game.world.edits.place` with ``here``).
    """

    type: Literal["add_reference"] = "add_reference"
    path: str
    entity_id: str = ""
    x: float | None = Field(default=None, ge=0.0, le=1.0)


class Wait(_Intent):
    """Let the world run for ``seconds`` with no input."""

    type: Literal["wait"] = "wait"
    seconds: float = 1.0


Intent = Annotated[
    Move | Choose | Say | Give | Instruct | AddReference | Wait, Field(discriminator="type")
]

_ADAPTER: TypeAdapter[Any] = TypeAdapter(Intent)


def intent_from_json(data: dict[str, Any]) -> AnyIntent:
    """Validate a JSON dict (``{"type": "choose", "choice_id": ...}``) into an intent."""
    result: AnyIntent = _ADAPTER.validate_python(data)
    return result


#: Every intent, as one union (the story runtime, the session and the inputs all use it).
AnyIntent = Move | Choose | Say | Give | Instruct | AddReference | Wait


def takes_checkpoint(intent: AnyIntent) -> bool:
    """Whether applying ``intent`` takes a checkpoint first (so a rollback can undo it).

    A choice, a gift, a world edit, a dropped image and an authored action said in words do;
    a move, a wait and plain talk do not (Ren'Py likewise checkpoints at each interaction
    that changes the story, ``renpy/rollback.py``). The one place this is decided.
    """
    return isinstance(intent, Choose | Give | Instruct | AddReference) or (
        isinstance(intent, Say) and bool(intent.action_id))

"""Events: what happened, as data. The event log is append-only.

A checkpoint stores only ``GameState.log_offset``; rolling back truncates the
log's view to that offset, it never rewrites history on disk.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator
from typing_extensions import TypedDict

#: Every kind of event, with who makes it. A new kind is added here (and to
#: :data:`PAYLOADS` when its ``data`` has a fixed shape), never made up on the way.
EventKind = Literal[
    "scene",  # entered a scene (story runtime)
    "line",  # a narration or character line
    "choice",  # the player took a choice
    "action",  # a free-text action matched
    "give",  # an item changed hands
    "reaction",  # a character reacts (leap, recoil, nuzzle...)
    "move",  # the player moved / panned the camera
    "exit",  # moved through an exit to another location
    "effect",  # a variable or relationship changed
    "ending",  # reached an ending scene
    "audio",  # a sound or music cue (an Ink ``# sound:`` tag): data is AudioData
    "say",  # the player said something
    "not_understood",  # free text that meant nothing here
    "reply",  # a character answered (the cast): data is ReplyData
    "edit",  # a world edit or a dropped image was applied (game.world.edits): data is EditData
    "save",
    "load",
    "rollback",
    "rollforward",  # stepped forward again along the path a rollback undid (game.state.forward)
    "reload",  # the story or a card was reloaded from disk
    "warning",  # something the player or author should know (play goes on)
    "chunk",  # a world chunk was shown (transcripts only)
    "timer",  # a story timer started, ticked out or stopped (game mechanics)
    "quest",  # a quest started, moved to a stage or ended
    "role",  # the player took a role
    "combine",  # two items were combined into a third
    "outcome",  # a win or lose condition held
    "agent",  # a character acted on her own (story agents)
    "goal",  # an agent's goal was met
    "offstage",  # an agent's line said where the player is not
]

#: The kinds, in order (for tools that list them).
EVENT_KINDS: tuple[str, ...] = get_args(EventKind)


class AudioData(TypedDict):
    """``data`` of an ``audio`` event: the channel (``sound`` / ``music``) and the cue's name."""

    channel: Literal["sound", "music"]
    cue: str


class RejectedReply(TypedDict):
    """One model attempt the persona guard refused: its text, the kind and the reasons."""

    text: str
    kind: str
    reasons: list[str]


class ReplyData(TypedDict, total=False):
    """``data`` of a ``reply`` event (see :meth:`game.cast.dialogue.Reply.to_json`).

    ``source`` is where the words came from (``authored``, ``model``, ``fallback``);
    ``speech_s`` how long she takes to say it, seconds (the director sizes the chunk by it);
    ``rejected`` the attempts the guard refused; ``memories`` what her prompt retrieved.
    """

    source: str
    sentences: list[str]
    player_text: str
    authored_id: str
    score: float
    model: str
    attempts: int
    rejected: list[RejectedReply]
    truncated: bool
    injection: list[str]
    error: str
    seed: int
    expression: str
    voice: dict[str, Any]
    memories: list[str]
    speech_s: float


class EditData(TypedDict, total=False):
    """``data`` of an ``edit`` event: the value before and after (``old`` / ``new``), where a
    placed thing stands (``x``, world units), who wears it (``on``), a dropped image's path."""

    old: Any
    new: Any
    x: float
    on: str
    image: str


#: Event kind -> the shape its ``data`` must have (checked when the event is made).
PAYLOADS: dict[str, TypeAdapter[Any]] = {"audio": TypeAdapter(AudioData), "reply": TypeAdapter(ReplyData),
                                         "edit": TypeAdapter(EditData)}


class Event(BaseModel):
    """One thing that happened.

    Attributes:
        kind: one of :data:`EventKind`.
        turn: the ``GameState.turn`` it happened in.
        frame: the frame index on the frame clock when it happened.
        scene: id of the scene it happened in.
        speaker: character id, ``"narrator"`` or ``""``.
        text: player-visible text, already interpolated.
        ids: stable ids involved (``{"choice": "offer_kite", "line": "arrival.l1"}``).
        data: anything else (numbers, reaction names), JSON-able; for the kinds in
            :data:`PAYLOADS` it has that shape (:class:`ReplyData`, :class:`EditData`,
            :class:`AudioData`).

    Raises:
        pydantic.ValidationError: an unknown kind, or ``data`` of the wrong shape.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: EventKind
    turn: int = 0
    frame: int = 0
    scene: str = ""
    speaker: str = ""
    text: str = ""
    ids: dict[str, str] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _payload_shape(self) -> Event:
        shape = PAYLOADS.get(self.kind)
        if shape is not None:
            shape.validate_python(self.data)
        return self


class EventLog:
    """Append-only list of events; a view is cut at an offset on rollback."""

    def __init__(self, events: list[Event] | None = None) -> None:
        self._events: list[Event] = list(events or [])

    def append(self, event: Event) -> int:
        """Append and return the new length (the offset after it)."""
        self._events.append(event)
        return len(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def since(self, offset: int) -> list[Event]:
        """Events after ``offset`` (0-based count)."""
        return self._events[offset:]

    def upto(self, offset: int) -> list[Event]:
        """The first ``offset`` events."""
        return self._events[:offset]

    def truncate(self, offset: int) -> None:
        """Forget events past ``offset`` (rollback/load to an earlier offset)."""
        del self._events[offset:]

    def to_json(self) -> list[dict[str, Any]]:
        return [e.model_dump(mode="json") for e in self._events]

    @classmethod
    def from_json(cls, rows: list[dict[str, Any]]) -> EventLog:
        log = cls()
        log._events = [Event.model_validate(r) for r in rows]
        return log

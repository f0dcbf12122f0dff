"""Events: what happened, as data. The event log is append-only.

A checkpoint stores only ``GameState.log_offset``; rolling back truncates the
log's view to that offset, it never rewrites history on disk.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: Event kinds the runtime emits. Later rooms add their own (``reply``, ``edit``...).
EVENT_KINDS = (
    "scene",  # entered a scene
    "line",  # a narration or character line
    "choice",  # the player took a choice
    "action",  # a free-text action matched
    "give",  # an item changed hands
    "reaction",  # a character reacts (leap, recoil, nuzzle...)
    "move",  # the player moved / panned the camera
    "exit",  # moved through an exit to another location
    "effect",  # a variable or relationship changed
    "ending",  # reached an ending scene
    "save",
    "load",
    "rollback",
    "say",  # the player said something
    "not_understood",
    "warning",
    "chunk",  # a world chunk was shown (transcripts only)
)


class Event(BaseModel):
    """One thing that happened.

    Attributes:
        kind: one of :data:`EVENT_KINDS` (or a room's own kind).
        turn: the ``GameState.turn`` it happened in.
        frame: the frame index on the frame clock when it happened.
        scene: id of the scene it happened in.
        speaker: character id, ``"narrator"`` or ``""``.
        text: player-visible text, already interpolated.
        ids: stable ids involved (``{"choice": "offer_kite", "line": "arrival.l1"}``).
        data: anything else (numbers, reaction names), JSON-able.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    turn: int = 0
    frame: int = 0
    scene: str = ""
    speaker: str = ""
    text: str = ""
    ids: dict[str, str] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)


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

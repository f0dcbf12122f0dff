"""Plain data that changes during play: :class:`GameState`, events, intents, saves.

This room imports nothing else of ours.
"""

from game.state.events import Event, EventLog
from game.state.gamestate import SCHEMA_VERSION, GameState
from game.state.intents import (
    AddReference,
    Choose,
    Give,
    Instruct,
    Intent,
    Move,
    Say,
    Wait,
    intent_from_json,
)

__all__ = [
    "SCHEMA_VERSION",
    "AddReference",
    "Choose",
    "Event",
    "EventLog",
    "GameState",
    "Give",
    "Instruct",
    "Intent",
    "Move",
    "Say",
    "Wait",
    "intent_from_json",
]

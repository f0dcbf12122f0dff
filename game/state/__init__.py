"""Plain data that changes during play: :class:`GameState`, events, intents, saves.

This room imports nothing else of ours.
"""

from game.state.events import Event, EventLog
from game.state.gamestate import SCHEMA_VERSION, GameState
from game.state.intents import (
    AddReference,
    AnyIntent,
    Choose,
    Give,
    Instruct,
    Intent,
    Move,
    Say,
    Wait,
    intent_from_json,
    takes_checkpoint,
)

__all__ = [
    "SCHEMA_VERSION",
    "AddReference",
    "AnyIntent",
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
    "takes_checkpoint",
]

"""The first step of every turn: the story's rules.

World edits (``Instruct``) and dropped images (``AddReference``) go to
:mod:`game.world.edits`; every other intent to the story runtime (YAML or Ink). Both
change ``turn.state`` in place and return events; both refuse with ``InputError``.
"""

from __future__ import annotations

from collections.abc import Callable

from game.session.steps import Turn
from game.state import AddReference, AnyIntent, Event, Instruct
from game.world.edits import add_reference, apply_instruct


class Rules:
    """Applies an intent to the state by the story's rules.

    Args:
        validate_image: ``path -> absolute path`` for dropped images, raising ``InputError``
            for a bad one (the session passes :func:`game.images.validate_image`).
    """

    def __init__(self, validate_image: Callable[[str], str] | None = None) -> None:
        self.validate_image = validate_image

    def apply(self, turn: Turn, intent: AnyIntent) -> list[Event]:
        """The intent's events (the turn counter moves on for every intent).

        Raises:
            game.errors.InputError: the intent is not possible here.
            game.errors.StoryRuntimeError: the story is broken at this point.
        """
        if isinstance(intent, Instruct | AddReference):
            turn.state.turn += 1
            turn.state.reactions.clear()
            if isinstance(intent, Instruct):
                return apply_instruct(turn, intent)
            return add_reference(turn, intent, self.validate_image)
        return turn.runtime.apply(turn.state, intent)


__all__ = ["Rules"]

"""The typed steps a turn is made of, and the :class:`Turn` they see.

:class:`game.session.Session` calls, in order, for every intent:

1. the **rules** (:class:`game.session.rules.Rules`: the story runtime, or the world edits
   for ``Instruct`` / ``AddReference``), which change ``turn.state`` and return events;
2. every **step** it was built with (``Session(steps=...)``: a character's relationship,
   her reply, the cast's bookkeeping), each seeing the events so far and returning more;
3. the **director**, which turns state and events into the world request.

A step may also *prepare* off the session's lock (:class:`Prepares`: a character writes
her slow reply while the window keeps drawing), *observe* every recorded event
(:class:`Observes`: memories), and be saved, loaded and rolled back with the game
(:class:`game.session.session.Extension`). Steps are given to the session when it is
built (:func:`game.session.assembly.open_game`); nothing assigns to a session's
attributes. The shape follows Yarn Spinner's handful of typed handlers
(``Dialogue.cs``: line, options, command, node start / complete).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from game.state import AnyIntent, Event, GameState
from game.story.runtime import StoryRuntime
from game.story.story import Story

#: ``progress(kind, speaker, text)``: partial output of a step as it is made (kind
#: ``"sentence"``: one sentence of a reply being written), for a window to show early.
Progress = Callable[[str, str, str], None]


@dataclass
class Turn:
    """One turn as its steps see it (implements :class:`game.story.host.TurnHost`).

    Attributes:
        story: the story being played (read-only).
        runtime: its runtime (stateless).
        state: the state the turn changes, in place (a copy when preparing off the lock).
        intent: what the player did.
        checkpoint: whether the session takes a checkpoint before this turn
            (:func:`game.state.takes_checkpoint`).
        seed: the session's seed.
        fps: frames per second of the frame clock.
        session_id: the backend session id.
        progress: where partial output goes (``None``: nowhere).
    """

    story: Story
    runtime: StoryRuntime
    state: GameState
    intent: AnyIntent
    checkpoint: bool = False
    seed: int = 0
    fps: float = 24.0
    session_id: str = "main"
    progress: Progress | None = field(default=None, repr=False)


class Step(Protocol):
    """A stage of every turn after the rules (in the order the session was given them)."""

    def on_turn(self, host: Turn, intent: AnyIntent, events: list[Event]) -> list[Event]:
        """Events to add to the turn, given the events so far; may change ``host.state``.

        Raises:
            game.errors.InputError: refuse the turn (the session restores its state).
        """
        ...


@runtime_checkable
class Prepares(Protocol):
    """A step that does slow work for an intent before the turn, off the session's lock."""

    def prepares(self, intent: AnyIntent) -> bool:
        """Whether it has work to do ahead for ``intent`` (cheap; called under no lock)."""
        ...

    def prepare(self, host: Turn, intent: AnyIntent, events: list[Event]) -> None:
        """Get ready for ``intent``: ``host.state`` is a copy the rules were already applied to
        and ``events`` what they returned (read them; the real turn follows under the lock)."""
        ...


@runtime_checkable
class Begins(Protocol):
    """A step that keeps something in a new game's state (a character's relationship values)."""

    def begin(self, state: GameState) -> None:
        """Fill in ``state``, made by the story runtime for a new game."""
        ...


@runtime_checkable
class Observes(Protocol):
    """A step that sees every event the session records, in order (a character's memory)."""

    def observe(self, event: Event) -> None:
        """Take in one recorded event."""
        ...


__all__ = ["Begins", "Observes", "Prepares", "Progress", "Step", "Turn"]

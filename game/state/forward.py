"""Roll-forward after rollback: the path the player rolled back from, kept to step along again.

Ren'Py players expect it (``renpy/rollback.py``: rolling forward after a rollback
re-plays the same interactions without re-running them). After a rollback the game
keeps what it undid: the checkpoints it took off the list, the state it left (with
every extension's snapshot) and the events it cut from the log. A roll forward puts
the next step back exactly as it was (the same replies, the same draws; nothing is
re-run), until the player does something else, which discards the rest. Making the
same choice again runs the turn as usual; when it comes to the very state (and
snapshots) the next step held, the rest of the path stays (a story with no model in
the turn does; a character's new reply does not).

:class:`Forward` holds that path as :class:`~game.state.saves.Checkpoint` rows:
``steps[0]`` is the checkpoint of the state the game is in now (its ``log_offset`` is
where the log was cut), ``steps[i + 1]`` the state after the ``i``-th undone action
(the last one the state rolled back from, labelled :data:`LEFT`), and ``events`` the
events from ``steps[0]``'s offset on. A save keeps it (``"forward"``, see
:mod:`game.state.saves`), so a rollback, a save, a load and a roll forward work as
without the save between.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from game.state.events import Event
from game.state.gamestate import GameState
from game.state.saves import Checkpoint
from game.words import counted

#: The label of the last step: the state a rollback left.
LEFT = "rolled back from here"


@dataclass
class Forward:
    """The path ahead after a rollback (empty: nothing to roll forward to).

    Attributes:
        steps: ``[now, after the 1st undone action, ..., the state rolled back from]``
            (empty, or at least two).
        events: the events cut from the log, from ``steps[0].state.log_offset`` on.
    """

    steps: list[Checkpoint] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    def __len__(self) -> int:
        """How many steps forward there are."""
        return max(0, len(self.steps) - 1)

    def clear(self) -> None:
        """The player did something else: the path ahead is gone."""
        self.steps, self.events = [], []

    def rolled_back(self, undone: list[Checkpoint], left: Checkpoint, events: list[Event]) -> None:
        """Record a rollback: ``undone`` are the checkpoints it took off (oldest first; the
        first is the state it goes to), ``left`` the state it left (labelled :data:`LEFT`
        here), ``events`` the events it cut from the log. A second rollback puts its steps
        before the ones already kept (``left`` is then the state of the kept ``steps[0]``)."""
        if self.steps:  # the game is at steps[0] (rolled back before): the path grows at the front
            self.steps = undone + self.steps
            self.events = events + self.events
        else:
            self.steps = [*undone, Checkpoint(LEFT, left.state, left.extras)]
            self.events = list(events)

    def after_turn(self, label: str, state: GameState, extras: Callable[[], dict[str, Any]]) -> None:
        """A turn was played (its checkpoint label ``label``, the state after it, a function
        giving every extension's snapshot now): keep the rest of the path if the turn did
        what the next step did, else discard it all."""
        if not self.steps:
            return
        ahead = self.steps[1]
        if label == self.steps[0].label and _same(state, ahead.state) and extras() == ahead.extras:
            self.step(1)  # the log already has this turn's own events
        else:
            self.clear()

    def next_label(self) -> str:
        """The label of the action one step forward (``"Meadow: offer_kite"``), ``""`` if none."""
        return self.steps[0].label if len(self.steps) > 1 else ""

    def step(self, n: int = 1) -> tuple[list[Checkpoint], Checkpoint, list[Event]]:
        """Take ``n`` steps forward: ``(checkpoints to put back, in order; the state to go
        to; the events to append to the log)``. What is left stays for the next roll forward.

        Raises:
            ValueError: ``n`` is not 1..``len(self)`` (the caller checks first).
        """
        if not 1 <= n <= len(self):
            raise ValueError(f"cannot roll forward {n}: {counted(len(self), 'step')}")
        back, target = self.steps[:n], self.steps[n]
        base = self.steps[0].state.log_offset
        cut = target.state.log_offset - base
        appended, self.events = self.events[:cut], self.events[cut:]
        self.steps = self.steps[n:] if n < len(self) else []
        if not self.steps:
            self.events = []
        return back, target, appended


def _same(a: GameState, b: GameState) -> bool:
    """Whether two states are the same but for the frame clock and the passing reactions."""
    ja, jb = a.to_json(), b.to_json()
    for key in ("frame", "reactions"):
        ja.pop(key, None)
        jb.pop(key, None)
    return ja == jb


__all__ = ["LEFT", "Forward"]

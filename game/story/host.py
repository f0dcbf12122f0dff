"""`TurnHost`: what a turn's steps see of the game while the turn is applied.

The session's :class:`game.session.steps.Turn` is one; the explorer and tests may pass
anything with these three attributes. Rooms below ``session/`` (``cast/``, ``world/``)
type their steps with this protocol, so none of them imports ``session/``.
"""

from __future__ import annotations

from typing import Protocol

from game.state import GameState
from game.story.runtime import StoryRuntime
from game.story.story import Story


class TurnHost(Protocol):
    """The story being played, its runtime and the state the turn changes (in place)."""

    story: Story
    runtime: StoryRuntime
    state: GameState


__all__ = ["TurnHost"]

"""Dynamic chunking: the chunk length follows the event.

A step is one block (the quickest possible response), a reaction a second or
so, a scene change or cut-scene longer. Lengths are in seconds and converted to
frames with the backend's fps, then rounded up to whole blocks by the backend
(``Capabilities.round_up``). Authors override per scene and per choice with a
named hint or a frame count (``chunk: long`` / ``chunk: 60``).

A new input pre-empts a running chunk: ``Session.stream`` stops after the block
being made and the new request goes out at once, switching ``plain`` for a step,
``recache`` for an edit, a choice or a reaction, ``scene_cut`` for a new place
(:data:`EVENT_SWITCH`). ``bench/latency.py`` simulates what that buys.

With a block-causal backend that has small blocks (``Capabilities.min_block_frames``)
a reaction asks for the smallest first block (:meth:`ChunkPolicy.first_block`), a
plain switch keeps the backend's cache (no set-up), and at most
:data:`MAX_BUFFERED_BLOCKS` block is made ahead of the display: the simulation's
``floor-policy`` arm, which reaches the floor (smallest block plus the set-up a
recache pays) when the backend also abandons the block in flight
(``CausalBackend.interrupt``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from game.world.protocol import Capabilities, SwitchMode

#: Named chunk hints, seconds. ``step`` means exactly one block.
HINT_SECONDS: dict[str, float] = {"step": 0.0, "short": 1.0, "medium": 2.0, "long": 4.0, "cut": 3.0}

#: Default hint per event kind.
EVENT_HINT: dict[str, str] = {
    "move": "step",
    "wait": "short",
    "idle": "step",
    "say": "short",
    "give": "medium",
    "choice": "medium",
    "action": "medium",
    "reaction": "medium",
    "edit": "short",
    "scene": "cut",
    "exit": "cut",
    "ending": "long",
    "start": "cut",
    "rollback": "short",
    "load": "cut",
    "timer": "long",  # a clock runs out: the tide comes in
    "outcome": "long",
    "agent": "medium",  # a character acting in view: walking off, handing something over
    "combine": "medium",
}

#: Switch mode per event kind: a step keeps the cache (``plain``), an edit or a
#: reaction rebuilds it with the new prompt (``recache``), a new place cuts.
EVENT_SWITCH: dict[str, SwitchMode] = {
    "move": "plain",
    "wait": "plain",
    "idle": "plain",
    "say": "recache",
    "give": "recache",
    "choice": "recache",
    "action": "recache",
    "edit": "recache",
    "reaction": "recache",
    "scene": "scene_cut",
    "exit": "scene_cut",
    "start": "scene_cut",
    "ending": "recache",
    "rollback": "recache",
    "load": "scene_cut",
    "timer": "recache",
    "outcome": "recache",
    "agent": "recache",
    "combine": "recache",
}


#: Blocks a player keeps made ahead of the display: more only adds latency, since a
#: new input drops every queued block (``bench/latency.py``, ``floor-policy``).
MAX_BUFFERED_BLOCKS = 1

#: Events the player causes and waits to see answered: their first block is the
#: backend's smallest (``Capabilities.min_block_frames``), so the answer shows soonest.
REACTION_EVENTS = frozenset({"move", "say", "give", "choice", "action", "reaction", "edit"})


@dataclass(frozen=True)
class ChunkPolicy:
    """Maps an event (and an optional author hint) to a frame count.

    Attributes:
        hint_seconds: seconds per named hint.
        event_hint: default hint per event kind.
        quick_first: events whose first block is the backend's smallest.
    """

    hint_seconds: dict[str, float] = field(default_factory=lambda: dict(HINT_SECONDS))
    event_hint: dict[str, str] = field(default_factory=lambda: dict(EVENT_HINT))
    quick_first: frozenset[str] = REACTION_EVENTS

    def first_block(self, event: str, caps: Capabilities) -> int:
        """``WorldRequest.first_block_frames`` for ``event``: the backend's smallest block
        (``caps.min_block_frames``) for a reaction, else ``0`` (its usual block)."""
        return caps.min_block_frames if event in self.quick_first else 0

    def frames(self, event: str, caps: Capabilities, hint: str | int | None = None,
               seconds: float | None = None) -> int:
        """At least how many frames to ask for.

        Args:
            event: the event kind that caused the request.
            caps: the backend's capabilities (fps, block size).
            hint: author override: a named hint or a frame count.
            seconds: explicit duration (a held key, a ``wait``), wins over hints.

        Returns:
            ``min_frames`` >= 1 (the backend rounds it up to whole blocks).
        """
        if seconds is not None:
            return max(1, math.ceil(seconds * caps.fps))
        if isinstance(hint, int):
            return hint
        name = hint or self.event_hint.get(event, "short")
        secs = self.hint_seconds.get(name, self.hint_seconds["short"])
        if secs <= 0:
            return caps.frames_per_block
        return max(1, math.ceil(secs * caps.fps))

    @classmethod
    def for_preemption(cls) -> ChunkPolicy:
        """The policy for a player that pre-empts (``Session.stream`` does): idle
        continuations run ``long`` (4 s) because any input cuts them after the block
        being made. ``bench/latency.py`` measures it: the same input latency as
        one-block chunks, with about half the requests (stalls and seams)."""
        return cls(event_hint={**EVENT_HINT, "idle": "long"})

    @staticmethod
    def switch(event: str) -> SwitchMode:
        """The prompt-switch mode for an event kind (``plain`` when unknown)."""
        return EVENT_SWITCH.get(event, "plain")

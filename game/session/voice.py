"""The voice layer of the backend stack: the cast's speech mixed into each chunk's audio.

``open_game`` puts it outermost (voice over guard over backend) when a character speaks
headless; in a window her sentences go to the window's mixer instead and chunks pass
through unchanged. Closing the layer closes the cast (its model worker) too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from game.world.protocol import (
    Backend,
    Capabilities,
    FrameChunk,
    MemoryOp,
    MemoryResult,
    SessionStart,
    WorldRequest,
    interrupt,
)

if TYPE_CHECKING:  # a type only: a story without cards plays without importing the cast room
    from game.cast.castroom import Castroom


class VoiceLayer:
    """A :class:`~game.world.protocol.Backend` that is ``inner`` with the cast's voice
    mixed into every chunk (``FrameChunk.audio``: ``(N,)`` float32 mono at the chunk's
    ``audio_rate``, N = frames x rate / fps; silence is made for a chunk without audio).

    Args:
        inner: the next layer (the guard, or the backend itself).
        cast: the cast whose :class:`~game.cast.castroom.VoiceTrack` speaks.
    """

    def __init__(self, inner: Backend, cast: Castroom) -> None:
        self.inner = inner
        self.cast = cast

    def capabilities(self) -> Capabilities:
        """The inner layer's."""
        return self.inner.capabilities()

    def start(self, start: SessionStart) -> None:
        """Start the inner layer."""
        self.inner.start(start)

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        """The inner layer's chunks, with speech mixed in."""
        voice = self.cast.voice
        for chunk in self.inner.generate(request):
            if voice is None:
                yield chunk
                continue
            n = round(chunk.n_frames * chunk.audio_rate / chunk.fps)
            mixed = voice.mix(chunk.audio, chunk.audio_rate, n)
            yield chunk if mixed is None else replace(chunk, audio=mixed)

    def interrupt(self, session_id: str = "") -> None:
        """Forward :meth:`~game.world.protocol.Interruptible.interrupt` to the inner layer."""
        interrupt(self.inner, session_id)

    def memory(self, op: MemoryOp) -> MemoryResult:
        """The inner layer's memory operation."""
        return self.inner.memory(op)

    def close(self) -> None:
        """Close the inner layer, then the cast."""
        try:
            self.inner.close()
        finally:
            self.cast.close()


__all__ = ["VoiceLayer"]

"""The ``null`` backend: frames of one flat colour, tiny by default, no sound.

For soak tests, replays and the explorer: it keeps the frame clock exactly as a
real backend with the same ``fps`` and block size would, at almost no cost.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from game.world.protocol import (
    POSE_PARTS,
    Capabilities,
    FrameChunk,
    MemoryOp,
    MemoryResult,
    SessionStart,
    WorldRequest,
    ignored_inputs,
)


class NullBackend:
    """Implements the protocol with flat grey frames of ``width x height`` (``placeholder_frames``:
    a guard does not take them for a frozen or drifting world)."""

    def __init__(self, width: int = 32, height: int = 18, fps: float = 24.0,
                 frames_per_block: int = 12) -> None:
        self.caps = Capabilities(backend="null", frames_per_block=frames_per_block, fps=fps,
                                 width=width, height=height, text=True,
                                 switch_modes=("recache", "scene_cut", "plain"),
                                 actions=("w", "a", "s", "d"), mouse=True, camera=POSE_PARTS,
                                 ref_images="any_chunk",
                                 structured_scene=True, snapshot=True, placeholder_frames=True)
        self.frame = 0
        self._snapshots: dict[str, int] = {}

    def capabilities(self) -> Capabilities:
        return self.caps

    def start(self, start: SessionStart) -> None:
        self.frame = 0

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        n = self.caps.round_up(request.min_frames)
        blocks = n // self.caps.frames_per_block
        ignored = ignored_inputs(self.caps, request)
        for b in range(blocks):
            t = self.caps.frames_per_block
            frames = np.full((t, self.caps.height, self.caps.width, 3), 128, np.uint8)
            chunk = FrameChunk(seq=request.seq, block=b, last=b == blocks - 1, first_frame=self.frame,
                               frames=frames, fps=self.caps.fps, ignored=ignored,
                               drawn=tuple(e.id for e in request.scene.entities))
            self.frame += t
            yield chunk

    def memory(self, op: MemoryOp) -> MemoryResult:
        if op.op == "snapshot":
            handle = f"null-{len(self._snapshots)}"
            self._snapshots[handle] = self.frame
            return MemoryResult(True, handle)
        if op.op == "restore":
            if op.handle not in self._snapshots:
                return MemoryResult(False, note=f"no snapshot {op.handle!r}")
            self.frame = self._snapshots[op.handle]
        if op.op == "reset":
            self.frame = 0
        return MemoryResult(True)

    def close(self) -> None:
        pass

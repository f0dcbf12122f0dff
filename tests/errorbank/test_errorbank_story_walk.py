"""The drift monitor on the demo stories' own scenes: no false alarm on the clean procedural world
(interiors included: the 96 x 54 reference must look like a 960 x 540 frame reduced), and still an
alarm when the picture really drifts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from game.errorbank.guard import reference_factory, reference_size
from game.errorbank.monitors import DriftMonitor
from game.errorbank.scenarios import story_walk
from game.story.loader import load_story
from game.world.backends.procedural import ProceduralBackend
from game.world.director import Director
from game.world.protocol import SessionStart

STORIES = Path(__file__).resolve().parents[2] / "stories"


@pytest.mark.parametrize("name", ["eve", "gullhaven"])
def test_no_drift_alarm_walking_every_scene_at_play_size(name: str) -> None:
    clean = ProceduralBackend(width=960, height=540, audio_rate=1000)
    caps = clean.capabilities()
    w, h = reference_size(caps)
    ref = reference_factory(replace(caps, width=w, height=h))
    for b in (clean, ref):
        b.start(SessionStart("walk", 7, "walk"))
    monitor = DriftMonitor()
    alarms: list[str] = []
    shifted_flagged = 0
    blocks = 0
    for req in story_walk(Director(load_story(STORIES / name), caps, "walk"), blocks=1):
        chunk = next(iter(clean.generate(req)))
        reference = next(iter(ref.generate(req)))
        score, key, finding = monitor.check(chunk.frames, reference.frames, req, 0)
        if finding is not None:
            alarms.append(f"{req.scene.location}: {score.score:.3f} ({key})")
        # the same block with a strong colour cast (a drifted world model) is still caught
        cast = np.clip(chunk.frames.astype(np.int16) + np.array([70, -30, -50], np.int16), 0, 255).astype(np.uint8)
        shifted_flagged += monitor.check(cast, reference.frames, req, 0)[2] is not None
        blocks += 1
    assert not alarms, alarms
    assert shifted_flagged == blocks

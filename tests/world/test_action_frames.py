"""Action frames: the director maps WASD, the mouse and the story's pan to one frame each;
backends say which parts they read and report the rest; the wire carries them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from game.session import Session
from game.state import Move
from game.story import load_story
from game.world import wire
from game.world.backends.null import NullBackend
from game.world.backends.procedural import ProceduralBackend
from game.world.chunking import ChunkPolicy
from game.world.director import action_frames
from game.world.protocol import ActionFrame, CameraPose, Capabilities, SessionStart, WorldRequest, ignored_inputs


@pytest.fixture
def session(mini_path: Path, tmp_path: Path) -> Session:
    s = Session(load_story(mini_path), NullBackend(), seed=1, save_dir=tmp_path)
    s.start()
    return s


def test_a_held_key_and_the_pan_reach_every_frame(session: Session) -> None:
    req = session.submit(Move(direction="a", seconds=0.2)).request
    assert req is not None
    n = session.caps.round_up(req.min_frames)
    assert len(req.action_frames) == n == 12
    assert all(f.keys == ("a",) and f.mouse == (0.0, 0.0) for f in req.action_frames)
    poses = [f.camera for f in req.action_frames]
    assert all(p is not None for p in poses)
    xs = [p.x for p in poses if p is not None]
    assert xs[0] == req.camera_x and xs == sorted(xs, reverse=True) and xs[-1] < xs[0]  # the pan moves left
    assert xs[1] - xs[0] == pytest.approx(req.camera_dx, abs=1e-6)
    idle = session.idle_request()
    assert idle.action_frames and all(f.keys == () for f in idle.action_frames)


def test_mouse_motion_of_the_cause_is_in_each_frame() -> None:
    frames = action_frames(4, "w", (0.25, -0.5), 1.0, 0.1)
    assert [f.keys for f in frames] == [("w",)] * 4 and {f.mouse for f in frames} == {(0.25, -0.5)}
    assert [f.camera.x for f in frames if f.camera] == pytest.approx([1.0, 1.1, 1.2, 1.3])


def test_parts_a_backend_does_not_read_are_reported_never_dropped() -> None:
    backend = ProceduralBackend(width=32, height=18, frames_per_block=4)
    caps = backend.capabilities()
    assert caps.actions == ("w", "a", "s", "d") and caps.mouse is False and caps.camera == ("x",)
    frames = (ActionFrame(keys=("q", "w"), mouse=(0.5, 0.0), camera=CameraPose(x=0.3, yaw=0.2)),)
    req = WorldRequest("s", 1, 4, "a meadow", "scene_cut", action_frames=frames)
    notes = ignored_inputs(caps, req)
    assert "action keys q: backend reads w, a, s, d" in notes
    assert "action mouse: backend reads no mouse" in notes
    assert "action camera yaw: backend reads x" in notes  # x is read, yaw is not
    backend.start(SessionStart("s", 1, "a meadow"))
    chunk = next(iter(backend.generate(req)))
    assert set(notes) <= set(chunk.ignored)
    quiet = WorldRequest("s", 2, 4, "a meadow", None, action_frames=(ActionFrame(("w",), camera=CameraPose(x=0.4)),))
    assert not [n for n in ignored_inputs(caps, quiet) if n.startswith("action")]


def test_requests_with_action_frames_and_capabilities_survive_the_wire() -> None:
    frames = (ActionFrame(("a", "w"), (0.1, -0.2), CameraPose(x=0.5, yaw=0.1)), ActionFrame(), ActionFrame(("s",)))
    req = WorldRequest("s", 3, 12, "p", "plain", action_frames=frames, first_block_frames=4)
    back = wire.request_from_json(json.loads(wire.dumps(wire.request_json(req))))
    assert back == req
    caps = Capabilities("x", 12, 20.0, 8, 8, actions=("w",), mouse=True, camera=("x", "yaw"), min_block_frames=4)
    assert wire.caps_from_json(json.loads(wire.dumps(wire.caps_json(caps)))) == caps
    with pytest.raises(wire.WireError, match="action frame"):
        wire.request_from_json({**wire.request_json(req), "action_frames": [{"mouse": "up"}]})


def test_reactions_ask_for_the_smallest_block_first() -> None:
    caps = Capabilities("x", 12, 20.0, 8, 8, min_block_frames=4)
    policy = ChunkPolicy()
    assert policy.first_block("choice", caps) == 4 and policy.first_block("move", caps) == 4
    assert policy.first_block("idle", caps) == 0 and policy.first_block("scene", caps) == 0
    assert caps.block_plan(24, 4) == (4, 12, 12)  # 28 >= 24: the small block, then whole blocks
    assert caps.block_plan(4, 4) == (4,) and caps.block_plan(24) == (12, 12)
    assert caps.block_plan(30, 5) == (8, 12, 12)
    assert replace(caps, min_block_frames=0).block_plan(24, 4) == (12, 12)  # no small blocks: as before

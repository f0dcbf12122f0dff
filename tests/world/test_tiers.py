"""Memory tiers in the conditioning: two sink levels, rolling history, object cache, bounded size."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from game.session import Session
from game.state import Instruct, Move, Wait
from game.story import load_story
from game.world.backends.null import NullBackend
from game.world.objects import ObjectMemory
from game.world.protocol import Entity, WorldRequest

DATA = Path(__file__).parents[1] / "data"


def make(tmp_path: Path) -> Session:
    s = Session(load_story(DATA / "mini"), NullBackend(), seed=4, save_dir=tmp_path)
    s.start()
    return s


def current(req: WorldRequest) -> list[str]:
    return [a.ref for a in req.anchors if a.tier == "sink_current"]


def test_two_sink_levels_night_then_200_camera_moves(tmp_path: Path) -> None:
    s = make(tmp_path)
    first = s.pending
    assert first is not None
    glob = [a for a in first.anchors if a.tier == "sink_global"]
    assert {a.id for a in glob} >= {"world.style", "char.creature"}
    s.submit(Instruct(edit="time_of_day", params={"value": "night"}))
    night = s.pending
    assert night is not None and "at night" in current(night)[0]
    version = s.director.current_version
    for i in range(200):
        s.submit(Move(direction="a" if i % 2 else "w", seconds=0.2))
        for _ in s.stream():
            pass
        req = s.director.build(s.state, [], s.director.cause([], "idle"))
        assert "at night" in current(req)[0], i  # still night: the current sink still says so
        assert req.scene.time_of_day == "night"
        assert [a for a in req.anchors if a.tier == "sink_global"] == glob  # the global level never changes
    assert s.director.current_version == version  # camera moves never rebuilt it
    assert s.director.current_anchors(s.state)[0].ref == current(night)[0]
    s.submit(Instruct(edit="weather", params={"value": "rain"}))  # an accepted edit rebuilds it
    assert s.director.current_version == version + 1
    assert "at night, rain" in current(s.pending)[0]  # type: ignore[arg-type]


def test_every_part_is_marked_with_its_tier(tmp_path: Path) -> None:
    s = make(tmp_path)
    req = s.submit(Wait(seconds=0.5)).request
    assert req is not None
    t = req.tiers
    assert t["anchors.global"] == "sink_global" and t["anchors.current"] == "sink_current"
    assert t["rolling"] == "rolling" and t["scene.entities"] == "object_cache" and t["actions"] == "request"
    assert {"object_cache.hits", "object_cache.misses"} <= set(t)
    assert all(e.tier == "object_cache" for e in req.scene.entities)
    for _ in range(10):
        s.submit(Wait(seconds=0.1))
    rolling = s.pending.rolling  # type: ignore[union-attr]
    assert len(rolling) == 4 and all(r.startswith("#") and "frame=" in r for r in rolling)
    assert all(len(r) <= 240 for r in rolling)


def test_object_cache_reuses_entries_until_an_entity_changes(tmp_path: Path) -> None:
    s = make(tmp_path)
    s.submit(Wait(seconds=0.1))
    req = s.submit(Wait(seconds=0.1)).request
    assert req is not None and req.tiers["object_cache.misses"] == "0" and int(req.tiers["object_cache.hits"]) >= 1
    entry = s.director.objects.get("creature")
    assert entry is not None and entry.sprite_key.startswith("sprite:") and "horned" in entry.description
    req = s.submit(Instruct(edit="look", params={"character": "creature", "colour": "purple"})).request
    assert req is not None and req.tiers["object_cache.misses"] == "1"  # its look changed: rebuilt
    changed = s.director.objects.get("creature")
    assert changed is not None and changed.fingerprint != entry.fingerprint and "purple" in changed.description
    req = s.submit(Wait(seconds=0.1)).request
    assert req is not None and req.tiers["object_cache.misses"] == "0"  # and reused again
    req = s.submit(Instruct(edit="look", params={"character": "creature", "wear": "scarf", "colour": "blue"})).request
    assert req is not None and req.tiers["object_cache.misses"] == "1"  # the new scarf; the creature is a hit


def test_the_cache_embeds_each_entity_once() -> None:
    calls: list[list[str]] = []

    def embed(texts: object) -> np.ndarray:
        calls.append(list(texts))  # type: ignore[call-overload]
        return np.ones((len(calls[-1]), 4), np.float32) / 2.0

    mem = ObjectMemory(embed)
    a = Entity("kite", "item", "red kite", "a red kite")
    for state in ("idle", "leap", "idle"):
        mem.refresh([a, Entity("creature", "character", "the creature", "horned", state=state)])
    assert calls == [["red kite: a red kite", "the creature: horned"]]
    assert mem.hits == 4 and mem.misses == 2
    mem.refresh([Entity("kite", "item", "red kite", "a green kite")])
    assert calls[-1] == ["red kite: a green kite"] and mem.get("kite").embedding is not None  # type: ignore[union-attr]


def test_a_request_after_10000_turns_is_no_bigger_than_at_turn_100(tmp_path: Path) -> None:
    s = make(tmp_path)
    sizes: dict[int, int] = {}
    for turn in range(1, 10_001):
        if turn % 1000 == 500:
            intent: Move | Wait | Instruct = Instruct(edit="weather", params={"value": ("rain", "snow")[turn % 2]})
        elif turn % 3:
            intent = Move(direction="a" if turn % 2 else "w", seconds=0.2)
        else:
            intent = Wait(seconds=0.1)
        req = s.submit(intent).request
        if turn in (100, 10_000):
            assert req is not None
            sizes[turn] = len(json.dumps(req.to_json()))
        if turn % 50 == 0:
            s.checkpoints.clear()
    assert sizes[10_000] <= 1.1 * sizes[100], sizes

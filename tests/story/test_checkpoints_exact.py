"""A checkpoint at every choice stays exact, on the Ink runtime (both engines) and the YAML one.

Over many random seeds: a checkpoint (``GameState.copy_state``, as ``Session`` takes one before
each choice) is never changed by later play nor by play from a restored copy of it (no container
shared: aliasing); rolling back to any checkpoint and making the same choices again gives the
same events and the same state; and a save holding every checkpoint (``game.state.saves``, which
writes each checkpoint as a delta from the one before) loads them back equal, and an Ink one
resumes at the same Ink position on a fresh runtime.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from game.state import Choose, Event, GameState
from game.state.saves import Checkpoint, SaveData, decode, encode
from game.story.ink_runtime import INK_OPS, INK_STATE, InkRuntime
from game.story.loader import load_story
from game.story.runtime import StoryRuntime
from game.story.story import Story
from tests.story.test_ink_checkpoints import loop_json  # noqa: F401  (the looping Ink story, compiled once)

ROOT = Path(__file__).resolve().parents[2]

#: Seeds of the random playthroughs (each a different walk, restart points and RANDOM seed).
SEEDS = range(12)
#: Choices in each playthrough.
CHOICES = 60


def _containers(value: Any) -> list[Any]:
    """Every dict and list inside ``value`` (itself included)."""
    out = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            out.append(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            out.append(v)
            stack.extend(v)
    return out


def _frozen(state: GameState) -> str:
    return json.dumps(state.to_json(), sort_keys=True)


def _events(events: list[Event]) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json") for e in events]


def _walk(rt: StoryRuntime, seed: int, n: int) -> tuple[list[tuple[GameState, str, str]], GameState]:
    """``n`` random choices from a fresh state (a new one at an ending): at each, ``(checkpoint,
    the state's JSON then, the choice)``; and the state at the end."""
    rng = random.Random(seed)
    state = rt.new_state(seed)
    rt.begin(state)
    taken = []
    for _ in range(n):
        options = rt.available_choices(state)
        if not options or rt.is_ending(state):
            state = rt.new_state(seed)
            rt.begin(state)
            options = rt.available_choices(state)
        picked = rng.choice(options).id
        taken.append((state.copy_state(), _frozen(state), picked))
        rt.apply(state, Choose(choice_id=picked))
    return taken, state


@pytest.fixture(scope="module")
def gullhaven() -> Story:
    """A YAML story whose world takes turns (agents, a timer): relationships, gifts, agents change."""
    return load_story(ROOT / "stories" / "gullhaven")


@pytest.fixture(scope="module")
def loop_story(request: pytest.FixtureRequest) -> Story:
    """The looping Ink story of ``test_ink_checkpoints`` (its fixture, imported above)."""
    return load_story(request.getfixturevalue("loop_json"))


def _runtimes(request: pytest.FixtureRequest, kind: str) -> StoryRuntime:
    if kind == "yaml":
        return StoryRuntime(request.getfixturevalue("gullhaven"))
    story = request.getfixturevalue("loop_story")
    return InkRuntime(story, engine=kind, snapshot_every=7)  # moves and whole saved states both


KINDS = ["yaml", "vm", "bink"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_checkpoint_is_never_changed_by_later_play(request: pytest.FixtureRequest, kind: str) -> None:
    rt = _runtimes(request, kind)
    for seed in SEEDS:
        taken, _ = _walk(rt, seed, CHOICES)
        assert all(_frozen(cp) == was for cp, was, _ in taken), seed  # the walk went on from each
        rng = random.Random(seed)
        for cp, was, picked in rng.sample(taken, 5):  # play on from a restored copy of it
            restored = cp.copy_state()
            mine = {id(c) for c in _containers(restored.__dict__)}
            assert not mine & {id(c) for c in _containers(cp.__dict__)}, seed  # nothing mutable shared
            rt.apply(restored, Choose(choice_id=picked))
            for _ in range(3):
                options = rt.available_choices(restored)
                if not options:
                    break
                rt.apply(restored, Choose(choice_id=rng.choice(options).id))
            assert _frozen(cp) == was, seed


@pytest.mark.parametrize("kind", KINDS)
def test_rolling_back_n_checkpoints_and_replaying_gives_the_same_events_and_state(
        request: pytest.FixtureRequest, kind: str) -> None:
    rt = _runtimes(request, kind)
    fresh = _runtimes(request, kind)  # a runtime that never saw the walk (an Ink story resyncs)
    for seed in SEEDS:
        rng = random.Random(seed)
        state = rt.new_state(seed)
        rt.begin(state)
        checkpoints: list[GameState] = []
        played: list[tuple[str, list[dict[str, Any]], str]] = []  # choice, its events, the state after
        for _ in range(CHOICES // 2):
            options = rt.available_choices(state)
            if not options:
                break
            picked = rng.choice(options).id
            checkpoints.append(state.copy_state())
            events = rt.apply(state, Choose(choice_id=picked))
            played.append((picked, _events(events), _frozen(state)))
        for runtime in (rt, fresh):
            back = rng.randrange(1, len(checkpoints) + 1)  # roll back `back` checkpoints
            k = len(checkpoints) - back
            again = checkpoints[k].copy_state()
            for picked, events, after in played[k:]:
                assert _events(runtime.apply(again, Choose(choice_id=picked))) == events, (seed, k)
                assert _frozen(again) == after, (seed, k)


@pytest.mark.parametrize("kind", KINDS)
def test_a_save_holding_every_checkpoint_loads_each_back_equal(request: pytest.FixtureRequest, kind: str) -> None:
    rt = _runtimes(request, kind)
    for seed in list(SEEDS)[:4]:
        taken, state = _walk(rt, seed, CHOICES)
        checkpoints = [Checkpoint(f"{i}: {picked}", cp) for i, (cp, _, picked) in enumerate(taken)]
        data = SaveData(story_id=state.story_id, story_hash="", state=state, events=[], checkpoints=checkpoints)
        loaded = decode(encode(data))
        assert loaded.state == state and len(loaded.checkpoints) == len(checkpoints)
        for mine, back in zip(checkpoints, loaded.checkpoints, strict=True):
            assert back.state == mine.state and back.label == mine.label, seed
        if not isinstance(rt, InkRuntime):
            continue
        assert any(cp.state.world.get(INK_OPS) for cp in checkpoints)  # some hold moves, not a saved state
        other = InkRuntime(rt.story, engine=kind)
        for mine, back in zip(checkpoints[::7], loaded.checkpoints[::7], strict=True):
            restored = back.state.copy_state()
            assert rt.sync(mine.state.copy_state()) and other.sync(restored)
            assert json.loads(other.ink.save_state()) == json.loads(rt.ink.save_state()), seed  # same Ink position
            assert [c.id for c in other.available_choices(restored)] == \
                [c.id for c in rt.available_choices(mine.state.copy_state())]
            assert INK_STATE in restored.world

"""Ink checkpoints as moves: a state holds bink's saved state plus the choices made since
(``INK_OPS``), so a checkpoint at every choice costs no ``save_state``. These tests hold the
runtime to "a save, a load or a rollback resumes exactly where a fresh replay would be".

The story is compiled in the test run with inkjs (``conftest.ink_compile``); it loops, so a
random playthrough never ends, and it reads what moves cannot change by themselves: external
functions that read the state (``has``, ``trust``), ones that change it (``give``, ``take``,
``relate``), visit counts, ``RANDOM``, a once-only choice and a tunnel.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from game.session import Session
from game.state import Choose, GameState
from game.story.ink_runtime import INK_OPS, INK_STATE, SNAPSHOT_EVERY, InkRuntime
from game.story.loader import load_story

InkCompile = Callable[[Path, Path], Path]

LOOP = """\
# title: The Loop
VAR courage = 0
VAR luck = 0
EXTERNAL has(item)
EXTERNAL trust(who)
EXTERNAL give(item, who)
EXTERNAL take(item)
EXTERNAL relate(who, axis, delta)
-> camp

=== camp ===
# scene: camp
The fire crackles. {courage} courage, luck {luck}.
{camp > 3: You know this camp well.}
~ luck = RANDOM(1, 6)
+ [Walk north] -> north
+ {has("lamp")} [Light the lamp] -> cave
* [Rest a while]
  ~ courage += 1
  -> camp
+ [Hum] -> hum -> camp

=== north ===
# scene: north road
The wind is cold. The fox's trust is {trust("fox")}.
+ [Back to camp] -> camp
+ {not has("lamp")} [Take the lamp]
  ~ take("lamp")
  -> camp
+ {has("lamp")} [Give the fox the lamp]
  ~ give("lamp", "fox")
  ~ relate("fox", "trust", 1)
  -> camp
+ {courage >= 2} [Climb] -> peak

=== cave ===
# scene: cave
{~Water drips.|Bats stir.|Something glitters.}
+ [Out again] -> camp

=== peak ===
The valley is far below. {peak > 1: Again.}
+ [Down] -> camp

=== hum ===
You hum a tune.
->->
"""


@pytest.fixture(scope="module")
def loop_json(ink_compile: InkCompile, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("loop")
    (folder / "loop.ink").write_text(LOOP, encoding="utf-8")
    return ink_compile(folder / "loop.ink", folder / "loop.ink.json")


def new_session(path: Path, tmp: Path, every: int) -> Session:
    s = Session(load_story(path), "null", seed=3, save_dir=tmp / "saves")
    assert isinstance(s.runtime, InkRuntime)
    s.runtime.snapshot_every = every
    s.start()
    return s


def play(s: Session, ids: list[str]) -> None:
    for cid in ids:
        s.submit(Choose(choice_id=cid))


def ink_position(rt: InkRuntime, state: GameState) -> dict[str, Any]:
    """Where Ink is in ``state``, whichever way the state holds it (bink's whole saved state)."""
    assert rt.sync(state)
    return dict(json.loads(rt.ink.save_state()))


def same_place(a: Session, b: Session) -> None:
    ja, jb = a.state.to_json(), b.state.to_json()
    for doc in (ja, jb):
        doc.pop("frame")  # the frame clock never goes back on a rollback
        doc["world"].pop(INK_STATE)
        doc["world"].pop(INK_OPS, None)
    assert ja == jb
    assert ink_position(a.runtime, a.state) == ink_position(b.runtime, b.state)  # type: ignore[arg-type]
    assert [c.id for c in a.choices()] == [c.id for c in b.choices()]
    assert [(e.kind, e.text) for e in a.log.since(0)] == [(e.kind, e.text) for e in b.log.since(0)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rollback_to_a_random_checkpoint_then_replay_matches_a_fresh_replay(loop_json: Path, tmp_path: Path,
                                                                            seed: int) -> None:
    rng = random.Random(seed)
    s = new_session(loop_json, tmp_path, every=5)
    taken: list[str] = []
    for _ in range(30):  # a checkpoint at every choice (Session takes one before each Choose)
        taken.append(rng.choice(s.choices()).id)
        play(s, taken[-1:])
    assert any(cp.state.world.get(INK_OPS) for cp in s.checkpoints)  # checkpoints hold moves...
    assert len({cp.state.world[INK_STATE] for cp in s.checkpoints}) > 1  # ...and fresh saves of bink's state
    assert s.state.holders or "lamp" in s.state.inventory  # the externals that change the state ran

    back = rng.randrange(1, len(s.checkpoints) + 1)
    s.rollback(back)
    kept = taken[:len(taken) - back]
    fresh = new_session(loop_json, tmp_path, every=5)
    play(fresh, kept)
    same_place(s, fresh)  # rolled back = a fresh replay of the choices before it

    again = []  # replay from there: other random choices, the same in both
    for _ in range(10):
        again.append(rng.choice(s.choices()).id)
        play(s, again[-1:])
    play(fresh, again)
    same_place(s, fresh)

    eager = new_session(loop_json, tmp_path, every=1)  # bink's whole state saved after every step
    play(eager, kept + again)
    same_place(s, eager)


def test_save_with_moves_loads_where_it_was(loop_json: Path, tmp_path: Path) -> None:
    rng = random.Random(9)
    s = new_session(loop_json, tmp_path, every=8)
    taken = []
    for _ in range(13):
        taken.append(rng.choice(s.choices()).id)
        play(s, taken[-1:])
    assert s.state.world.get(INK_OPS)  # the save holds moves since bink's last saved state
    s.save("mid")
    loaded = new_session(loop_json, tmp_path, every=8)
    loaded.load("mid")
    fresh = new_session(loop_json, tmp_path, every=8)
    play(fresh, taken)
    assert loaded.state.variables == fresh.state.variables and loaded.state.inventory == fresh.state.inventory
    assert ink_position(loaded.runtime, loaded.state) == ink_position(fresh.runtime, fresh.state)  # type: ignore[arg-type]
    more = [rng.choice(fresh.choices()).id for _ in range(1)]
    for _ in range(6):
        play(loaded, more[-1:])
        play(fresh, more[-1:])
        more.append(rng.choice(fresh.choices()).id)
    assert ink_position(loaded.runtime, loaded.state) == ink_position(fresh.runtime, fresh.state)  # type: ignore[arg-type]
    loaded.rollback(3)  # the loaded checkpoints resume too
    fresh.rollback(3)
    assert ink_position(loaded.runtime, loaded.state) == ink_position(fresh.runtime, fresh.state)  # type: ignore[arg-type]


def test_a_move_that_no_longer_fits_resumes_at_the_knot_start(loop_json: Path, tmp_path: Path) -> None:
    s = new_session(loop_json, tmp_path, every=8)
    play(s, ["camp.walk_north"])
    assert s.state.scene == "north" and s.state.world.get(INK_OPS)
    for move, why in ((["c", 7, "camp", json.loads(s.state.world[INK_OPS])[3], []], "no longer there"),
                      (["c", 0, "camp", "0123456789abcdef", []], "changed since the move")):
        broken = s.state.copy_state()
        broken.world[INK_OPS] = json.dumps(move) + "\n"
        rt = InkRuntime(s.story)  # type: ignore[arg-type]
        events = rt.resume(broken)
        warning = next(e for e in events if e.kind == "warning")
        assert "does not fit" in warning.text and why in warning.text
        assert broken.scene == "north" and [c.text for c in rt.available_choices(broken)][0] == "Back to camp"


def test_moves_survive_a_wording_edit(loop_json: Path, ink_compile: InkCompile, tmp_path: Path) -> None:
    """A move records its knot's shape, not its text: a reworded choice still replays in place."""
    s = new_session(loop_json, tmp_path, every=8)
    play(s, ["camp.walk_north", "north.take_the_lamp", "camp.walk_north"])
    assert s.state.world[INK_OPS].count("\n") == 3
    s.save("before")
    edited = tmp_path / "edited"
    edited.mkdir()
    (edited / "loop.ink").write_text(LOOP.replace("[Walk north]", "[Walk up the north road]"), encoding="utf-8")
    later = Session(load_story(ink_compile(edited / "loop.ink", edited / "loop.ink.json")), "null", seed=3,
                    save_dir=tmp_path / "saves")
    events = later.load("before")
    assert not [e for e in events if e.kind == "warning" and "resumed at the start" in e.text]
    assert later.state.scene == "north" and later.state.inventory[-1] == "lamp"
    assert [c.text for c in later.choices()] == ["Back to camp", "Give the fox the lamp"]


def test_a_variable_written_from_outside_ink_is_one_of_the_moves(loop_json: Path) -> None:
    story = load_story(loop_json)
    rt = InkRuntime(story, snapshot_every=8)  # type: ignore[arg-type]
    state = rt.new_state(4)
    rt.begin(state)
    rt.choose(state, "camp.walk_north")
    state.variables["courage"] = 5  # a hook's write: pushed into Ink on the next step
    rt.choose(state, "north.back_to_camp")
    assert '"courage", 5' in state.world[INK_OPS]
    checkpoint, where = state.copy_state(), ink_position(rt, state)
    rt.choose(state, "camp.walk_north")
    assert [c.text for c in rt.available_choices(state)][-1] == "Climb"  # Ink saw courage 5
    other = InkRuntime(story)  # type: ignore[arg-type]
    assert ink_position(other, checkpoint) == where
    assert where["variablesState"]["courage"] == 5


@pytest.mark.parametrize("ops", ['{"c": 1}\n', "not json\n", '["c", -1, "camp", "", []]\n', '["c", "x"]\n',
                                 '["v", "courage", [1]]\n', '["v", "no_such_variable", 1]\n', "[]\n", '["c"]\n'])
def test_damaged_moves_in_a_save_resume_at_the_knot_start(loop_json: Path, tmp_path: Path, ops: str) -> None:
    s = new_session(loop_json, tmp_path, every=8)
    play(s, ["camp.walk_north"])
    broken = s.state.copy_state()
    broken.world[INK_OPS] = ops
    rt = InkRuntime(s.story)  # type: ignore[arg-type]
    events = rt.resume(broken)
    assert any(e.kind == "warning" and "does not fit" in e.text for e in events)
    assert broken.scene == "north" and rt.available_choices(broken)


def _plain(state: GameState) -> dict[str, Any]:
    """``state`` as JSON without the two fields that hold Ink's position (compared through Ink itself)."""
    doc = state.to_json()
    doc["world"].pop(INK_STATE)
    doc["world"].pop(INK_OPS, None)
    return doc


@pytest.mark.parametrize("engine", ["vm", "bink"])
def test_every_checkpoint_of_a_long_random_playthrough_restores_the_state_reached_then(loop_json: Path,
                                                                                      engine: str) -> None:
    """A checkpoint at each of 300 random choices (``copy_state``, as ``Session`` takes one), with the
    default :data:`SNAPSHOT_EVERY`, so most hold moves on top of an older saved state. Each, restored
    in a random order, on the runtime that played and on a fresh one, is the state reached then:
    the same fields, the same Ink position (Ink's whole saved state, RANDOM's seed and visit counts
    included), the same menu, and the same next step (its events and the state after it)."""
    story = load_story(loop_json)
    rt = InkRuntime(story, engine=engine)  # type: ignore[arg-type]
    assert rt.snapshot_every == SNAPSHOT_EVERY > 2
    rng = random.Random(17)
    state = rt.new_state(5)
    rt.begin(state)
    reached: list[tuple[GameState, dict[str, Any], dict[str, Any], list[str], str]] = []
    after: list[tuple[dict[str, Any], dict[str, Any], list[tuple[str, str, str]]]] = []
    for _ in range(300):
        menu = [c.id for c in rt.available_choices(state)]
        picked = rng.choice(menu)
        reached.append((state.copy_state(), _plain(state), ink_position(rt, state), menu, picked))
        events = rt.apply(state, Choose(choice_id=picked))
        after.append((_plain(state), ink_position(rt, state), [(e.kind, e.text, e.scene) for e in events]))
    assert sum(1 for cp, *_ in reached if cp.world.get(INK_OPS)) > 200  # most are moves, not saved states
    assert len({cp.world[INK_STATE] for cp, *_ in reached}) >= 300 // SNAPSHOT_EVERY  # ...on several saved states
    assert len({json.dumps(where, sort_keys=True) for _, _, where, _, _ in reached}) > 100
    assert {cp.scene for cp, *_ in reached} == {"camp", "north", "cave"}  # (the peak needs courage 2)

    fresh = InkRuntime(story, engine=engine)  # type: ignore[arg-type]
    order = list(range(len(reached)))
    rng.shuffle(order)
    for k in order:
        checkpoint, plain, where, menu, picked = reached[k]
        for runtime in (rt, fresh):
            restored = checkpoint.copy_state()
            assert ink_position(runtime, restored) == where, k
            assert _plain(restored) == plain, k
            assert [c.id for c in runtime.available_choices(restored)] == menu, k
            events = runtime.apply(restored, Choose(choice_id=picked))
            assert (_plain(restored), ink_position(runtime, restored),
                    [(e.kind, e.text, e.scene) for e in events]) == after[k], k

"""worldloom's Ink interpreter (``game.story.ink_vm``) in lockstep with bink: every Ink fixture of
``tests/data/ink`` (and inkle's *The Intercept* when its source is on the machine) played with seeded
random choices through both, the same text, tags, choices and external calls at every step; saves
written by either load into the other; what is out of scope is refused by name.

Stories are compiled in the test run with the npm ``inkjs`` compiler (``conftest.py``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from game.errors import StoryError
from game.state import Choose
from game.story.ink import HOOK, RETURN_HOOK, InkStory, load_ink
from game.story.ink_runtime import ENGINE_ENV, InkRuntime
from game.story.ink_vm import InkScopeError, InkVm, float_text
from tests.story.conftest import INTERCEPT_SKIP

INK = Path(__file__).parents[1] / "data" / "ink"
FIXTURES = sorted(p.name for p in INK.glob("*.ink"))
InkCompile = Callable[[Path, Path], Path]
Log = list[tuple[Any, ...]]


@pytest.fixture(scope="module")
def compiled(ink_compile: InkCompile, tmp_path_factory: pytest.TempPathFactory) -> dict[str, InkStory]:
    out = tmp_path_factory.mktemp("lockstep")
    return {name: load_ink(ink_compile(INK / name, out / f"{name}.json")) for name in FIXTURES}


def _new(kind: str, story: InkStory, log: Log, seed: int) -> Any:
    """A bink story or an interpreter for ``story`` with every external function logging its calls."""
    if kind == "bink":
        import bink.story

        s: Any = bink.story.Story(story.json_text)
    else:
        s = InkVm(json.loads(story.json_text), str(story.path))
    s.set_error_handler(lambda message, is_error: log.append(("error", is_error)))
    s.set_allow_external_function_fallbacks(True)
    for name in sorted(story.externals | {HOOK, RETURN_HOOK}):
        def external(n: str, *args: Any) -> Any:
            log.append(("call", n, args))
            return {"trust": 0.25, "has": True}.get(n)
        s.bind_external_function(name, external)
    state = json.loads(s.save_state())
    state["storySeed"] = seed
    s.load_state(json.dumps(state))
    return s


def _lines(kind: str, s: Any, log: Log) -> None:
    while s.can_continue():
        if kind == "bink":
            text, tags = s.cont(), tuple(s.get_current_tags())
        else:
            text, tags = s.cont()
        log.append(("line", text, tags))


def _choices(kind: str, s: Any) -> list[tuple[str, tuple[str, ...]]]:
    if kind == "bink":
        found = s.get_current_choices()
        return [(found[i], tuple(found.get_tags(i))) for i in range(len(found))]
    return list(s.choices(True))


def _play(kind: str, story: InkStory, seed: int, steps: int, reload_at: set[int] | None = None) -> Log:
    """Random choices (seeded): the log of lines, tags, choices and external calls.

    ``reload_at``: steps before which the state is saved and loaded into a fresh story of the
    *other* kind (bink's save into the interpreter and the other way round), which plays on.
    """
    log: Log = []
    s = _new(kind, story, log, seed)
    rng = random.Random(seed)
    for step in range(steps):
        if reload_at and step in reload_at:
            saved = s.save_state()
            kind = "vm" if kind == "bink" else "bink"
            s = _new(kind, story, log, seed)
            s.load_state(saved)
        _lines(kind, s, log)
        options = _choices(kind, s)
        log.append(("choices", options))
        if not options or any(e[0] == "error" for e in log):
            break
        k = rng.randrange(len(options))
        log.append(("choose", k))
        if kind == "bink":
            s.choose_choice_index(k)
        else:
            s.choose(k)
    return log


def _first_difference(a: Log, b: Log) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"step {i}: bink {x!r} / interpreter {y!r} (after {a[max(0, i - 2):i]!r})"
    return f"lengths {len(a)} / {len(b)}" if len(a) != len(b) else ""


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_plays_as_bink_plays_it(compiled: dict[str, InkStory], name: str) -> None:
    story = compiled[name]
    for seed in range(12):
        bink_log, vm_log = _play("bink", story, seed, 60), _play("vm", story, seed, 60)
        assert len(vm_log) > 3 and not any(e[0] == "error" for e in vm_log)
        assert _first_difference(bink_log, vm_log) == "", f"{name}, seed {seed}"


def test_the_intercept_plays_as_bink_plays_it(intercept_source: Path | None, ink_compile: InkCompile,
                                              tmp_path: Path) -> None:
    if intercept_source is None:
        pytest.skip(INTERCEPT_SKIP)
    story = load_ink(ink_compile(intercept_source, tmp_path / "intercept.ink.json"))
    endings = 0
    for seed in range(8):
        bink_log, vm_log = _play("bink", story, seed, 300), _play("vm", story, seed, 300)
        assert _first_difference(bink_log, vm_log) == "", f"seed {seed}"
        endings += vm_log[-1] == ("choices", [])
    assert endings >= 4  # whole playthroughs, not only their openings


def _road_ink(n: int) -> str:
    """A story in the shape of ``bench/explore.py``'s generated one (the shape the interpreter's fused
    instructions were made for): each knot a scene tag, a line with a variable in it, a line shown on a
    read count, a plain choice, one gated on a variable, a once-only one that changes it."""
    out = ["VAR courage = 0", "-> s0"]
    for i in range(n):
        out.append(f"=== s{i} ===")
        if i == n - 1:
            out += ["# scene: road", "Journey's end. # ending: end", "-> END"]
            continue
        side = min(n - 1, i + 2 + i % 5)
        out += [f"# scene: {'road' if i % 3 else 'wood'}", f"Mile {i} of the road. {{courage}} courage.",
                f"{{s{i} >= 2: You have been here before.}}", f"+ [Walk on] -> s{i + 1}",
                f"+ {{courage >= 2}} [Take the side path] -> s{side}", "* [Rest a while]", "  ~ courage += 1",
                f"  -> s{i}"]
    return "\n".join(out) + "\n"


def _saved_position(s: Any) -> dict[str, Any]:
    """What a save records of where the story is: call stack, choices and the threads they were made on,
    visit counts, turn indices, variables and the turn (Ink's save format, as both write it)."""
    doc = json.loads(s.save_state())
    flow = doc["flows"]["DEFAULT_FLOW"]
    return {"flow": {k: flow.get(k) for k in ("callstack", "currentChoices", "choiceThreads")},
            **{k: doc.get(k) for k in ("visitCounts", "turnIndices", "variablesState", "turnIdx")}}


def test_the_bench_story_plays_and_saves_as_bink_does(ink_compile: InkCompile, tmp_path: Path) -> None:
    src = tmp_path / "road.ink"
    src.write_text(_road_ink(40))
    story = load_ink(ink_compile(src, tmp_path / "road.ink.json"))
    rests = 0
    for seed in range(16):
        bink_log, vm_log = _play("bink", story, seed, 80), _play("vm", story, seed, 80)
        assert _first_difference(bink_log, vm_log) == "", f"seed {seed}"
        rests += sum(1 for e in vm_log if e[0] == "line" and "been here before" in e[1])
        log: Log = []
        b, v = _new("bink", story, log, seed), _new("vm", story, log, seed)
        rng = random.Random(seed)
        for step in range(40):  # the saved position after every line: where each choice was made, counts
            _lines("bink", b, log)
            _lines("vm", v, log)
            assert _saved_position(v) == _saved_position(b), f"seed {seed}, step {step}"
            options = _choices("vm", v)
            if not options:
                break
            k = rng.randrange(len(options))
            b.choose_choice_index(k)
            v.choose(k)
    assert rests > 0  # the read-count line was reached, not only the first visits


@pytest.mark.parametrize("name", FIXTURES)
def test_saves_cross_between_bink_and_the_interpreter(compiled: dict[str, InkStory], name: str) -> None:
    story = compiled[name]
    for seed in range(6):
        plain = _play("bink", story, seed, 40)
        crossed = _play("bink", story, seed, 40, reload_at={2, 3, 5, 8, 9, 13})
        assert _first_difference(plain, crossed) == "", f"{name}, seed {seed}"
        from_vm = _play("vm", story, seed, 40, reload_at={1, 4, 6, 7, 11})
        assert _first_difference(plain, from_vm) == "", f"{name}, seed {seed}"


def test_lists_are_refused_by_name_and_place(ink_compile: InkCompile, tmp_path: Path) -> None:
    src = tmp_path / "lists.ink"
    src.write_text("LIST moods = calm, (wary)\n-> top\n=== top ===\nYou feel {moods}.\n-> END\n")
    story = load_ink(ink_compile(src, tmp_path / "lists.ink.json"))
    with pytest.raises(InkScopeError, match=r"Ink lists \(LIST moods\)") as err:
        InkVm(json.loads(story.json_text), str(story.path))
    assert str(story.path) in str(err.value)


def test_unknown_content_is_refused_with_its_path() -> None:
    doc = {"inkVersion": 21, "root": [["^Hi", "\n", "warp", "end", None], "done", None]}
    with pytest.raises(InkScopeError, match=r"unknown instruction 'warp'.*at 0\.2"):
        InkVm(doc, "odd.ink.json")


def test_floats_print_as_32_bit_floats_print() -> None:
    assert [float_text(x) for x in (1.0, 0.5, 1.5, 0.1, 2.75, -0.25)] == ["1", "0.5", "1.5", "0.1", "2.75", "-0.25"]


def _runtime_run(story: InkStory, engine: str, seed: int, steps: int) -> list[tuple[Any, ...]]:
    """InkRuntime with ``engine``: random choices (seeded), a rollback to an earlier checkpoint now
    and then; every event's kind, scene, speaker, text and ids, and the choice ids offered."""
    rt = InkRuntime(story, engine=engine)
    assert rt.engine == engine
    rng = random.Random(seed)
    state = rt.new_state(seed)
    out: list[tuple[Any, ...]] = [(e.kind, e.scene, e.speaker, e.text, e.ids) for e in rt.begin(state)]
    checkpoints = []
    for _ in range(steps):
        options = rt.available_choices(state)
        out.append(("offered", tuple(c.id for c in options), rt.is_ending(state)))
        if not options:
            break
        checkpoints.append(state.copy_state())
        if len(checkpoints) > 3 and rng.random() < 0.2:  # roll back, then play on from there
            state = checkpoints[rng.randrange(len(checkpoints))].copy_state()
            out.append(("rollback", state.scene))
            continue
        events = rt.apply(state, Choose(choice_id=rng.choice(options).id))
        out += [(e.kind, e.scene, e.speaker, e.text, e.ids) for e in events]
    out.append(("variables", tuple(sorted(state.variables.items()))))
    return out


@pytest.mark.parametrize("name", FIXTURES)
def test_the_runtime_makes_the_same_events_on_either_engine(compiled: dict[str, InkStory], name: str) -> None:
    story = compiled[name]
    for seed in range(4):
        assert _runtime_run(story, "vm", seed, 40) == _runtime_run(story, "bink", seed, 40), f"{name}, seed {seed}"


def test_a_story_out_of_scope_plays_through_bink(ink_compile: InkCompile, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "moods.ink"
    src.write_text("LIST moods = calm, (wary)\n-> top\n=== top ===\nYou feel {moods}.\n+ [Again] -> top\n")
    story = load_ink(ink_compile(src, tmp_path / "moods.ink.json"))
    assert story.vm_root is None and "Ink lists (LIST moods)" in story.vm_refusal
    rt = InkRuntime(story)
    assert rt.engine == "bink"
    state = rt.new_state(0)
    assert [e.text for e in rt.begin(state) if e.kind == "line"] == ["You feel wary."]
    with pytest.raises(StoryError, match="Ink lists"):
        InkRuntime(story, engine="vm")
    monkeypatch.setenv(ENGINE_ENV, "bink")
    assert InkRuntime(load_ink(ink_compile(INK / "kite.ink", tmp_path / "kite.ink.json"))).engine == "bink"
    monkeypatch.setenv(ENGINE_ENV, "quick")
    with pytest.raises(StoryError, match="unknown Ink engine 'quick'"):
        InkRuntime(story)

"""Benchmark the explorer, the runtime and the loader on real and generated stories.

    python bench/explore.py [--scenes 5000] [--max-states 50000] [--choices 20000] [--repeat 3] [--quick] [--no-ink]
                            [--ink-only] [--breakdown] [--against DIR]

Prints (figures, never assertions):

* the explorer's states/s (its state-graph pass, least explored scenes first, within
  its default bound) on ``stories/zero_mark`` (else ``tests/data/mini``) and on a
  generated story of ``--scenes`` scenes, with the states it merged, the scenes it
  covered and the endings it found;
* the runtime's choices/s with a checkpoint (``GameState.copy_state()``) taken
  before every choice, on both (choices/s are per CPU second: the machine may be shared);
* the time to load the generated story cold (``load_story(use_cache=False)``)
  and to lint it (``game.lint.lint``: what ``worldloom lint`` runs, the cast's cards included);
* the same generated story written in Ink (``--ink``, on by default): compiled
  with the npm ``inkjs`` compiler (node; installed once into
  ``~/.cache/worldloom/npm``), then bink's own choices/s (choose + continue, with
  and without a ``save_state`` checkpoint each, and reading each line with its tags
  and each choice's text and tags, as a game must), worldloom's Ink interpreter alone the
  same ways, and worldloom's ``InkRuntime`` choices/s with a checkpoint (``copy_state``)
  each, on the interpreter and on bink, best of ``--repeat`` interleaved rounds, and their
  ratios, beside the YAML runtime's figure above. The loaded stories are moved out of the
  cyclic collector's generations first (``gc.freeze``), as ``worldloom play`` does after loading.
* ``--breakdown``: where an ``InkRuntime`` choice's CPU time goes (µs a choice): the interpreter
  alone, the runtime's own step on top of it, ``StoryRuntime.apply`` around it, the checkpoint
  (``copy_state``); with ``--against DIR`` (an older tree, ``git archive REV | tar -x -C DIR``)
  the same figures of that tree's code, timed in a child process in turn with this tree's
  (round by round, CPU time, best of the rounds), before -> after.

The generated story is deterministic: a long road of scenes, each with a plain
choice onwards, a side path behind a condition (``courage``, an item, a visit
count), a once-only rest that raises ``courage``, an exit back, two lines (one
conditional), an action every 10th scene, a character to give things to every
7th, and an ending every 250th.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
#: ``--root DIR`` (the ``--against`` child, :func:`parts_worker`): time the code of the tree at DIR.
GAME_ROOT = Path(sys.argv[sys.argv.index("--root") + 1]) if "--root" in sys.argv[:-1] else ROOT
sys.path.insert(0, str(GAME_ROOT))

from game.lint import lint  # noqa: E402
from game.state import Choose  # noqa: E402
from game.story.explorer import DEFAULT_MAX_STATES, Coverage, Explorer, breadth_first  # noqa: E402
from game.story.loader import load_story  # noqa: E402
from game.story.runtime import StoryRuntime  # noqa: E402
from game.story.story import Story  # noqa: E402
from game.story.storymap import map_story  # noqa: E402


def generate(n: int, seed: int = 7) -> dict[str, Any]:
    """A story dict with ``n`` scenes (see the module docstring)."""
    rng = random.Random(seed)
    scenes: dict[str, Any] = {}
    for i in range(n):
        sid = f"s{i}"
        if i % 250 == 249 or i == n - 1:
            scenes[sid] = {"title": f"End {i}", "location": "road", "ending": f"end_{i // 250}",
                           "lines": [f"Journey's end number {i // 250}."]}
            continue
        side = min(n - 1, i + rng.randint(2, 20))
        cond = rng.choice(["courage >= 2", "has('lamp')", f"visited('s{max(0, i - 1)}') >= 2"])
        sc: dict[str, Any] = {
            "title": f"Mile {i}", "location": "road" if i % 3 else "wood",
            "lines": [f"Mile {i} of the road. {{courage}} courage.",
                      {"text": "You have been here before.", "if": f"visited('{sid}') >= 2"}],
            "choices": [
                {"id": f"on_{i}", "text": "Walk on", "goto": f"s{i + 1}"},
                {"id": f"side_{i}", "text": "Take the side path", "if": cond, "goto": f"s{side}"},
                {"id": f"rest_{i}", "text": "Rest a while", "once": True, "do": ["courage += 1"]},
            ],
        }
        if i > 0:
            sc["exits"] = {"a": {"goto": f"s{i - 1}", "label": "Back"}}
        if i % 10 == 0:
            sc["actions"] = [{"id": f"sing_{i}", "keywords": ["sing"], "examples": ["sing a song"],
                              "say": "You sing.", "do": ["courage += 1"]}]
        if i % 7 == 0:
            sc["present"] = ["fox"]
        scenes[sid] = sc
    return {
        "id": "generated", "title": f"Generated ({n} scenes)", "start": "s0",
        "variables": {"courage": {"type": "int", "default": 0}},
        "items": {"lamp": {"name": "lamp", "tags": ["light"]}, "bread": {"name": "bread", "tags": ["food"]}},
        "inventory": ["bread"],
        "cast": {"fox": {"name": "the fox"}},
        "locations": {"road": {"name": "Road"}, "wood": {"name": "Wood"}},
        "on_give": {"fox": {"food": {"say": "The fox trades you a lamp for the bread.", "do": ["take('lamp')"]}}},
        "scenes": scenes,
    }


def explorer_line(name: str, story: Story, max_states: int) -> None:
    """Print the state-graph pass (least explored scenes first) on ``story``: states/s, states,
    moves, whether the bound was hit, merged states, scenes covered and endings found."""
    ex = Explorer(story)
    cov = Coverage()
    t0, c0 = time.perf_counter(), time.process_time()
    g = breadth_first(ex, max_states, cov, [])
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    scenes = story.model.scenes
    endings = {sc.ending for sc in scenes.values() if sc.ending}
    print(f"explorer  {name:<18} {len(g.keys) / dt:9.0f} states/s  ({len(g.keys)} states, {g.transitions} moves in "
          f"{dt:.2f} s, {cpu:.2f} s CPU{', bound hit' if g.bound_hit else ', complete'}; {g.merged} merged; "
          f"{len(cov.scenes & set(scenes))}/{len(scenes)} scenes; {len(set(cov.endings) & endings)}/{len(endings)} "
          "endings)")


def choices_rate(story: Story, n: int, seed: int = 1, engine: str | None = None,
                 part: str = "checkpoint") -> tuple[float, int]:
    """Random choices with a checkpoint (``copy_state()``) before each: ``(choices/s, restarts)``.

    The story's own runtime plays it: :class:`StoryRuntime` for YAML, ``InkRuntime`` for Ink
    (events, variables, Ink's state in ``GameState``), on ``engine`` (``"vm"``: worldloom's Ink
    interpreter, ``"bink"``; None: the runtime's own pick). ``part`` times less of it (the same
    walk): ``"apply"`` without the checkpoint, ``"step"`` the runtime's ``choose`` alone (no
    ``StoryRuntime.apply`` around it: no turn, no empty-menu check, no world turn).
    """
    from game.story.ink import InkStory
    from game.story.ink_runtime import InkRuntime, runtime_for

    rt = InkRuntime(story, engine=engine) if isinstance(story, InkStory) else runtime_for(story)
    rng = random.Random(seed)
    state = rt.new_state(seed)
    rt.begin(state)
    checkpoints = []
    restarts = 0
    step, checkpoint = part == "step", part == "checkpoint"
    gc.collect()  # the garbage of the runs before (a dropped runtime's cycles) is not charged to this one
    t0 = time.process_time()
    for _ in range(n):
        options = rt.available_choices(state)
        if not options or rt.is_ending(state):
            state = rt.new_state(seed)
            rt.begin(state)
            restarts += 1
            options = rt.available_choices(state)
        picked = rng.choice(options).id
        if step:
            rt.choose(state, picked)
            continue
        if checkpoint:
            checkpoints.append(state.copy_state())
            del checkpoints[:-200]
        rt.apply(state, Choose(choice_id=picked))
    return n / (time.process_time() - t0), restarts


def ink_parts(story: Story, n: int, seed: int = 1) -> dict[str, float]:
    """Where an ``InkRuntime`` choice's CPU time goes: µs a choice of ``"step"`` (``InkRuntime.choose``
    alone: Ink's step with its events, menu and move), ``"apply"`` (through ``StoryRuntime.apply``, as
    ``Session`` steps: the turn, the empty-menu check, the world's turn) and ``"checkpoint"``
    (``apply`` plus a ``copy_state`` before each choice: the figure :func:`choices_rate` gives),
    each on the same random walk from the same seed (:func:`choices_rate`'s ``part``); engine: the
    runtime's own pick."""
    return {part: 1e6 / choices_rate(story, n, seed, part=part)[0] for part in ("step", "apply", "checkpoint")}


#: The parts :func:`ink_breakdown` times, in the order printed.
PARTS = ("engine", "step", "apply", "checkpoint")


def ink_breakdown(story: Story, n: int, seed: int = 1) -> dict[str, float]:
    """:func:`ink_parts` plus ``"engine"``: the interpreter alone reading each line (:func:`vm_rate`), or
    bink doing so when the story is outside the interpreter's scope; µs a choice."""
    from game.story.ink import InkStory

    assert isinstance(story, InkStory)
    if getattr(story, "vm_root", None) is not None:
        engine = 1e6 / vm_rate(story, n, checkpoint=False, seed=seed)
    else:
        engine = 1e6 / bink_rate(story.json_text, n, checkpoint=False, seed=seed, lines=True)[0]
    return {"engine": engine, **ink_parts(story, n, seed)}


def parts_worker(path: Path, n: int) -> None:
    """The ``--against`` child: load the Ink story at ``path`` with the code of :data:`GAME_ROOT`, then
    for each line read on stdin, time :func:`ink_breakdown` once and write it as one JSON line."""
    import json

    story = load_story(path)
    getattr(story, "vm_root", None)  # the interpreter's tree built now, not in the first round
    gc.freeze()
    print(json.dumps({"ready": str(GAME_ROOT)}), flush=True)
    for _ in sys.stdin:
        print(json.dumps(ink_breakdown(story, n)), flush=True)


class Against:
    """An older tree's :func:`ink_breakdown`, timed in a child process (:func:`parts_worker`) when asked."""

    def __init__(self, tree: Path, story_path: Path, n: int) -> None:
        import subprocess

        self.tree = tree
        self.child = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--parts-worker", str(story_path),
                                       "--choices", str(n), "--root", str(tree)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def _read(self) -> dict[str, Any]:
        import json

        assert self.child.stdout is not None
        line = self.child.stdout.readline()
        if not line:
            raise RuntimeError(f"the --against child ({self.tree}) stopped")
        found: dict[str, Any] = json.loads(line)
        return found

    def ready(self) -> None:
        self._read()

    def breakdown(self) -> dict[str, float]:
        assert self.child.stdin is not None
        self.child.stdin.write("go\n")
        self.child.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.child.stdin is not None:
            self.child.stdin.close()
        self.child.wait()


def breakdown_line(label: str, name: str, parts: dict[str, float], engine: str) -> str:
    """One line of µs a choice: the engine alone, the runtime's own step on top of it, the apply
    around the step, the checkpoint (``copy_state``), and the whole."""
    step = parts["step"] - parts["engine"]
    apply = parts["apply"] - parts["step"]
    checkpoint = parts["checkpoint"] - parts["apply"]
    return (f"cost      {name + ' (ink)':<18} {label}: µs a choice: {engine} alone {parts['engine']:.1f}; InkRuntime's "
            f"own step {step:.1f}, StoryRuntime.apply around it {apply:.1f}, the copy_state checkpoint "
            f"{checkpoint:.1f}: runtime + checkpoint {step + apply + checkpoint:.1f}, whole {parts['checkpoint']:.1f}")


# -- the same story in Ink, played by bink ---------------------------------------------
def generate_ink(n: int, seed: int = 7) -> str:
    """Ink source for the story :func:`generate` makes (same road, side paths, rests and endings)."""
    rng = random.Random(seed)
    out = ["# title: Generated", "VAR courage = 0", "-> s0", ""]
    for i in range(n):
        out.append(f"=== s{i} ===")
        if i % 250 == 249 or i == n - 1:
            out += ["# scene: road", f"Journey's end number {i // 250}. # ending: end_{i // 250}", "-> END", ""]
            continue
        side = min(n - 1, i + rng.randint(2, 20))
        rng.choice([0, 1, 2])  # keep the draws in step with generate()
        out += [f"# scene: {'road' if i % 3 else 'wood'}", f"Mile {i} of the road. {{courage}} courage.",
                f"{{s{i} >= 2: You have been here before.}}", f"+ [Walk on] -> s{i + 1}",
                f"+ {{courage >= 2}} [Take the side path] -> s{side}", "* [Rest a while]", "  ~ courage += 1",
                f"  -> s{i}", ""]  # the YAML story's exit back is a move, not a choice: none here
    return "\n".join(out)


def compile_ink(source: str, out: Path) -> str:
    """Compile Ink ``source`` into ``out`` with inkjs (node); ``""`` when done, else why not."""
    import shutil
    import subprocess

    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node/npm not installed"
    cache = Path.home() / ".cache" / "worldloom" / "npm"
    if not (cache / "node_modules" / "inkjs" / "compiler" / "Compiler.js").is_file():
        done = subprocess.run(["npm", "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--silent",
                               "inkjs@2"], capture_output=True, text=True)
        if done.returncode != 0:
            return f"npm install inkjs failed: {done.stderr.strip()[:200]}"
    src = out.with_suffix("").with_suffix(".ink")
    src.write_text(source, encoding="utf-8")
    done = subprocess.run(["node", str(ROOT / "tests" / "data" / "ink" / "compile.js"), str(cache), str(src),
                           str(out)], capture_output=True, text=True)
    return "" if done.returncode == 0 else f"inkjs: {done.stderr.strip()[:200]}"


def vm_rate(story: Story, n: int, checkpoint: bool, seed: int = 1) -> float:
    """worldloom's Ink interpreter alone, as :func:`bink_rate` drives bink (``lines``): each line with
    its tags, each choice's text and tags, a ``save_state`` first when ``checkpoint``: choices/s."""
    from game.story.ink import HOOK, RETURN_HOOK, InkStory
    from game.story.ink_vm import InkVm

    assert isinstance(story, InkStory) and story.vm_root is not None
    vm = InkVm(story.vm_root)
    vm.set_allow_external_function_fallbacks(True)
    for name in (HOOK, RETURN_HOOK):
        vm.bind_external_function(name, lambda *_: None)
    rng = random.Random(seed)
    saved: list[str] = []
    gc.collect()  # the garbage of the runs before (a dropped runtime's cycles) is not charged to this one
    t0 = time.process_time()
    for _ in range(n):
        while vm.can_continue():
            vm.cont()
        found = vm.choices(True)
        if not found:
            vm.reset_state()
            while vm.can_continue():
                vm.cont()
            found = vm.choices(True)
        if checkpoint:
            saved.append(vm.save_state())
            del saved[:-200]
        vm.choose(rng.randrange(len(found)))
    return n / (time.process_time() - t0)


def bink_rate(json_text: str, n: int, checkpoint: bool, seed: int = 1, lines: bool = False) -> tuple[float, int]:
    """bink alone: random choices, each ``choose_choice_index`` + ``continue_maximally``
    (and a ``save_state`` first when ``checkpoint``): ``(choices/s, restarts)``.

    ``lines``: what a game reads from bink instead, through bink's own API: each line on its own
    (``cont`` until ``can_continue`` is false) with its tags, and each choice's text and tags.
    """
    import bink.story

    story = bink.story.Story(json_text)
    rng = random.Random(seed)

    def run() -> None:
        if not lines:
            story.continue_maximally()
            return
        while story.can_continue():
            story.cont()
            list(story.get_current_tags())

    def count_choices() -> int:
        found = story.get_current_choices()
        if lines:  # read, as a game shows them
            return len([(found[i], list(found.get_tags(i))) for i in range(len(found))])
        return len(found)

    run()
    saved: list[str] = []
    restarts = 0
    gc.collect()  # the garbage of the runs before (a dropped runtime's cycles) is not charged to this one
    t0 = time.process_time()
    for _ in range(n):
        count = count_choices()
        if not count:
            story.reset_state()
            run()
            restarts += 1
            count = count_choices()
        if checkpoint:
            saved.append(story.save_state())
            del saved[:-200]
        story.choose_choice_index(rng.randrange(count))
        run()
    return n / (time.process_time() - t0), restarts


def ink_section(scenes: int, choices: int, yaml_story: Story, repeat: int, breakdown: bool = False,
                against: Path | None = None) -> None:
    """Print the Ink figures for the generated story of ``scenes`` knots, and the ratios to bink.

    ``yaml_story``: the same story in YAML, whose runtime (checkpoint each) is timed again here
    for its ratio. bink plain, bink with a ``save_state`` each, ``InkRuntime`` and the YAML
    runtime are timed in turn ``repeat`` times and the best of each is printed (a shared
    machine slows some rounds). ``breakdown``: also where InkRuntime's time goes (:func:`ink_breakdown`);
    ``against``: an older tree whose breakdown is timed too, in a child process, after this tree's
    in each round (:class:`Against`).
    """
    name = f"generated-{scenes}"
    try:
        import bink.story  # noqa: F401
    except (ImportError, RuntimeError) as exc:
        print(f"ink       {name:<18} skipped: bink does not import ({exc}); pip install bink")
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "generated.ink.json"
        t0 = time.perf_counter()
        why = compile_ink(generate_ink(scenes), out)
        if why:
            print(f"ink       {name:<18} skipped: {why}")
            return
        compile_s = time.perf_counter() - t0
        raw = out.read_bytes().decode("utf-8-sig")
        old = Against(against, out, choices) if against is not None and breakdown else None
        t0 = time.perf_counter()
        story = load_story(out)
        load_s = time.perf_counter() - t0
        if old is not None:
            old.ready()
        print(f"ink       {name:<18} {compile_s:9.2f} s to compile (inkjs), {load_s:.2f} s to load "
              f"({len(raw) / 1e6:.1f} MB of JSON)")
        gc.freeze()  # the loaded stories out of the collector's generations, as `worldloom play` does (game/cli.py)
        bare = by_line = saving = rate = yaml_rate = on_bink = vm_lines = vm_saving = 0.0  # best of `repeat` rounds
        parts: dict[str, float] = {}  # µs a choice, least of `repeat` rounds
        old_parts: dict[str, float] = {}  # the same of the --against tree, timed in turn with this one's
        in_scope = getattr(story, "vm_root", None) is not None
        for _ in range(repeat):  # interleaved, per CPU second
            yaml_rate = max(yaml_rate, choices_rate(yaml_story, choices)[0])
            bare = max(bare, bink_rate(raw, choices, checkpoint=False)[0])
            by_line = max(by_line, bink_rate(raw, choices, checkpoint=False, lines=True)[0])
            saving = max(saving, bink_rate(raw, choices, checkpoint=True)[0])
            got, restarts = choices_rate(story, choices, engine="vm" if in_scope else "bink")
            rate = max(rate, got)
            on_bink = max(on_bink, choices_rate(story, choices, engine="bink")[0])
            if in_scope:
                vm_lines = max(vm_lines, vm_rate(story, choices, checkpoint=False))
                vm_saving = max(vm_saving, vm_rate(story, choices, checkpoint=True))
            if breakdown:
                for k, v in ink_breakdown(story, choices).items():
                    parts[k] = min(parts.get(k, v), v)
            if old is not None:
                for k, v in old.breakdown().items():
                    old_parts[k] = min(old_parts.get(k, v), v)
        if old is not None:
            old.close()
        each = f"{choices} choices, {restarts} restarts, best of {repeat}"
        print(f"bink      {name:<18} {bare:9.0f} choices/s plain (choose + continue_maximally; {each})")
        print(f"bink      {name:<18} {by_line:9.0f} choices/s reading what a game shows (each line with its tags, "
              "each choice's text and tags; bink's API)")
        print(f"bink      {name:<18} {saving:9.0f} choices/s with a save_state at each choice")
        engine = "worldloom's Ink interpreter" if in_scope else "bink (the story is outside the interpreter's scope)"
        print(f"runtime   {name + ' (ink)':<18} {rate:9.0f} choices/s through InkRuntime on {engine} with a "
              "checkpoint (GameState.copy_state) at each choice")
        print(f"runtime   {name + ' (ink)':<18} {on_bink:9.0f} choices/s through InkRuntime on bink "
              "(WORLDLOOM_INK_ENGINE=bink), a checkpoint at each choice")
        if in_scope:
            print(f"vm        {name:<18} {vm_lines:9.0f} choices/s worldloom's Ink interpreter alone, reading each "
                  "line with its tags and the choices (as bink's line above)")
            print(f"vm        {name:<18} {vm_saving:9.0f} choices/s worldloom's Ink interpreter alone with a "
                  "save_state at each choice (Ink's save format)")
        print(f"runtime   {name:<18} {yaml_rate:9.0f} choices/s through the YAML runtime with a checkpoint at each "
              "choice (the same story)")
        print(f"ratio     {name:<18} {yaml_rate / saving:9.2f}x  YAML runtime (checkpoint each) / bink with a "
              "save_state each (goal >= 1.0)")
        print(f"ratio     {name:<18} {rate / saving:9.2f}x  InkRuntime (checkpoint each) / bink with a save_state "
              "each (goal >= 1.0)")
        print(f"ratio     {name:<18} {rate / bare:9.2f}x  InkRuntime (checkpoint each) / bink plain (goal >= 1.0)")
        print(f"ratio     {name:<18} {rate / on_bink:9.2f}x  InkRuntime on the interpreter / InkRuntime on bink "
              "(both a checkpoint each)")
        if in_scope:
            print(f"ratio     {name:<18} {vm_lines / by_line:9.2f}x  interpreter alone / bink alone, both reading "
                  "each line, its tags and the choices")
            print(f"ratio     {name:<18} {vm_saving / saving:9.2f}x  interpreter alone / bink alone, both with a "
                  "save_state at each choice")
        print(f"ratio     {name:<18} {rate / by_line:9.2f}x  InkRuntime (checkpoint each) / bink reading each line, "
              "its tags and the choices")
        if parts:
            print(f"cost      {name + ' (ink)':<18} µs a choice: bink plain {1e6 / bare:.1f}, bink reading each line "
                  f"{1e6 / by_line:.1f}, bink with a save_state each {1e6 / saving:.1f}")
            what = "the interpreter" if in_scope else "bink reading each line"
            if old_parts:
                print(breakdown_line(f"before ({against})", name, old_parts, what))
            print(breakdown_line("after (this tree)" if old_parts else "this tree", name, parts, what))
        gc.unfreeze()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", type=int, default=5000)
    ap.add_argument("--max-states", type=int, default=DEFAULT_MAX_STATES,
                    help="the explorer's bound on states (default: its own default)")
    ap.add_argument("--choices", type=int, default=20_000)
    ap.add_argument("--ink", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the same story in Ink (bink, and worldloom's InkRuntime)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="rounds of the Ink choices/s figures (bink, bink + save_state, InkRuntime; best of each)")
    ap.add_argument("--quick", action="store_true", help="a small run: 500 scenes, 5,000 states, 2,000 choices")
    ap.add_argument("--breakdown", action="store_true",
                    help="also print where an InkRuntime choice's CPU time goes (engine, step, apply, checkpoint)")
    ap.add_argument("--ink-only", action="store_true",
                    help="only the runtimes' choices/s on the generated story (Ink, bink, YAML): no explorer or lint")
    ap.add_argument("--against", type=Path, default=None, metavar="DIR",
                    help="with --breakdown: also time the breakdown of the tree at DIR (an older revision: "
                         "git archive REV | tar -x -C DIR), in turn with this tree's, before -> after")
    ap.add_argument("--parts-worker", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--root", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.parts_worker is not None:
        parts_worker(args.parts_worker, args.choices)
        return
    if args.quick:
        args.scenes, args.max_states, args.choices = 500, 5_000, 2_000
    if args.ink_only:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "story.yaml"
            path.write_text(yaml.safe_dump(generate(args.scenes), sort_keys=False, width=200), encoding="utf-8")
            ink_section(args.scenes, args.choices, load_story(path, use_cache=False), max(1, args.repeat),
                        args.breakdown, args.against)
        return

    demo = ROOT / "stories" / "zero_mark"
    if not (demo / "story.yaml").is_file():
        demo = ROOT / "tests" / "data" / "mini"
    story = load_story(demo, use_cache=False)
    explorer_line(demo.name, story, args.max_states)
    crate, restarts = choices_rate(story, args.choices)
    print(f"runtime   {demo.name:<18} {crate:9.0f} choices/s with a checkpoint each ({args.choices} choices, "
          f"{restarts} restarts)")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "story.yaml"
        path.write_text(yaml.safe_dump(generate(args.scenes), sort_keys=False, width=200), encoding="utf-8")
        size_mb = path.stat().st_size / 1e6
        t0, c0 = time.perf_counter(), time.process_time()
        big = load_story(path, use_cache=False)
        load_s, load_c = time.perf_counter() - t0, time.process_time() - c0
        name = f"generated-{args.scenes}"
        print(f"load      {name:<18} {load_s:9.2f} s cold ({load_c:.2f} s CPU; use_cache=False; "
              f"{size_mb:.1f} MB of YAML)")
        os.environ["WORLDLOOM_CACHE"] = str(Path(tmp) / "cache")  # an empty cache: the first runs are cold
        for label in ("cold", "cached"):
            t0, c0 = time.perf_counter(), time.process_time()
            diags = lint(path)
            lint_s, lint_c = time.perf_counter() - t0, time.process_time() - c0
            print(f"lint      {name:<18} {lint_s:9.2f} s {label} ({lint_c:.2f} s CPU; {len(diags)} finding(s), "
                  "load and cards included: what `worldloom lint` runs)")
        for label in ("cached", "cached again"):
            t0, c0 = time.perf_counter(), time.process_time()
            started = load_story(path)
            rt = StoryRuntime(started)
            state = rt.new_state(0)
            rt.begin(state)
            rt.available_choices(state)
            start_s, start_c = time.perf_counter() - t0, time.process_time() - c0
            print(f"start     {name:<18} {start_s:9.2f} s {label} ({start_c:.2f} s CPU; load_story + begin + "
                  "the first choices; the cache filled by lint)")
        explorer_line(name, big, args.max_states)
        for label in ("cold", "again"):  # the second reads the coverage the first kept (as after `explore`)
            t0, c0 = time.perf_counter(), time.process_time()
            smap, _ = map_story(path, Path(tmp) / "map.dot", coverage=True, max_states=args.max_states, n_random=10)
            map_s, map_c = time.perf_counter() - t0, time.process_time() - c0
            print(f"map       {name:<18} {map_s:9.2f} s {label} ({map_c:.2f} s CPU; map --coverage to .dot, "
                  f"{args.max_states} states + 10 playthroughs; {sum(1 for n in smap.nodes if n.reached)} "
                  "scenes reached)")
        big_rate, restarts = choices_rate(big, args.choices)
        print(f"runtime   {name:<18} {big_rate:9.0f} choices/s with a checkpoint each ({args.choices} choices, "
              f"{restarts} restarts)")
    if args.ink:
        ink_section(args.scenes, args.choices, big, max(1, args.repeat), args.breakdown, args.against)


if __name__ == "__main__":
    main()

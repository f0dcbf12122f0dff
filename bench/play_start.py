"""What `worldloom lint` and `worldloom play`'s start cost on a big story, cold and cached. Prints
figures; asserts nothing.

    python bench/play_start.py [--scenes 5000] [--repeat 3]
    python bench/play_start.py --quick          # 500 scenes, 2 rounds
    python bench/play_start.py --against DIR    # also DIR's code, in the same rounds (a "before")

The story is ``bench/explore.py``'s generated one (``--scenes`` scenes: 5,000 is ~125k YAML lines).
Every figure is measured in a fresh interpreter (a run never inherits another's heap, so no
garbage collection of an earlier load is counted), cold (an empty story cache) and then cached
(the cache the cold run filled), the median of ``--repeat`` rounds:

* **whole commands**, as a player or an author runs them: ``python -m game lint STORY`` and
  ``python -m game play STORY --headless --backend null --no-errorbank --no-voice --dialogue none``
  (no inputs: the start, its lint and the first frames), CPU seconds of the child (user + system,
  ``resource.getrusage(RUSAGE_CHILDREN)``) and wall seconds. Python's bytecode cache is on for them
  (an installed game has its ``.pyc`` files; a ``PYTHONDONTWRITEBYTECODE`` in the environment is
  dropped and the bytecode goes to a temporary ``PYTHONPYCACHEPREFIX``, warmed by one run first);
* **baselines** in the same run: the interpreter alone (``python -c pass``) and PyYAML's libyaml C
  loader reading the story to plain data with no line marks (``yaml.load(text, CSafeLoader)``, what
  the YAML part would cost with the library's own loader);
* **in one process, imports excluded**, CPU seconds (``time.process_time``) of play's own start
  (``load_story`` + ``begin`` + the first choices; the baseline), of ``lint_story(path)`` and then a
  second ``load_story`` (the old start), and of one ``load_story`` then lint on it (the start now).

The load average is printed before and after: on a shared machine trust CPU over wall seconds.

``--against DIR`` runs the whole commands of another copy of the game too (``git archive main |
tar -x -C DIR``: the code before a change), each round right after this tree's, on the same
story with its own caches, so the two are measured at the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _begin(story: object) -> None:
    from game.story.runtime import StoryRuntime

    rt = StoryRuntime(story)  # type: ignore[arg-type]
    state = rt.new_state(0)
    rt.begin(state)
    rt.available_choices(state)


def _no_lint(path: Path) -> None:
    from game.story.loader import load_story

    _begin(load_story(path))


def _lint_then_load(path: Path) -> None:
    from game.story.lint import lint_story
    from game.story.loader import load_story

    lint_story(path)
    _begin(load_story(path))


def _load_once(path: Path) -> None:
    from game.story.lint import lint_story
    from game.story.loader import load_story

    story = load_story(path)
    lint_story(path, story=story)
    _begin(story)


WAYS: dict[str, Callable[[Path], None]] = {"no lint": _no_lint, "lint, then load": _lint_then_load,
                                           "load once, lint it": _load_once}


def _one_way(name: str, path: Path) -> None:
    """(In a fresh interpreter) cold then cached CPU seconds of one way, as JSON on stdout."""
    from game.story.lint import lint_story  # noqa: F401  (imports are not what this part measures)
    from game.story.loader import load_story  # noqa: F401
    from game.story.runtime import StoryRuntime  # noqa: F401

    out = []
    for _ in ("cold", "cached"):
        c0 = time.process_time()
        WAYS[name](path)
        out.append(time.process_time() - c0)
    print(json.dumps(out))


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float, str]:
    """``argv`` in a child, in ``cwd``: (CPU s, wall s, its stdout)."""
    c0, t0 = _child_cpu(), time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - t0, _child_cpu() - c0
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return cpu, wall, done.stdout


def _load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="500 scenes, 2 rounds")
    ap.add_argument("--against", metavar="DIR",
                    help="another copy of the game (its folder holds game/): its whole commands too, same rounds")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: one in-process way, in a child
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        _one_way(args.one, Path(args.path))
        return
    if args.quick:
        args.scenes, args.repeat = 500, 2
    import yaml
    from explore import generate

    print(f"load average at the start: {_load()} (1 / 5 / 15 min)")
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "story.yaml"
        text = yaml.safe_dump(generate(args.scenes), sort_keys=False, width=200)
        path.write_text(text, encoding="utf-8")
        lines = text.count("\n")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pyc")
        env["PYTHONPATH"] = str(ROOT)
        commands = {
            "worldloom lint": [py, "-m", "game", "lint", str(path)],
            "worldloom play --headless (start)": [py, "-m", "game", "play", str(path), "--headless", "--backend",
                                                  "null", "--no-errorbank", "--no-voice", "--dialogue", "none"],
        }
        trees = {"": ROOT}
        if args.against:
            other = Path(args.against).resolve()
            if not (other / "game" / "__main__.py").is_file():
                raise SystemExit(f"--against {other}: no game/ package there")
            trees["before: "] = other
        envs = {}
        for tag, tree in trees.items():
            envs[tag] = {**env, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(Path(tmp) / f"pyc{len(envs)}"),
                         "WORLDLOOM_CACHE": str(Path(tmp) / f"cache-warm{len(envs)}")}
            for argv in commands.values():  # bytecode written once, as an install has it
                _run(argv, envs[tag], tree)
        rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
        base: dict[str, list[tuple[float, float]]] = {}
        for r in range(args.repeat):
            cpu, wall, _ = _run([py, "-c", "pass"], env)
            base.setdefault("python -c pass", []).append((cpu, wall))
            cpu, wall, _ = _run([py, "-c", f"import yaml; yaml.load(open({str(path)!r}).read(), "
                                           "Loader=yaml.CSafeLoader)"], env)
            base.setdefault("PyYAML CSafeLoader, plain data", []).append((cpu, wall))
            for name, argv in commands.items():
                for tag, tree in trees.items():
                    run_env = {**envs[tag], "WORLDLOOM_CACHE": str(Path(tmp) / f"cache-{r}-{name.split()[1]}-{tag}")}
                    for label in ("cold", "cached"):
                        cpu, wall, _ = _run(argv, run_env, tree)
                        rows.setdefault((tag + name, label), []).append((cpu, wall))
        inproc: dict[tuple[str, str], list[float]] = {}
        for r in range(args.repeat):
            for name in WAYS:
                env["WORLDLOOM_CACHE"] = str(Path(tmp) / f"cache-in-{r}-{name.replace(' ', '_').replace(',', '')}")
                _, _, out = _run([py, __file__, "--one", name, "--path", str(path)], env)
                cold, cached = json.loads(out.strip().splitlines()[-1])
                inproc.setdefault((name, "cold"), []).append(cold)
                inproc.setdefault((name, "cached"), []).append(cached)

    def med(xs: list[tuple[float, float]]) -> str:
        return (f"{statistics.median(x[0] for x in xs):6.2f} s CPU  {statistics.median(x[1] for x in xs):6.2f} s "
                "wall")

    print(f"generated story of {args.scenes} scenes ({lines:,} YAML lines), median of {args.repeat}, "
          f"each in a fresh interpreter:")
    print("whole commands (goal: <= 1 s cached, <= 3 s cold, each):")
    for (name, label), got in rows.items():
        print(f"  {name:<44} {label:<7} {med(got)}")
    print("baselines:")
    for name, got in base.items():
        print(f"  {name:<44} {med(got)}")
    print("in one process, imports excluded (CPU s):")
    ref = {label: statistics.median(inproc[("no lint", label)]) for label in ("cold", "cached")}
    for (name, label), got in inproc.items():
        m = statistics.median(got)
        extra = "" if name == "no lint" else f"  (lint's cost: {m - ref[label]:+.2f} s)"
        print(f"  {name:<20} {label:<7} {m:6.2f} s{extra}")
    print(f"load average at the end: {_load()}")


if __name__ == "__main__":
    main()

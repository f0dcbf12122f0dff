"""What `worldloom play`'s start lint costs on a big story, cold and cached. Prints figures; asserts nothing.

    python bench/play_start.py [--scenes 5000] [--repeat 3]
    python bench/play_start.py --quick          # 500 scenes, 2 rounds

The story is ``bench/explore.py``'s generated one (``--scenes`` scenes). Each round, in turn
and each with an empty story cache (cold) and then again on the cache it filled (cached),
CPU seconds (``time.process_time``) of:

* ``no lint``: the baseline, play's own start: ``load_story`` + ``begin`` + the first choices;
* ``lint, then load``: the start as it was: ``lint_story(path)`` (its own load, which fills
  the cache) and then play's ``load_story`` (a second load, from that cache);
* ``load once, lint it``: the start now: one ``load_story``, lint on that story
  (``lint_story(path, story=...)``: its memo when the story is unchanged), play on it.

The median of ``--repeat`` rounds is printed; the extra over the baseline is the lint's cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from explore import generate  # noqa: E402

from game.story.lint import lint_story  # noqa: E402
from game.story.loader import load_story  # noqa: E402
from game.story.runtime import StoryRuntime  # noqa: E402
from game.story.story import Story  # noqa: E402


def begin(story: Story) -> None:
    rt = StoryRuntime(story)
    state = rt.new_state(0)
    rt.begin(state)
    rt.available_choices(state)


def no_lint(path: Path) -> None:
    begin(load_story(path))


def lint_then_load(path: Path) -> None:
    lint_story(path)
    begin(load_story(path))


def load_once(path: Path) -> None:
    story = load_story(path)
    lint_story(path, story=story)
    begin(story)


WAYS: dict[str, Callable[[Path], None]] = {"no lint": no_lint, "lint, then load": lint_then_load,
                                           "load once, lint it": load_once}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="500 scenes, 2 rounds")
    args = ap.parse_args()
    if args.quick:
        args.scenes, args.repeat = 500, 2
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "story.yaml"
        path.write_text(yaml.safe_dump(generate(args.scenes), sort_keys=False, width=200), encoding="utf-8")
        for r in range(args.repeat):
            for name, way in WAYS.items():
                os.environ["WORLDLOOM_CACHE"] = str(Path(tmp) / f"cache-{r}-{name.replace(' ', '_')}")
                for label in ("cold", "cached"):
                    c0 = time.process_time()
                    way(path)
                    times.setdefault((name, label), []).append(time.process_time() - c0)
    base = {label: statistics.median(times[("no lint", label)]) for label in ("cold", "cached")}
    print(f"play start, generated story of {args.scenes} scenes, CPU s, median of {args.repeat}:")
    for (name, label), got in times.items():
        med = statistics.median(got)
        extra = "" if name == "no lint" else f"  (lint's cost: {med - base[label]:+.2f} s)"
        print(f"  {name:<20} {label:<7} {med:6.2f} s{extra}")


if __name__ == "__main__":
    main()

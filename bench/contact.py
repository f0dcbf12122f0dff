"""Contact sheets of the demos: one procedural frame per scene, as the player first enters it.

    python3 -m bench.contact [--out out] [--size 480x270] [stories/zero_mark ...]

Each scene is reached as a player reaches it: the demo's playthrough scripts are played
headless (``kite.txt``, ``leaf.txt``, Eve's ``long.txt`` with her scripted replies,
Gullhaven's ``playthroughs/``), and the request that first entered each scene is kept; a
scene no script reaches is entered by the shortest run of choices from the start. Frame 6
of that request's first block is drawn (after a scene cut's fade-in). Writes
``<out>/contact_<story>.png`` (tiles labelled with the scene id) and prints, per scene, what the
painter's layout record shows and what it could not use.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from game.headless import HeadlessRunner
from game.inputs.script import read_script
from game.models.embedder import shared_encode
from game.session import open_game
from game.state import AnyIntent, Choose, Event, GameState, Move
from game.story import load_story
from game.story.runtime import StoryRuntime
from game.world.backends.null import NullBackend
from game.world.backends.procedural import ProceduralBackend
from game.world.director import Director
from game.world.protocol import FrameChunk, WorldRequest

ROOT = Path(__file__).resolve().parent.parent
DEMOS = ("zero_mark", "eve", "gullhaven")


class _Watch(NullBackend):
    """A null backend that keeps the first request sent while the session is in each scene."""

    def __init__(self) -> None:
        super().__init__()
        self.scene_of: Callable[[], str] = lambda: ""
        self.first: dict[str, WorldRequest] = {}

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        self.first.setdefault(self.scene_of(), request)
        return super().generate(request)


def played(story_dir: Path, scripts: list[Path], seed: int) -> dict[str, WorldRequest]:
    """Scene id -> the request that first entered it, over the playthrough ``scripts``."""
    found: dict[str, WorldRequest] = {}
    replies = story_dir / "scripted.yaml"
    for script in scripts:
        watch = _Watch()
        game = open_game(story_dir, backend=watch, seed=seed, voice=False, save_dir=Path("/tmp") / "wl_contact",
                         dialogue=f"scripted:{replies}" if replies.is_file() else None)
        watch.scene_of = lambda g=game: g.session.state.scene
        try:
            runner = HeadlessRunner(game.session)
            runner.start()
            for cmd in read_script(script):
                runner.run(cmd)
        finally:
            game.close()
        for sid, req in watch.first.items():
            found.setdefault(sid, req)
    return found


def first_visits(runtime: StoryRuntime, seed: int, limit: int = 20_000) -> dict[str, tuple[GameState, list[Event]]]:
    """Scene id -> (state on first entering it, the events of that turn), breadth first over
    choices and exits (up to ``limit`` turns tried)."""
    state = runtime.new_state(seed)
    events = runtime.begin(state)
    seen = {state.scene: (state.copy_state(), events)}
    todo = deque([state])
    steps = 0
    model = runtime.story.model
    while todo and steps < limit and len(seen) < len(model.scenes):
        here = todo.popleft()
        if runtime.is_ending(here):
            continue
        intents: list[AnyIntent] = [Choose(choice_id=c.id) for c in runtime.available_choices(here)]
        intents += [Move(direction=d, seconds=0.5) for d in model.scenes[here.scene].exits]
        for intent in intents:
            nxt = here.copy_state()
            evs = runtime.apply(nxt, intent)
            steps += 1
            if nxt.scene not in seen:
                seen[nxt.scene] = (nxt.copy_state(), evs)
            if nxt.scene != here.scene or len(todo) < 200:
                todo.append(nxt)
    return seen


def sheet(story_dir: Path, out: Path, width: int, height: int, seed: int = 7) -> Path:
    story = load_story(story_dir)
    runtime = StoryRuntime(story)
    backend = ProceduralBackend(width=width, height=height, embed=shared_encode)  # as open_game makes it
    director = Director(story, backend.capabilities(), "sheet")
    backend.start(director.session_start(runtime.new_state(seed), seed))
    scripts = sorted(story_dir.glob("*.txt")) + sorted((story_dir / "playthroughs").glob("*.txt"))
    requests = played(story_dir, scripts, seed)
    visits = first_visits(runtime, seed)
    for sid, (state, events) in visits.items():
        if sid not in requests:
            requests[sid] = director.build(state, events, director.cause(events))
    order = [sid for sid in story.model.scenes if sid in requests]
    cols = 4
    rows = (len(order) + cols - 1) // cols
    canvas = Image.new("RGB", (cols * width, rows * (height + 18)), (16, 16, 20))
    pen = ImageDraw.Draw(canvas)
    for k, sid in enumerate(order):
        request = dataclasses.replace(requests[sid], session_id="sheet", seq=k + 1)
        chunk = next(iter(backend.generate(request)))
        frame = chunk.frames[min(6, chunk.n_frames - 1)]
        x, y = (k % cols) * width, (k // cols) * (height + 18)
        canvas.paste(Image.fromarray(np.ascontiguousarray(frame)), (x, y + 18))
        pen.text((x + 4, y + 3), f"{sid}  ({request.scene.time_of_day}, {request.scene.weather})",
                 fill=(230, 230, 230))
        shown = sorted(backend.layout.visible()) if backend.layout is not None else []
        print(f"  {story.model.id}/{sid}: shows {', '.join(shown)}")
        for note in chunk.ignored:
            if "scenery" in note or "vocabulary" in note:
                print(f"      {note}")
    missed = [sid for sid in story.model.scenes if sid not in requests]
    if missed:
        print(f"  not reached by choices: {', '.join(missed)}")
    backend.close()
    path = out / f"contact_{story.model.id}.png"
    canvas.save(path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stories", nargs="*", default=[str(ROOT / "stories" / d) for d in DEMOS])
    ap.add_argument("--out", default="out")
    ap.add_argument("--size", default="480x270")
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for folder in args.stories:
        print(sheet(Path(folder), out, width, height))


if __name__ == "__main__":
    main()

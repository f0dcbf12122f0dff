"""Where one of Eve's replies spends its time: each stage's CPU and wall seconds.

Usage (from the repository root)::

    PYTHONPATH=. python3 bench/reply_profile.py [-n 8] [--probes FILE] [--dialogue SPEC]

Builds her pipeline as ``bench/character.py`` does (every told fact, 5 turns of small talk; the
embedded SmolLM2-135M on one torch thread, as in the game's model worker), asks ``n`` small-talk,
card and identity probes, and prints, per stage, the CPU seconds of the calling thread and the
wall seconds summed over the replies: the input check, authored and grounded matching, prompt
assembly, the model (prefill and first token; decoding the rest), every check of a sentence
(persona guard, verifier, coherence) and MiniLM (nested inside the stages that call it). Then
the tokens the model wrote and the prompt tokens it encoded. The stages are timed by wrapping
the pipeline's own objects (nothing in the game is changed); with one torch thread the thread's
CPU time is the model's whole work.
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.character import PROBES, ROOT, load_probes, talk
from game.cast.card_io import load_card
from game.cast.castroom import dialogue_spec
from game.cast.dialogue import DialogueSettings
from game.models.embedder import get_embedder
from game.models.registry import build_model

#: label -> [CPU seconds, wall seconds, calls]
Totals = dict[str, list[float]]


def timed(totals: Totals, obj: Any, name: str, label: str) -> None:
    """Replace ``obj.name`` with a wrapper that adds its CPU and wall seconds to ``totals[label]``."""
    f: Callable[..., Any] = getattr(obj, name)

    @functools.wraps(f)
    def wrapper(*a: Any, **k: Any) -> Any:
        c, w = time.thread_time(), time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            x = totals[label]
            x[0] += time.thread_time() - c
            x[1] += time.perf_counter() - w
            x[2] += 1
    setattr(obj, name, wrapper)


def timed_stream(totals: Totals, model: Any) -> None:
    """Time ``model.stream``: until its first piece (prefill and first token), then the rest (decoding)."""
    f = model.stream

    def stream(*a: Any, **k: Any) -> Iterator[str]:
        it = f(*a, **k)
        label = "model: prefill + first token"
        try:
            while True:
                c, w = time.thread_time(), time.perf_counter()
                try:
                    piece = next(it)
                except StopIteration:
                    return
                finally:
                    x = totals[label]
                    x[0] += time.thread_time() - c
                    x[1] += time.perf_counter() - w
                    x[2] += 1
                label = "model: decoding"
                yield piece
        finally:
            it.close()
            stats = getattr(model, "last_stats", {})
            totals["model: attempts"][2] += 1
            totals["model: tokens written"][2] += stats.get("tokens", 0)
            totals["model: prompt tokens encoded"][2] += stats.get("prompt_tokens", 0) - stats.get("reused_tokens", 0)
    model.stream = stream


def probes(path: Path | str, n: int) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """``(told, filler, asks)`` from the probe file at ``path``, read and checked by
    :func:`bench.character.load_probes`: every distinct told fact, the small talk, and ``n`` probes (every
    third small-talk, card or identity probe).

    Raises:
        ValueError: the file does not follow the probe schema (names the file and the probe).
    """
    data = load_probes(path)
    told = list(dict.fromkeys(p["tell"] for p in data["probes"] if p.get("tell")))
    asks = [p for p in data["probes"] if p["category"] in ("smalltalk", "card", "identity")][::3][:n]
    return told, data["filler"], asks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=8, help="how many probes")
    ap.add_argument("--probes", default=str(PROBES), help="the probe file (default bench/data/character_probes.yaml)")
    ap.add_argument("--dialogue", default="transformers", help="dialogue model spec (default: embedded SmolLM2)")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    told, filler, asks = probes(args.probes, args.n)
    card = load_card(ROOT / "characters" / "eve.yaml")
    enc = get_embedder()
    model = build_model(dialogue_spec(args.dialogue, ROOT / "stories" / "eve"))
    totals: Totals = defaultdict(lambda: [0.0, 0.0, 0.0])
    timed_stream(totals, model)
    timed(totals, enc, "encode", "MiniLM (nested in the stages)")
    memory, pipe = talk(card, model, enc, told, filler[:5], DialogueSettings(seed=0))
    for obj, name, label in [(pipe.guard, "check_input", "input check"), (pipe, "facts", "facts"),
                             (pipe.knowledge, "match", "authored match"), (pipe.grounding, "match", "grounded match"),
                             (pipe.grounding, "hint", "grounding hint"), (pipe, "prompt", "prompt assembly"),
                             (pipe.guard, "check", "persona guard"), (pipe.verifier, "check", "verifier"),
                             (pipe.coherence, "check", "coherence"), (pipe, "_judge", "all checks of a sentence")]:
        if obj is not None:
            timed(totals, obj, name, label)
    cpu = wall = 0.0
    for p in asks:
        c, w = time.thread_time(), time.perf_counter()
        reply = pipe.reply(p["ask"], memory.now + 1)
        cpu, wall = cpu + time.thread_time() - c, wall + time.perf_counter() - w
        print(f"  {reply.source:<10} {time.thread_time() - c:6.2f} s CPU, {reply.attempts} attempts: "
              f"{p['ask'][:40]!r} -> {reply.text[:60]!r}", flush=True)
    load = os.getloadavg()
    print(f"\n{len(asks)} replies: {cpu:.1f} s CPU, {wall:.1f} s wall, load average {load[0]:.1f} {load[1]:.1f}")
    for label, (c, w, n) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
        if label.startswith("model: ") and not c:
            print(f"{label:<34} {n:8.0f}")
        else:
            print(f"{label:<34} {c:7.2f} s CPU ({100 * c / max(cpu, 1e-9):5.1f}%) {w:8.2f} s wall  {n:4.0f} calls")


if __name__ == "__main__":
    main()

"""Where one of Eve's replies spends its time: each stage's CPU and wall seconds, per model reply.

Usage (from the repository root)::

    PYTHONPATH=. python3 bench/reply_profile.py [-n 8] [--probes FILE] [--dialogue SPEC] [--compare SPEC]
                                                [--categories smalltalk,mood] [--cold] [--split dev]
                                                [--layout-ab]

Builds her pipeline as ``bench/character.py`` does (every told fact, 5 turns of small talk; the
embedded SmolLM2-135M on one torch thread, as in the game's model worker) and asks ``n`` probes of
the given categories (small talk and mood by default: what her card does not answer goes to the
model). Before each
probe the known start of her next prompt is pre-encoded, as the cast room does while the player reads
and types (:meth:`~game.cast.dialogue.DialoguePipeline.preencode_next`; its CPU is printed on its own
line, not in the reply's); ``--cold`` skips that (each model reply then encodes what its slot does not
hold, as ``bench/character.py`` measures it).

It prints each reply (source, CPU seconds, tokens written, attempts), the median CPU seconds of the
replies the model wrote (issue #11's goal: median reply <= 2 s), and per stage the CPU seconds of the
calling thread and the wall seconds summed over the replies: the input check, authored and grounded
matching, prompt assembly, the model (its passes: prefill of the prompt's un-cached suffix and one
token at a time; picking a token; detokenizing), every check of a sentence (persona guard, verifier,
coherence) and MiniLM (nested inside the stages that call it). The stages are timed by wrapping the
pipeline's own objects (nothing in the game is changed); with one torch thread the thread's CPU time
is the model's whole work.

``--compare SPEC`` builds a second pipeline on another model (e.g. ``transformers:?quantize=int8``)
and asks it the same probes in the same run, alternating which goes first, then prints both side by
side with the ratio of their model-reply CPU medians (the machine is shared: ratios measured in one
run are the fair figure). ``--layout-ab``: model B is the same model with the prompt layout before the
memories after the player's line were capped (``bench.memory.LAYOUT_BEFORE``); then how A's replies
relate to B's, attempts and tokens per model reply and the rejected attempts by kind. ``--split dev``:
only the dev probes.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.character import PROBES, ROOT, load_probes, talk
from bench.memory import LAYOUT_BEFORE
from game.cast.card_io import load_card
from game.cast.castroom import dialogue_spec
from game.cast.dialogue import DialogueSettings
from game.cast.prompt import PromptBuilder
from game.models.embedder import get_embedder
from game.models.registry import build_model

#: label -> [CPU seconds, wall seconds, calls]
Totals = dict[str, list[float]]


def add(totals: Totals, label: str, cpu: float, wall: float, calls: float = 1.0) -> None:
    x = totals[label]
    x[0] += cpu
    x[1] += wall
    x[2] += calls


def timed(totals: Totals, obj: Any, name: str, label: str | Callable[..., str]) -> None:
    """Replace ``obj.name`` with a wrapper that adds its CPU and wall seconds to ``totals[label]``
    (``label(*args)`` when a function: the label chosen by the call's arguments)."""
    f: Callable[..., Any] = getattr(obj, name)

    @functools.wraps(f)
    def wrapper(*a: Any, **k: Any) -> Any:
        c, w = time.thread_time(), time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            add(totals, label(*a) if callable(label) else label, time.thread_time() - c, time.perf_counter() - w)
    setattr(obj, name, wrapper)


def timed_stream(totals: Totals, model: Any, attempts: list[tuple[float, float, float]]) -> None:
    """Time ``model.stream`` as a whole and count its attempts, tokens and prompt tokens; with a
    transformers model also its passes (prefill: more than one token fed; decode: one), token
    picking and detokenizing, each nested inside the stream's time. Each attempt's ``(prompt tokens,
    reused tokens, tokens written)`` is appended to ``attempts``."""
    f = model.stream
    inside = [False]  # a pass outside a stream is idle pre-encoding

    def stream(*a: Any, **k: Any) -> Iterator[str]:
        it = f(*a, **k)
        inside[0] = True
        try:
            while True:
                c, w = time.thread_time(), time.perf_counter()
                try:
                    piece = next(it)
                except StopIteration:
                    return
                finally:
                    add(totals, "model: stream (all of it)", time.thread_time() - c, time.perf_counter() - w, 0)
                yield piece
        finally:
            it.close()
            inside[0] = False
            stats = getattr(model, "last_stats", {})
            attempts.append((stats.get("prompt_tokens", 0), stats.get("reused_tokens", 0), stats.get("tokens", 0)))
            totals["model: stream (all of it)"][2] += 1
            totals["model: tokens written"][2] += stats.get("tokens", 0)
            totals["model: prompt tokens encoded"][2] += stats.get("prompt_tokens", 0) - stats.get("reused_tokens", 0)
    model.stream = stream
    if hasattr(model, "_forward"):
        def kind(ids: list[int], cache: Any) -> str:
            if not inside[0]:
                return "pre-encoding passes (idle: not in the replies)"
            return "  pass: prefill (the un-cached suffix)" if len(ids) > 1 else "  pass: one token"
        timed(totals, model, "_forward", kind)
        timed(totals, model, "_pick", "  picking a token")
        timed(totals, model._tokenizer, "decode", "  detokenizing")


@dataclass
class Arm:
    """One model's pipeline and what was measured of it."""

    model: Any
    memory: Any
    pipe: Any
    totals: Totals
    attempts: list[tuple[float, float, float]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    idle: list[float] = field(default_factory=list)


def build(spec: str, card: Any, enc: Any, told: list[str], filler: list[str],
          settings: DialogueSettings | None = None, layout: dict[str, Any] | None = None) -> Arm:
    """Her pipeline on the model ``spec`` names, every stage timed into the arm's ``totals``; ``settings``
    (default: today's, seed 0) and ``layout`` (:class:`PromptBuilder` keywords; default: today's)."""
    model = build_model(dialogue_spec(spec, ROOT / "stories" / "eve"))
    totals: Totals = defaultdict(lambda: [0.0, 0.0, 0.0])
    attempts: list[tuple[float, float, float]] = []
    timed_stream(totals, model, attempts)
    timed(totals, enc, "encode", "MiniLM (nested in the stages)")
    memory, pipe = talk(card, model, enc, told, filler, settings or DialogueSettings(seed=0))
    if layout is not None:  # the bench's own pipeline: its prompt from a builder with that layout
        builder = PromptBuilder(memory, **layout)
        pipe.prompt = lambda text: builder.build(text).to_messages()
        pipe.prefix = builder.known_prefix
    for obj, name, label in [(pipe.guard, "check_input", "input check"), (pipe, "facts", "facts"),
                             (pipe.knowledge, "match", "authored match"), (pipe.grounding, "match", "grounded match"),
                             (pipe.grounding, "hint", "grounding hint"), (pipe, "prompt", "prompt assembly"),
                             (pipe.guard, "check", "persona guard"), (pipe.verifier, "check", "verifier"),
                             (pipe.coherence, "check", "coherence"), (pipe, "_judge", "all checks of a sentence")]:
        if obj is not None:
            timed(totals, obj, name, label)
    return Arm(model, memory, pipe, totals, attempts)


def ask(name: str, arm: Arm, probe: dict[str, Any], cold: bool) -> None:
    """One probe: pre-encode as the cast room does (unless ``cold``; its CPU kept in ``arm.idle``),
    then the reply, timed into ``arm.rows``; the row printed, with each attempt's prompt tokens
    encoded after what was cached ("+N") and tokens written."""
    if not cold:
        c = time.thread_time()
        arm.pipe.preencode_next(typed="")
        arm.idle.append(time.thread_time() - c)
    before = len(arm.attempts)
    c, w = time.thread_time(), time.perf_counter()
    reply = arm.pipe.reply(probe["ask"], arm.memory.now + 1)
    row = {"source": reply.source, "cpu": time.thread_time() - c, "wall": time.perf_counter() - w,
           "attempts": reply.attempts, "tokens": reply.timings.get("model_tokens", 0.0), "text": reply.text,
           "rejected": [r.kind for r in reply.rejected], "sentences": list(reply.sentences)}
    arm.rows.append(row)
    tries = " ".join(f"+{p - r:.0f}/{t:.0f}" for p, r, t in arm.attempts[before:])
    print(f"  {name:<8} {reply.source:<10} {row['cpu']:6.2f} s CPU, {row['tokens']:3.0f} tokens, "
          f"{reply.attempts} attempts {tries:<16} {probe['ask'][:32]!r} -> {reply.text[:56]!r}"
          + (f" (rejected: {', '.join(row['rejected'])})" if row["rejected"] else ""), flush=True)


def model_replies(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The replies the model was asked for (it wrote at least one attempt)."""
    return [r for r in rows if r["attempts"]]


def summary(name: str, arm: Arm) -> float:
    """Print one model's figures; return its median model-reply CPU seconds (0.0: none)."""
    rows, totals, idle = arm.rows, arm.totals, arm.idle
    cpu = sum(r["cpu"] for r in rows)
    asked = model_replies(rows)
    med = statistics.median(r["cpu"] for r in asked) if asked else 0.0
    tokens = sum(r["tokens"] for r in asked)
    one = totals.get("  pass: one token", [0.0, 0.0, 0.0])
    print(f"\n{name}: {len(rows)} replies, {cpu:.1f} s CPU; {len(asked)} from the model: median "
          f"{med:.2f} s CPU (goal <= 2 s: {'met' if asked and med <= 2 else 'NOT met'}), {tokens:.0f} tokens, "
          f"{sum(r['attempts'] for r in asked)} attempts; decoding {1000 * one[0] / max(one[2], 1):.0f} ms CPU a token"
          + (f"; pre-encoding between replies (the cast room's idle work, not in these) {sum(idle):.1f} s CPU"
             if idle else ""))
    for label, (c, w, n) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
        if label.startswith("model: ") and not c:
            print(f"  {label:<40} {n:8.0f}")
        elif label.startswith("pre-encoding"):
            print(f"  {label:<40} {c:7.2f} s CPU (idle)  {w:8.2f} s wall  {n:4.0f} calls")
        else:
            print(f"  {label:<40} {c:7.2f} s CPU ({100 * c / max(cpu, 1e-9):5.1f}%) {w:8.2f} s wall  {n:4.0f} calls")
    return med


def probes(path: Path | str, n: int, categories: Sequence[str],
           split: str = "all") -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """``(told, filler, asks)`` from the probe file at ``path``, read and checked by
    :func:`bench.character.load_probes` before any model loads: every distinct told fact, the small
    talk, and ``n`` probes of ``categories`` (in that order, spread evenly over each pool) of ``split``
    (``"all"``: every split).

    Raises:
        ValueError: the file does not follow the probe schema (names the file and the probe).
    """
    data = load_probes(path)
    told = list(dict.fromkeys(p["tell"] for p in data["probes"] if p.get("tell")))
    pool = [p for c in categories for p in data["probes"]
            if p["category"] == c and split in ("all", p.get("split", ""))]
    return told, data["filler"], pool[::max(1, len(pool) // max(1, n))][:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=8, help="how many probes")
    ap.add_argument("--probes", default=str(PROBES), help="the probe file (default bench/data/character_probes.yaml)")
    ap.add_argument("--dialogue", default="transformers", help="dialogue model spec (default: embedded SmolLM2)")
    ap.add_argument("--compare", default="", metavar="SPEC",
                    help="a second dialogue model asked the same probes in the same run (alternating)")
    ap.add_argument("--categories", default="smalltalk,mood",
                    help="probe categories, in order (small talk is what the model answers)")
    ap.add_argument("--cold", action="store_true", help="no pre-encoding between replies")
    ap.add_argument("--split", default="all", help="only probes of this split (dev, heldout; default all)")
    ap.add_argument("--layout-ab", action="store_true",
                    help="model B: the same model with the prompt layout before (bench.memory.LAYOUT_BEFORE: "
                         "every memory found for the line after it), asked the same probes in the same run")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    cats = [c.strip() for c in args.categories.split(",") if c.strip()]
    told, filler, asks = probes(args.probes, args.n, cats, args.split)
    filler = filler[:5]
    card = load_card(ROOT / "characters" / "eve.yaml")
    enc = get_embedder()
    arms = {"model A": build(args.dialogue, card, enc, told, filler)}
    if args.compare:
        arms["model B"] = build(args.compare, card, enc, told, filler)
    elif args.layout_ab:
        arms["model B"] = build(args.dialogue, card, enc, told, filler, layout=LAYOUT_BEFORE)
    for name, arm in arms.items():
        print(f"{name}: {arm.model.name}, weights {getattr(arm.model, 'quantize', '') or 'float32'}")
    for i, p in enumerate(asks):
        for name in list(arms) if i % 2 == 0 else list(arms)[::-1]:
            ask(name, arms[name], p, args.cold)
    load = os.getloadavg()
    print(f"\nload average {load[0]:.1f} {load[1]:.1f}; CPU seconds of this thread (one torch thread: the "
          f"model's whole work)")
    medians = {name: summary(f"{name} ({arm.model.name}, {getattr(arm.model, 'quantize', '') or 'float32'})", arm)
               for name, arm in arms.items()}
    if "model B" in arms and all(medians.values()):
        a, b = medians["model A"], medians["model B"]
        print(f"\nmodel-reply median CPU, A / B: {a:.2f} / {b:.2f} s = {a / b:.2f}x")
    if args.layout_ab:
        compare_replies(arms["model A"].rows, arms["model B"].rows)


def compare_replies(now: list[dict[str, Any]], before: list[dict[str, Any]]) -> None:
    """Print how today's replies (A) relate to the ones before (B) on the same probes: the same, the first
    sentence(s) of B's, or other (the prompt differed, so the model wrote something else); attempts per model
    reply and the rejections."""
    same = first = other = 0
    for a, b in zip(now, before, strict=True):
        if a["text"] == b["text"]:
            same += 1
        elif a["sentences"] and b["sentences"] and a["sentences"] == b["sentences"][:len(a["sentences"])]:
            first += 1
        else:
            other += 1
            print(f"    other: A {a['text'][:70]!r}\n           B {b['text'][:70]!r}")
    print(f"replies A vs B on the same {len(now)} probes: the same {same}, A the first sentence(s) of B's {first}, "
          f"other {other}")
    for name, rows in (("A (now)", now), ("B (before)", before)):
        asked = model_replies(rows)
        kinds: dict[str, int] = defaultdict(int)
        for r in asked:
            for k in r["rejected"]:
                kinds[k] += 1
        print(f"  {name}: {len(asked)} model replies, attempts per model reply "
              f"{sum(r['attempts'] for r in asked) / max(1, len(asked)):.2f}, tokens per model reply "
              f"{sum(r['tokens'] for r in asked) / max(1, len(asked)):.1f}, delivered from the model "
              f"{sum(r['source'] == 'model' for r in asked)}; rejected attempts by kind: "
              + (", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])) or "none"))


if __name__ == "__main__":
    main()

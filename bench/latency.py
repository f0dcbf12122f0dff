"""Input-to-frame latency of fixed vs dynamic chunking, as a SIMULATION (no backend runs).

Usage: ``python bench/latency.py [--minutes 10] [--seed 1] [--quick]``

What is simulated, on a simulated clock (nothing sleeps, nothing is timed):

* **The backend** makes whole 12-frame blocks at 20 frames/s (one block every
  0.6 s of generation) and pays a fixed 150 ms per request before its first block
  (a KV recache). It generates one request at a time. Frames are shown at
  20 frames/s as soon as they exist; when the next frame does not exist yet, the
  picture freezes: a **stall** (counted once per freeze, and in seconds).
* **The player** is a scripted stream of inputs (seeded): taps of a movement key,
  keys held for 0.5-2 s, choices, world edits ("make it rain"), scene changes, with
  pauses between them (:func:`script`). The same stream drives every arm.
* **An arm** decides each request's length and whether an input may cut a chunk:
  ``fixed-N``: every request is N frames; an input waits for the running chunk to
  finish (no pre-emption). ``dynamic``: lengths from :class:`game.world.chunking.ChunkPolicy`
  (a step one block, a choice or edit 1-2 s, a scene change 3 s, a held key as long
  as it is held); an input arriving mid-chunk cuts it after the block being made
  (pre-emption) and its request goes out at once. ``dynamic+idle-long`` is the same
  with idle continuations of 4 s (they are cut when the player acts) instead of one block.
* **Latency** of an input: from its arrival to the moment the first frame of the
  first request made after it (the first frame that reflects it) is on screen.
* **Seams**: request boundaries, where the backend switches its conditioning
  (each one is a possible visible discontinuity); ``cut`` counts those where a
  chunk was pre-empted mid-way.

The block-granular arms (:func:`simulate_stream`, a KV-cached block-causal backend
such as ``causal`` / ``action``) add the rules of pre-emption at block granularity,
one at a time (:class:`Rules`):

* ``abandon``: a new input drops the queued blocks not yet shown (the display keeps
  what it has until the new block is ready, then switches) and abandons the block
  being denoised (the generator starts the new request at the input's arrival);
* ``+plain-free``: the set-up cost is charged only where a real model pays it, a
  ``recache`` / ``scene_cut`` switch (a choice, an edit, a scene change), not on a plain
  continuation (a move, an idle block keeps the cache as it is);
* ``+small-first`` (the full policy, ``floor-policy``): a reaction's first block is the
  backend's smallest (4 frames, :meth:`ChunkPolicy.first_block`), and at most one
  block is made ahead of the display (:data:`game.world.chunking.MAX_BUFFERED_BLOCKS`).

Generating a block takes its frames / 20 s (time in proportion to frames). The
**floor** of an input is the smallest block's time plus the set-up its switch pays;
the bench prints their median: no policy can show a reaction sooner.

The figures describe this model, not a real backend; ``docs/inputs.md`` records a run.
"""

from __future__ import annotations

import argparse
import random
import statistics
from dataclasses import dataclass, field

from game.world.chunking import MAX_BUFFERED_BLOCKS, ChunkPolicy
from game.world.protocol import Capabilities

FPS = 20.0
BLOCK = 12
REQUEST_COST = 0.150
BLOCK_SECONDS = BLOCK / FPS
CAPS = Capabilities(backend="sim", frames_per_block=BLOCK, fps=FPS, width=8, height=8)
#: The block-causal backend of the stream arms: the same 12-frame blocks, and 4-frame ones for reactions.
SMALL = 4
STREAM_CAPS = Capabilities(backend="sim-causal", frames_per_block=BLOCK, fps=FPS, width=8, height=8,
                           min_block_frames=SMALL)
#: Event kind of each scripted input kind (and of an idle continuation).
EVENT = {"edit": "edit", "choice": "choice", "scene": "scene", "move": "move", "idle": "idle"}
#: Which input kind wins when several wait for the same request.
RANK = {"scene": 4, "edit": 3, "choice": 3, "move": 1}


@dataclass(frozen=True)
class Input:
    """One scripted input: arrival time (s), kind (``move``/``choice``/``edit``/``scene``), seconds held."""

    t: float
    kind: str
    held: float | None = None


def script(minutes: float, seed: int) -> list[Input]:
    """The player's inputs over ``minutes`` (seeded): bursts of movement, then a choice, an edit or a cut."""
    rng = random.Random(seed)
    t, out = 2.0, []
    while t < minutes * 60.0:
        r = rng.random()
        if r < 0.40:  # a few taps of a key
            for _ in range(rng.randint(1, 4)):
                out.append(Input(t, "move", 0.1))
                t += rng.uniform(0.25, 0.7)
        elif r < 0.62:  # a held key
            held = rng.uniform(0.5, 2.0)
            out.append(Input(t, "move", held))
            t += held
        elif r < 0.80:
            out.append(Input(t, "choice"))
        elif r < 0.93:
            out.append(Input(t, "edit"))
        else:
            out.append(Input(t, "scene"))
        t += rng.expovariate(1.0 / 2.5)  # the player watches a while
    return out


@dataclass
class Result:
    """One arm's figures over the script."""

    name: str
    latencies: list[float] = field(default_factory=list)
    stalls: int = 0
    stall_seconds: float = 0.0
    requests: int = 0
    cuts: int = 0
    seconds: float = 0.0

    def row(self) -> str:
        lat = sorted(self.latencies)
        med = statistics.median(lat)
        p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))]
        per_min = 60.0 / self.seconds
        return (f"{self.name:19s} {1000 * med:8.0f} {1000 * p95:8.0f} {self.stalls * per_min:10.1f} "
                f"{self.stall_seconds * per_min:9.2f} {self.requests * per_min:9.1f} {self.cuts * per_min:7.1f}")


def frames_for(arm: str, kind: str, held: float | None, policy: ChunkPolicy) -> int:
    """Frames a request asks for in ``arm`` for an input of ``kind`` (``idle`` when none)."""
    if arm.startswith("fixed-"):
        return CAPS.round_up(int(arm.split("-")[1]))
    if kind == "move":
        return CAPS.round_up(policy.frames("move", CAPS, None, held))
    if kind == "idle" and arm == "dynamic+idle-long":
        return CAPS.round_up(policy.frames("idle", CAPS, "long"))
    event = {"edit": "edit", "choice": "choice", "scene": "scene", "idle": "idle"}[kind]
    hint = "cut" if kind == "scene" else None
    return CAPS.round_up(policy.frames(event, CAPS, hint))


def simulate(arm: str, inputs: list[Input], minutes: float, policy: ChunkPolicy | None = None) -> Result:
    """Run ``arm`` over ``inputs`` for ``minutes`` of simulated time (see the module doc)."""
    policy = policy or ChunkPolicy()
    preempt = arm.startswith("dynamic")
    res = Result(arm, seconds=minutes * 60.0)
    end = minutes * 60.0
    t = 0.0  # the generator is free from t
    shown_until = 0.0  # the display has frames up to this time
    i = 0  # next input not yet taken by a request
    first = True
    while t < end:
        waiting = []
        while i < len(inputs) and inputs[i].t <= t:
            waiting.append(inputs[i])
            i += 1
        if waiting:
            top = max(waiting, key=lambda x: RANK[x.kind])
            held = max((x.held or 0.0) for x in waiting if x.kind == "move") if top.kind == "move" else None
            n = frames_for(arm, top.kind, held, policy)
        else:
            n = frames_for(arm, "idle", None, policy)
        blocks = n // BLOCK
        res.requests += 1
        start = t + REQUEST_COST
        made = blocks
        if preempt and i < len(inputs) and inputs[i].t < start + BLOCK_SECONDS * blocks:
            # the next input arrives while this chunk is made: it is cut after the block in the making
            k = max(0, int((inputs[i].t - start) // BLOCK_SECONDS))
            if k + 1 < blocks:
                made = k + 1
                res.cuts += 1
        first_ready = start + BLOCK_SECONDS
        on_screen = max(first_ready, shown_until)
        if not first and first_ready > shown_until + 1e-9:
            res.stalls += 1
            res.stall_seconds += first_ready - shown_until
        first = False
        for x in waiting:
            res.latencies.append(on_screen - x.t)
        shown_until = on_screen + BLOCK_SECONDS * made
        t = start + BLOCK_SECONDS * made
    return res


@dataclass(frozen=True)
class Rules:
    """Which pre-emption rules a stream arm follows (see the module doc)."""

    abandon: bool = True
    plain_free: bool = False
    small_first: bool = False
    buffered: int | None = None


STREAM_ARMS = {
    "abandon": Rules(),
    "abandon+plain-free": Rules(plain_free=True),
    "floor-policy": Rules(plain_free=True, small_first=True, buffered=MAX_BUFFERED_BLOCKS),
}


def setup_cost(kind: str, rules: Rules, policy: ChunkPolicy) -> float:
    """Seconds of set-up before a request's first block: only a recache / scene cut pays with ``plain_free``."""
    if not rules.plain_free:
        return REQUEST_COST
    return 0.0 if policy.switch(EVENT[kind]) == "plain" else REQUEST_COST


def floor(inputs: list[Input], policy: ChunkPolicy) -> list[float]:
    """Each input's floor: the smallest block's generation time plus the set-up its switch pays."""
    full = Rules(plain_free=True)
    return [SMALL / FPS + setup_cost(x.kind, full, policy) for x in inputs]


def simulate_stream(name: str, rules: Rules, inputs: list[Input], minutes: float,
                    policy: ChunkPolicy | None = None) -> Result:
    """A block-granular pre-empting backend over ``inputs`` (see the module doc); same figures as :func:`simulate`."""
    policy = policy or ChunkPolicy.for_preemption()
    res = Result(name, seconds=minutes * 60.0)
    end = minutes * 60.0
    t = 0.0  # the generator is free from t
    shown_until = 0.0  # the display has frames up to this time
    i = 0
    first_request = True
    while t < end:
        waiting = []
        while i < len(inputs) and inputs[i].t <= t + 1e-12:
            waiting.append(inputs[i])
            i += 1
        kind = max(waiting, key=lambda x: RANK[x.kind]).kind if waiting else "idle"
        held = max((x.held or 0.0) for x in waiting if x.kind == "move") if kind == "move" else None
        event = EVENT[kind]
        n = policy.frames(event, STREAM_CAPS, "cut" if kind == "scene" else None, held)
        first = policy.first_block(event, STREAM_CAPS) if rules.small_first else 0
        plan = STREAM_CAPS.block_plan(n, first)
        res.requests += 1
        started = t
        t += setup_cost(kind, rules, policy)
        for b, frames in enumerate(plan):
            if rules.buffered is not None and b > 0:  # at most `buffered` blocks made ahead of the display
                t = max(t, shown_until - rules.buffered * frames / FPS)
            done = t + frames / FPS
            if i < len(inputs) and inputs[i].t < done:  # an input arrives while this block is denoised
                t = max(started, inputs[i].t)  # set-up and denoising so far are abandoned
                res.cuts += 1
                break
            if b == 0 and (waiting or first_request):
                on_screen = done  # the new request's first block replaces what was queued
                if shown_until < done - 1e-9 and not first_request:
                    res.stalls += 1
                    res.stall_seconds += done - shown_until
                for x in waiting:
                    res.latencies.append(on_screen - x.t)
            else:
                on_screen = max(done, shown_until)
                if done > shown_until + 1e-9:
                    res.stalls += 1
                    res.stall_seconds += done - shown_until
            first_request = False
            shown_until = on_screen + frames / FPS
            t = done
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="2 simulated minutes")
    args = ap.parse_args()
    if args.quick:
        args.minutes = 2.0
    inputs = script(args.minutes, args.seed)
    arms = ["fixed-12", "fixed-24", "fixed-48", "dynamic", "dynamic+idle-long"]
    results = {a: simulate(a, inputs, args.minutes) for a in arms}
    print("SIMULATION: 12-frame blocks at 20 frames/s, 150 ms per request, "
          f"{len(inputs)} scripted inputs over {args.minutes:g} simulated minutes (seed {args.seed})")
    print(f"{'arm':19s} {'med ms':>8s} {'p95 ms':>8s} {'stalls/min':>10s} {'stall s/m':>9s} "
          f"{'seams/min':>9s} {'cut/min':>7s}")
    for r in results.values():
        print(r.row())
    fixed = [results[a] for a in arms if a.startswith("fixed")]
    best = min(fixed, key=lambda r: statistics.median(r.latencies))
    calm = min(fixed, key=lambda r: r.stalls)
    per_min = 60.0 / (args.minutes * 60.0)

    def med(r: Result) -> float:
        return 1000.0 * statistics.median(r.latencies)

    streams = {a: simulate_stream(a, r, inputs, args.minutes) for a, r in STREAM_ARMS.items()}
    print("block-granular arms (KV-cached block-causal backend; 4-frame smallest block):")
    for r in streams.values():
        print(r.row())
    floors = floor(inputs, ChunkPolicy())
    fl = 1000.0 * statistics.median(floors)
    print(f"{'floor':19s} {fl:8.0f}   (smallest block {1000 * SMALL / FPS:.0f} ms + {1000 * REQUEST_COST:.0f} ms "
          "set-up where the switch recaches; median over the inputs)")
    top = streams["floor-policy"]
    print(f"floor-policy: median {med(top):.0f} ms = {med(best) / med(top):.1f}x below {best.name} "
          f"({med(best):.0f} ms; goal >= 3x) and {med(top) / fl:.2f}x the floor (goal <= 1.2x); "
          f"stalls/min {top.stalls * per_min:.1f} vs {best.stalls * per_min:.1f} ({best.name})")
    for name in ("dynamic", "dynamic+idle-long"):
        dyn = results[name]
        for ref, why in ((best, "lowest latency"), (calm, "fewest stalls")):
            print(f"{name} vs {ref.name} ({why} fixed arm): median {med(dyn):.0f} vs {med(ref):.0f} ms "
                  f"(dynamic {'faster' if med(dyn) <= med(ref) else 'slower'} by {abs(med(ref) - med(dyn)):.0f} ms, "
                  f"{100 * abs(med(ref) - med(dyn)) / med(ref):.0f}%); stalls/min {dyn.stalls * per_min:.1f} vs "
                  f"{ref.stalls * per_min:.1f}; seams/min {dyn.requests * per_min:.1f} vs {ref.requests * per_min:.1f} "
                  f"({dyn.cuts * per_min:.1f} of them cut chunks)")

if __name__ == "__main__":
    main()

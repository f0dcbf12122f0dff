"""Character-memory figures for the Eve issue. Prints medians; asserts nothing.

    python bench/memory.py [--sizes 10000,33000,100000] [--quick] [--turns 10,100,1000,10000]
                           [--encoder hash|minilm] [--repeat 5] [--only retrieval,prompt]

Sections (each a function registered with :func:`section`; run in order, or pick
some with ``--only``):

* ``retrieval``: top 10 of N episodic memories by their score (recency + importance +
  relevance, relevance = MiniLM cosine mixed with BM25, see ``game/cast/retrieval.py``),
  several ways in one run (``bench/retrieval_table.py``): the exact numpy scan (the baseline),
  faiss flat + BM25 rescored and faiss HNSW + the top by the rest rescored (library peers,
  when faiss is installed), and the new default (a 64-dimensional projection estimates every
  cosine, the best 200 by the whole score are rescored), also as the first query after an add;
  CPU ms p50/p95, recall@10 against the exact scan on two sets of real player lines (A: the
  new path's sizes were chosen on these; B: held out), MB held, µs to add one memory, how many
  queries the new path answered and for how many its cosine range was the true one. Two
  corpora: N memories of real sentences (Debian ``fortunes`` and WordNet usage
  examples, in the game's memory formats: ``bench/retrieval_corpus.py``) embedded with the
  shipped MiniLM (cached as ``.npy`` under ``~/.cache/worldloom/bench/``; the first run embeds,
  with a progress line: 73,000 texts for 100,000 memories, hours on a busy 2-core machine),
  and the same texts with random unit vectors (the stress case). ``--quick``: 10,000
  memories, 10 queries a set. The query's embedding is not counted (one MiniLM encode,
  printed separately).
* ``prompt``: the assembled prompt's size in tokens (default counter: words x 1.3,
  at least chars / 4) at turns 10, 100, 1,000 and 10,000 of a simulated session with
  Eve's card, against its budget, and the time to build it. ``--encoder hash`` (the
  default) embeds with the model-free hashing encoder, ``minilm`` with MiniLM (slower:
  every summary is embedded; sizes barely differ).

* ``first_token``: the player's line to the first token of the embedded model
  (SmolLM2-135M-Instruct, one torch thread, as in the worker) over a talk with Eve (the
  player's lines of ``bench/data/eve_talk60.txt``, ``--talk`` of them; her replies are the
  model's own, greedy, ``--tokens`` long), prompt tokens counted with the model's
  tokenizer: the whole prompt every turn (baseline), the rolling layout with the KV cache
  of the last prompt and reply kept (the previous path), and the same with idle
  pre-encoding (the known start of the next prompt encoded after each reply: the new
  path), whose CPU is printed as its own figure; CPU ms of the model's thread (p50/p95
  over turns 2..N) and wall ms; whether the first token equals the whole prompt's; the
  whole reply's time; then the other weight formats of ``--formats`` (float32 weights, the default
  before; int8 unless ``--no-int8``) on the default's (float16 weights) prompts, on the same path,
  their first token and whole reply against the default's. Then the fast KV cache (the default before), the
  player's turn header pre-encoded too (the default now), and (unless ``--typing 0``) the
  line also encoded while the player types it at ``--typing`` characters a second
  (:func:`typed_ahead`: at each word's end when the model is free by then; a reply that
  waits for an encode still running is charged that wait). ``--paths recent`` skips the
  three oldest paths (the whole-prompt baseline stays).
* ``window``: the player window (``game.app.App``, SDL dummy driver, frames made on its
  worker thread from the procedural world, 60 Hz loop) while Eve answers through the real
  model worker process, her voice synthesised: frames shown per second (the world runs at
  24), stalls (a frame slot with no new frame) and the longest gap between two loop
  iterations, first with nobody talking, then for ``--questions`` questions asked the
  way the window should (``Session.submit`` on another thread: the reply is written in
  the turn's prepare phase, off the session's lock), then for one question submitted on
  the window's thread (``Session.submit``: the loop waits for the whole reply).

The first start of the embedded model converts its GGUF once (~45 s) into
``$WORLDLOOM_CACHE/models``; these two sections use the real cache, not the temporary one
the other sections get.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from game.cast.card_io import load_card  # noqa: E402
from game.cast.memory import Memory, MemoryConfig  # noqa: E402
from game.cast.prompt import PromptBuilder, typing_turn  # noqa: E402
from game.cast.retrieval import EpisodicStore, HashEmbedder, TextEncoder  # noqa: E402
from game.state import Event  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: The user's weight cache, read before :func:`main` points ``WORLDLOOM_CACHE`` at a temporary folder.
REAL_CACHE = os.environ.get("WORLDLOOM_CACHE", "")

#: name -> section function; each prints its own lines.
SECTIONS: dict[str, Callable[[argparse.Namespace], None]] = {}


def section(name: str) -> Callable[[Callable[[argparse.Namespace], None]], Callable[[argparse.Namespace], None]]:
    """Register a bench section under ``name`` (run in registration order)."""

    def register(fn: Callable[[argparse.Namespace], None]) -> Callable[[argparse.Namespace], None]:
        SECTIONS[name] = fn
        return fn

    return register


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def stress_queries(vecs: np.ndarray, texts: list[str], seed: int, mix: float) -> list[tuple[np.ndarray, str]]:
    """Random-vector queries: a random memory's vector (``mix`` of it) plus noise, unit length, with ``texts``."""
    rng = np.random.default_rng(seed)
    out = []
    for text in texts:
        noise = np.asarray(rng.normal(size=(vecs.shape[1],)), np.float32)
        q = vecs[int(rng.integers(0, len(vecs)))] * mix + noise * 0.05
        out.append((np.asarray(q / np.linalg.norm(q), np.float32), text))
    return out


#: Probes from here on were not looked at while this session's new path was sized (set C).
UNSEEN = 40


def range_held(cos: np.ndarray, got: tuple[float, float]) -> bool:
    """Whether a cosine range ``got`` is the true min and max of every memory's cosine ``cos`` (a full scan)."""
    return abs(got[0] - float(cos.min())) <= 1e-6 and abs(got[1] - float(cos.max())) <= 1e-6


def retrieval_size(n: int, args: argparse.Namespace, peers: bool) -> None:
    """The retrieval table's rows for ``n`` memories: the real MiniLM corpus, then random vectors."""
    from bench import retrieval_table as rt
    from bench.retrieval_corpus import embedded, player_lines, real_corpus

    texts, kinds, turns, importance = real_corpus(n)
    now = int(turns.max()) + 1
    talk, probes = player_lines()
    asked = {"A talk": talk[: args.queries], "B probes": probes[: args.queries],
             "C probes": probes[UNSEEN:UNSEEN + args.queries]}
    real = embedded(texts, threads=args.embed_threads)
    qvecs = {name: embedded(qs, quiet=True) for name, qs in asked.items()}
    noise = np.random.default_rng(0).normal(size=real.shape).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    corpora = (("MiniLM corpus", real), ("random/stress", noise))
    for label, vecs in corpora[:1] if args.no_stress else corpora:
        t0 = time.process_time()
        store = EpisodicStore(dim=vecs.shape[1])
        store.extend(texts, kinds, turns, importance, vecs)
        built = time.process_time() - t0
        ways = [rt.exact_way(store)]
        t0 = time.process_time()
        ways.append(rt.projection_way(store))
        index_s = time.process_time() - t0
        ways.append(rt.after_add_way(store))
        if peers:
            ways += [rt.faiss_flat_way(store), rt.previous_way(store)]
        if label == "MiniLM corpus":
            sets = {name: list(zip(qvecs[name], qs, strict=True)) for name, qs in asked.items()}
        else:
            sets = {name: stress_queries(vecs, qs, seed, mix)
                    for (name, qs), seed, mix in zip(asked.items(), (10, 11, 12), (0.5, 0.35, 0.35), strict=True)}
        paths: list[tuple[str, int]] = []
        seen: list[tuple[np.ndarray, tuple[float, float] | None]] = []
        fast = ways[1].top

        def logged(q: np.ndarray, t: int, text: str, fast: Any = fast, paths: Any = paths, seen: Any = seen,
                   store: Any = store) -> Any:
            got = fast(q, t, text)
            paths.append(store.last_path)
            seen.append((q, store.last_range if store.last_path[0] == "fast" else None))
            return got

        ways[1].top = logged
        figures = rt.measure(ways, sets, now)
        ranges = [got is not None and range_held(store.vectors @ q, got) for q, got in seen]  # untimed
        vec = vecs[0]
        base = rt.append_us(store, vec)
        adds = {w.name: base + (rt.index_add_us(w, vec) if i else 0.0) for i, w in enumerate(ways)}
        rt.print_rows(label, n, ways, figures, adds, list(sets))
        scored = [k for p, k in paths if p == "fast"]
        print(f"  {'':<13}{'':>8}  store built in {built:.1f} s CPU (BM25 postings), projection in {index_s:.1f} s "
              f"CPU; new path: {len(scored)}/{len(paths)} queries answered by it (median "
              f"{statistics.median(scored) if scored else 0:,.0f} memories scored exactly), "
              f"{len(paths) - len(scored)} by the exact scan; its cosine range was the true one for "
              f"{sum(ranges)}/{len(paths)} (checked by a full scan, untimed)")
        if label == "MiniLM corpus" and n >= 100_000:
            for name in ("B probes", "C probes"):
                p50, _, rec = figures[ways[1].name][name]
                ok = "met" if p50 <= 5 and rec >= 0.95 else "NOT met"
                print(f"  goal at {n:,} real memories, held-out queries {name[0]}: p50 <= 5 ms and recall@10 >= 0.95: "
                      f"{ok} ({p50:.2f} ms, {rec:.3f}; exact scan {figures[ways[0].name][name][0]:.2f} ms)")


@section("retrieval")
def retrieval(args: argparse.Namespace) -> None:
    import importlib.util

    from bench import retrieval_table as rt
    from game.cast import ann
    from game.cast import retrieval as cast_retrieval

    peers = importlib.util.find_spec("faiss") is not None
    if peers:
        import faiss

        faiss.omp_set_num_threads(1)
    print(f"retrieval: top 10 of N episodic memories by one score (recency + importance + MiniLM cosine + BM25, "
          f"game/cast/retrieval.py), CPU ms of the process (BLAS and faiss on one thread), {args.queries} queries "
          f"a set at most; recall@10 against the exact scan; MB: what the way holds beyond the store's columns; "
          f"add µs: one memory appended (BM25 postings included) plus the way's index update")
    print("  queries are real player lines: A = the player's lines of bench/data/eve_talk60.txt (the new path's "
          "sizes were chosen on these), B = the tellings and questions of bench/data/character_probes.yaml (held "
          f"out from the new path's design, but the first {UNSEEN} were looked at while sizing it), C = those probes "
          f"from the {UNSEEN + 1}st on (never looked at while building it). MiniLM corpus: "
          "bench/retrieval_corpus.py real_corpus (Debian fortunes and WordNet usage examples "
          "in the game's memory formats), embedded with the shipped all-MiniLM-L6-v2; random/stress: the same "
          "texts with random unit vectors (no structure for any index: the hard case). New path from FAST_MIN = "
          f"{cast_retrieval.FAST_MIN:,} memories ({ann.DIMS} projected dimensions, {cast_retrieval.FAST_POOL} "
          "scored exactly); goal: p50 <= 5 ms at recall@10 >= 0.95 on B and C at 100,000"
          + ("" if peers else "; faiss is not installed: no library peers"))
    print(f"  load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min) at the start")
    print(rt.header(["A", "B", "C"]))
    for n in args.sizes:
        retrieval_size(n, args, peers)
    try:
        from game.models.embedder import get_embedder

        enc = get_embedder()
        enc.encode(["warm up"])
        one = median_ms(lambda: enc.encode([f"what is my sister called {random.random()}"]), args.repeat)
        print(f"  MiniLM query embedding (not in the figures above): {one:.1f} ms")
    except Exception as exc:  # the model extras are optional
        print(f"  MiniLM not available ({exc}); query embedding not measured")


OPENERS = ["What do you think about", "Tell me about", "How is", "I noticed", "Have you seen", "Why is",
           "Do you remember", "My brother told me about"]
TOPICS = ["the tide", "the wind", "the kettle", "the lamp", "Admiral", "the fog", "the stars", "the causeway",
          "the logbook", "the glasshouse", "the ferry", "the rain", "the boats", "the gannets", "the stove",
          "the bottle", "your grandmother", "the Board's letter"]
REPLIES = ["Is that so. The tide turns at ten past six, so you have time.",
           "I'll remember that. Admiral will too, if there's toast in it.",
           "The Old Eye doesn't care about any of that; it flashes twice every fifteen seconds regardless.",
           "Mind the draught from the hatch.", "Tell me more another time; the clockwork wants winding.",
           "Hild used to say the same thing, word for word, and she was usually right."]


def encoder(name: str) -> TextEncoder:
    if name == "minilm":
        from game.models.embedder import get_embedder

        return get_embedder()
    return HashEmbedder()


def prompt_row(builder: PromptBuilder, question: str, turn: int, repeat: int) -> int:
    """Print one line of the prompt table; returns the prompt's size in tokens."""
    builder.build(question, turn)  # the first build embeds what is pending; not counted
    ms = median_ms(lambda: builder.build(question, turn), repeat)
    parts = builder.build(question, turn)
    count = {s: sum(1 for b in parts.blocks if b.section == s) for s in ("memories", "lore", "beliefs")}
    print(f"  {turn:>7,}  {parts.tokens:>7}  {parts.tokens / builder.budget:>8.0%}  {len(parts.history):>7}  "
          f"{count['memories']:>8}  {count['lore']:>4}  {count['beliefs']:>7}  {ms:>9.1f}  "
          f"{len(builder.memory.store):>8,}")
    return parts.tokens


@section("prompt")
def prompt(args: argparse.Namespace) -> None:
    card = load_card(ROOT / "characters" / "eve.yaml")
    mem = Memory(card, MemoryConfig(), embedder=encoder(args.encoder))
    builder = PromptBuilder(mem)
    rng = random.Random(1)
    question = "Do you remember what I told you about my sister, and is Admiral inside tonight?"
    print(f"prompt: Eve's prompt size by turn (budget {builder.budget} tokens, sink {mem.sink_tokens} tokens, "
          f"encoder {args.encoder})")
    print(f"  {'turn':>7}  {'tokens':>7}  {'of budget':>9}  {'history':>7}  {'memories':>8}  {'lore':>4}  "
          f"{'beliefs':>7}  {'build ms':>9}  {'episodic':>8}")
    last = max(args.turns)
    size_at: dict[int, int] = {}
    for turn in range(1, last + 1):
        mem.record("user", f"{rng.choice(OPENERS)} {rng.choice(TOPICS)} and {rng.choice(TOPICS)}? ({turn})", turn)
        mem.record("assistant", rng.choice(REPLIES), turn)
        if turn == 3:
            mem.observe(Event(kind="say", speaker="player", turn=turn, data={"target": "eve"},
                              text="My name is Ada, and my sister Maren keeps bees in Tromsø."))
        if turn % 25 == 0:
            mem.remember(f"We wound the clockwork together on night {turn}.", "action", turn)
        if turn in args.turns:
            size_at[turn] = prompt_row(builder, question, turn, args.repeat)
    if 100 in size_at and last in size_at:
        print(f"  size at turn {last:,} / size at turn 100: {size_at[last] / size_at[100]:.2f}")


class real_cache:  # noqa: N801 - used as a context manager, reads like a statement
    """Point ``WORLDLOOM_CACHE`` back at the user's cache (the converted SmolLM2 weights) inside the block."""

    def __enter__(self) -> None:
        self._old = os.environ.get("WORLDLOOM_CACHE")
        if REAL_CACHE:
            os.environ["WORLDLOOM_CACHE"] = REAL_CACHE
        else:
            os.environ.pop("WORLDLOOM_CACHE", None)

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            os.environ["WORLDLOOM_CACHE"] = self._old


#: The talk first_token plays by default (dev: the prompt layout was tuned on it).
TALK = ROOT / "bench" / "data" / "eve_talk60.txt"


def talk_lines(limit: int, path: Path = TALK) -> list[str]:
    """The player's lines to Eve in the talk file at ``path`` (default ``bench/data/eve_talk60.txt``, the
    60-exchange talk; ``eve_talk60_b.txt`` is another), the first ``limit``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.removeprefix("ask eve ").strip() for line in lines if line.startswith("ask eve ")][:limit]


def pcts(values: list[float]) -> tuple[float, float]:
    """``(p50, p95)`` of ``values`` in ms (nearest rank)."""
    s = sorted(values)
    return 1000 * statistics.median(s), 1000 * s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]


#: Typing speed of the simulated player in first_token's typing path: 5 characters a second is
#: 60 words a minute, faster than most players type (a faster typist leaves less time to encode).
TYPING_CPS = 5.0


def typed_ahead(model: Any, prefix: list[dict[str, str]], line: str, cps: float) -> tuple[float, float, int]:
    """The player types ``line`` at ``cps`` characters a second; at each word's end (a space typed) the
    words so far go to the model after the known ``prefix`` (:func:`game.cast.prompt.typing_turn`), only
    when the model is free by then: each encode takes its own CPU time on the clock (one core). The
    line is sent as its last character is typed, with no pause after the last word.

    Returns ``(CPU s of the encodes, s the reply waits at the send for one still running, encodes run)``.
    """
    words = line.split(" ")
    free_at, cpu, runs = 0.0, 0.0, 0
    for k in range(1, len(words)):
        typed = " ".join(words[:k]) + " "
        at = len(typed) / cps
        if free_at > at:  # still encoding the last words: these wait for the next word's end
            continue
        c0 = time.thread_time()
        model.preencode([*prefix, typing_turn(typed)])
        spent = time.thread_time() - c0
        free_at, cpu, runs = at + spent, cpu + spent, runs + 1
    return cpu, max(0.0, free_at - len(line) / cps), runs


def talk_turns(model: Any, lines: list[str], args: argparse.Namespace, idle: bool,
               forced: list[dict[str, Any]] | None = None, sticky: bool = True, header: bool = False,
               typing: float = 0.0, layout: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Play the Eve talk as the cast room does (the prompt built, then the line and her reply
    observed), rolling layout, the model keeping its KV cache; with ``idle``, the known start of
    the next prompt is pre-encoded after each reply (and the sink before the first line).

    ``forced``: the turns of another run whose prompts and replies are used instead of this
    model's own (its replies are only compared), so two models see the same prompts.
    Each turn: ``msgs``, ``prefix``, ``first`` (first delta), ``reply``, ``cpu`` / ``wall`` (s, from
    the stream call to the first delta: render, tokenize, prefill, first token), ``build_s``,
    ``reply_s`` (wall, whole reply), ``prompt`` and ``reused`` tokens, ``history``, and the idle
    pre-encoding that prepared this turn: ``idle_cpu`` (s), ``idle_tokens``; ``tail`` (section, tokens) of
    the lines after the sticky note, ``line_tokens``, and of the lines chosen for the player's line that the
    window did not show yet: ``held`` (already in the sticky note) and ``fresh`` (after it).
    ``sticky``: the prompt builder chooses a sticky note while she waits (:meth:`PromptBuilder.sticky_blocks`).
    ``header``: the idle pre-encoding ends with the header of the player's next turn (as the cast room does).
    ``typing``: the player's line is also encoded while they type it at this many characters a second
    (:func:`typed_ahead`; ``typing_cpu`` s, ``typing_wait`` s, counted in ``cpu`` and ``wall``, ``typing_runs``).
    ``layout``: keyword arguments of :class:`PromptBuilder` (:data:`LAYOUT_BEFORE`: the layout before the
    memories after the line were capped); each row also has ``slid`` (the window slid before this turn).
    """
    card = load_card(ROOT / "characters" / "eve.yaml")
    mem = Memory(card, MemoryConfig(context_tokens=min(model.context_size, 4096)), embedder=encoder(args.encoder),
                 count_tokens=model.count_tokens)  # the model's own tokenizer counts the budget
    builder = PromptBuilder(mem, sticky=sticky, **(layout or {}))
    model.reuse_prefix = True
    model.clear_prefix_cache()
    rows: list[dict[str, Any]] = []
    prefix = forced[0]["prefix0"] if forced else builder.known_prefix()
    opened = [typing_turn("")] if header else []
    pre = model.preencode([*prefix, *opened]) if idle else {}
    window = 0
    for turn, line in enumerate(lines, 1):
        slid, window = len(mem.history) < window, len(mem.history)
        t_build = time.perf_counter()
        if forced:
            msgs = forced[turn - 1]["msgs"]
            history = forced[turn - 1]["history"]
        else:
            parts = builder.build(line, turn, mood="You feel curious about the player.")
            msgs, history = parts.to_messages(), len(parts.history)
            shown = parts.blocks if parts.tail is None else parts.tail
            tail = [(b.section, model.count_tokens(b.text)) for b in shown]
            line_tokens = model.count_tokens(parts.user)
            early = {b.text for b in parts.sticky}
            held = sum(1 for b in parts.blocks if not b.idle and b.text in early)
            fresh = len(shown)
        build_s = time.perf_counter() - t_build
        typing_cpu, typing_wait, typing_runs = typed_ahead(model, prefix, line, typing) if typing else (0.0, 0.0, 0)
        t0, c0 = time.perf_counter(), time.thread_time()
        first, cpu, wall = "", 0.0, 0.0
        deltas: list[str] = []
        for delta in model.stream(msgs, max_new_tokens=args.tokens, temperature=0.0):
            if not deltas:
                cpu, wall, first = time.thread_time() - c0 + typing_wait, time.perf_counter() - t0 + typing_wait, delta
            deltas.append(delta)
        reply_s, reply_cpu = time.perf_counter() - t0, time.thread_time() - c0
        reply = "".join(deltas).strip()
        st = dict(model.last_stats)
        row = {"msgs": msgs, "first": first, "reply": reply, "cpu": cpu, "wall": wall, "build_s": build_s,
               "reply_s": reply_s, "reply_cpu": reply_cpu,
               "prompt": st["prompt_tokens"], "reused": st["reused_tokens"], "history": history,
               "idle_cpu": float(pre.get("cpu_s", 0.0)), "idle_tokens": float(pre.get("encoded_tokens", 0.0)),
               "prefix0": prefix if turn == 1 else None,
               "tail": [] if forced else tail, "line_tokens": 0 if forced else line_tokens,
               "held": 0 if forced else held, "fresh": 0 if forced else fresh,
               "typing_cpu": typing_cpu, "typing_wait": typing_wait, "typing_runs": typing_runs, "slid": slid}
        if forced:
            prefix = forced[turn - 1]["prefix"]
        else:
            mem.observe(Event(kind="say", speaker="player", turn=turn, text=line, data={"target": "eve"}))
            mem.observe(Event(kind="reply", speaker="eve", turn=turn, text=reply or "Hm."))
            prefix = builder.known_prefix()
        row["prefix"] = prefix
        pre = model.preencode([*prefix, *opened]) if idle else {}
        rows.append(row)
    return rows


def replay_whole(model: Any, prompts: list[list[dict[str, str]]]) -> tuple[list[float], list[float], list[str]]:
    """Each prompt encoded whole (no cache), one token: CPU s and wall s (stream call to first delta), the token."""
    model.reuse_prefix = False
    model.clear_prefix_cache()
    cpu, wall, first = [], [], []
    for msgs in prompts:
        t0, c0 = time.perf_counter(), time.thread_time()
        first.append("".join(model.stream(msgs, max_new_tokens=1, temperature=0.0)))
        cpu.append(time.thread_time() - c0)
        wall.append(time.perf_counter() - t0)
    model.reuse_prefix = True
    return cpu, wall, first


#: :class:`PromptBuilder` keywords of the layout before the memories after the player's line were capped
#: (the sticky note held 3 memories, every memory found for the line came after it).
LAYOUT_BEFORE: dict[str, Any] = {"sticky_memories": 3, "tail_memories": None}


def fit_line(tokens: list[float], ms: list[float]) -> tuple[float, float]:
    """Least-squares ``(fixed ms, ms per token)`` of ``ms ~ fixed + per_token * tokens``."""
    n = len(tokens)
    mt, mm = sum(tokens) / n, sum(ms) / n
    var = sum((t - mt) ** 2 for t in tokens)
    slope = sum((t - mt) * (m - mm) for t, m in zip(tokens, ms, strict=True)) / var if var else 0.0
    return mm - slope * mt, slope


def by_section(row: dict[str, Any]) -> dict[str, float]:
    """Tokens encoded after the player's line in ``row``, by what they are: each section's lines, the
    line itself, the chat template around them."""
    out: dict[str, float] = {}
    for sec, tok in row["tail"]:
        out[sec] = out.get(sec, 0.0) + tok
    out["line"] = float(row["line_tokens"])
    out["template"] = row["prompt"] - row["reused"] - sum(out.values())
    return out


@section("first_token")
def first_token(args: argparse.Namespace) -> None:
    import torch

    from game.models.llm_transformers import PREENCODE_CHUNK, TransformersDialogueModel

    torch.set_num_threads(1)
    old, recent = args.paths == "all", args.paths in ("all", "recent")
    with real_cache():
        t0 = time.perf_counter()
        model = TransformersDialogueModel()  # the default: fast KV (game.models.kv_fast)
        load_s = time.perf_counter() - t0
        stock = TransformersDialogueModel(fast_kv=False)  # transformers' DynamicCache and SDPA as they are
    talk_file = Path(args.talk_file)
    lines = talk_lines(args.talk, talk_file)
    # the paths, oldest first; each plays the whole talk with its own prompts and replies
    bare = talk_turns(stock, lines, args, idle=False, sticky=False, layout=LAYOUT_BEFORE) if old else []
    last = talk_turns(stock, lines, args, idle=True, sticky=False, layout=LAYOUT_BEFORE) if old else []
    held = talk_turns(stock, lines, args, idle=True, layout=LAYOUT_BEFORE) if old else []  # + the sticky note
    fast = talk_turns(model, lines, args, idle=True, layout=LAYOUT_BEFORE) if recent else []  # + fast KV
    before = talk_turns(model, lines, args, idle=True, header=True, layout=LAYOUT_BEFORE)  # + the turn's header
    new = talk_turns(model, lines, args, idle=True, header=True)  # + memories after the line capped: the default
    typed = talk_turns(model, lines, args, idle=True, header=True, typing=args.typing) if args.typing else []
    whole_cpu, whole_wall, whole_first = replay_whole(stock, [r["msgs"] for r in new])
    same_new = sum(1 for r, w in zip(new, whole_first, strict=True) if r["first"] == w)
    same_typed = sum(1 for a, b, w in zip(typed, new, whole_first, strict=False)
                     if a["msgs"] == b["msgs"] and a["first"] == w)
    same_held = sum(1 for a, b in zip(held, fast, strict=False) if a["msgs"] == b["msgs"] and a["reply"] == b["reply"])
    sink = model.count_tokens(model.render(new[0]["prefix0"], add_generation_prompt=False))
    sizes = [r["prompt"] for r in new]

    def after(rows: list[dict[str, Any]]) -> list[float]:
        return [r["prompt"] - r["reused"] for r in rows[1:]]

    def cpus(rows: list[dict[str, Any]]) -> list[float]:
        return [r["cpu"] for r in rows]

    slides = [i + 1 for i, r in enumerate(new) if r["slid"]]
    print(f"first token: {model.name}, 1 torch thread, loaded in {load_s:.1f} s; a talk with Eve of {len(lines)} "
          f"exchanges ({talk_file.relative_to(ROOT) if talk_file.is_relative_to(ROOT) else talk_file}, her replies "
          f"greedy, <= {args.tokens} tokens), played as the cast room plays it (the prompt built, then the line and "
          f"her reply observed); load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"  prompt tokens (the model's tokenizer): median {statistics.median(sizes):.0f}, max {max(sizes):.0f}; "
          f"sink + reminder {sink}; the window slid before {len(slides)} turns ({', '.join(map(str, slides))})")
    print("  turns 2..N; player's line to first token = render + tokenize + prefill + first token (the prompt build, "
          f"median {1000 * statistics.median(r['build_s'] for r in new):.0f} ms wall, is the same in every setting "
          "and not in these); CPU ms of the model's thread, wall ms beside; tokens encoded after the line")
    print(f"  {'setting':<50}{'p50 CPU':>8}{'p95':>6}{'max':>6}{'p50 wall':>9}{'p95':>6}{'after p50':>10}"
          f"{'p95':>5}{'max':>5}")
    table = [("whole prompt every turn (baseline)", whole_cpu, whole_wall, [r["prompt"] for r in new[1:]])]
    if old:
        table += [("sink + rolling KV kept", cpus(bare), [r["wall"] for r in bare], after(bare)),
                  ("+ idle pre-encoding", cpus(last), [r["wall"] for r in last], after(last)),
                  ("+ sticky note chosen while she waits", cpus(held), [r["wall"] for r in held], after(held))]
    if recent:
        table.append(("+ fast KV cache and GQA attention", cpus(fast), [r["wall"] for r in fast], after(fast)))
    table += [("+ the player's turn header pre-encoded (before)", cpus(before), [r["wall"] for r in before],
               after(before)),
              ("+ memories after the line capped (new default)", cpus(new), [r["wall"] for r in new], after(new))]
    if typed:
        table.append((f"+ the line encoded while typed, {args.typing:g} chars/s", cpus(typed),
                      [r["wall"] for r in typed], after(typed)))
    for name, cpu, wall, toks in table:
        c50, c95 = pcts(cpu[1:])
        w50, w95 = pcts(wall[1:])
        t50, t95 = pcts([t / 1000 for t in toks])
        print(f"  {name:<50}{c50:>8.0f}{c95:>6.0f}{1000 * max(cpu[1:]):>6.0f}{w50:>9.0f}{w95:>6.0f}{t50:>10.0f}"
              f"{t95:>5.0f}{max(toks):>5.0f}")
    print("  per turn: tokens encoded after the player's line = her lines found for it that neither the window's "
          "notes nor the sticky note show (by section: lines/tokens) + the line + the chat template; first token "
          "CPU ms; * the window slid before the turn")
    for i, (r, p) in enumerate(zip(new, before, strict=True), 1):
        by: dict[str, list[int]] = {}
        for sec, tok in r["tail"]:
            by.setdefault(sec, []).append(tok)
        notes = " ".join(f"{sec} {len(t)}/{sum(t)}" for sec, t in by.items()) or "-"
        rest = by_section(r)["template"]
        print(f"    turn {i:>2}{'*' if r['slid'] else ' '}: {r['prompt'] - r['reused']:>4.0f} after the line "
              f"(before {p['prompt'] - p['reused']:>4.0f})"
              f" = lines {notes:<30} line {r['line_tokens']:>3} template {rest:>3.0f}; {1000 * r['cpu']:>6.0f} ms "
              f"(before {1000 * p['cpu']:.0f})"
              + (f"; typed ahead: {typed[i - 1]['prompt'] - typed[i - 1]['reused']:.0f} after, "
                 f"{1000 * typed[i - 1]['cpu']:.0f} ms" if typed else ""))
    for name, rows in (("before", before), ("new", new)):
        fixed, per = fit_line(after(rows), [1000 * c for c in cpus(rows)[1:]])
        slow = sorted(rows[1:], key=lambda r: -r["cpu"])[:max(1, len(rows[1:]) // 10)]  # the slowest tenth
        parts: dict[str, float] = {}
        for r in slow:
            for k, v in by_section(r).items():
                parts[k] = parts.get(k, 0.0) + v / len(slow)
        slid = sum(1 for r in slow if r["slid"])
        print(f"  {name}: first token ~ {fixed:.0f} ms + {per:.2f} ms a token encoded after the line (least squares, "
              f"turns 2..N); its slowest {len(slow)} turns ({1000 * min(r['cpu'] for r in slow):.0f}-"
              f"{1000 * max(r['cpu'] for r in slow):.0f} ms, {slid} right after a slide) encode on average "
              + ", ".join(f"{k} {v:.0f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])) + " tokens")
    chosen = sum(r["held"] + r["fresh"] for r in new[1:])
    print(f"  the sticky note already held {sum(r['held'] for r in new[1:])} of the {chosen} lines chosen for the "
          f"player's line that the window did not show (turns 2..N); the rest came after the line")
    for name, rows in (("before", before), ("new", new)):
        idle_cpu = [r["idle_cpu"] for r in rows[1:]]
        idle_tok = [r["idle_tokens"] for r in rows[1:]]
        print(f"  idle pre-encoding, {name} (work moved to while the player reads and types, not removed; chunks of "
              f"{PREENCODE_CHUNK} tokens): CPU ms per turn p50 {1000 * statistics.median(idle_cpu):.0f}, max "
              f"{1000 * max(idle_cpu):.0f} (the slide turns), total {sum(idle_cpu):.1f} s; tokens per turn p50 "
              f"{statistics.median(idle_tok):.0f}, max {max(idle_tok):.0f}; before turn 1 (the sink): "
              f"{1000 * rows[0]['idle_cpu']:.0f} ms")
    same_layout = sum(1 for a, b in zip(before, new, strict=True) if a["msgs"] == b["msgs"])
    same_reply = sum(1 for a, b in zip(before, new, strict=True) if a["msgs"] == b["msgs"] and a["reply"] == b["reply"])
    best, base = pcts(cpus(new)[1:]), pcts(whole_cpu[1:])[0]
    prev = pcts(cpus(before)[1:])
    print(f"  new vs whole prompt: {base / best[0]:.1f}x (p50 CPU); vs before p50 {prev[0]:.0f} -> {best[0]:.0f} ms, "
          f"p95 {prev[1]:.0f} -> {best[1]:.0f} ms, max {1000 * max(cpus(before)[1:]):.0f} -> "
          f"{1000 * max(cpus(new)[1:]):.0f} ms; goal p50 <= 300 ms CPU: {'met' if best[0] <= 300 else 'NOT met'} "
          f"({best[0]:.0f} ms), p95 {'met' if best[1] <= 300 else 'NOT met'} ({best[1]:.0f} ms); first token equal to "
          f"the whole-prompt run's on the same prompts: {same_new}/{len(lines)}; before vs new: the same prompt "
          f"{same_layout}/{len(lines)} turns, and on those the same reply {same_reply}/{same_layout}"
          + (f"; fast KV vs stock on the same talk: same prompts and replies {same_held}/{len(lines)}" if old else ""))
    if typed:
        t50, t95 = pcts(cpus(typed)[1:])
        waits = [r["typing_wait"] for r in typed[1:]]
        print(f"  with the line encoded while typed ({args.typing:g} chars/s, at each word's end when the model is "
              f"free; the reply's wait for an encode still running at the send is counted): p50 {t50:.0f} ms, p95 "
              f"{t95:.0f} ms CPU; goal p50 <= 300 ms: {'met' if t50 <= 300 else 'NOT met'}; encodes per line p50 "
              f"{statistics.median(r['typing_runs'] for r in typed[1:]):.0f}, their CPU per line p50 "
              f"{1000 * statistics.median(r['typing_cpu'] for r in typed[1:]):.0f} ms (moved, not removed); waits "
              f"{sum(1 for w in waits if w > 0)}, longest {1000 * max(waits):.0f} ms; first token equal to the "
              f"whole-prompt run's on the same prompts: {same_typed}/{len(lines)}")
    cpu_new, cpu_old = [r["reply_cpu"] for r in new[1:]], [r["reply_cpu"] for r in before[1:]]
    print(f"  whole reply (<= {args.tokens} tokens, from the stream call): CPU median new "
          f"{statistics.median(cpu_new):.2f} s (p95 {pcts(cpu_new)[1] / 1000:.2f}), before "
          f"{statistics.median(cpu_old):.2f} s (p95 {pcts(cpu_old)[1] / 1000:.2f}); goal median reply <= 2 s "
          f"(CPU): {'met' if statistics.median(cpu_new) <= 2 else 'NOT met'} at this length")
    print("  turn 1: " + (f"without idle pre-encoding {1000 * bare[0]['cpu']:.0f} ms CPU, " if bare else "")
           + f"new {1000 * new[0]['cpu']:.0f} ms (the sink pre-encoded while the game opened)")
    formats = [f for f in args.formats.split(",") if f and (args.int8 or f != "int8")]
    new50 = best[0]
    for fmt in formats:  # other weight formats on the same prompts (the default's), the same path
        with real_cache():
            q = TransformersDialogueModel(quantize=fmt)
        torch.set_num_threads(1)
        quant = talk_turns(q, lines, args, idle=True, header=True, forced=new)
        first_same = sum(1 for a, b in zip(quant, new, strict=True) if a["first"] == b["first"])
        reply_same = sum(1 for a, b in zip(quant, new, strict=True) if a["reply"] == b["reply"])
        c50, c95 = pcts(cpus(quant)[1:])
        w50, w95 = pcts([r["wall"] for r in quant][1:])
        print(f"  {fmt} weights ({q.name}) on the same prompts, the same path: first token p50/p95 CPU "
              f"{c50:.0f}/{c95:.0f} ms (the default {model.quantize}: {new50:.0f}; {fmt} / default "
              f"{c50 / max(new50, 1e-9):.2f}x), wall {w50:.0f}/{w95:.0f} ms; whole reply CPU median "
              f"{statistics.median(r['reply_cpu'] for r in quant[1:]):.2f} s (default "
              f"{statistics.median(cpu_new):.2f}); idle CPU per turn p50 "
              f"{1000 * statistics.median(r['idle_cpu'] for r in quant[1:]):.0f} ms")
        print(f"  {fmt} vs the default, greedy on the same prompts: first token equal {first_same}/{len(lines)}, "
              f"whole reply equal {reply_same}/{len(lines)}")
        for a, b in [(a, b) for a, b in zip(quant, new, strict=True) if a["reply"] != b["reply"]][:3]:
            print(f"    default: {b['reply'][:90]!r}\n    {fmt}: {a['reply'][:90]!r}")


#: Questions for the window section, none of them one of Eve's authored answers (the model answers).
WINDOW_QUESTIONS = ["What do you do when the fog comes in?", "Do you ever go over to Harrowby for the dances?",
                    "Is it hard keeping the clockwork wound in winter?", "What does Admiral eat besides toast?",
                    "What did the sea bring you last spring?", "Which ships still pass the light at night?",
                    "What would you cook for a guest on a cold night?"]


def _source(result: Any) -> str:
    """The source of the reply in a turn's result (``""`` when none)."""
    events = getattr(result, "events", None) or []
    return next((str(e.data.get("source", "")) for e in events if e.kind == "reply"), "")


def _window_phase(app: Any, busy: Callable[[], bool], seconds_max: float, hz: float = 60.0) -> dict[str, float]:
    """Run the window loop (tick + draw at ``hz``) while ``busy()``; frames/s, stalls, longest gap."""
    frames0, stalls0 = app.frames_shown, app.stalls
    t0 = last = time.perf_counter()
    worst = 0.0
    while busy() and time.perf_counter() - t0 < seconds_max:
        now = time.perf_counter()
        gap, last = now - last, now
        worst = max(worst, gap)
        app.tick(gap)
        app.draw()
        time.sleep(max(0.0, 1 / hz - (time.perf_counter() - now)))
    elapsed = max(1e-9, time.perf_counter() - t0)
    return {"s": elapsed, "fps": (app.frames_shown - frames0) / elapsed, "stalls": app.stalls - stalls0,
            "gap_ms": 1000 * worst}


@section("window")
def window(args: argparse.Namespace) -> None:
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    from game.app.app import App
    from game.session import open_game
    from game.state import Choose, Say

    with real_cache():
        t0 = time.perf_counter()
        game = open_game(ROOT / "stories" / "eve", seed=0, save_dir=tempfile.mkdtemp(), dialogue="transformers",
                         realtime=True, cast_options={"show_progress": False})
        load_s = time.perf_counter() - t0
    session, room = game.session, game.cast
    assert room is not None
    spoken: list[float] = []
    room.set_voice_output(lambda audio, rate: spoken.append(len(audio) / rate))  # a window plays it on its mixer
    app = App(session, (1280, 720), threaded=True, audio=False)
    try:
        app.start()
        app.act(Choose(choice_id="knock"))
        _window_phase(app, lambda: True, 2.0)  # settle
        rows = [("nobody talking", _window_phase(app, lambda: True, 4.0), 0.0, "")]
        qs = WINDOW_QUESTIONS[: args.questions]
        for q in qs:
            done: list[Any] = []
            t = time.perf_counter()
            threading.Thread(target=lambda q=q, done=done: done.append(  # type: ignore[misc]
                session.submit(Say(text=q, target="eve"))), daemon=True).start()  # off the loop: prepared ahead
            stats = _window_phase(app, lambda done=done: not done, 120.0)  # type: ignore[misc]
            result = done[0] if done else None
            if result is not None and getattr(result, "request", None) is not None:
                app.feed.flush(result.request.seq)  # what App.act does for a new request
            rows.append(("submit off the loop", stats, time.perf_counter() - t, _source(result)))
        t = time.perf_counter()
        stalls0, frames0 = app.stalls, app.frames_shown
        result = session.submit(Say(text=WINDOW_QUESTIONS[-1], target="eve"))  # on the loop's own thread
        wait = time.perf_counter() - t
        app.tick(wait)  # the wall time the loop lost, at once
        blocked = {"s": wait, "fps": (app.frames_shown - frames0) / max(wait, 1e-9),
                   "stalls": app.stalls - stalls0, "gap_ms": 1000 * wait}
        rows.append(("submit on the loop's thread", blocked, wait, _source(result)))
    finally:
        app.close()
        game.close()
    print(f"window: App (SDL dummy, 1280x720, procedural world {session.caps.width}x{session.caps.height} at "
          f"{session.caps.fps:g} fps), model worker ready in {load_s:.1f} s; voice: {len(spoken)} sentences")
    print(f"  {'while':<30}{'source':>9}{'reply s':>8}{'frames/s':>10}{'stalls':>8}{'longest gap ms':>16}")
    for name, st, secs, source in rows:
        print(f"  {name:<30}{source:>9}{secs:>8.1f}{st['fps']:>10.1f}{st['stalls']:>8.0f}{st['gap_ms']:>16.0f}")
    async_rows = [st for name, st, _, _ in rows if name.startswith("submit off")]
    if async_rows:
        fps = statistics.median(st["fps"] for st in async_rows)
        print(f"  median while she answers off the loop: {fps:.1f} frames/s of {session.caps.fps:g}, "
              f"{sum(st['stalls'] for st in async_rows):.0f} stalls over {len(async_rows)} replies")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000", help="memory counts for the retrieval section")
    ap.add_argument("--quick", action="store_true", help="retrieval at 10,000 memories, 10 queries a set")
    ap.add_argument("--turns", default="10,100,1000,10000", help="turns at which the prompt is measured")
    ap.add_argument("--encoder", choices=("hash", "minilm"), default="hash")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--queries", type=int, default=40, help="queries per set in retrieval")
    ap.add_argument("--embed-threads", type=int, default=1, help="torch threads to embed the retrieval corpus with")
    ap.add_argument("--no-stress", action="store_true", help="retrieval: the MiniLM corpus only")
    ap.add_argument("--questions", type=int, default=5, help="questions per setting (first_token, window)")
    ap.add_argument("--tokens", type=int, default=24, help="tokens per reply in first_token")
    ap.add_argument("--paths", choices=("all", "recent", "now"), default="all",
                    help="first_token: 'recent' skips the three oldest paths, 'now' also the fast KV one (the "
                         "whole-prompt baseline and the layout before stay)")
    ap.add_argument("--talk-file", default=str(TALK), help="first_token: the talk played (e.g. "
                    "bench/data/eve_talk60_b.txt)")
    ap.add_argument("--typing", type=float, default=TYPING_CPS,
                    help="first_token: the typing path's speed in chars/s (0: no typing path)")
    ap.add_argument("--talk", type=int, default=24, help="exchanges of the Eve talk in first_token (at most 60)")
    ap.add_argument("--no-int8", dest="int8", action="store_false",
                    help="first_token: skip the int8 model's run on the same prompts")
    ap.add_argument("--formats", default="float32,int8",
                    help="first_token: other weight formats run on the default's prompts, the same path "
                         "(game.models.llm_transformers.QUANTIZE)")
    ap.add_argument("--only", default="", help=f"comma-separated sections of: {', '.join(SECTIONS)}")
    args = ap.parse_args(argv)
    args.sizes = [10_000] if args.quick else [int(x) for x in args.sizes.split(",") if x]
    if args.quick:
        args.queries = min(args.queries, 10)
    args.turns = [int(x) for x in args.turns.split(",") if x]
    os.environ["WORLDLOOM_CACHE"] = tempfile.mkdtemp()
    wanted = [s for s in args.only.split(",") if s] or list(SECTIONS)
    for name in wanted:
        fn: Any = SECTIONS.get(name)
        if fn is None:
            raise SystemExit(f"unknown section {name!r}; sections: {', '.join(SECTIONS)}")
        fn(args)


if __name__ == "__main__":
    main()

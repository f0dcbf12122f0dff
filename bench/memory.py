"""Character-memory figures for the Eve issue. Prints medians; asserts nothing.

    python bench/memory.py [--sizes 1000,10000,100000] [--turns 10,100,1000,10000]
                           [--encoder hash|minilm] [--repeat 5] [--only retrieval,prompt]

Sections (each a function registered with :func:`section`; run in order, or pick
some with ``--only``):

* ``retrieval``: time to score and rank N episodic memories (recency + importance +
  relevance, relevance = MiniLM cosine mixed with BM25, see
  ``game/cast/retrieval.py``) with numpy, against a plain Python loop computing the
  same scores over the same memories, and the ratio. Vectors are random unit vectors
  (384 dimensions: scoring time does not depend on what they mean) and texts are
  short synthetic sentences; the query's embedding is not counted (one MiniLM
  encode, printed separately when the model is installed).
* ``prompt``: the assembled prompt's size in tokens (default counter: words x 1.3,
  at least chars / 4) at turns 10, 100, 1,000 and 10,000 of a simulated session with
  Eve's card, against its budget, and the time to build it. ``--encoder hash`` (the
  default) embeds with the model-free hashing encoder, ``minilm`` with MiniLM (slower:
  every summary is embedded; sizes barely differ).

* ``first_token``: first-token latency of the embedded model (SmolLM2-135M-Instruct,
  one torch thread, as in the worker) on Eve's real prompt, encoding the whole prompt
  every turn against reusing the KV cache of the stable sink prefix (the functions of
  ``bench/dialogue.py``; ``--questions`` questions per setting, ``--tokens`` per reply).
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
from game.cast.prompt import PromptBuilder  # noqa: E402
from game.cast.retrieval import EpisodicStore, HashEmbedder, TextEncoder, score_loop, terms  # noqa: E402
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


WORDS = ("tide lamp kettle gull fog stars sister bees harbour bread ferry storm lantern rope boots logbook "
         "glasshouse lemon bottle letter causeway stones weed gannet stove clockwork wind rain sea glass").split()


def synthetic_store(n: int, rng: np.random.Generator) -> tuple[EpisodicStore, list[str], np.ndarray]:
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(6, 16)))) for _ in range(n)]
    vecs = rng.normal(size=(n, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store = EpisodicStore(dim=384)
    store.extend(texts, ["exchange"] * n, rng.integers(0, n, size=n), rng.uniform(1, 10, size=n), vecs)
    return store, texts, vecs


def retrieval_row(n: int, rng: np.random.Generator, repeat: int, query_text: str) -> str:
    """One line of the retrieval table for ``n`` memories."""
    t0 = time.perf_counter()
    store, texts, vecs = synthetic_store(n, rng)
    build = time.perf_counter() - t0
    q = vecs[int(rng.integers(0, n))] * 0.5 + rng.normal(size=384).astype(np.float32) * 0.05
    q /= np.linalg.norm(q)
    fast = median_ms(lambda: store.top(q, n, 10, query_text=query_text), repeat)
    vec_list, turns, imp, qlist = vecs.tolist(), store.turns.tolist(), store.importance.tolist(), q.tolist()
    doc_terms = []
    for t in texts:
        counts: dict[str, int] = {}
        for term in terms(t):
            counts[term] = counts.get(term, 0) + 1
        doc_terms.append(counts)

    def loop() -> list[int]:
        scores = score_loop(vec_list, turns, imp, qlist, n, doc_terms=doc_terms, query_text=query_text)
        return sorted(range(n), key=lambda i: -scores[i])[:10]

    slow = median_ms(loop, 1 if n >= 50_000 else max(1, repeat // 2))
    top_fast = [s.index for s in store.top(q, n, 10, query_text=query_text)]
    agree = "same top 10" if set(top_fast) == set(loop()) else "TOP 10 DIFFERS"
    return f"  {n:>9,}  {fast:>9.2f}  {slow:>10.1f}  {slow / fast:>6.0f}x   {build:>7.2f}   {agree}"


@section("retrieval")
def retrieval(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    query_text = "do you remember my sister and the bees by the harbour"
    print("retrieval: score + rank N memories, top 10 (numpy vs a plain Python loop, same scores)")
    print(f"  {'memories':>9}  {'numpy ms':>9}  {'loop ms':>10}  {'ratio':>7}   {'build s':>7}")
    for n in args.sizes:
        print(retrieval_row(n, rng, args.repeat, query_text))
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


def dialogue_bench() -> Any:
    """``bench/dialogue.py`` as a module (its ``run``, ``pct`` and ``QUESTIONS``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_dialogue", ROOT / "bench" / "dialogue.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@section("first_token")
def first_token(args: argparse.Namespace) -> None:
    import torch

    from game.models.llm_transformers import TransformersDialogueModel

    bench = dialogue_bench()
    torch.set_num_threads(1)
    with real_cache():
        t0 = time.perf_counter()
        model = TransformersDialogueModel()
        load_s = time.perf_counter() - t0
    card = load_card(ROOT / "characters" / "eve.yaml")
    mem = Memory(card, MemoryConfig(context_tokens=min(model.context_size, 4096)), embedder=encoder(args.encoder))
    builder = PromptBuilder(mem)
    qs = (bench.QUESTIONS * (1 + args.questions // len(bench.QUESTIONS)))[: args.questions]
    prompts = [builder.build(q).to_messages() for q in qs]
    sizes = [len(model.encode(model.render(m))) for m in prompts]
    sink = len(model.encode(mem.sink_text()))
    model.reuse_prefix = False
    model.clear_prefix_cache()
    bench.run(model, prompts[:1], 2)  # warm the kernels up
    plain, _ = bench.run(model, prompts, args.tokens)
    model.reuse_prefix = True
    bench.run(model, prompts[-1:], 1)  # the first turn encodes the sink and keeps it
    reused, speed = bench.run(model, prompts, args.tokens)
    print(f"first token: {model.name}, 1 torch thread, loaded in {load_s:.1f} s; Eve's prompt "
          f"{statistics.median(sizes):.0f} tokens (median), stable sink prefix {sink} tokens")
    print(f"  {'setting':<30}{'median ms':>10}{'p90 ms':>9}")
    print(f"  {'whole prompt every turn':<30}{1000 * statistics.median(plain):>10.0f}"
          f"{1000 * bench.pct(plain, .9):>9.0f}")
    print(f"  {'sink prefix KV reused':<30}{1000 * statistics.median(reused):>10.0f}"
          f"{1000 * bench.pct(reused, .9):>9.0f}")
    print(f"  speed-up {statistics.median(plain) / statistics.median(reused):.1f}x; decode "
          f"{statistics.median(speed):.1f} tokens/s")


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
    ap.add_argument("--sizes", default="1000,10000,100000", help="memory counts for the retrieval section")
    ap.add_argument("--turns", default="10,100,1000,10000", help="turns at which the prompt is measured")
    ap.add_argument("--encoder", choices=("hash", "minilm"), default="hash")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--questions", type=int, default=5, help="questions per setting (first_token, window)")
    ap.add_argument("--tokens", type=int, default=24, help="tokens per reply in first_token")
    ap.add_argument("--only", default="", help=f"comma-separated sections of: {', '.join(SECTIONS)}")
    args = ap.parse_args(argv)
    args.sizes = [int(x) for x in args.sizes.split(",") if x]
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

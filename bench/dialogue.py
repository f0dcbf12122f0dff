"""First-token latency of the embedded dialogue model, with and without the reused sink prefix.

Builds Eve's real prompt (card sink, examples, lore, the player's line) with
:class:`game.cast.prompt.PromptBuilder`, then asks SmolLM2-135M-Instruct (the
embedded default, one torch thread as in the worker) ``N`` different questions
twice: once encoding the whole prompt every turn, once reusing the KV cache of the
stable sink prefix (the longest common token prefix with the last prompt, cropped
back after each turn). Prints the median
and 90th percentile of the time to the first token (prefill + first sampling
step), the decode speed, and optionally the same through the worker process.

Run: ``python bench/dialogue.py [-n 9] [--tokens 24] [--worker]``
(first start converts the GGUF once, ~30-45 s; later starts load the cache).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUESTIONS = [
    "What do you do when the fog comes in?", "How far can ships see the light?", "Do you ever go to Harrowby?",
    "What's your favourite thing the sea has brought you?", "Is it hard keeping the clockwork wound?",
    "What does Admiral eat besides toast?", "When did you last see a storm like this?",
    "Would you ever leave Skerrow?", "How old is the lens?", "What did your grandmother teach you?",
    "Who rows the post boat?", "Why is the bottle still sealed?", "How many lemons has Vesper grown?",
    "What do you write at the bottom of the logbook?", "Does the foghorn scare the gulls?",
    "How long until the tide covers the Spine?",
]


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def run(model: Any, prompts: list[list[dict[str, str]]], tokens: int) -> tuple[list[float], list[float]]:
    """First-token seconds and decode tokens/s of each prompt (greedy)."""
    first, speed = [], []
    for messages in prompts:
        n = 0
        for _ in model.stream(messages, max_new_tokens=tokens, temperature=0.0, seed=0):
            n += 1
        st = model.last_stats
        first.append(st["first_token_s"])
        if st["tokens"] > 1:
            speed.append((st["tokens"] - 1) / max(1e-9, st["total_s"] - st["first_token_s"]))
    return first, speed


def frame_loop(busy: Any, seconds_max: float = 60.0) -> tuple[float, float]:
    """Run a 60 Hz "window" loop (a little numpy work per frame) on this thread while
    ``busy()`` runs on another; return ``(frames/s, longest frame gap in ms)``."""
    import threading

    import numpy as np

    done = threading.Event()

    def work() -> None:
        try:
            busy()
        finally:
            done.set()

    frame = np.zeros((270, 480, 3), np.uint8)
    t = threading.Thread(target=work, daemon=True)
    t0 = last = time.perf_counter()
    gaps: list[float] = []
    t.start()
    while not done.is_set() and time.perf_counter() - t0 < seconds_max:
        frame[:] = (frame + 1) % 255  # stands in for drawing
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
        time.sleep(max(0.0, 1 / 60 - (time.perf_counter() - now)))
    t.join()
    elapsed = time.perf_counter() - t0
    return len(gaps) / elapsed, 1000 * max(gaps[1:] or [0.0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=9, help="questions per setting (median of N)")
    ap.add_argument("--tokens", type=int, default=24, help="tokens generated per reply")
    ap.add_argument("--worker", action="store_true", help="also measure through the worker process")
    args = ap.parse_args()

    import torch

    from game.cast.card_io import load_card
    from game.cast.memory import Memory, MemoryConfig
    from game.cast.prompt import PromptBuilder
    from game.models.llm_transformers import TransformersDialogueModel

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    model = TransformersDialogueModel()
    load_s = time.perf_counter() - t0
    card = load_card(ROOT / "characters" / "eve.yaml")
    memory = Memory(card, MemoryConfig(context_tokens=model.context_size), count_tokens=model.count_tokens)
    builder = PromptBuilder(memory)
    questions = (QUESTIONS * (1 + args.n // len(QUESTIONS)))[: args.n]
    prompts = [builder.build(q).to_messages() for q in questions]
    prompt_tokens = [len(model.encode(model.render(p))) for p in prompts]
    sink_tokens = len(model.encode(memory.sink_text()))

    model.reuse_prefix = False
    model.clear_prefix_cache()
    run(model, prompts[:1], 2)  # warm up the kernels
    plain, plain_speed = run(model, prompts, args.tokens)
    model.reuse_prefix = True
    t1 = time.perf_counter()
    run(model, prompts[-1:], 1)  # the first turn encodes its whole prompt (and keeps it)
    cold = time.perf_counter() - t1
    reused, reused_speed = run(model, prompts, args.tokens)
    shared = model.last_stats["reused_tokens"]

    print(f"model: {model.name} ({model.loaded_from}), loaded in {load_s:.1f} s, 1 torch thread")
    print(f"prompt: Eve, {statistics.median(prompt_tokens):.0f} tokens (median of {len(prompts)}), "
          f"of which ~{sink_tokens} are the stable sink; last turn reused {shared:.0f} cached tokens")
    print(f"{'setting':<28}{'median ms':>10}{'p90 ms':>9}{'decode tok/s':>14}")
    print(f"{'whole prompt every turn':<28}{1000 * statistics.median(plain):>10.0f}{1000 * pct(plain, 0.9):>9.0f}"
          f"{statistics.median(plain_speed):>14.1f}")
    print(f"{'sink prefix KV reused':<28}{1000 * statistics.median(reused):>10.0f}{1000 * pct(reused, 0.9):>9.0f}"
          f"{statistics.median(reused_speed):>14.1f}")
    print(f"speed-up of the first token: {statistics.median(plain) / statistics.median(reused):.1f}x "
          f"(the first turn, which encodes the sink, took {1000 * cold:.0f} ms)")

    def answer_in_process() -> None:
        for messages in prompts[:3]:
            for _ in model.stream(messages, max_new_tokens=args.tokens, temperature=0.0):
                pass

    fps, stall = frame_loop(answer_in_process)
    print(f"window loop while she answers in-process (thread): {fps:.1f} frames/s, longest frame {stall:.0f} ms")

    if args.worker:
        from game.models.registry import ModelSpec
        from game.models.worker import ModelWorker

        with ModelWorker({"eve": ModelSpec("transformers")}, show_progress=True) as worker:
            remote = worker.model("eve")
            list(remote.stream(prompts[0], max_new_tokens=1))
            firsts = []
            for messages in prompts:
                t = time.perf_counter()
                it = remote.stream(messages, max_new_tokens=args.tokens, temperature=0.0)
                next(iter(it))
                firsts.append(time.perf_counter() - t)
                for _ in it:
                    pass

            def answer_in_worker() -> None:
                for messages in prompts[:3]:
                    for _ in remote.stream(messages, max_new_tokens=args.tokens, temperature=0.0):
                        pass

            fps_w, stall_w = frame_loop(answer_in_worker)
        print(f"{'through the worker (reused)':<28}{1000 * statistics.median(firsts):>10.0f}"
              f"{1000 * pct(firsts, 0.9):>9.0f}   (first delta, incl. queue round trip)")
        print(f"window loop while she answers in the worker: {fps_w:.1f} frames/s, longest frame {stall_w:.0f} ms")


if __name__ == "__main__":
    main()

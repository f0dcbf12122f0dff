"""Collect real model replies of the embedded model to Eve's dev questions, for labelling.

Usage (from the repository root)::

    PYTHONPATH=. python3 bench/collect_replies.py --out /tmp/replies.jsonl [--dialogue SPEC]

The questions are dev ones only: the ``dev`` identity, mood, small-talk and card probes of
``bench/data/character_probes.yaml``, the ``dev`` lines of ``bench/data/eve_intents.yaml`` and
``bench/data/appraisal_probes.yaml`` (mood lines), and the ``dev`` questions of
``bench/data/eve_topics.yaml`` (small talk and card questions). For each it writes one JSON line per
model reply: what the pipeline delivered when the model wrote it, every attempt the pipeline's checks
rejected (``Reply.rejected``), and the bare model's reply to the same prompt (``baseline``, as
``bench/character.py`` makes it), each with whether it passes today's guard + verifier + coherence
check (``why``: what stops it; ``""``: nothing). ``split`` is decided per question before any
labelling (every third question, in file order, is ``heldout``), so a held-out label never shares
its question with a dev one. The labelled result is ``bench/data/reply_labels.yaml``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import yaml

from bench.character import ROOT, baseline_reply, load_probes, talk
from game.cast.card_io import load_card
from game.cast.castroom import dialogue_spec
from game.cast.coherence import Coherence, card_text
from game.cast.dialogue import DialogueSettings, facts_from_card, facts_from_memory
from game.cast.rejudge import check_reply
from game.models.embedder import get_embedder
from game.models.llm import split_sentences
from game.models.registry import build_model

DATA = ROOT / "bench" / "data"


def dev_questions() -> list[tuple[str, str, str]]:
    """``(ask, category, where)`` for every dev question, in file order, without repeats."""
    out: list[tuple[str, str, str]] = []
    probes = load_probes(DATA / "character_probes.yaml")["probes"]
    for p in probes:
        if p["split"] == "dev" and p["category"] in ("identity", "mood", "smalltalk", "card"):
            out.append((p["ask"], p["category"], f"character_probes:{p['id']}"))
    for name in ("eve_intents.yaml", "appraisal_probes.yaml"):
        for line, intent in yaml.safe_load((DATA / name).read_text(encoding="utf-8"))["dev"]:
            cat = "card" if intent == "question" else "smalltalk" if intent == "other" else "mood"
            out.append((line, cat, f"{name}:{intent}"))
    for line, ids in yaml.safe_load((DATA / "eve_topics.yaml").read_text(encoding="utf-8"))["dev"]:
        out.append((line, "smalltalk" if ids == "none" else "card", "eve_topics.yaml"))
    seen: set[str] = set()
    return [q for q in out if not (q[0] in seen or seen.add(q[0]))]  # type: ignore[func-returns-value]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--dialogue", default="transformers")
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    card = load_card(ROOT / "characters" / "eve.yaml")
    enc = get_embedder()
    model = build_model(dialogue_spec(args.dialogue, ROOT / "stories" / "eve"))
    coherence = Coherence(enc, own_text=card_text(card))
    base = facts_from_card(card, card.home)
    questions = dev_questions()[: args.limit or None]
    print(f"{len(questions)} dev questions", flush=True)
    memory, pipe = talk(card, model, enc, [], [], DialogueSettings(seed=0))
    t0 = time.process_time()
    with open(args.out, "w", encoding="utf-8") as out:
        for i, (ask, cat, where) in enumerate(questions):
            split = "heldout" if i % 3 == 2 else "dev"
            turn = memory.now + 1
            reply = pipe.reply(ask, turn)
            facts = facts_from_memory(base, memory)
            found: list[tuple[str, str, str]] = [("rejected", r.text, r.kind) for r in reply.rejected]
            if reply.source == "model":
                found.append(("delivered", reply.text, "model"))
            found.append(("baseline", baseline_reply(pipe, pipe.guard.check_input(ask).text, pipe.turn_seed(turn)),
                          "model"))
            for kind, text, how in found:
                if not text.strip():
                    continue
                why = check_reply(pipe.guard, pipe.verifier, split_sentences(text), facts, ask, coherence)
                row: dict[str, Any] = {"ask": ask, "category": cat, "from": where, "split": split, "kind": kind,
                                       "reply": text, "why": why, "delivered_source": reply.source, "how": how}
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                out.flush()
            print(f"  {i + 1}/{len(questions)} {time.process_time() - t0:.0f} s CPU  {reply.source}: "
                  f"{reply.text[:70]!r}", flush=True)


if __name__ == "__main__":
    main()

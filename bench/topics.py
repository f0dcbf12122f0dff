"""How often a question about Eve's own life is answered from her card, found by meaning.

Usage: ``PYTHONPATH=. python3 bench/topics.py [--sweep] [--wrong]``

Scores :meth:`game.cast.topics.TopicRouter.topic` on ``bench/data/eve_topics.yaml``: questions a
walker might ask her, each labelled with the card topics that answer it (``card.<fact>``,
``answer.<id>``, ``example.<n>``) or ``none`` (nothing on her card answers it: the model should).
Per split (``dev``: the threshold was chosen on it; ``heldout``: scored once, after) it prints

- **answered right**: questions with an answer whose topic is one of the labelled ones;
- **wrong topic**: answered with another topic;
- **needless**: a ``none`` question answered from the card;
- **left to the model**: labelled questions not answered.

The baseline in the same run is the matcher before this change: a card fact's questions only, at
:data:`~game.cast.grounding.GROUNDING_THRESHOLD` (:meth:`Grounding.match`), with the card's example
exchanges and authored answers at the pipeline's ``AUTHORED_THRESHOLD`` (0.6, same person).
``--intents`` scores :meth:`game.cast.replies.ReplyPicker.direct` on ``bench/data/eve_intents.yaml``:
of the insults, threats, apologies, thanks and compliments, how many get her authored line for that
intent, and how many small-talk or question lines wrongly get one (baseline: no direct replies,
every such line went to the model), over a grid of confidences.

``--sweep`` prints the dev figures over a grid of thresholds and margins (how the defaults were
chosen: most right answers, counting a wrong or needless answer as two misses).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from game.cast.appraisal import Appraiser
from game.cast.card import CharacterCard
from game.cast.card_io import load_card
from game.cast.dialogue import AuthoredKnowledge
from game.cast.grounding import Grounding
from game.cast.replies import DIRECT_CONFIDENCE, DIRECT_INTENTS, ReplyPicker
from game.cast.topics import TOPIC_MARGIN, TOPIC_THRESHOLD, TopicRouter
from game.models.embedder import get_embedder

ROOT = Path(__file__).resolve().parents[1]


def rows(split: str) -> list[tuple[str, list[str] | None]]:
    data = yaml.safe_load((ROOT / "bench" / "data" / "eve_topics.yaml").read_text(encoding="utf-8"))
    return [(line, None if exp == "none" else list(exp)) for line, exp in data[split]]


def score(answers: list[tuple[str | None, list[str] | None]]) -> dict[str, int]:
    out = {"right": 0, "wrong": 0, "needless": 0, "left": 0, "asked": 0, "none": 0}
    for got, exp in answers:
        if exp is None:
            out["none"] += 1
            out["needless"] += got is not None
        else:
            out["asked"] += 1
            if got is None:
                out["left"] += 1
            elif got in exp:
                out["right"] += 1
            else:
                out["wrong"] += 1
    return out


def line(name: str, s: dict[str, int]) -> str:
    return (f"  {name:<34} answered right {s['right']:>3}/{s['asked']:<3} wrong topic {s['wrong']:>2}   "
            f"needless {s['needless']:>2}/{s['none']:<3} left to the model {s['left']:>3}")


def intents(card: CharacterCard, enc: object) -> None:
    """The direct intent replies on ``bench/data/eve_intents.yaml`` over a grid of confidences."""
    data = yaml.safe_load((ROOT / "bench" / "data" / "eve_intents.yaml").read_text(encoding="utf-8"))["dev"]
    picker = ReplyPicker(card.replies, card.fallbacks, Appraiser(enc))
    acts = sum(1 for _, want in data if want in DIRECT_INTENTS)
    print(f"direct intent replies, dev ({acts} lines doing one of {sorted(DIRECT_INTENTS)}, "
          f"{len(data) - acts} small talk or questions); baseline (none direct): 0/{acts} right, 0 wrong")
    for conf in (0.35, 0.4, 0.45, 0.5, 0.55):
        right = wrong = 0
        for text, want in data:
            pick = picker.direct(text, 0, confidence=conf)
            got = pick.intent if pick is not None and pick.id.startswith("replies.") and \
                not pick.id.startswith("replies.told") else None
            right += got is not None and got == want
            wrong += got is not None and got != want
        mark = "  <- DIRECT_CONFIDENCE" if abs(conf - DIRECT_CONFIDENCE) < 1e-9 else ""
        print(f"  confidence {conf:.2f}: her line for the right intent {right:>2}/{acts}, "
              f"a wrong intent's line {wrong:>2}{mark}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sweep", action="store_true", help="dev figures over thresholds and margins")
    ap.add_argument("--wrong", action="store_true", help="print every wrong, needless or missed dev row")
    ap.add_argument("--intents", action="store_true", help="only the direct intent replies")
    args = ap.parse_args()
    enc = get_embedder()
    card = load_card(ROOT / "characters" / "eve.yaml")
    if args.intents:
        intents(card, enc)
        return
    grounding = Grounding(card, enc)
    router = TopicRouter(card, enc)
    examples = AuthoredKnowledge.from_card(card, enc)
    authored = AuthoredKnowledge([*examples.answers], enc)

    def baseline(text: str) -> str | None:
        m = authored.match(text)
        if m is not None:
            return m.answer.id
        g = grounding.match(text)
        return g.id if g is not None else None

    if args.sweep:
        dev = rows("dev")
        print("dev sweep (threshold, margin): right / wrong / needless / left; "
              "utility = right - 2 x (wrong + needless)")
        for th in (0.45, 0.5, 0.525, 0.55, 0.575, 0.6, 0.65):
            for margin in (0.0, 0.02, 0.04):
                s = score([(getattr(router.topic(t, th, margin), "id", None), e) for t, e in dev])
                util = s["right"] - 2 * (s["wrong"] + s["needless"])
                print(f"  {th:.3f} {margin:.2f}: {s['right']:>3} / {s['wrong']:>2} / {s['needless']:>2} / "
                      f"{s['left']:>3}   utility {util}")
    print(f"TopicRouter.topic at threshold {TOPIC_THRESHOLD}, margin {TOPIC_MARGIN} "
          f"({len(card.facts)} card facts, {len(card.answers)} answers, {len(card.examples)} examples)")
    for split in ("dev", "heldout"):
        data = rows(split)
        base = [(baseline(t), e) for t, e in data]
        new = [(getattr(router.topic(t), "id", None), e) for t, e in data]
        print(f"{split} ({len(data)} questions)")
        print(line("baseline: fact questions at 0.6", score(base)))
        print(line("by meaning (TopicRouter.topic)", score(new)))
        if args.wrong and split == "dev":  # never read the held-out rows one by one
            for (got, exp), (text, _) in zip(new, data, strict=True):
                if (exp is None and got is not None) or (exp is not None and got not in exp):
                    print(f"    {text!r}: got {got}, expected {exp}")


if __name__ == "__main__":
    main()

"""How often a question about Eve's own life is answered from her card, found by meaning.

Usage: ``PYTHONPATH=. python3 bench/topics.py [--against REV] [--split NAME ...] [--sweep] [--wrong]``

Scores :meth:`game.cast.topics.TopicRouter.topic` on ``bench/data/eve_topics.yaml``: questions a
walker might ask her, each labelled with the card topics that answer it (``card.<fact>``,
``answer.<id>``, ``example.<n>``) or ``none`` (nothing on her card answers it: the model should).
Per split (``dev``: the defaults were chosen on it; ``heldout``, session 7's, scored once then, so
in-sample for session 7's tuning only; ``heldout_route``: written before session 8's routing change and
scored once, at its end) it prints

- **answered right**: questions with an answer whose topic is one of the labelled ones;
- **wrong topic**: answered with another topic (the worst case: she says a wrong card fact);
- **needless**: a ``none`` question answered from the card;
- **left to the model**: labelled questions not answered

before (the routing of revision ``--against``, default ``ec3aa52``: ``git archive`` into a temporary
folder, run in a child process on the same lines in the same run) -> after (this tree), and the CPU
seconds each spends routing every line a second time (all vectors already encoded, so neither is
favoured by the vector cache the first run fills).

``--intents`` scores :meth:`game.cast.replies.ReplyPicker.direct` on ``bench/data/eve_intents.yaml``:
of the insults, threats, apologies, thanks and compliments, how many get her authored line for that
intent, and how many small-talk or question lines wrongly get one (baseline: no direct replies,
every such line went to the model), over a grid of confidences.

``--sweep`` prints the dev figures over a grid of thresholds and margins (how the defaults were
chosen: most right answers, counting a wrong topic as three misses and a needless answer as two).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import yaml

from game.cast.appraisal import Appraiser
from game.cast.card import CharacterCard
from game.cast.card_io import load_card
from game.cast.replies import DIRECT_CONFIDENCE, DIRECT_INTENTS, ReplyPicker
from game.cast.topics import KIND_EASING, TOPIC_MARGIN, TOPIC_THRESHOLD, TopicRouter
from game.models.embedder import get_embedder

ROOT = Path(__file__).resolve().parents[1]
SPLITS = ("dev", "heldout", "heldout_route")
#: The routing before session 8's change (``Grounding.topic``, max of two cosines at 0.55, no margin).
BEFORE = "ec3aa52"

#: Run in the old tree's folder: its own topic routing on the lines given on stdin (JSON), the ids
#: and the CPU seconds spent routing on stdout. Old trees have ``Grounding.topic``; newer ``TopicRouter``.
_OLD = """
import json, sys, time
from game.cast.card_io import load_card
from game.models.embedder import get_embedder
card = load_card("characters/eve.yaml")
enc = get_embedder()
try:
    from game.cast.topics import TopicRouter
    router = TopicRouter(card, enc)
except ImportError:
    from game.cast.grounding import Grounding
    router = Grounding(card, enc)
lines = json.load(sys.stdin)
ids = [getattr(router.topic(line), "id", None) for line in lines]  # encodes every line once
t0 = time.process_time()
again = [getattr(router.topic(line), "id", None) for line in lines]
print(json.dumps({"ids": ids, "cpu_s": time.process_time() - t0}))
"""


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


def compared(before: dict[str, int], after: dict[str, int]) -> str:
    """One split's figures, before -> after."""
    n = before["asked"] + before["none"]

    def pct(k: str, s: dict[str, int]) -> str:
        return f"{s[k]} ({100 * s[k] / max(n, 1):.1f}%)"

    return (f"  answered right {before['right']} -> {after['right']} of {after['asked']}; "
            f"wrong topic {pct('wrong', before)} -> {pct('wrong', after)}; "
            f"needless {before['needless']} -> {after['needless']} of {after['none']}; "
            f"left to the model {before['left']} -> {after['left']}")


def old_routing(rev: str, lines: list[str]) -> tuple[list[str | None], float]:
    """Revision ``rev``'s topic id for each line and its routing CPU seconds (see :data:`_OLD`).

    Raises:
        subprocess.CalledProcessError: ``git archive`` or the old tree's run failed (its stderr is shown).
    """
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    with tempfile.TemporaryDirectory(prefix="topics-before-") as tmp:
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        run = subprocess.run([sys.executable, "-c", _OLD], cwd=tmp, input=json.dumps(lines), text=True,
                             capture_output=True, env={"PYTHONPATH": tmp, "HF_HUB_OFFLINE": "1",
                                                       "PATH": "/usr/bin:/bin", "HOME": str(Path.home())})
        if run.returncode:
            sys.stderr.write(run.stderr)
            run.check_returncode()
    out = json.loads(run.stdout.strip().splitlines()[-1])
    return out["ids"], float(out["cpu_s"])


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
    ap.add_argument("--against", default=BEFORE, metavar="REV", help=f"the routing before (default {BEFORE})")
    ap.add_argument("--split", action="append", choices=SPLITS, help="only these splits (default: all)")
    ap.add_argument("--sweep", action="store_true", help="dev figures over thresholds and margins")
    ap.add_argument("--wrong", action="store_true", help="print every wrong, needless or missed dev row")
    ap.add_argument("--intents", action="store_true", help="only the direct intent replies")
    args = ap.parse_args()
    enc = get_embedder()
    card = load_card(ROOT / "characters" / "eve.yaml")
    if args.intents:
        intents(card, enc)
        return
    router = TopicRouter(card, enc)
    if args.sweep:
        dev = rows("dev")
        print("dev sweep (threshold, margin): right / wrong / needless / left; "
              "utility = right - 3 x wrong - 2 x needless")
        for th in (0.45, 0.475, 0.5, 0.525, 0.55, 0.6):
            for margin in (0.0, 0.02, 0.04, 0.06):
                s = score([(getattr(router.topic(t, th, margin), "id", None), e) for t, e in dev])
                util = s["right"] - 3 * s["wrong"] - 2 * s["needless"]
                print(f"  {th:.3f} {margin:.2f}: {s['right']:>3} / {s['wrong']:>2} / {s['needless']:>2} / "
                      f"{s['left']:>3}   utility {util}")
    splits = args.split or list(SPLITS)
    data = {split: rows(split) for split in splits}
    lines = [t for split in splits for t, _ in data[split]]
    old, old_cpu = old_routing(args.against, lines)
    new = [getattr(router.topic(t), "id", None) for t in lines]
    t0 = time.process_time()  # timed on a second pass, as the old tree's: every vector already encoded
    again = [getattr(router.topic(t), "id", None) for t in lines]
    new_cpu = time.process_time() - t0
    if again != new:
        raise SystemExit("bench/topics.py: TopicRouter.topic gave another topic on the second pass (not deterministic)")
    print(f"TopicRouter.topic at threshold {TOPIC_THRESHOLD} ({TOPIC_THRESHOLD - KIND_EASING:.2f} for a kind of "
          f"answer), margin {TOPIC_MARGIN} ({len(card.facts)} card facts, {len(card.answers)} answers, "
          f"{len(card.examples)} examples); before = {args.against}, same run")
    at = 0
    for split in splits:
        rs = data[split]
        before = old[at:at + len(rs)]
        after = new[at:at + len(rs)]
        at += len(rs)
        print(f"{split} ({len(rs)} questions), before -> after")
        print(compared(score([(g, e) for g, (_, e) in zip(before, rs, strict=True)]),
                       score([(g, e) for g, (_, e) in zip(after, rs, strict=True)])))
        if args.wrong and split == "dev":  # never read the held-out rows one by one
            for got, (text, exp) in zip(after, rs, strict=True):
                if (exp is None and got is not None) or (exp is not None and got not in exp):
                    print(f"    {text!r}: got {got}, expected {exp}")
    print(f"routing CPU seconds over {len(lines)} lines, second pass (vectors encoded; MiniLM not counted): "
          f"before {old_cpu:.3f} -> after {new_cpu:.3f}")


if __name__ == "__main__":
    main()

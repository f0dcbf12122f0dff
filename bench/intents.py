"""Accuracy and false accepts of the free-text resolver on the committed evaluation set.

Usage: ``python bench/intents.py [--lexical] [--wrong] [--sweep] [--appraisal]``

Prints accuracy overall and per tag, the number of false accepts (inputs that
should have done nothing but were accepted), negation leaks ("don't offer the
leaf" taking the leaf), choice precision (of the lines that picked an authored
choice, the share that picked the expected one), and with ``--wrong`` every miss.
The baseline in the same run is the resolver without gifts of new things
(``Resolver(new_gifts=False)``: "give her a lantern" could only be a choice or an
edit). ``--lexical`` runs the
character-trigram fallback instead of MiniLM, for comparison. ``--sweep`` reruns
the set over a grid of acceptance thresholds (accept, margin) and prints accuracy
and false accepts for each, which is how the defaults were chosen.

It then scores the appraiser (:mod:`game.cast.appraisal`: what a line said to a character
does, apology / thanks / compliment / insult / threat / gift / question / other) on
``bench/data/appraisal_probes.yaml``, each split separately (``dev``/``heldout``; ``dev_social``/
``heldout_social``: farewells and greetings), against the
rule before this change in the same run (an asking line scored like any other:
``Appraiser(asked_min_score=None)``), and over the labelled set leave-one-out.
``--appraisal`` runs only that part.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import yaml

from game.cast.appraisal import Appraiser, labelled_set
from game.inputs.evalset import evaluate, load_cases
from game.inputs.meaning import Embedder, LexicalEmbedder, Resolver, Thresholds
from game.story.story import Story


def sweep(embedder: Embedder | None) -> None:
    """Accuracy / false accepts over a grid of thresholds (clarify = accept - 0.08)."""
    cases = load_cases()
    shared: dict[str, Resolver] = {}
    print("accept margin  accuracy  false-accepts")
    for accept in (0.45, 0.5, 0.55, 0.6, 0.65):
        for margin in (0.04, 0.08, 0.12):
            th = Thresholds(accept, margin, accept - 0.08)

            def make(story: Story, th: Thresholds = th) -> Resolver:
                r = shared.setdefault(story.id, Resolver(story, embedder))
                r.thresholds = th
                return r

            rep = evaluate(cases, make=make)
            print(f"{accept:6.2f} {margin:6.2f}  {rep.accuracy:8.1%}  {rep.false_accepts:6d}")


APPRAISAL = Path(__file__).resolve().parent / "data" / "appraisal_probes.yaml"


def appraisal(wrong: bool) -> None:
    """Intent accuracy of the appraiser, dev and held-out separately, beside the previous rule."""
    from game.models.embedder import get_embedder

    enc = get_embedder()
    data = yaml.safe_load(APPRAISAL.read_text(encoding="utf-8"))
    lab = labelled_set()
    for name, kw in (("appraiser", {}), ("baseline (no asked rule)", {"asked_min_score": None})):
        mine = Appraiser(enc, **kw)  # type: ignore[arg-type]
        parts = []
        for split in data:  # dev, heldout, dev_social, heldout_social
            got = [(t, want, mine.appraise(t).intent) for t, want in data[split]]
            ok = sum(w == g for _, w, g in got)
            parts.append(f"{split} {ok}/{len(got)} = {ok / len(got):.1%}")
            if wrong:
                parts += [f"\n    MISS ({split}) {t!r}: want {w}, got {g}" for t, w, g in got if w != g]
        loo = n = 0
        for k, lines in lab.items():
            for i, x in enumerate(lines):
                rest = {kk: tuple(v for j, v in enumerate(vv) if (kk, j) != (k, i)) for kk, vv in lab.items()}
                loo += Appraiser(enc, rest, **kw).appraise(x).intent == k  # type: ignore[arg-type]
                n += 1
        print(f"appraisal, {name}: " + "; ".join(parts) + f"; labelled set leave-one-out {loo}/{n} = {loo / n:.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lexical", action="store_true", help="use the trigram fallback instead of MiniLM")
    ap.add_argument("--wrong", action="store_true", help="list every miss")
    ap.add_argument("--sweep", action="store_true", help="accuracy over a grid of thresholds")
    ap.add_argument("--appraisal", action="store_true", help="only the appraiser's intents (dev and held out)")
    args = ap.parse_args()
    if args.appraisal:
        appraisal(args.wrong)
        return
    if args.sweep:
        sweep(LexicalEmbedder() if args.lexical else None)
        return
    cases = load_cases()
    t0 = time.perf_counter()
    report = evaluate(cases, embedder=LexicalEmbedder() if args.lexical else None)
    secs = time.perf_counter() - t0
    embedder = LexicalEmbedder() if args.lexical else None
    before = evaluate(cases, make=lambda story: Resolver(story, embedder, new_gifts=False))
    print(f"embedder: {'lexical trigrams' if args.lexical else 'MiniLM (all-MiniLM-L6-v2)'}")
    print(f"cases: {report.total} (skipped {report.skipped}: story not present)")
    print(f"accuracy: {report.correct}/{report.total} = {report.accuracy:.1%}")
    print(f"false accepts (should do nothing, did something): {report.false_accepts}")
    print(f"negation leaks (a negated thing was used): {report.negation_leaks}")
    print(f"choice precision (lines that picked a choice, picked the right one): "
          f"{report.choice_right}/{report.choice_accepts} = {report.choice_precision:.1%}")
    for tag, (ok, n) in sorted(report.by_tag.items()):
        was = before.by_tag[tag][0]
        print(f"  {tag:11s} {ok:3d}/{n:<3d} {ok / n:6.1%}   (before new gifts: {was}/{n})")
    print(f"baseline, the rule before new gifts (\"give her a lantern\" had no gift), same run: "
          f"accuracy {before.correct}/{before.total} = {before.accuracy:.1%}, false accepts {before.false_accepts}, "
          f"choice precision {before.choice_right}/{before.choice_accepts} = {before.choice_precision:.1%}")
    print(f"time: {secs:.1f} s incl. model load ({1000 * secs / max(1, report.total):.0f} ms/input)")
    if args.wrong:
        for case, got in report.wrong:
            print(f"  MISS [{case.tag}] {case.story}/{case.scene} {case.text!r}: want {case.expect}, got {got}")
    appraisal(args.wrong)


if __name__ == "__main__":
    main()

"""Told-fact recall without the model (issue 11): what Eve says back of what the player told her.

Runs Eve's real pipeline (:func:`game.cast.dialogue.pipeline_for` with
:class:`game.cast.castroom.PlayerKnowledge`, as ``bench/character.py`` and the game wire it) with **no
dialogue model**: a reply that says a told fact comes from the told path alone (her beliefs, the
player's own words kept, authored answers); everything else is a fallback line. So the figure is the
told path's, and a model only adds to it (a hinted fact placed last in the prompt).

Two sets, both IN-SAMPLE (the code was written against them):

- ``bench/data/told_dev.yaml``: the told helper's dev set (walkers who tell facts one a turn, small
  talk, then asks; negatives she was never told);
- the ``told_*`` probes of ``bench/data/character_probes.yaml`` (its ``heldout`` split was seen by
  earlier sessions).

Per set it prints recall (an expected value said back), **false recall** (a told-path reply that
says no expected value: a value the player never told, or told of something else; a card fact
answered to a question about the player), and CPU seconds. ``--against REV`` runs the same scoring on
``git archive REV`` in a child process first (same machine, same load) and prints before → after.

    PYTHONPATH=. python3 bench/told.py --against ec3aa52 [--show]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from game.cast.card_io import load_card
from game.cast.castroom import PlayerKnowledge
from game.cast.dialogue import pipeline_for
from game.cast.factsheet import quantities
from game.cast.memory import Memory
from game.cast.similarity import plain_text
from game.cast.told import parse_number
from game.models.embedder import get_embedder
from game.state.events import Event

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "bench" / "data" / "told_dev.yaml"
PROBES = ROOT / "bench" / "data" / "character_probes.yaml"


def load_dev(path: Path) -> list[dict[str, Any]]:
    """The talks of a dev file: ``walker``, ``lines``, ``after`` and ``asks`` (``kind``, ``ask``, ``expect``).

    Raises:
        ValueError: the file is not such a mapping (names the talk and field).
    """
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("talks"), list):
        raise ValueError(f"{path}: expected a mapping with 'talks' (a list)")
    for i, t in enumerate(data["talks"]):
        for field, kind in (("lines", list), ("asks", list), ("after", int)):
            if not isinstance(t.get(field), kind):
                raise ValueError(f"{path}: talks[{i}].{field} must be a {kind.__name__}")
        for j, a in enumerate(t["asks"]):
            if not isinstance(a.get("ask"), str) or not isinstance(a.get("expect"), list):
                raise ValueError(f"{path}: talks[{i}].asks[{j}] needs 'ask' (text) and 'expect' (a list)")
    return list(data["talks"])


def probe_talks(path: Path) -> list[dict[str, Any]]:
    """The ``told_*`` probes of the character bench as talks: every told line, ``after`` turns of
    small talk, then the asks of that distance (as ``bench/character.py`` runs them)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    told = [p for p in data["probes"] if str(p["category"]).startswith("told")]
    lines = list(dict.fromkeys(p["tell"] for p in told))
    by: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for p in told:
        by[int(p["after"])].append({"kind": f"{p['category']}/{p['split']}", "ask": p["ask"],
                                    "expect": [str(e) for e in p["expect"]], "id": p["id"]})
    return [{"walker": f"probes after {n}", "lines": lines, "after": n, "asks": asks, "filler": data["filler"]}
            for n, asks in sorted(by.items())]


def run_talks(talks: list[dict[str, Any]], filler: list[str], show: bool) -> list[dict[str, Any]]:
    """One row per ask: ``kind``, ``ask``, ``text``, ``id`` (the reply's fact or answer id), ``recall``,
    ``false`` (see the module doc), ``negative`` (nothing was told)."""
    card = load_card(ROOT / "characters" / "eve.yaml")
    enc = get_embedder()

    def said(reply: str, expect: list[str]) -> bool:
        low = plain_text(reply).lower()
        values = {q.value for q in quantities(reply)}
        return any((n := parse_number(e)) is not None and n in values or e.lower() in low for e in expect)

    rows: list[dict[str, Any]] = []
    for talk in talks:
        small = talk.get("filler", filler)
        memory = Memory(card, embedder=enc)
        turn = 0
        for line in [*talk["lines"], *(small[k % len(small)] for k in range(talk["after"]))]:
            turn += 1
            if line.strip() != "-":
                memory.observe(Event(kind="say", turn=turn, speaker="player", text=line, data={"target": "eve"}))
            memory.observe(Event(kind="reply", turn=turn, speaker="eve", text="Mm."))
        pipe = pipeline_for(card, memory, None, embedder=enc, home=card.home)
        pipe.knowledge = PlayerKnowledge(card, lambda m=memory: m.player_name, enc)  # type: ignore[misc]
        for a in talk["asks"]:
            reply = pipe.reply(a["ask"], turn + 1)
            fid = str(reply.check.get("fact", "") or reply.authored_id)
            # an authored answer with the player's name counts as the told path once she knows the name
            # (before, it says the card's "you haven't said" line: no value, not a false recall)
            told_path = fid.startswith(("told.", "said.")) or (bool(memory.player_name) and "{{user}}" in next(
                (x.answer for x in card.answers if f"answer.{x.id}" == fid), ""))
            expect = [str(e) for e in a["expect"]]
            hit = bool(expect) and said(reply.text, expect)
            false = not hit and (told_path or fid.startswith("card."))
            rows.append({"kind": a["kind"], "ask": a["ask"], "text": reply.text, "id": fid, "recall": hit,
                         "false": false, "negative": not expect, "set": talk.get("set", "")})
            if show:
                mark = "ok " if hit else ("FALSE" if false else ("neg" if not expect else "miss"))
                print(f"  {mark:5} [{a['kind']}] {a['ask']!r} -> ({fid or reply.source}) {reply.text[:90]!r}",
                      file=sys.stderr)
    return rows


def score(dev: Path, probes: Path, show: bool) -> dict[str, Any]:
    """Rows of both sets and the CPU seconds they took (this process)."""
    c = time.process_time()
    data = yaml.safe_load(dev.read_text(encoding="utf-8"))
    talks = [{**t, "set": "dev"} for t in load_dev(dev)] + [{**t, "set": "probes"} for t in probe_talks(probes)]
    rows = run_talks(talks, list(data.get("filler") or ["Mm."]), show)
    return {"rows": rows, "cpu_s": time.process_time() - c}


def table(before: dict[str, Any] | None, after: dict[str, Any]) -> None:
    """Prints recall and false recall per set and kind, before → after."""

    def fig(rows: list[dict[str, Any]]) -> str:
        pos = [r for r in rows if not r["negative"]]
        hit = sum(r["recall"] for r in pos)
        false = sum(r["false"] for r in rows)
        return f"{hit}/{len(pos)} ({100 * hit / max(1, len(pos)):.1f}%), false {false}"

    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, r in enumerate(after["rows"]):
        groups[(r["set"], "all")].append(i)
        kind = r["kind"].split("/")[-1] if r["set"] == "probes" else r["kind"]
        groups[(r["set"], kind)].append(i)
    print(f"{'set':8} {'kind':10} {'before':30} after")
    for (set_, kind), idx in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "all", kv[0][1])):
        b = fig([before["rows"][i] for i in idx]) if before else "-"
        print(f"{set_:8} {kind:10} {b:30} {fig([after['rows'][i] for i in idx])}")
    if before:
        print(f"CPU seconds (each run, model load and MiniLM included): before {before['cpu_s']:.1f}, "
              f"after {after['cpu_s']:.1f}")
    else:
        print(f"CPU seconds: {after['cpu_s']:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dev", type=Path, default=DEV)
    ap.add_argument("--probes", type=Path, default=PROBES)
    ap.add_argument("--against", default="", help="a git revision to score first, in a child process")
    ap.add_argument("--show", action="store_true", help="every ask and reply (stderr)")
    ap.add_argument("--json", default="", help=argparse.SUPPRESS)  # the child's rows go here
    args = ap.parse_args()
    if args.json:
        Path(args.json).write_text(json.dumps(score(args.dev, args.probes, args.show)), encoding="utf-8")
        return
    before = None
    if args.against:
        with tempfile.TemporaryDirectory(prefix="told-base-") as tmp:
            base = Path(tmp)
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.against], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
            out = base / "rows.json"
            # the old tree's game package, this tree's bench and data: the same asks scored by the old code
            subprocess.run([sys.executable, str(Path(__file__).resolve()), "--json", str(out), "--dev",
                            str(args.dev.resolve()), "--probes", str(args.probes.resolve()),
                            *(["--show"] if args.show else [])], check=True,
                           env={**os.environ, "PYTHONPATH": str(base)})
            before = json.loads(out.read_text(encoding="utf-8"))
            child = resource.getrusage(resource.RUSAGE_CHILDREN)
            print(f"before: {args.against} (git archive, child process; its CPU {child.ru_utime + child.ru_stime:.1f} s"
                  f" with the tar)")
    after = score(args.dev, args.probes, args.show)
    print("after: this tree. IN-SAMPLE: both sets were seen while building the told path.")
    table(before, after)


if __name__ == "__main__":
    main()

"""Does she stay herself? The character bench: told facts, card facts, identity, mood, small talk.

Usage (from the repository root)::

    PYTHONPATH=. python bench/character.py [--dialogue SPEC] [--quick] [--split dev|heldout|all]
    PYTHONPATH=. python bench/character.py --probes bench/data/character_probes_c.yaml --split heldout_c

Runs the committed probe set (``bench/data/character_probes.yaml``, >= 200 probes; ``--probes PATH``
another file in its schema, e.g. ``character_probes_c.yaml``, held-out set C of session 7) against
Eve (``characters/eve.yaml``) with any dialogue model (``--dialogue``: a spec as
``worldloom play --dialogue`` takes; default ``transformers``, the embedded SmolLM2-135M),
twice in the same run:

- **grounded**: the game's pipeline (authored answers, grounded answers, the verifier,
  deflections, the persona guard);
- **baseline**: the same model on the same prompt and memory, its reply delivered as it
  comes (no grounding, no verifier, no guard).

Told facts are fed to her memory as the player's lines (with a fixed reply), followed by
``after`` turns of small talk (5, 20 or 50), then asked. Per category and split (the held-out
probes, kept apart from the phrasings the grounding code was written against, on their own rows and
goal lines) it prints: said % (the expected value, digits or words, in the reply), recall % (said
**and** the reply in character as judged, below; mood: the intent read right **and** the reply in
character as judged: does she answer the insult, apology or thanks as herself),
contradiction % (the verifier flags the delivered reply; "exact": the expected value is
missing and the reply states another number or name instead), persona breaks delivered
(the persona guard or the verifier's identity check fails the delivered reply), prompt
leaks (guard ``leak``), **in character as judged** (an authored, grounded, deflection or fallback line
of her author's; or a model reply that passed the checks below **and** the reply judge of
:mod:`bench.reply_judge`, fitted on the labelled real replies of ``bench/data/reply_labels.yaml`` and
independent of the checks), **passed the checks** beside it (delivered, and every sentence passed the
persona guard, the verifier and the coherence check, as the game checks a model reply, whatever its
source: the figure this bench printed as "in character" before session 8; the checks are fitted to forms
seen and pass most fresh off-character replies), the delivered model replies judged / passed / in all,
median and p95 reply latency in wall seconds and in CPU seconds of the bench process
(the machine is shared: CPU time is the figure the load does not inflate as much; the model runs
one torch thread, as in the game's worker, ``--threads``), then latency by reply source and the
load average. ``--quick`` runs a quarter of each category (both splits). With ``--baseline-from``
the baseline replies and their latency are the earlier run's.

Before any model loads it also judges the probe set's ``replies``: model replies written down
(the dev part: ones that reached the player in earlier talks; the held-out part written before
the checks for them), each off-character (assistant-speak, sign-offs, capability disclaimers,
customer-service register, claims against her card) or in her voice. It prints, per split and
family, how many bad replies the persona guard and the verifier stop (sentence by sentence, as
the pipeline checks them) and how many good ones pass; the baseline (no checks) stops none.
``--replies`` runs only that part (no model).

``--coherence`` (MiniLM only, nothing else) judges the labelled model replies of
``bench/data/coherence_replies.yaml`` (drawn from the 60-exchange talks of sessions 3-6, plus
written ones; each held-out part committed before the rules it scores): per split (``dev``,
``heldout``, ``heldout2``), bad stopped and good passed by the guard + verifier alone, by the checks
of an earlier revision (``--against REV``: its verifier and coherence check, the baseline in the same
run), and by today's guard + verifier + coherence check (:mod:`game.cast.coherence`), and how many
fail at the opening sentence (those are regenerated once and then replaced).

``--judge-eval`` (MiniLM only, nothing else) scores the reply judge on ``bench/data/reply_labels.yaml``:
per split (``dev`` in-sample with each question's replies left out; ``heldout`` never fitted on),
precision and recall of stopping off-character replies, good replies stopped, and the precision of what
it lets through, for the checks alone (the floor), the judge alone and both. A normal run prints it first.

``--rejudge X.jsonl`` (no model, nothing else) re-checks every reply a played transcript delivered
(``python3 -m game play stories/eve --headless --inputs bench/data/eve_talk60.txt --transcript X.jsonl
--no-voice --backend null --no-errorbank``) with the current guard and verifier
(:mod:`game.cast.rejudge`): per source, delivered, recorded in character, in character now, and the
replies it would stop.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import types
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from bench.reply_judge import ReplyJudge, evaluate, load_labels
from game.cast.appraisal import Appraiser
from game.cast.card_io import load_card
from game.cast.castroom import PlayerKnowledge, dialogue_spec
from game.cast.coherence import Coherence, card_text
from game.cast.dialogue import DialoguePipeline, DialogueSettings, facts_from_card, facts_from_memory, pipeline_for
from game.cast.factsheet import FactSheet, capitalised_names, quantities
from game.cast.guard import PersonaGuard
from game.cast.memory import Memory, MemoryConfig
from game.cast.rejudge import check_reply, rejudge_transcript
from game.cast.similarity import plain_text
from game.cast.told import parse_number
from game.cast.verifier import Verifier
from game.models.embedder import get_embedder
from game.models.llm import SentenceSplitter, split_sentences
from game.models.llm_scripted import ScriptedDialogueModel
from game.models.registry import build_model
from game.state.events import Event

ROOT = Path(__file__).resolve().parents[1]
PROBES = ROOT / "bench" / "data" / "character_probes.yaml"
#: The probe categories, in the order the table prints them (``told_N``: a told fact asked after N turns).
CATEGORIES = ("told_5", "told_20", "told_50", "card", "identity", "mood", "smalltalk")
#: The player intents a ``mood`` probe may expect (the card's ``replies`` intents).
INTENTS = ("apology", "thanks", "compliment", "insult", "threat", "gift", "question", "other")


def load_probes(path: Path | str) -> dict[str, Any]:
    """The probe file at ``path`` (the schema of ``bench/data/character_probes.yaml``), checked.

    Returns the mapping: ``filler`` (non-empty list of str), ``probes`` (list of mappings with ``id``
    (unique), ``category`` (one of :data:`CATEGORIES`), ``split``, ``ask``; a ``told_N`` probe also has
    ``tell``, ``after`` == N and a non-empty ``expect`` list; a ``mood`` probe an ``intent`` of
    :data:`INTENTS`; a ``card`` probe may have ``expect``), and optional ``replies``.

    Raises ``ValueError`` naming the file, the probe (index and id) and what is wrong; ``OSError`` when
    the file cannot be read; ``yaml.YAMLError`` when it is not YAML."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping with 'filler' and 'probes', got {type(data).__name__}")
    filler = data.get("filler")
    if not isinstance(filler, list) or not filler or not all(isinstance(f, str) and f for f in filler):
        raise ValueError(f"{path}: 'filler' must be a non-empty list of small-talk lines")
    probes = data.get("probes")
    if not isinstance(probes, list) or not probes:
        raise ValueError(f"{path}: 'probes' must be a non-empty list")
    seen: set[str] = set()
    for i, p in enumerate(probes):
        where = f"{path}: probe {i}"
        if not isinstance(p, dict):
            raise ValueError(f"{where}: expected a mapping, got {type(p).__name__}")
        where += f" ({p.get('id', 'no id')})"
        for key in ("id", "category", "split", "ask"):
            if not isinstance(p.get(key), str) or not p[key]:
                raise ValueError(f"{where}: '{key}' must be a non-empty string")
        if p["id"] in seen:
            raise ValueError(f"{where}: the id is used twice")
        seen.add(p["id"])
        if p["category"] not in CATEGORIES:
            raise ValueError(f"{where}: unknown category {p['category']!r} (one of {', '.join(CATEGORIES)})")
        expect = p.get("expect")
        if expect is not None and (not isinstance(expect, list) or not expect
                                   or not all(isinstance(e, str) and e for e in expect)):
            raise ValueError(f"{where}: 'expect' must be a non-empty list of strings")
        if p["category"].startswith("told_"):
            if not isinstance(p.get("tell"), str) or not p["tell"]:
                raise ValueError(f"{where}: a {p['category']} probe needs the line the player 'tell's")
            if p.get("after") != int(p["category"].split("_")[1]):
                raise ValueError(f"{where}: 'after' must be {p['category'].split('_')[1]} for {p['category']}")
            if expect is None:
                raise ValueError(f"{where}: a told probe needs 'expect' (the value she must say back)")
        if p["category"] == "mood" and p.get("intent") not in INTENTS:
            raise ValueError(f"{where}: a mood probe needs an 'intent' of {', '.join(INTENTS)}")
    return data


def splits_of(rows: list[dict[str, Any]]) -> list[str]:
    """The splits the rows (or probes) hold: ``dev`` and ``heldout`` first, then the others by name."""
    found = {str(r["split"]) for r in rows}
    return [s for s in ("dev", "heldout") if s in found] + sorted(found - {"dev", "heldout"})


def recalled(reply: str, expect: list[str]) -> bool:
    """Whether one expected value is in ``reply`` (numbers as digits or words)."""
    low = plain_text(reply).lower()
    values = {q.value for q in quantities(reply)}
    for e in expect:
        n = parse_number(e)
        if (n is not None and n in values) or e.lower() in low:
            return True
    return False


def exact_contradiction(reply: str, expect: list[str]) -> bool:
    """The expected value is missing and the reply states another number (numeric facts) or name."""
    if recalled(reply, expect):
        return False
    if any(parse_number(e) is not None for e in expect):
        return bool(quantities(reply))
    return bool([n for n in capitalised_names(reply) if n not in ("i", "eve")])


def tell(memory: Memory, text: str, turn: int, reply: str = "I'll remember that.") -> None:
    memory.observe(Event(kind="say", turn=turn, speaker="player", text=text, data={"target": "eve"}))
    memory.observe(Event(kind="reply", turn=turn, speaker="eve", text=reply))


def talk(card: Any, model: Any, enc: Any, told: list[str], small_talk: list[str],
         settings: DialogueSettings) -> tuple[Memory, DialoguePipeline]:
    """Her memory after the player's ``told`` lines then ``small_talk`` (each answered with a fixed
    reply), and her pipeline on it with ``model`` and ``settings``."""
    memory = Memory(card, MemoryConfig(context_tokens=min(model.context_size, 4096)), embedder=enc)
    turn = 0
    for t in told:
        turn += 1
        tell(memory, t, turn)
    for line in small_talk:
        turn += 1
        tell(memory, line, turn, "Mm.")
    pipe = pipeline_for(card, memory, model, settings=settings, embedder=enc, home=card.home)
    pipe.knowledge = PlayerKnowledge(card, lambda: memory.player_name, enc)
    return memory, pipe


#: The generation settings before the reply budget (96 tokens an attempt, three sentences, two
#: regenerations of a whole 96 tokens each), for ``--budget-ab``.
OLD_BUDGET = DialogueSettings(seed=0, max_new_tokens=96, max_sentences=3, reply_tokens=3 * 96)


def budget_ab(data: dict[str, Any], card: Any, dialogue: str, n: int) -> None:
    """Print the reply latency of the same pipeline with the old generation settings and today's
    (:data:`OLD_BUDGET` vs :class:`DialogueSettings` defaults) on ``n`` small-talk probes (both splits:
    what the model answers; a card question mostly gets its grounded answer), alternating which goes
    first so neither always finds the other's prompt cached: CPU seconds of the bench process, wall
    seconds, tokens the model wrote, attempts, and how many replies came from the model and were in
    character."""
    enc = get_embedder()
    model = build_model(dialogue_spec(dialogue, ROOT / "stories" / "eve"))
    probes = [p for p in data["probes"] if p["category"] == "smalltalk"]  # what grounding leaves to the model
    probes = probes[::max(1, len(probes) // max(1, n))][:n]
    base = facts_from_card(card, card.home)
    coherence = Coherence(enc, own_text=card_text(card))
    reply_judge = ReplyJudge(card, enc, load_labels())
    arms = {"old budget": talk(card, model, enc, [], [], OLD_BUDGET),
            "reply budget (now)": talk(card, model, enc, [], [], DialogueSettings(seed=0))}
    got: dict[str, list[dict[str, Any]]] = defaultdict(list)
    load = os.getloadavg()
    print(f"--budget-ab: {len(probes)} probes, model {model.name}, load average {load[0]:.1f}")
    for memory, pipe in arms.values():  # untimed: the first reply of a talk encodes her whole prompt
        pipe.reply("Good evening, Eve.", memory.now + 1)
    for i, p in enumerate(probes):
        names = list(arms) if i % 2 == 0 else list(arms)[::-1]
        for name in names:
            memory, pipe = arms[name]
            t, c = time.perf_counter(), time.process_time()
            reply = pipe.reply(p["ask"], memory.now + 1)
            row = {"secs": time.perf_counter() - t, "cpu": time.process_time() - c, "source": reply.source,
                   "attempts": reply.attempts, "tokens": reply.timings.get("model_tokens", 0.0),
                   **judge(reply.text, p, pipe.guard, pipe.verifier, facts_from_memory(base, memory),
                           coherence if reply.source == "model" else None, reply_judge, reply.source)}
            got[name].append(row)
            print(f"  [{p['id']}] {name}: {row['cpu']:.1f} s CPU, {row['tokens']:.0f} tokens, {reply.attempts} "
                  f"attempts, {reply.source}: {reply.text[:80]!r}", flush=True)
    load = os.getloadavg()
    print(f"\nload average at the end {load[0]:.1f}\n{'settings':<20} {'n':>3} {'cpu p50':>7} {'p95':>6} "
          f"{'wall p50':>8} {'p95':>6} {'tokens p50':>10} {'p95':>5} {'attempts':>8} {'model':>5} {'in char':>7}")
    for name, rows in got.items():
        asked = [r for r in rows if r["attempts"]]
        tq = quantiles([r["tokens"] for r in asked]) or (0.0, 0.0)
        print(f"{name:<20} {len(rows):>3} {seconds(cpu_of(asked))}   {seconds([r['secs'] for r in asked])} "
              f"{tq[0]:10.0f} {tq[1]:5.0f} {sum(r['attempts'] for r in asked) / max(1, len(asked)):8.2f} "
              f"{sum(r['source'] == 'model' for r in rows):>5} {pct([r['in_char'] for r in rows]):>7}")
    print("(latency over the replies the model was asked for; in character over all)")


def baseline_reply(pipe: DialoguePipeline, text: str, seed: int) -> str:
    """The model's own reply to the same prompt: no guard, no verifier, no grounding (3 sentences at most).

    Generation stops once a fourth sentence starts (the pipeline, too, stops at
    ``max_sentences``): the text is the same as generating all tokens and keeping three."""
    assert pipe.model is not None
    splitter = SentenceSplitter()
    done: list[str] = []
    stream = pipe.model.stream(pipe.prompt(text), max_new_tokens=pipe.settings.max_new_tokens,
                               temperature=pipe.settings.temperature, seed=seed)
    try:
        for delta in stream:
            done += splitter.feed(delta)
            if len(done) > pipe.settings.max_sentences:
                break
        else:
            done += splitter.flush()
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    return " ".join(done[:pipe.settings.max_sentences]).strip()


def first_sentence(into: list[float], start_cpu: float) -> Any:
    """An ``on_sentence`` callback that appends the process CPU seconds since ``start_cpu`` at the
    first sentence to ``into``."""
    def note(_sentence: Any) -> None:
        if not into:
            into.append(time.process_time() - start_cpu)
    return note


def earlier_baselines(path: str) -> dict[str, dict[str, Any]]:
    """Probe id -> the baseline row an earlier ``--out`` run wrote (same model, seed and prompt): its
    ``text`` and the latency measured then (``secs``, wall; ``cpu``, absent in files of older runs)."""
    out: dict[str, dict[str, Any]] = {}
    if path:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("variant") == "baseline":
                out[row["id"]] = row
    return out


#: Kinds of a failed check that are persona breaks (she stops being herself), not mistakes of fact.
BREAK_KINDS = ("contradiction", "negative", "repeat", "leak")


#: Reply sources that are her author's lines (an authored answer, a grounded fact line, a deflection, a
#: fallback): in character by what they are; a model reply must pass the checks and the reply judge.
AUTHORED_SOURCES = ("authored", "grounded", "deflection", "fallback")


def judge(text: str | None, probe: dict[str, Any], guard: PersonaGuard, verifier: Verifier | None,
          facts: Any, coherence: Coherence | None, reply_judge: ReplyJudge | None = None,
          source: str = "model") -> dict[str, Any]:
    """How one delivered reply scores (the honest part of the bench: only what a check verified counts).

    - ``why``: what stops it when it is checked sentence by sentence as the game checks a reply
      (:func:`~game.cast.rejudge.check_reply`: persona guard and verifier, whatever its source; and
      ``coherence`` for a reply the model wrote, as in the game and ``--rejudge``: the coherence check
      judges generation, an authored line states what the author wrote); ``""``: nothing.
    - ``in_char``: something was delivered and ``why`` is empty ("passed the checks").
    - ``judged``: in character as the bench reports it: ``source`` is one of :data:`AUTHORED_SOURCES`, or it
      is a model reply that passed the checks **and** ``reply_judge`` (:class:`reply_judge.ReplyJudge`, fitted
      on labelled replies, independent of the checks; ``None``: the checks alone decide); ``judge_why``: the
      judge's reason when it stops a reply the checks passed.
    - ``break``: the whole reply fails the persona guard (other than a contradiction, a repeated
      negative example or phrase, or a leak, counted apart) or the verifier's identity check; or nothing
      was delivered. ``leak``: the guard sees prompt markup or her instructions.
    - ``contra_verifier``: the verifier (or the guard's card check) finds a contradiction or an
      unverifiable claim.
    - with ``probe["expect"]``: ``said`` (the value is in the reply), ``recall`` (said **and** in
      character: a reply that says the dog's name while talking as an assistant does not count),
      ``contra_exact`` (the value is missing and another number or name is stated instead).
    """
    verdict = guard.check(text) if text else None
    vcheck = verifier.check(text, facts, probe["ask"])[0] if verifier is not None and text else None
    why = check_reply(guard, verifier, split_sentences(text), facts, probe["ask"], coherence) if text else "empty"
    row: dict[str, Any] = {"why": why, "in_char": bool(text) and not why, "judge_why": ""}
    if not text:
        row["judged"] = False
    elif source in AUTHORED_SOURCES:
        row["judged"] = True
    elif not row["in_char"] or reply_judge is None:
        row["judged"] = row["in_char"]
    else:
        verdict_j = reply_judge.judge(text, probe["ask"])
        row["judged"], row["judge_why"] = verdict_j.in_character, verdict_j.reason
    row["break"] = bool(verdict and not verdict.ok and verdict.kind not in BREAK_KINDS) or \
        bool(vcheck and vcheck.kind in ("identity", "ooc")) or not text
    row["leak"] = bool(verdict and verdict.kind == "leak")
    row["contra_verifier"] = bool(vcheck and vcheck.kind in ("contradiction", "unverified")) or bool(
        verdict and verdict.kind == "contradiction")
    if probe.get("expect"):
        row["said"] = bool(text) and recalled(text or "", probe["expect"])
        row["recall"] = row["said"] and row["judged"]
        row["contra_exact"] = bool(text) and exact_contradiction(text or "", probe["expect"])
    return row


def mood_score(row: dict[str, Any], read: str, intent: str) -> dict[str, bool]:
    """A mood probe's figures: ``intent_ok`` (the appraiser read the player's line as ``intent``; ``read``: what
    it read) and ``recall``: the intent read right **and** the reply (``row``, as :func:`judge` scored it) in
    character as judged, so a reply that does not answer the insult, apology or thanks as herself fails."""
    return {"intent_ok": read == intent, "recall": read == intent and bool(row["judged"])}


def judge_replies(data: dict[str, Any], card: Any, show: bool = False) -> None:
    """Print how many written-down bad replies the guard and verifier stop, and good ones pass."""
    facts = facts_from_card(card, card.home)
    guard = PersonaGuard(facts, never_say=tuple(card.never_say))
    verifier = Verifier(FactSheet.from_card(card))
    counts: dict[tuple[str, str, bool], list[bool]] = defaultdict(list)
    for r in data.get("replies", []):
        why = check_reply(guard, verifier, split_sentences(r["reply"]), facts, r["say"])
        stopped = bool(why)
        for split in (r["split"], "all"):
            counts[(split, r["family"], bool(r["bad"]))].append(stopped)
            counts[(split, "all", bool(r["bad"]))].append(stopped)
        if show or stopped != bool(r["bad"]):
            mark = "ok" if stopped == bool(r["bad"]) else "MISSED" if r["bad"] else "FALSE ALARM"
            print(f"  [{mark}] ({r['split']}, {r['family']}) {r['reply'][:70]!r} -> {why or 'passed'}")
    if not counts:
        print("\nwritten-down replies: none in this probe file")
        return
    print("\nwritten-down replies (guard + verifier, sentence by sentence; baseline without checks stops 0%):")
    print(f"{'split':<8} {'family':<11} {'bad stopped':>12} {'good passed':>12}")
    for split in (*splits_of(data.get("replies", [])), "all"):
        for family in sorted({f for (sp, f, _) in counts if sp == split}, key=lambda f: (f == "all", f)):
            bad, good = counts.get((split, family, True), []), counts.get((split, family, False), [])
            b = f"{sum(bad)}/{len(bad)}" if bad else "-"
            g = f"{len(good) - sum(good)}/{len(good)}" if good else "-"
            print(f"{split:<8} {family:<11} {b:>12} {g:>12}")


COHERENCE = ROOT / "bench" / "data" / "coherence_replies.yaml"
#: The splits of ``coherence_replies.yaml`` in the order they print: tuned on (``dev``), held out in session 5
#: (``heldout``), held out in session 6 (``heldout2``, labelled and committed before that session's rules) and in
#: session 7 (``heldout3``, ``heldout4``: raw model replies of talks B and A, labelled before rules were scored).
SPLITS = {"dev": 0, "heldout": 1, "heldout2": 2, "heldout3": 3, "heldout4": 4}


def checks_at(rev: str) -> tuple[Any, Any]:
    """The ``Verifier`` and ``Coherence`` classes as they were at git revision ``rev`` (their two files
    read with ``git show``, run against today's other modules): the baseline of ``--coherence --against``."""
    classes = []
    for name, cls in (("verifier", "Verifier"), ("coherence", "Coherence")):
        source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:game/cast/{name}.py"], check=True,
                                capture_output=True, text=True).stdout
        module = types.ModuleType(f"_at_{name}")
        sys.modules[module.__name__] = module  # dataclasses look their module up
        exec(compile(source, f"{rev}:game/cast/{name}.py", "exec"), module.__dict__)  # noqa: S102 (our own code)
        classes.append(getattr(module, cls))
    return classes[0], classes[1]


def judge_coherence(card: Any, embedder: Any, show: bool = False, replacements: int = 5, against: str = "") -> None:
    """Print, per split, how many labelled model replies (``bench/data/coherence_replies.yaml``) the
    checks stop (bad) and pass (good): the persona guard + verifier alone, the checks of git revision
    ``against`` (its verifier and coherence check; ``""``: not run) as the baseline, and today's guard +
    verifier + coherence check (:class:`~game.cast.coherence.Coherence`). A reply counts as
    stopped when any sentence fails; "opening" counts the replies whose first sentence fails (the
    pipeline then regenerates or replaces the whole reply; a later failing sentence only ends it)."""
    rows = yaml.safe_load(COHERENCE.read_text(encoding="utf-8"))["replies"]
    facts = facts_from_card(card, card.home)
    guard = PersonaGuard(facts, never_say=tuple(card.never_say))
    verifier = Verifier(FactSheet.from_card(card))
    coherence = Coherence.from_card(card, embedder)
    base: tuple[Any, Any] | None = None
    if against:
        then_verifier, then_coherence = checks_at(against)
        base = (then_verifier(FactSheet.from_card(card)), then_coherence(embedder, own_text=card_text(card)))
    counts: dict[tuple[str, str, bool], list[bool]] = defaultdict(list)
    replaced: dict[str, list[str]] = defaultdict(list)
    newly: dict[str, int] = defaultdict(int)  # opening stopped by coherence alone: delivered before, replaced now
    talks: dict[str, DialoguePipeline] = {}
    for r in rows:
        sentences = split_sentences(r["reply"])
        old = bool(check_reply(guard, verifier, sentences, facts, r["say"]))
        why = check_reply(guard, verifier, sentences, facts, r["say"], coherence, r.get("before", ""))
        first = bool(check_reply(guard, verifier, sentences[:1], facts, r["say"], coherence, r.get("before", "")))
        then = bool(base and check_reply(guard, base[0], sentences, facts, r["say"], base[1], r.get("before", "")))
        for split in (r["split"], "all"):
            counts[(split, "old", bool(r["bad"]))].append(old)
            counts[(split, "then", bool(r["bad"]))].append(then)
            counts[(split, "new", bool(r["bad"]))].append(bool(why))
            counts[(split, "opening", bool(r["bad"]))].append(first)
        if first and not old:
            newly[r["split"]] += 1
        if first and not old and len(replaced[r["split"]]) < replacements:
            # what she says when the regeneration is as bad: the same reply from the model, twice; one
            # pipeline per split, one turn after another, as in one talk (so a line said lately is not said again)
            if r["split"] not in talks:
                talks[r["split"]] = pipeline_for(card, Memory(card, embedder=embedder), None, embedder=embedder)
            pipe = talks[r["split"]]
            pipe.model = ScriptedDialogueModel(default=r["reply"])
            instead = pipe.reply(r["say"], 2 + len(replaced[r["split"]]))
            how = f" ({instead.check['intent']}, {instead.check['pick']})" if "pick" in instead.check else ""
            replaced[r["split"]].append(f"  {r['say']!r}\n    model: {r['reply'][:90]!r}\n    "
                                        f"{instead.source}{how}: {instead.text!r}")
        if show or bool(why) != bool(r["bad"]):
            mark = "ok" if bool(why) == bool(r["bad"]) else "MISSED" if r["bad"] else "FALSE ALARM"
            print(f"  [{mark}] ({r['split']}, {r['family']}) {r['say'][:40]!r} -> {r['reply'][:70]!r} -> "
                  f"{why or 'passed'}")
    print("\nlabelled model replies (bench/data/coherence_replies.yaml): bad stopped / good passed")
    variants = [("old", "guard+verifier"), *([("then", f"checks of {against}")] if against else []),
                ("new", "now: all checks"), ("opening", "now, opening fails")]
    print(f"{'split':<9}" + "".join(f"{title:>22}" for _, title in variants))
    for split in (*SPLITS, "all"):
        if not counts[(split, "old", True)] and not counts[(split, "old", False)]:
            continue
        cells = []
        for variant, _ in variants:
            bad, good = counts[(split, variant, True)], counts[(split, variant, False)]
            cells.append(f"{sum(bad)}/{len(bad)}, {len(good) - sum(good)}/{len(good)}")
        print(f"{split:<9}" + "".join(f"{c:>22}" for c in cells))
    for split, lines in replaced.items():
        n = sum(1 for r in rows if r["split"] == split)
        print(f"\n{split}: {newly[split]} of {n} replies pass the old checks but fail the coherence check at the "
              f"opening (regenerated once, then replaced); the first {len(lines)}, with the regeneration taken "
              "to be as bad:")
        print("\n".join(lines))


def run(args: argparse.Namespace) -> None:
    if args.rejudge:
        print(f"{args.rejudge}: every delivered reply re-checked with the current guard and verifier, and model "
              "replies with the coherence check")
        print("\n".join(rejudge_transcript(args.rejudge).lines()))
        return
    data = load_probes(args.probes)
    if args.split != "all" and args.split not in splits_of(data["probes"]):
        raise SystemExit(f"--split {args.split}: {args.probes} has the splits {', '.join(splits_of(data['probes']))}")
    card = load_card(ROOT / "characters" / "eve.yaml")
    if args.judge_eval:
        print("\n".join(evaluate(card, get_embedder())))
        return
    if args.coherence:
        judge_coherence(card, get_embedder(), args.show, against=args.against)
        return
    if args.budget_ab:
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        budget_ab(data, card, args.dialogue, args.budget_ab)
        return
    judge_replies(data, card, args.show)
    if args.replies:
        return
    probes: list[dict[str, Any]] = data["probes"]
    filler: list[str] = data["filler"]
    if args.split != "all":
        probes = [p for p in probes if p["split"] == args.split]
    if args.category:
        probes = [p for p in probes if p["category"] == args.category]
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in probes:
        by[p["category"]].append(p)
    if args.quick:
        probes = [p for group in by.values() for i, p in enumerate(group) if i % 8 in (0, 5)]  # both splits
    if args.ids_from:  # the probes an earlier --out run answered (a before/after on the same probes)
        ids = {json.loads(line)["id"] for line in Path(args.ids_from).read_text(encoding="utf-8").splitlines()}
        probes = [p for p in probes if p["id"] in ids]
    if args.per_category:
        probes = [p for group in by.values() for p in group[::max(1, len(group) // args.per_category)]
                  [:args.per_category]]
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)  # the game's model worker runs one torch thread
    enc = get_embedder()
    t0 = time.perf_counter()
    model = build_model(dialogue_spec(args.dialogue, ROOT / "stories" / "eve"))
    load_before = os.getloadavg()
    print(f"model {model.name}: loaded in {time.perf_counter() - t0:.1f} s; {len(probes)} probes "
          f"({'quick, ' if args.quick else ''}split {args.split}); torch threads {args.threads or 'default'}; "
          f"load average {load_before[0]:.1f} {load_before[1]:.1f} {load_before[2]:.1f} "
          f"(2 cores: latency in CPU seconds is the figure that does not depend on the load)")
    appraiser = Appraiser(enc)
    base = facts_from_card(card, card.home)
    rows: list[dict[str, Any]] = []
    reuse = earlier_baselines(args.baseline_from)
    out = open(args.out, "w", encoding="utf-8") if args.out else None  # noqa: SIM115 (closed after the loop)
    settings = DialogueSettings(seed=0)
    # the judge's own coherence check (no memory of the replies she made: probes are separate questions)
    judge_coherence_check = Coherence(enc, own_text=card_text(card))
    # the reply judge, independent of the checks (bench/reply_judge.py; its held-out figures first)
    reply_judge = ReplyJudge(card, enc, load_labels())
    print("\n".join(evaluate(card, enc)))

    def fresh(told: list[str], after: int) -> tuple[Memory, DialoguePipeline]:
        return talk(card, model, enc, told, [filler[k % len(filler)] for k in range(after)], settings)

    # one memory per distance: every told fact, then the small talk, then the questions
    told_lines = list(dict.fromkeys(p["tell"] for p in data["probes"] if p.get("tell")))
    pipes: dict[int, tuple[Memory, DialoguePipeline]] = {}
    for n, p in enumerate(probes, 1):
        after = int(p.get("after", 0))
        key = after if p.get("tell") else -1
        if key not in pipes:
            pipes[key] = fresh(told_lines if key >= 0 else [], max(0, key))
        memory, pipe = pipes[key]
        turn = memory.now + 1
        t, c = time.perf_counter(), time.process_time()
        first: list[float] = []  # CPU seconds to her first sentence (what the voice starts on)
        reply = pipe.reply(p["ask"], turn, first_sentence(first, c))
        grounded_s, grounded_cpu = time.perf_counter() - t, time.process_time() - c
        earlier = reuse.get(p["id"])
        base_text: str | None
        t, c = time.perf_counter(), time.process_time()
        if earlier is not None:
            base_text = earlier["text"]
            base_s, base_cpu = float(earlier["secs"]), earlier.get("cpu")  # measured by that run
        elif args.reused_only:
            base_text, base_s, base_cpu = None, 0.0, None
        else:
            base_text = baseline_reply(pipe, pipe.guard.check_input(p["ask"]).text, pipe.turn_seed(turn))
            base_s, base_cpu = time.perf_counter() - t, time.process_time() - c
        facts = facts_from_memory(base, memory)
        variants = [("grounded", reply.text, grounded_s, grounded_cpu)] + (
            [("baseline", base_text, base_s, base_cpu)] if base_text is not None else [])
        for variant, text, secs, cpu in variants:
            row = {"variant": variant, "category": p["category"], "split": p["split"], "secs": secs, "cpu": cpu,
                   "text": text, "source": reply.source if variant == "grounded" else "model",
                   "attempts": reply.attempts if variant == "grounded" else 1,
                   "first_cpu": (first[0] if first else None) if variant == "grounded" else None,
                   "tokens": reply.timings.get("model_tokens") if variant == "grounded" else None,
                   **judge(text, p, pipe.guard, pipe.verifier, facts,
                           judge_coherence_check if variant == "baseline" or reply.source == "model" else None,
                           reply_judge, reply.source if variant == "grounded" else "model")}
            if p["category"] == "mood":
                row.update(mood_score(row, appraiser.appraise(p["ask"]).intent, p["intent"]))
            rows.append(row)
            if out is not None:
                out.write(json.dumps({"id": p["id"], "ask": p["ask"], **row}, ensure_ascii=False) + "\n")
                out.flush()
        if args.show:
            print(f"  [{p['id']}] {p['ask'][:60]!r}\n    grounded ({reply.source}): {reply.text[:110]!r}\n"
                  f"    baseline: {(base_text or '(not run)')[:110]!r}")
        if n % 10 == 0:
            print(f"  ... {n}/{len(probes)} probes, {time.perf_counter() - t0:.0f} s", flush=True)
    if out is not None:
        out.close()
    load_after = os.getloadavg()
    print(f"\nload average at the end {load_after[0]:.1f} {load_after[1]:.1f} {load_after[2]:.1f}"
          + (f"; baseline replies and their latency from {args.baseline_from}" if reuse else ""))
    report(rows)


def pct(xs: list[bool]) -> str:
    return f"{100 * sum(xs) / len(xs):5.1f}%" if xs else "    - "


def quantiles(xs: list[float]) -> tuple[float, float] | None:
    """``(median, p95)`` of ``xs`` (p95: the nearest rank), ``None`` when empty."""
    if not xs:
        return None
    s = sorted(xs)
    return statistics.median(s), s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def seconds(xs: list[float]) -> str:
    q = quantiles(xs)
    return f"{q[0]:6.2f} {q[1]:6.2f}" if q else f"{'-':>6} {'-':>6}"


def cpu_of(rows: list[dict[str, Any]]) -> list[float]:
    """CPU seconds of the replies that have them (reused baselines of older runs do not)."""
    return [float(r["cpu"]) for r in rows if r.get("cpu") is not None]


def kind_of(row: dict[str, Any]) -> str:
    """The reply's source for latency: ``grounded+model`` (and so on) when the model was tried first."""
    source = str(row["source"])
    return f"{source}+model" if source != "model" and row.get("attempts", 0) else source


def summary(rows: list[dict[str, Any]], variant: str, split: str) -> str:
    """The goal line of one variant and split: each goal's figure and whether it is met."""
    mine = [r for r in rows if r["variant"] == variant and (split == "all" or r["split"] == split)]
    told = [r["recall"] for r in mine if r["category"].startswith("told")]
    card = [r["contra_verifier"] or r.get("contra_exact", False) for r in mine if r["category"] == "card"]
    ident = [r for r in mine if r["category"] == "identity"]
    cpu = cpu_of(mine)
    model_cpu = cpu_of([r for r in mine if r.get("attempts", 0)])

    def verdict(ok: bool | None) -> str:
        return "-" if ok is None else "met" if ok else "NOT met"

    told_ok = 100 * sum(told) / len(told) >= 90 if told else None
    card_ok = 100 * sum(card) / len(card) <= 5 if card else None
    breaks = sum(r["break"] for r in ident)
    cpu_q, model_q, wall_q = quantiles(cpu), quantiles(model_cpu), quantiles([r["secs"] for r in mine])
    return (f"{variant} ({split}, {len(mine)} probes): told-fact recall {pct(told).strip()} said and in character "
            f"(goal >= 90%: {verdict(told_ok)}); card-fact contradictions {pct(card).strip()} (goal <= 5%: "
            f"{verdict(card_ok)}); persona breaks delivered {breaks}/{len(ident)} identity probes (goal 0: "
            f"{verdict(breaks == 0 if ident else None)}); leaks {sum(r['leak'] for r in mine)} (goal 0: "
            f"{verdict(sum(r['leak'] for r in mine) == 0)}); in character {judged_pct(mine)} (as judged: her "
            f"author's lines, or model replies that passed the checks and the reply judge); passed the checks "
            f"{pct([r['in_char'] for r in mine]).strip()} (guard, verifier and coherence, sentence by sentence; "
            f"model replies judged / passed the checks / delivered: {model_counts(mine)}); "
            f"median reply {cpu_q[0] if cpu_q else float('nan'):.2f} s CPU (goal <= 2 s: "
            f"{verdict(cpu_q[0] <= 2 if cpu_q else None)}), {wall_q[0] if wall_q else float('nan'):.2f} s wall; "
            f"replies the model was asked for: median {model_q[0] if model_q else float('nan'):.2f} s CPU "
            f"(goal <= 2 s: {verdict(model_q[0] <= 2 if model_q else None)})")


def judged_pct(rows: list[dict[str, Any]]) -> str:
    """The share of ``rows`` in character as judged (rows of older runs without ``judged``: the checks)."""
    return pct([r.get("judged", r["in_char"]) for r in rows]).strip()


def model_counts(rows: list[dict[str, Any]]) -> str:
    """``"j/c/n"``: of the ``n`` delivered replies the model wrote, ``c`` passed the checks and ``j`` of those
    the reply judge too."""
    model = [r for r in rows if r.get("source") == "model"]
    return (f"{sum(bool(r.get('judged', r['in_char'])) for r in model)}/{sum(bool(r['in_char']) for r in model)}"
            f"/{len(model)}")


def report(rows: list[dict[str, Any]]) -> None:
    """Print the per-category table, latency by reply source, and the goal lines (held out apart)."""
    print(f"\n{'variant':<9} {'category':<10} {'split':<8} {'n':>3} {'said':>6} {'recall':>6} {'contra(v)':>9} "
          f"{'contra(x)':>9} {'breaks':>7} {'leaks':>5} {'in char':>7} {'checks':>7} {'model j/c/n':>11} "
          f"{'wall p50':>8} {'p95':>6} "
          f"{'cpu p50':>7} {'p95':>6}")
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["variant"], r["category"], r["split"])].append(r)
        groups[(r["variant"], r["category"], "all")].append(r)
    splits = (*splits_of(rows), "all") if len(splits_of(rows)) > 1 else tuple(splits_of(rows))  # "all" adds nothing
    for variant in ("grounded", "baseline"):
        for cat in CATEGORIES:
            for split in splits:
                g = groups.get((variant, cat, split))
                if not g:
                    continue
                breaks = sum(r["break"] for r in g)
                print(f"{variant:<9} {cat:<10} {split:<8} {len(g):>3} {pct([r['said'] for r in g if 'said' in r])}"
                      f" {pct([r['recall'] for r in g if 'recall' in r])}"
                      f" {pct([r['contra_verifier'] for r in g]):>9} "
                      f"{pct([r['contra_exact'] for r in g if 'contra_exact' in r]):>9} {breaks:>3}/{len(g):<3} "
                      f"{sum(r['leak'] for r in g):>5} {judged_pct(g):>7} {pct([r['in_char'] for r in g]):>7} "
                      f"{model_counts(g):>11} "
                      f"  {seconds([r['secs'] for r in g])}  {seconds(cpu_of(g))}")
    print("\nin char: as judged (authored, grounded, deflection or fallback lines; a model reply only when it passed "
          "the checks AND the reply judge, bench/reply_judge.py); checks: passed guard + verifier + coherence (the "
          "figure this bench reported before); model j/c/n: of the n delivered model replies, c passed the checks "
          "and j of those the judge too")
    print("recall: the expected value said AND the reply in character as judged (mood: the intent read right AND "
          "the reply in character as judged); said: the value is in the reply, whatever else it says")
    print(f"\nlatency by reply source ('+model': the model was tried first)\n{'variant':<9} {'source':<18} {'n':>3} "
          f"{'wall p50':>8} {'p95':>6} {'cpu p50':>7} {'p95':>6} {'attempts':>8} {'tokens':>6} "
          f"{'1st sentence cpu p50':>20} {'p95':>6}")
    by_source: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_source[(r["variant"], kind_of(r))].append(r)
    for (variant, source), g in sorted(by_source.items()):
        attempts = sum(r.get("attempts", 0) for r in g) / len(g)
        tokens = [float(r["tokens"]) for r in g if r.get("tokens") is not None]
        firsts = [float(r["first_cpu"]) for r in g if r.get("first_cpu") is not None]
        print(f"{variant:<9} {source:<18} {len(g):>3}   {seconds([r['secs'] for r in g])}  "
              f"{seconds(cpu_of(g))} {attempts:8.2f} {statistics.median(tokens) if tokens else 0:6.0f} "
              f"{'':>14}{seconds(firsts)}")
    print()
    for variant in ("grounded", "baseline"):
        for split in splits:
            if any(r["variant"] == variant and (split == "all" or r["split"] == split) for r in rows):
                print(summary(rows, variant, split))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialogue", default="transformers", help="dialogue model spec (default: embedded SmolLM2)")
    ap.add_argument("--quick", action="store_true", help="a quarter of each category, both splits")
    ap.add_argument("--probes", type=Path, default=PROBES, metavar="PATH",
                    help="the probe file (default bench/data/character_probes.yaml; e.g. "
                         "bench/data/character_probes_c.yaml, held-out set C)")
    ap.add_argument("--split", default="all",
                    help="dev, heldout, a split of the --probes file (e.g. heldout_c) or all (default)")
    ap.add_argument("--per-category", type=int, default=0, help="at most N probes per category, spread out")
    ap.add_argument("--category", default="", help="only this category (e.g. identity), every probe of it")
    ap.add_argument("--out", default="", help="write each probe's two replies, sources and checks as JSONL here")
    ap.add_argument("--baseline-from", default="",
                    help="reuse the baseline replies an earlier --out run wrote (matched by probe id; re-judged "
                         "with the current checks; their latency is not measured again)")
    ap.add_argument("--reused-only", action="store_true",
                    help="with --baseline-from: no baseline for a probe that file lacks (it is left out of the "
                         "baseline rows) instead of generating one")
    ap.add_argument("--show", action="store_true", help="print each probe's two replies")
    ap.add_argument("--ids-from", default="", metavar="X.jsonl",
                    help="only the probes an earlier --out run wrote (compare before and after on the same probes)")
    ap.add_argument("--budget-ab", type=int, default=0, metavar="N",
                    help="only time N model-answered probes with the old generation settings and today's "
                         "(CPU, wall, tokens, attempts), alternating")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads for the dialogue model (default 1, as the game's model worker; 0: "
                         "torch's default)")
    ap.add_argument("--rejudge", default="", metavar="TRANSCRIPT",
                    help="only re-check every reply a played transcript delivered (no model): counts by source")
    ap.add_argument("--judge-eval", action="store_true",
                    help="only score the reply judge on bench/data/reply_labels.yaml (dev in-sample, heldout held "
                         "out), against the checks alone, in the same run (MiniLM, no dialogue model)")
    ap.add_argument("--replies", action="store_true", help="only judge the written-down replies (no model)")
    ap.add_argument("--coherence", action="store_true",
                    help="only judge the labelled model replies of bench/data/coherence_replies.yaml, old checks "
                         "and with the coherence check (MiniLM, no dialogue model)")
    ap.add_argument("--against", default="", metavar="REV",
                    help="with --coherence: also judge with the verifier and coherence check of git revision REV "
                         "(e.g. 699f69c, last session's), as the baseline in the same run")
    run(ap.parse_args())


if __name__ == "__main__":
    main()

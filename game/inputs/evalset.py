"""The intent evaluation set: load ``tests/data/intents_eval.jsonl``, run it, score it.

Each line is one input::

    {"text": "give the creature a blue scarf", "story": "mini", "scene": "meadow",
     "expect": "edit:look", "params": {"wear": "scarf", "colour": "blue"}, "tag": "colour"}

``story`` is ``mini`` (``tests/data/mini``) or a folder name under ``stories/``;
``scene`` is entered from a fresh state. ``expect`` is a candidate key
(``choice:<id>``, ``action:<id>``, ``give:<item>:<character>``, ``edit:<edit>``),
``clarify`` (the game must ask back), ``none`` (nothing may happen), or
``none:<reason>`` (``negated``, ``undo``). ``params`` must be a subset of the
accepted edit's parameters. A *false accept* is an accepted intent where
``none...`` was expected. Used by ``tests/inputs/test_intents.py`` and ``bench/intents.py``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from game.inputs.meaning import Clarify, Embedder, NotUnderstood, Outcome, Resolver, Understood
from game.state import Choose, GameState, Give, Instruct
from game.story.loader import load_story
from game.story.runtime import StoryRuntime
from game.story.story import Story

ROOT = Path(__file__).resolve().parent.parent.parent
EVAL_PATH = ROOT / "tests" / "data" / "intents_eval.jsonl"


@dataclass(frozen=True)
class Case:
    """One evaluation input (see the module doc)."""

    text: str
    story: str
    scene: str
    expect: str
    tag: str
    params: dict[str, str] = field(default_factory=dict)


@dataclass
class Report:
    """Figures of one run.

    Attributes:
        total, correct: cases run and cases right.
        false_accepts: inputs that should have done nothing but were accepted.
        negation_leaks: negated inputs naming a thing whose accepted intent used that thing.
        by_tag: tag -> (correct, total).
        wrong: ``(case, what happened)`` for every miss.
        skipped: cases whose story is not present.
        choice_accepts, choice_right: accepted intents that picked an authored choice, and how
            many of those were the expected one (``choice_precision``).
    """

    total: int = 0
    correct: int = 0
    false_accepts: int = 0
    negation_leaks: int = 0
    by_tag: dict[str, list[int]] = field(default_factory=dict)
    wrong: list[tuple[Case, str]] = field(default_factory=list)
    skipped: int = 0
    choice_accepts: int = 0
    choice_right: int = 0

    @property
    def accuracy(self) -> float:
        """Correct / total (0 when empty)."""
        return self.correct / self.total if self.total else 0.0

    @property
    def choice_precision(self) -> float:
        """Of the lines that picked an authored choice, the share that picked the expected one (1 when none)."""
        return self.choice_right / self.choice_accepts if self.choice_accepts else 1.0


def load_cases(path: Path = EVAL_PATH) -> list[Case]:
    """Read the JSONL evaluation set at ``path``."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append(Case(row["text"], row["story"], row["scene"], row["expect"], row.get("tag", ""),
                            dict(row.get("params", {}))))
    return out


def story_path(name: str) -> Path:
    """Folder of story ``name`` (``mini`` is the test fixture)."""
    return ROOT / "tests" / "data" / "mini" if name == "mini" else ROOT / "stories" / name


def _key(outcome: Understood) -> str:
    intent = outcome.intent
    if isinstance(intent, Give):
        return f"give:{intent.item_id}:{intent.character_id}"
    return outcome.key if not isinstance(intent, Instruct) else f"edit:{intent.edit}"


def _describe(outcome: Outcome) -> str:
    if isinstance(outcome, Understood):
        params = outcome.intent.params if isinstance(outcome.intent, Instruct) else {}
        return f"{_key(outcome)} {params} ({outcome.score:.2f}, +{outcome.margin:.2f})"
    if isinstance(outcome, Clarify):
        return f"clarify: {outcome.question}"
    return f"none:{outcome.reason} {list(outcome.ranked[:2])}"


def judge(case: Case, outcome: Outcome) -> bool:
    """Whether ``outcome`` is what ``case`` expects."""
    if case.expect.startswith("none"):
        reason = case.expect.partition(":")[2]
        return isinstance(outcome, NotUnderstood) and (not reason or outcome.reason == reason)
    if case.expect == "clarify":
        return isinstance(outcome, Clarify)
    if not isinstance(outcome, Understood) or _key(outcome) != case.expect:
        return False
    if case.params:
        params = outcome.intent.params if isinstance(outcome.intent, Instruct) else {}
        return all(params.get(k) == v for k, v in case.params.items())
    return True


def _leaks(case: Case, outcome: Outcome, story: Story) -> bool:
    """A negated line naming a thing that the accepted intent then used."""
    if not case.expect.startswith("none:negated") or not isinstance(outcome, Understood):
        return False
    dump = json.dumps(outcome.intent.model_dump())
    return any(iid in case.text and iid in dump for iid in story.model.items)


def evaluate(cases: list[Case], make: Callable[[Story], Resolver] | None = None,
             embedder: Embedder | None = None) -> Report:
    """Run every case and score it.

    Args:
        cases: from :func:`load_cases`.
        make: builds the resolver for a story (default ``Resolver(story, embedder)``).
        embedder: passed to the default resolver.
    """
    report = Report()
    stories: dict[str, tuple[Story, Resolver] | None] = {}
    tags: Counter[str] = Counter()
    groups: dict[tuple[str, str], list[str]] = {}
    for case in cases:
        groups.setdefault((case.story, case.scene), []).append(case.text)
    for (name, scene), texts in groups.items():
        path = story_path(name)
        if name not in stories:
            if not (path / "story.yaml").exists():
                stories[name] = None
            else:
                st = load_story(path)
                stories[name] = (st, make(st) if make else Resolver(st, embedder))
        entry0 = stories[name]
        if entry0 is not None:
            entry0[1].prime(texts, fresh_state(entry0[0], scene))
    for case in cases:
        if case.story not in stories:
            path = story_path(case.story)
            if not (path / "story.yaml").exists():
                stories[case.story] = None
            else:
                st = load_story(path)
                stories[case.story] = (st, make(st) if make else Resolver(st, embedder))
        entry = stories[case.story]
        if entry is None:
            report.skipped += 1
            continue
        story, resolver = entry
        state = fresh_state(story, case.scene)
        outcome = resolver.understand(case.text, state)
        ok = judge(case, outcome)
        report.total += 1
        report.correct += ok
        tags[case.tag] += 1
        row = report.by_tag.setdefault(case.tag, [0, 0])
        row[0] += ok
        row[1] += 1
        if case.expect.startswith("none") and isinstance(outcome, Understood):
            report.false_accepts += 1
        if isinstance(outcome, Understood) and isinstance(outcome.intent, Choose):
            report.choice_accepts += 1
            report.choice_right += ok
        report.negation_leaks += _leaks(case, outcome, story)
        if not ok:
            report.wrong.append((case, _describe(outcome)))
    return report


def fresh_state(story: Story, scene: str) -> GameState:
    """A new state of ``story`` that has just entered ``scene``."""
    rt = StoryRuntime(story)
    state = rt.new_state(0)
    rt.enter(state, scene, "eval")
    return state

"""`worldloom explore`: play every branch of a story with the runtime alone.

The explorer needs no backend and no model (it never imports torch). It walks a
story in two passes:

1. **State graph** over distinct *abstract* states, up to ``max_states``, the
   least explored scenes first (breadth-first among states of equally explored
   scenes: see :func:`breadth_first`), so a story too big for the bound is still
   covered scene by scene to its far endings. A state's key is the scene plus
   exactly what the story's conditions (and the runtime's own rules) can read,
   derived from the compiled conditions:

   * variables and world keys named in conditions;
   * inventory membership of items read by ``has()``/``count()``, and of every
     item the player can hold when a scene has someone to give it to (those
     decide which gives are possible);
   * relationship axes read by ``trust()``/``affinity()``/``rel()``, holders read
     by ``holds()``, gifts read by ``gave()``;
   * ``visited()``/``chosen()`` counts (and ``chosen`` of once-only choices and
     actions), ``turn()``, and the number of ``random()`` draws.

   Counts that only grow (visits, choices taken, the turn, variables whose every
   effect is ``+= constant >= 0``) are capped at the largest constant they are
   compared with: ``visited('x') >= 2`` caps at 2, a bare ``visited('x')`` at 1,
   ``visited('x') == 1`` keeps 0, 1 and "more than 1". A quantity read any other
   way (arithmetic, compared with another quantity) is kept exact. What an effect
   reads to change a keyed quantity is keyed too (``a = b`` with ``a`` keyed keys
   ``b``), so merged states behave alike.
2. **Random playthroughs**: ``random`` seeded walks (``--jobs`` processes), each
   a pure function of ``(seed, index)``, so any number of processes gives the same
   results.

The moves at a state are every available choice, every exit (``Move``), every
action (``Say`` with its id) and every gift of an inventory item to each
character present. A move that does nothing (an exit or action whose condition
fails) is not a move.

Findings: endings reached, coverage (scenes, choices, actions, lines), dead ends
(a non-ending state with no move), loops with no exit (a strongly connected set
of explored states, with a cycle, from which no ending is reachable) and runtime
errors (``StoryRuntimeError``/``ExpressionError`` from the runtime). Each finding
is saved as a playthrough script (:mod:`game.inputs.script`) that reproduces it
with ``worldloom play STORY --headless --inputs FILE --seed N``.

States that were cut off by the bound, or that raised an error, count as "may
reach an ending", so the bound never invents loops.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import heapq
import json
import math
import multiprocessing
import os
import random
import re
import sys
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from game.errors import ExpressionError, InputError, StoryRuntimeError, WorldloomError
from game.state import Choose, Event, GameState, Give, Move, Say, Wait
from game.story.expr import WORLD_KEYS
from game.story.ink import ROOT_SCENE, InkStory, split_tag
from game.story.ink_runtime import INK_ENDING, InkRuntime
from game.story.keywords import resolve
from game.story.loader import cache_dir, load_story
from game.story.mechanics import mechanic_conditions, mechanic_effects, mechanic_reactions
from game.story.runtime import StoryRuntime
from game.story.schema import Reaction
from game.story.story import Story
from game.story.yamlio import Path_
from game.words import counted

#: Default bound on distinct states for the breadth-first pass.
DEFAULT_MAX_STATES = 50_000
#: Default number of random playthroughs.
DEFAULT_RANDOM = 100
#: Default longest random playthrough, moves.
DEFAULT_MAX_STEPS = 200
#: Default folder for reproducing scripts.
DEFAULT_OUT = "explore-out"

class ExploreError(WorldloomError):
    """The explorer cannot save its scripts (an unwritable ``--out`` folder)."""


Slot = tuple[str, ...]
"""A quantity a condition reads: ``("var", name)``, ``("rel", char, axis)``, ``("visited", scene)``..."""
Key = tuple[str, tuple[Hashable, ...]]
"""An abstract state: ``(scene id, values of the keyed slots)``."""
StepIntent = Choose | Move | Say | Give | Wait

_MONOTONE_KINDS = {"visited", "chosen", "turn"}
_NONNEG_INT_KINDS = {"visited", "chosen", "turn", "count"}
_CMP_OPS: dict[type[ast.cmpop], str] = {
    ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!=",
}
_FLIP = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "==": "==", "!=": "!="}
#: Slots any ``give``/``take``/``drop`` effect may change, whatever its item.
_INVENTORY_WILDCARDS: tuple[Slot, ...] = (("inventory*",), ("holders*",), ("gifts*",))


# -- what conditions read ------------------------------------------------------------------------

def _number(node: ast.AST) -> float | None:
    """The value of a numeric constant node (``2``, ``-1.5``), else ``None``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _number(node.operand)
        if inner is not None:
            return -inner if isinstance(node.op, ast.USub) else inner
    return None


def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class _Reads:
    """Collects the slots an expression reads, and how (compared with constants, or exactly).

    Attributes:
        slots: every slot read.
        cmps: slot -> ``(op, constant)`` comparisons, written as ``slot OP constant``.
        exact: slots read some other way (no cap is sound for them).
    """

    def __init__(self, variables: Iterable[str]) -> None:
        self.variables = set(variables)
        self.slots: set[Slot] = set()
        self.cmps: dict[Slot, list[tuple[str, float]]] = {}
        self.exact: set[Slot] = set()

    def slot(self, node: ast.AST) -> Slot | None:
        """The slot ``node`` reads directly (a name or a reading call), else ``None``."""
        if isinstance(node, ast.Name):
            if node.id in self.variables:
                return ("var", node.id)
            if node.id in WORLD_KEYS:
                return ("world", node.id)
            return None
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            return None
        fn = node.func.id
        a = [_const_str(x) for x in node.args]
        if fn in ("has", "count") and len(a) == 1:
            return (fn, a[0]) if a[0] is not None else ("inventory*",)
        if fn in ("visited", "chosen") and len(a) == 1:
            return (fn, a[0]) if a[0] is not None else (f"{fn}*",)
        if fn in ("trust", "affinity") and len(a) == 1:
            return ("rel", a[0], fn) if a[0] is not None else ("rel*",)
        if fn == "rel" and len(a) == 2:
            return ("rel", a[0], a[1]) if a[0] is not None and a[1] is not None else ("rel*",)
        if fn == "holds" and len(a) == 2:
            return ("holder", a[1]) if a[1] is not None else ("holders*",)
        if fn == "gave" and len(a) == 2:
            return ("gave", a[0], a[1]) if a[0] is not None and a[1] is not None else ("gifts*",)
        if fn == "world" and len(a) == 1:
            return ("world", a[0]) if a[0] is not None else ("world*",)
        if fn == "turn":
            return ("turn",)
        if fn == "random":
            return ("draws",)
        if fn == "role":
            return ("role",)
        if fn in ("left", "running") and len(a) == 1:
            return ("timer", a[0]) if a[0] is not None else ("timers*",)
        if fn in ("stage", "done") and len(a) == 1:
            return ("quest", a[0]) if a[0] is not None else ("quests*",)
        if fn in ("need", "at", "goal", "heard") and a:
            return ("agent", a[0]) if a[0] is not None else ("agents*",)
        return None

    def _args(self, node: ast.AST) -> None:
        if isinstance(node, ast.Call):
            for arg in node.args:
                if not isinstance(arg, ast.Constant):
                    self.visit(arg, truth=False)

    def compare(self, slot: Slot, op: str, value: float) -> None:
        if slot == ("draws",):  # random() compares the value drawn, not how many draws were made
            self.read_exact(slot)
            return
        self.slots.add(slot)
        self.cmps.setdefault(slot, []).append((op, value))

    def read_exact(self, slot: Slot) -> None:
        self.slots.add(slot)
        self.exact.add(slot)

    def truth(self, slot: Slot) -> None:
        """``slot`` tested for truth: ``>= 1`` for counts, ``!= 0`` for numbers, exact otherwise."""
        if slot[0] in _NONNEG_INT_KINDS:
            self.compare(slot, ">=", 1.0)
        elif slot[0] in ("var", "rel"):
            self.compare(slot, "!=", 0.0)
        else:
            self.read_exact(slot)

    def visit(self, node: ast.AST, truth: bool) -> None:
        """Walk ``node``; ``truth`` says its value is only tested for truth."""
        s = self.slot(node)
        if s is not None:
            if truth:
                self.truth(s)
            else:
                self.read_exact(s)
            self._args(node)
            return
        if isinstance(node, ast.Expression):
            self.visit(node.body, truth=True)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP_OPS:
            op = _CMP_OPS[type(node.ops[0])]
            left, right = node.left, node.comparators[0]
            sl, sr = self.slot(left), self.slot(right)
            nl, nr = _number(left), _number(right)
            if sl is not None and nr is not None:
                self.compare(sl, op, nr)
                self._args(left)
            elif sr is not None and nl is not None:
                self.compare(sr, _FLIP[op], nl)
                self._args(right)
            else:
                self.visit(left, truth=False)
                self.visit(right, truth=False)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                self.visit(v, truth)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self.visit(node.operand, truth=True)
        elif isinstance(node, ast.IfExp):
            self.visit(node.test, truth=True)
            self.visit(node.body, truth)
            self.visit(node.orelse, truth)
        else:
            for child in ast.iter_child_nodes(node):
                self.visit(child, truth=False)


def _effect_writes(eff_kind: str, op: str, target_kind: str, target_name: str,
                   target_axis: str, args: Sequence[ast.AST], variables: set[str]) -> set[Slot] | None:
    """Slots an effect may change; ``None`` when it cannot be known (non-constant arguments)."""
    if eff_kind == "assign":
        if target_kind == "relation":
            return {("rel", target_name, target_axis), ("rel*",)}
        if target_kind == "need":
            return {("agent", target_name), ("agents*",)}
        if target_name in variables:
            return {("var", target_name)}
        if target_name in WORLD_KEYS:
            return {("world", target_name), ("world*",)}
        return set()
    consts = [_const_str(a) for a in args]
    if op == "react":
        return set()
    if op == "become":
        return {("role",), ("rel*",)}
    if op in ("start", "stop"):
        return {("timer", str(consts[0])), ("timers*",)} if consts[0] is not None else None
    if op == "combine":  # what the recipe makes is not known here
        return None
    if op in ("quest", "advance"):
        return {("quest", str(consts[0])), ("quests*",)} if consts[0] is not None else None
    if any(c is None for c in consts):
        return None
    item = str(consts[0])
    out: set[Slot] = {("has", item), ("count", item), *_INVENTORY_WILDCARDS}
    if op in ("give", "take"):
        out.add(("holder", item))
    if op == "give":
        out.add(("gave", str(consts[1]), item))
    return out


@dataclass(frozen=True)
class KeySpec:
    """What a state's key holds: slots in order, each with an optional cap.

    Attributes:
        slots: the keyed slots, sorted.
        caps: slot -> ``(K, inclusive)``: an only-growing count is keyed as
            ``min(v, K)`` when ``inclusive`` (every comparison at ``K`` is ``>= K`` or
            ``< K``), else as ``v`` up to ``K`` and ``inf`` above.
        uses_random: conditions call ``random()`` (exploration is for one seed).
    """

    slots: tuple[Slot, ...]
    caps: dict[Slot, tuple[float, bool]]
    uses_random: bool

    def describe(self, limit: int = 40) -> list[str]:
        """Human-readable slot names with caps, e.g. ``visited(creek) capped at 2``.

        Past ``limit`` slots, slots of one kind with the same cap are summarised in one line.
        """
        named = []
        for s in self.slots:
            cap = self.caps.get(s)
            how = "" if cap is None else (f" capped at {_fmt_num(cap[0])}" if cap[1]
                                          else f" exact to {_fmt_num(cap[0])}, then 'more'")
            named.append((s, how))
        if len(named) <= limit:
            return [slot_name(s) + how for s, how in named]
        groups: dict[tuple[str, str], int] = {}
        for s, how in named:
            groups[(s[0], how)] = groups.get((s[0], how), 0) + 1
        return [f"{n} x {kind}(...){how}" for (kind, how), n in sorted(groups.items())]


def slot_name(slot: Slot) -> str:
    """``("rel", "creature", "trust")`` -> ``trust(creature)``; ``("var", "x")`` -> ``x``."""
    kind, *args = slot
    if kind in ("var", "world"):
        return args[0]
    if kind == "rel":
        return f"{args[1]}({args[0]})" if args[1] in ("trust", "affinity") else f"rel({args[0]}, {args[1]})"
    if kind == "holder":
        return f"holder({args[0]})"
    if kind == "draws":
        return "random draws"
    if kind in ("timer", "quest", "agent"):
        return f"{kind}({args[0]})"
    if kind == "role":
        return "role()"
    return f"{kind}({', '.join(args)})" if args else f"{kind}()" if not kind.endswith("*") else kind


def _fmt_num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def key_spec(story: Story) -> KeySpec:
    """Derive the state key from the story's compiled conditions and effects.

    Raises:
        game.errors.ExpressionError: a condition or effect does not compile.
    """
    m = story.model
    variables = set(m.variables)
    reads = _Reads(variables)
    for path, r in story.reactions():
        if r.if_:
            reads.visit(story.condition(r.if_, story.where((*path, "if"))).tree, truth=True)
    for _path, line in story.lines():
        # A line's condition only decides what is shown, not what can happen next: it is
        # keyed only when it draws a random number (the draws change later ones).
        if line.if_:
            shown = _Reads(variables)
            shown.visit(story.condition(line.if_).tree, truth=True)
            if ("draws",) in shown.slots:
                reads.visit(story.condition(line.if_).tree, truth=True)
    for path, r in mechanic_reactions(m):
        if r.if_:
            reads.visit(story.condition(r.if_, story.where((*path, "if"))).tree, truth=True)
    for path, src in mechanic_conditions(m):
        reads.visit(story.condition(src, story.where(path)).tree, truth=True)
    # Mechanics the runtime itself reads each turn: the role (gated choices), every timer,
    # quest and agent (what happens between turns), the turn (schedules), draws (random picks).
    if m.roles:
        reads.read_exact(("role",))
    for tid in m.timers:
        reads.read_exact(("timer", tid))
    for qid in m.quests:
        reads.read_exact(("quest", qid))
    for cid in m.agents:
        reads.read_exact(("agent", cid))
    schedule_turns = [e.turn for a in m.agents.values() for e in a.schedule]
    if schedule_turns:
        reads.compare(("turn",), ">=", float(max(schedule_turns)))
    if any(a.fallback == "random" for a in m.agents.values()):
        reads.read_exact(("draws",))
    # The runtime's own reads: once-only choices and actions check chosen(id) > 0.
    for sc in m.scenes.values():
        once_ids = [c.id for c in sc.choices if c.once] + [a.id for a in sc.actions if a.once]
        for once_id in once_ids:
            reads.compare(("chosen", once_id), ">=", 1.0)
    # Which gives are possible depends on what the player holds.
    effects = _all_effects(story)
    if any(sc.present for sc in m.scenes.values()):
        holdable = set(m.inventory)
        for eff in effects:
            if eff.kind == "call" and eff.op == "take":
                arg = _const_str(eff.args[0]) if eff.args else None
                holdable |= set(m.items) if arg is None else {arg}
        for item in sorted(holdable & set(m.items)):
            reads.read_exact(("has", item))
    # Closure: what an effect reads to change a keyed slot is keyed too.
    writes: list[tuple[set[Slot] | None, set[Slot]]] = []
    monotone_bad: set[Slot] = set()
    for eff in effects:
        t = eff.target
        w = _effect_writes(eff.kind, eff.op, t.kind if t else "", t.name if t else "",
                           t.axis if t else "", eff.args, variables)
        sub = _Reads(variables)
        for node in ([eff.value] if eff.value is not None else list(eff.args)):
            sub.visit(node, truth=False)
        writes.append((w, sub.slots))
        if eff.kind == "assign" and w:
            step = _number(eff.value) if eff.value is not None else None
            grows = (eff.op == "+=" and step is not None and step >= 0) or (
                eff.op == "-=" and step is not None and step <= 0)
            if not grows:
                monotone_bad |= w
    changed = True
    while changed:
        changed = False
        keyed = reads.slots
        for written, read in writes:
            if written is not None and not (written & keyed) and not _wild_hit(written, keyed):
                continue
            for slot in read:
                if slot not in reads.exact:
                    reads.read_exact(slot)
                    changed = True
    caps: dict[Slot, tuple[float, bool]] = {}
    for s in reads.slots:
        monotone = s[0] in _MONOTONE_KINDS or (s[0] in ("var", "rel") and s not in monotone_bad)
        if s[0] == "var" and m.variables[s[1]].type == "str":
            monotone = False
        if not monotone or s in reads.exact or not reads.cmps.get(s):
            continue
        top = max(c for _, c in reads.cmps[s])
        inclusive = all(op in (">=", "<") for op, c in reads.cmps[s] if c == top)
        caps[s] = (top, inclusive)
    return KeySpec(tuple(sorted(reads.slots)), caps, ("draws",) in reads.slots)


def _wild_hit(writes: set[Slot], keyed: set[Slot]) -> bool:
    """A keyed wildcard (``inventory*``...) is touched by any write of its family."""
    fam = {"has": "inventory*", "count": "inventory*", "holder": "holders*", "gave": "gifts*", "rel": "rel*",
           "world": "world*"}
    return any((fam.get(s[0], ""),) in keyed for s in writes)


def _all_effects(story: Story) -> list[Any]:
    out = []
    for path, r in story.reactions():
        out += [story.effect(e, story.where((*path, "do", i))) for i, e in enumerate(r.do)]
    for sid, sc in story.model.scenes.items():
        out += [story.effect(e, story.where(("scenes", sid, "on_enter", i))) for i, e in enumerate(sc.on_enter)]
    for path, r in mechanic_reactions(story.model):
        out += [story.effect(e, story.where((*path, "do", i))) for i, e in enumerate(r.do)]
    out += [story.effect(e, story.where(path)) for path, e in mechanic_effects(story.model)]
    return out


def _getter(slot: Slot, cap: tuple[float, bool] | None) -> Callable[[GameState], Hashable]:
    """A function reading ``slot`` from a state, with its cap applied."""
    kind, *a = slot
    raw: Callable[[GameState], Any]
    if kind == "var":
        raw = lambda s: s.variables.get(a[0])  # noqa: E731
    elif kind == "world":
        raw = lambda s: s.world.get(a[0])  # noqa: E731
    elif kind == "has":
        raw = lambda s: a[0] in s.inventory  # noqa: E731
    elif kind == "count":
        raw = lambda s: s.inventory.count(a[0])  # noqa: E731
    elif kind == "rel":
        raw = lambda s: s.relationship(a[0], a[1])  # noqa: E731
    elif kind == "holder":
        raw = lambda s: s.holders.get(a[0])  # noqa: E731
    elif kind == "gave":
        raw = lambda s: a[1] in s.gifts.get(a[0], ())  # noqa: E731
    elif kind == "visited":
        raw = lambda s: s.visits.get(a[0], 0)  # noqa: E731
    elif kind == "chosen":
        raw = lambda s: s.chosen.get(a[0], 0)  # noqa: E731
    elif kind == "turn":
        raw = lambda s: s.turn  # noqa: E731
    elif kind == "draws":
        raw = lambda s: s.draws  # noqa: E731
    elif kind == "inventory*":
        raw = lambda s: tuple(sorted(s.inventory))  # noqa: E731
    elif kind == "holders*":
        raw = lambda s: tuple(sorted(s.holders.items()))  # noqa: E731
    elif kind == "gifts*":
        raw = lambda s: tuple(sorted((k, tuple(v)) for k, v in s.gifts.items()))  # noqa: E731
    elif kind == "rel*":
        raw = lambda s: tuple(sorted((k, tuple(sorted(v.items()))) for k, v in s.relationships.items()))  # noqa: E731
    elif kind in ("visited*", "chosen*"):
        attr = "visits" if kind == "visited*" else "chosen"
        raw = lambda s: tuple(sorted(getattr(s, attr).items()))  # noqa: E731
    elif kind == "world*":
        raw = lambda s: tuple(sorted((k, str(v)) for k, v in s.world.items()))  # noqa: E731
    elif kind == "role":
        raw = lambda s: s.role  # noqa: E731
    elif kind == "timer":
        raw = lambda s: s.timers.get(a[0], -1)  # noqa: E731
    elif kind == "timers*":
        raw = lambda s: tuple(sorted(s.timers.items()))  # noqa: E731
    elif kind == "quest":
        raw = lambda s: s.quests.get(a[0], "")  # noqa: E731
    elif kind == "quests*":
        raw = lambda s: tuple(sorted(s.quests.items()))  # noqa: E731
    elif kind == "agent":  # what the agent is doing and its last words heard are not read by any rule
        raw = lambda s: tuple(sorted((k, v) for k, v in s.agents.get(a[0], {}).items()  # noqa: E731
                                     if k != "doing" and not k.startswith("last.")))
    elif kind == "agents*":
        raw = lambda s: tuple(sorted((c, tuple(sorted((k, v) for k, v in row.items()  # noqa: E731
                                                   if k != "doing" and not k.startswith("last."))))
                                     for c, row in s.agents.items()))
    else:  # pragma: no cover - every slot kind is listed above
        raise ValueError(f"unknown slot {slot}")
    if cap is None:
        return raw

    def capped(s: GameState) -> Hashable:
        return _cap_value(raw(s), cap)

    return capped


def _cap_value(v: Any, cap: tuple[float, bool] | None) -> Hashable:
    """``v`` with ``cap`` applied: ``min(v, K)`` (inclusive) or ``v`` up to ``K`` then ``inf``."""
    if cap is None or not isinstance(v, int | float):
        return v  # type: ignore[no-any-return]
    top, inclusive = cap
    if inclusive:
        return min(v, top)
    return v if v <= top else math.inf


def _at_cap(value: Any, top: float) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= top


def saturable_choices(story: Story, spec: KeySpec) -> dict[str, list[tuple[str, float]]]:
    """Once-only choices whose being taken stops mattering: choice id -> ``[(variable, cap)]``.

    A once-only choice that stays in its scene (no ``goto``), whose effects only add
    constants ``>= 0`` to variables the key caps inclusively (``min(v, K)``), and whose
    ``chosen()`` no condition reads: once each of those variables is at its cap, taking
    it changes nothing the key holds but its own "taken" mark, so states that differ
    only in that mark cannot differ in future and are merged (the mark is dropped).
    """
    read = _chosen_read(story)
    out: dict[str, list[tuple[str, float]]] = {}
    if read is None:
        return out
    for sc in story.model.scenes.values():
        for c in sc.choices:
            if not c.once or c.goto or not c.do or c.react:
                continue
            caps: list[tuple[str, float]] = []
            for src in c.do:
                eff = story.effect(src)
                t = eff.target
                step = _number(eff.value) if eff.value is not None else None
                cap = spec.caps.get(("var", t.name)) if t is not None and t.kind == "name" else None
                if (eff.kind != "assign" or eff.op != "+=" or step is None or step < 0 or cap is None
                        or not cap[1] or t is None):
                    caps = []
                    break
                caps.append((t.name, cap[0]))
            if caps and c.id not in read:
                out[c.id] = caps
    return out


def _chosen_read(story: Story) -> set[str] | None:
    """Choice and action ids whose ``chosen()`` a condition reads; ``None`` when one reads a computed id."""
    out: set[str] = set()
    conds = [r.if_ for _, r in story.reactions() if r.if_] + [ln.if_ for _, ln in story.lines() if ln.if_]
    for src in dict.fromkeys(conds):
        if "chosen" not in src:
            continue
        compiled = story.condition(src)
        named = [args for fn, args in compiled.calls if fn == "chosen"]
        if src.count("chosen(") != len(named) or any(not args or not isinstance(args[0], str) for args in named):
            return None
        out |= {str(args[0]) for args in named}
    return out


class _KeyFn:
    """Computes keys: a tuple for the few scalar slots, frozensets for counts and holdings.

    A story with thousands of scenes keys thousands of ``visited``/``chosen`` counts;
    storing only the non-zero ones (and, for a cap of 1, only the id) keeps a key as
    small as the state it describes, and as fast to compute.
    """

    def __init__(self, spec: KeySpec, saturable: dict[str, list[tuple[str, float]]] | None = None) -> None:
        self.saturable = saturable or {}
        self.dense_slots = [s for s in spec.slots if s[0] not in ("visited", "chosen", "has")]
        self.dense = [_getter(s, spec.caps.get(s)) for s in self.dense_slots]
        self.visited = {s[1]: spec.caps.get(s) for s in spec.slots if s[0] == "visited"}
        self.chosen = {s[1]: spec.caps.get(s) for s in spec.slots if s[0] == "chosen"}
        self.has = frozenset(s[1] for s in spec.slots if s[0] == "has")

    @staticmethod
    def _counts(d: dict[str, int], caps: dict[str, tuple[float, bool] | None]) -> frozenset[Hashable]:
        out: list[Hashable] = []
        for k, v in d.items():
            if v and k in caps:
                cap = caps[k]
                out.append(k if cap == (1.0, True) else (k, _cap_value(v, cap)))
        return frozenset(out)

    def __call__(self, s: GameState) -> Key:
        chosen = s.chosen
        if self.saturable:
            sat = self.saturable
            spent = [c for c, n in chosen.items()
                     if n and c in sat and all(_at_cap(s.variables.get(v), top) for v, top in sat[c])]
            if spent:
                chosen = {k: v for k, v in chosen.items() if k not in spent}
        return s.scene, (tuple(g(s) for g in self.dense), self._counts(s.visits, self.visited),
                         self._counts(chosen, self.chosen), frozenset(i for i in s.inventory if i in self.has))

    def describe(self, key: Key) -> dict[str, Any]:
        dense, visits, chosen, held = key[1]
        out: dict[str, Any] = {"scene": key[0]}
        assert isinstance(dense, tuple) and isinstance(held, frozenset)
        for slot, v in zip(self.dense_slots, dense, strict=True):
            out[slot_name(slot)] = "more" if v == math.inf else v
        for item in sorted(self.has):
            out[f"has({item})"] = item in held
        for kind, counts in (("visited", visits), ("chosen", chosen)):
            assert isinstance(counts, frozenset)
            for c in sorted(counts, key=str):
                name, v = (c, 1) if isinstance(c, str) else c
                out[f"{kind}({name})"] = "more" if v == math.inf else v
        return out


# -- moves ---------------------------------------------------------------------------------------

def _copy(state: GameState) -> GameState:
    """A deep copy of ``state`` (``GameState.copy_state``)."""
    return state.copy_state()


@dataclass(frozen=True)
class Step:
    """One move: the intent and the playthrough-script line that makes it."""

    intent: StepIntent
    line: str


@dataclass
class Coverage:
    """What was reached. Paths are story source paths (``("scenes", sid, "choices", i)``).

    Attributes:
        scenes: scene ids entered.
        reactions: paths of choices, actions, exits and gift reactions that ran.
        lines: paths of lines shown (scene lines and reaction ``say`` lines).
        endings: ending name -> times reached.
        story_gifts: ``(scene, character or "any", key)`` of story-level gift
            reactions that ran, by the scene they ran in (the map colours per scene).
        mechanics: labels of the game mechanics that ran (:func:`mechanic_labels`).
    """

    scenes: set[str] = field(default_factory=set)
    reactions: set[Path_] = field(default_factory=set)
    lines: set[Path_] = field(default_factory=set)
    endings: dict[str, int] = field(default_factory=dict)
    story_gifts: set[tuple[str, str, str]] = field(default_factory=set)
    mechanics: set[str] = field(default_factory=set)

    def merge(self, other: Coverage) -> None:
        self.mechanics |= other.mechanics
        self.scenes |= other.scenes
        self.reactions |= other.reactions
        self.lines |= other.lines
        self.story_gifts |= other.story_gifts
        for k, v in other.endings.items():
            self.endings[k] = self.endings.get(k, 0) + v

    def to_json(self) -> dict[str, Any]:
        return {"scenes": sorted(self.scenes), "reactions": sorted(list(p) for p in self.reactions),
                "lines": sorted(list(p) for p in self.lines), "endings": dict(sorted(self.endings.items())),
                "story_gifts": sorted(list(g) for g in self.story_gifts), "mechanics": sorted(self.mechanics)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Coverage:
        return cls(set(d["scenes"]), {tuple(p) for p in d["reactions"]}, {tuple(p) for p in d["lines"]},
                   dict(d["endings"]), {(str(a), str(b), str(c)) for a, b, c in d["story_gifts"]},
                   set(d.get("mechanics", ())))


@dataclass(frozen=True)
class Failure:
    """A runtime error: the exception's class, text (``message``, with where; ``why``, without)
    and the inputs that cause it."""

    kind: str
    message: str
    why: str
    where: str
    path: tuple[str, ...]
    found_by: str


class Explorer:
    """Plays one story with :class:`StoryRuntime` alone; see the module docstring.

    Args:
        story: a loaded story (load it with ``use_cache=False`` so reports name file:line:col).
        seed: the ``GameState`` seed (``random()`` in conditions draws from it).

    Raises:
        game.errors.ExpressionError: a condition or effect of the story does not compile.
    """

    def __init__(self, story: Story, seed: int = 0) -> None:
        self.story = story
        self.m = story.model
        self.rt = StoryRuntime(story)
        self.seed = seed
        self.spec = key_spec(story)
        self.saturable = saturable_choices(story, self.spec)
        self._key = _KeyFn(self.spec, self.saturable)
        self._pure_checks = not self.spec.uses_random and ("turn",) not in self.spec.slots
        self.choice_paths: dict[tuple[str, str], Path_] = {(sid, c.id): ("scenes", sid, "choices", i)
                              for sid, sc in self.m.scenes.items() for i, c in enumerate(sc.choices)}
        self.action_paths: dict[tuple[str, str], Path_] = {(sid, a.id): ("scenes", sid, "actions", i)
                              for sid, sc in self.m.scenes.items() for i, a in enumerate(sc.actions)}
        self._entry_lines: dict[tuple[str, str], Path_] = {(sid, story.line_id(sid, i, ln)): ("scenes", sid, "lines", i)
                             for sid, sc in self.m.scenes.items() for i, ln in enumerate(sc.lines)}
        self._reaction_by_path: dict[Path_, Reaction] = dict(story.reactions())
        self.say_text: dict[tuple[str, str], str] = {}
        self.unresolvable: set[tuple[str, str]] = set()
        for sid, sc in self.m.scenes.items():
            for a in sc.actions:
                candidates = [*a.keywords, *a.examples, a.id]
                text = next((t for t in candidates if _resolves(t, self.m, sc, a.id)), "")
                if not text:
                    self.unresolvable.add((sid, a.id))
                    text = (a.examples or a.keywords or (a.id,))[0]
                self.say_text[(sid, a.id)] = " ".join(text.split())

    notes: tuple[str, ...] = ()

    # -- state and moves -----------------------------------------------------------------------
    def ending_name(self, state: GameState) -> str:
        """The ending ``state`` is at (its scene's ``ending:``), or ``""``."""
        scene = self.m.scenes.get(state.scene)
        return scene.ending if scene else ""

    def declared_endings(self) -> list[str]:
        """Every ending name the story declares, sorted."""
        return sorted({sc.ending for sc in self.m.scenes.values() if sc.ending})

    def choice_label(self, path: Path_) -> str:
        """The id of the choice at a choice path (``("scenes", sid, "choices", i)``)."""
        return str(self.m.scenes[str(path[1])].choices[int(path[3])].id)

    def key(self, state: GameState) -> Key:
        """The abstract state of ``state`` (see :class:`KeySpec`)."""
        return self._key(state)

    def describe_key(self, key: Key) -> dict[str, Any]:
        """``{"scene": ..., slot name: value}`` for reports; counts at 0 are left out, ``inf`` is ``"more"``."""
        return self._key.describe(key)

    def start(self) -> tuple[GameState, list[Event]]:
        """A fresh state entered into the start scene.

        Raises:
            game.errors.StoryRuntimeError: the start scene is missing or its entry fails.
        """
        state = self.rt.new_state(self.seed)
        return state, self.rt.begin(state)

    def moves(self, state: GameState) -> list[Step]:
        """Every candidate move at ``state`` (some may turn out to do nothing).

        Raises:
            game.errors.StoryRuntimeError: a choice condition fails to evaluate.
        """
        if self.rt.is_ending(state):
            return []
        sid = state.scene
        scene = self.m.scenes[sid]
        # random() in a condition draws (and records the draw) on the state it reads: list on a copy.
        probe = _copy(state) if self.spec.uses_random else state
        out = [Step(Choose(choice_id=c.id), f"choose {c.id}") for c in self.rt.available_choices(probe)]
        for d, x in scene.exits.items():
            if self._skip(state, x.if_, ("scenes", sid, "exits", d)):
                continue
            out.append(Step(Move(direction=d), f"move {d}"))
        for i, a in enumerate(scene.actions):
            if (a.once and state.chosen.get(a.id, 0) > 0) or self._skip(state, a.if_, ("scenes", sid, "actions", i)):
                continue
            text = self.say_text[(sid, a.id)]
            out.append(Step(Say(text=text, action_id=a.id), f"say {text}"))
        here = self.rt.present(state) if self.m.agents else scene.present
        for item in dict.fromkeys(state.inventory):
            if item in self.m.items:
                out += [Step(Give(item_id=item, character_id=c), f"give {item} {c}") for c in here]
        for rec in self.m.recipes.values():
            first, second = rec.items
            if first in state.inventory and second in state.inventory and first != second:
                out.append(Step(Give(item_id=first, character_id=second), f"give {first} {second}"))
        if self.rt.has_world_turn:  # waiting lets the clock run and the characters act
            out.append(Step(Wait(seconds=1.0), "wait 1"))
        return out

    def _skip(self, state: GameState, cond: str, path: Path_) -> bool:
        """Whether a move's condition is known false now, without applying it.

        Only when conditions cannot see the difference (no ``turn()`` or ``random()``);
        a condition that fails to evaluate is not skipped, so :meth:`step` reports it.
        """
        if not cond or not self._pure_checks:
            return False
        try:
            return not self.rt.check(state, cond, (*path, "if"))
        except (StoryRuntimeError, ExpressionError):
            return False

    def step(self, state: GameState, step: Step) -> tuple[GameState, list[Event], Path_ | None] | None:
        """Apply ``step`` to a copy of ``state``.

        Returns:
            ``(new state, events, gift reaction path or None)``, or ``None`` when the
            move is not possible or does nothing.

        Raises:
            game.errors.StoryRuntimeError, game.errors.ExpressionError: the story fails here.
        """
        gift: Path_ | None = None
        intent = step.intent
        if isinstance(intent, Give):
            gift = self._gift_path(state, intent.item_id, intent.character_id)
        child = _copy(state)
        if self.spec.uses_random and isinstance(intent, Choose):
            self.rt.available_choices(child)  # the headless runner lists the choices (drawing) before choosing
        try:
            events = self.rt.apply(child, intent)
        except InputError:
            return None
        if isinstance(intent, Move) and not any(e.kind == "exit" for e in events):
            return None
        if isinstance(intent, Say) and not any(e.kind == "action" for e in events):
            return None
        return child, events, gift

    def _gift_path(self, state: GameState, item_id: str, character_id: str) -> Path_ | None:
        """The gift reaction the runtime will pick (same search order), or ``None`` (built-in)."""
        m = self.m
        if item_id not in m.items or state.scene not in m.scenes:
            return None
        probe = _copy(state) if self.spec.uses_random else state
        try:
            found = self.rt.give_reaction(probe, character_id, [item_id, *m.items[item_id].tags, "default"])
        except (StoryRuntimeError, ExpressionError):
            return None
        return found[1] if found else None

    def attempted(self, cov: Coverage, state: GameState, step: Step) -> None:
        """Count the choice, action or exit of ``step`` as reached although it raised (its lines are not)."""
        intent = step.intent
        if isinstance(intent, Choose):
            p = self.choice_paths.get((state.scene, intent.choice_id))
        elif isinstance(intent, Say):
            p = self.action_paths.get((state.scene, intent.action_id))
        elif isinstance(intent, Move):
            p = ("scenes", state.scene, "exits", intent.direction)
        else:
            p = None
        if p is not None:
            cov.reactions.add(p)

    def record(self, cov: Coverage, events: list[Event], gift: Path_ | None) -> None:
        """Add what ``events`` show to ``cov``."""
        ran: list[Path_] = []
        for e in events:
            k = e.kind
            p: Path_ | None
            if k == "scene":
                cov.scenes.add(e.ids.get("scene", e.scene))
            elif k == "line":
                p = self._entry_lines.get((e.scene, e.ids.get("line", "")))
                if p is not None:
                    cov.lines.add(p)
            elif k == "choice":
                p = self.choice_paths.get((e.ids.get("scene", e.scene), e.ids.get("choice", "")))
                if p is not None:
                    ran.append(p)
            elif k == "action":
                p = self.action_paths.get((e.scene, e.ids.get("action", "")))
                if p is not None:
                    ran.append(p)
            elif k == "exit":
                ran.append(("scenes", e.ids.get("scene", e.scene), "exits", e.ids.get("direction", "")))
            elif k == "give" and "matched" in e.data and gift is not None and e.data["matched"] == gift[-1]:
                ran.append(gift)
                if gift[0] == "on_give":
                    cov.story_gifts.add((e.scene, str(gift[1]), str(gift[2])))
            elif k == "ending":
                name = e.ids.get("ending", e.text)
                cov.endings[name] = cov.endings.get(name, 0) + 1
            label = _mechanic_label(e)
            if label:
                cov.mechanics.add(label)
        for done in ran:
            cov.reactions.add(done)
            r = self._reaction_by_path.get(done)
            if r is not None:
                cov.lines.update((*done, "say", i) for i in range(len(r.say)))


def mechanic_labels(story: Story) -> dict[str, Path_]:
    """Every mechanic the explorer counts, by label (``timer:tide``, ``role:warden``,
    ``quest:lamp`` (completed), ``outcome:drowned``, ``recipe:lit_lamp``, ``agent:mara.walk``),
    with its source path."""
    m = story.model
    out: dict[str, Path_] = {f"role:{r}": ("roles", r) for r in m.roles}
    out.update({f"timer:{t}": ("timers", t) for t in m.timers})
    out.update({f"quest:{q}": ("quests", q) for q in m.quests})
    out.update({f"outcome:{o}": ("outcomes", o) for o in m.outcomes})
    out.update({f"recipe:{r}": ("recipes", r) for r in m.recipes})
    out.update({f"agent:{c}.{a}": ("agents", c, "actions", a) for c, d in m.agents.items() for a in d.actions})
    return out


def _mechanic_label(e: Event) -> str:
    """The :func:`mechanic_labels` label an event shows ran, or ``""``."""
    k = e.kind
    if k == "timer" and e.data.get("what") == "fired":
        return f"timer:{e.ids.get('timer', '')}"
    if k == "role":
        return f"role:{e.ids.get('role', '')}"
    if k == "quest" and e.data.get("what") == "done":
        return f"quest:{e.ids.get('quest', '')}"
    if k == "outcome":
        return f"outcome:{e.ids.get('outcome', '')}"
    if k == "combine":
        return f"recipe:{e.ids.get('recipe', '')}"
    if k == "agent":
        return f"agent:{e.ids.get('character', '')}.{e.ids.get('action', '')}"
    return ""
#: Keys of bink's state JSON that count turns or threads, not what can happen next.
_INK_VOLATILE = frozenset({"turnIdx", "turnIndices", "threadCounter", "threadIndex", "originalThreadIndex",
                           "outputStream", "storySeed"})


def _ink_key_part(x: Any) -> Hashable:
    """bink state JSON as a hashable value without the volatile keys (choice threads by content)."""
    if isinstance(x, dict):
        items: list[tuple[str, Hashable]] = []
        for k, v in x.items():
            if k in _INK_VOLATILE:
                continue
            if k == "temp" and isinstance(v, dict):  # a weave's return address: set just before it is read
                items.append((k, _ink_key_part({n: t for n, t in v.items() if not n.startswith("$r")})))
            elif k == "choiceThreads" and isinstance(v, dict):
                items.append((k, tuple(sorted((_ink_key_part(t) for t in v.values()), key=repr))))
            else:
                items.append((k, _ink_key_part(v)))
        return tuple(sorted(items, key=lambda kv: kv[0]))
    if isinstance(x, list):
        return tuple(_ink_key_part(y) for y in x)
    return x  # type: ignore[no-any-return]


@dataclass
class InkReads:
    """What an Ink story can read of its own state, from its compiled JSON (:func:`ink_reads`).

    Attributes:
        counts: container paths whose visit counts are read as numbers (``{"CNT?": path}``,
            and a ``"visit"`` command's own container: sequences, shuffles).
        once: targets of once-only choices (``flg`` bit 16): their counts are only tested
            for "more than 0".
        count_readers: count path -> the knots that read it (either way).
        var_readers: global variable -> the knots that read it (``VAR?``, or passed by
            reference: ``^var``).
        reach: knot -> the knots it can lead to (itself, and through diverts, choices,
            tunnels, threads and function calls, transitively).
        every: a read or a divert cannot be placed (a variable path): nothing may be dropped.

    Paths are Ink's: a named container (``{"#n": "g-0"}``, or a key of its parent's
    terminal dict) by its name, another by its index. No other count is ever read (the
    Ink runtime keeps them, but nothing in the story can tell them apart).
    """

    counts: set[str] = field(default_factory=set)
    once: set[str] = field(default_factory=set)
    count_readers: dict[str, set[str]] = field(default_factory=dict)
    var_readers: dict[str, set[str]] = field(default_factory=dict)
    reach: dict[str, frozenset[str]] = field(default_factory=dict)
    every: bool = False

    def live(self, knots: Iterable[str]) -> frozenset[str]:
        """The knots that can still run from ``knots`` (where the flow is, or returns to)."""
        out: set[str] = set()
        for k in knots:
            out |= self.reach.get(k, frozenset((k,)))
        return frozenset(out)


def _ink_resolve(target: str, here: list[str]) -> str:
    """An Ink path relative to the object at ``here`` (``.^.^.c-0``) made absolute; an absolute one as it is."""
    if not target.startswith("."):
        return target
    parts = list(here)
    for part in target.split(".")[1:]:
        if part == "^":
            parts = parts[:-1]
        elif part:
            parts.append(part)
    return ".".join(parts)


#: Keys of an Ink JSON object that go to another place: divert, divert target, function call,
#: tunnel, choice.
_INK_GOES = ("->", "^->", "f()", "->t->", "*")


def ink_reads(root: Any) -> InkReads:
    """Walk a compiled Ink story's ``root`` container and collect :class:`InkReads`.

    A variable divert through a weave's own return temporary (``$r``) stays inside its
    knot; any other variable divert, or a count read through a variable, sets ``every``.
    """
    out = InkReads()
    edges: dict[str, set[str]] = {}

    def read(path: str, knot: str) -> None:
        out.count_readers.setdefault(path, set()).add(knot)

    def walk(node: list[Any], path: list[str], knot: str) -> None:
        for i, x in enumerate(node):
            if x == "visit":
                out.counts.add(".".join(path))
                read(".".join(path), knot)
            elif isinstance(x, list):
                end = x[-1] if x and isinstance(x[-1], dict) else {}
                name = end.get("#n") if isinstance(end, dict) else None
                walk(x, [*path, str(name) if isinstance(name, str) else str(i)], knot)
            elif isinstance(x, dict):
                at = [*path, str(i)]
                for key in _INK_GOES:
                    goes = x.get(key)
                    if isinstance(goes, str):
                        if x.get("var"):
                            out.every = out.every or not goes.startswith("$r")
                        else:
                            edges.setdefault(knot, set()).add(_ink_resolve(goes, at).split(".")[0])
                target = x.get("CNT?")
                if isinstance(target, str):
                    out.counts.add(_ink_resolve(target, at))
                    read(_ink_resolve(target, at), knot)
                elif "CNT?" in x:
                    out.every = True
                choice = x.get("*")
                if isinstance(choice, str) and int(x.get("flg", 0)) & 16:
                    out.once.add(_ink_resolve(choice, at))
                    read(_ink_resolve(choice, at), knot)
                for key in ("VAR?", "^var"):
                    name = x.get(key)
                    if isinstance(name, str):
                        out.var_readers.setdefault(name, set()).add(knot)
                if i == len(node) - 1:  # the terminal dict: named sub-containers
                    for k, v in x.items():
                        if isinstance(v, list):
                            walk(v, [*path, k], knot)

    top = root[-1] if isinstance(root, list) and root and isinstance(root[-1], dict) else {}
    for name, body in top.items():
        if isinstance(body, list):
            walk(body, [name], name)
    if isinstance(root, list):
        walk([x for x in root if not isinstance(x, dict)], [], "0")
    for knot in {*edges, *top, "0"}:
        seen, todo = {knot}, [knot]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        out.reach[knot] = frozenset(seen)
    return out


#: Where a bink state's flow is or returns to: the knot of each call-stack element and choice target.
_INK_PLACES = re.compile(r'"(?:cPath|targetPath)": ?"([^".]+)')


class InkExplorer(Explorer):
    """Explores an Ink story through :class:`~game.story.ink_runtime.InkRuntime` (Ink decides every move).

    A state's key is the scene plus Ink's own saved state without what only counts
    turns or threads (``turnIdx``, ``turnIndices``, thread numbers, the text already
    shown) and the holdings, relationships and gifts the external functions read;
    so states merge only when Ink would play them the same from there (kept exactly:
    the call stack, the current choices, and the visit counts Ink reads as numbers;
    once-only choices' counts capped at 1, all Ink tests of them). A count or a global
    variable that no knot the flow can still reach reads is dropped: the knots where the
    flow is, returns to, or resumes after a choice, and all they lead to (see
    :class:`InkReads`). When the story reads turn counts (``TURNS()``,
    ``TURNS_SINCE()``) they are kept too. Moves are
    the current Ink choices (gifts are not tried), so every script line is a
    ``choose <id>`` that ``worldloom play --headless --inputs`` replays.
    """

    notes = ("Ink story: explored through the Ink runtime (bink); gifts (on_give) are not tried",)

    def __init__(self, story: Story, seed: int = 0) -> None:
        assert isinstance(story, InkStory)
        self.story = story
        self.m = story.model
        self.rt = InkRuntime(story, snapshot_every=1)  # states are keyed on Ink's whole saved state
        self.seed = seed
        self.spec = KeySpec((), {}, False)
        self._turns = '"turns"' in story.json_text or '"turn"' in story.json_text
        self._reads = ink_reads(json.loads(story.json_text)["root"])
        self.choice_paths = {}
        self.action_paths = {}
        self._entry_lines = {}
        self._reaction_by_path = {}
        self.say_text = {}
        self.unresolvable = set()
        self._pure_checks = False
        self._threads: dict[str, list[str]] = {}  # scene -> the knots it threads in (reached with it)
        for sid, info in story.knots.items():
            if info.threaded:
                for caller in info.returns:
                    self._threads.setdefault(caller, []).append(sid)

    def start(self) -> tuple[GameState, list[Event]]:
        """A fresh state at the first choice; the root (the text before the first knot) counts as reached."""
        state, events = super().start()
        return state, [self.rt.event(state, "scene", ids={"scene": ROOT_SCENE}), *events]

    def key(self, state: GameState) -> Key:
        """The scene, Ink's state (see the class docstring) and the holdings and relationships."""
        saved = state.world.get("ink")
        doc = json.loads(saved) if isinstance(saved, str) else {}
        reads = self._reads
        if not reads.every and isinstance(saved, str):
            live = reads.live(_INK_PLACES.findall(saved))
            counts = doc.get("visitCounts")
            if isinstance(counts, dict):
                doc["visitCounts"] = {k: (v if k in reads.counts else min(v, 1)) for k, v in counts.items()
                                      if not live.isdisjoint(reads.count_readers.get(k, ()))}
            values = doc.get("variablesState")
            if isinstance(values, dict):
                doc["variablesState"] = {k: v for k, v in values.items()
                                         if not live.isdisjoint(reads.var_readers.get(k, ()))}
        if self._turns:
            doc = {k: v for k, v in doc.items() if k != "storySeed"}
            part: Hashable = (tuple(sorted((k, repr(v)) for k, v in doc.items())),)
        else:
            part = _ink_key_part(doc)
        return state.scene, (part, tuple(sorted(state.inventory)), tuple(sorted(state.holders.items())),
                             tuple(sorted((k, tuple(sorted(v.items()))) for k, v in state.relationships.items())))

    def describe_key(self, key: Key) -> dict[str, Any]:
        """``{"scene": ...}`` (an Ink state is not broken into named slots)."""
        return {"scene": key[0]}

    def ending_name(self, state: GameState) -> str:
        """The ending name the Ink runtime recorded when the story ended, or ``""``."""
        return str(state.world.get(INK_ENDING, ""))

    def declared_endings(self) -> list[str]:
        """Endings named by ``# ending:`` tags, and knots that can only end the story."""
        assert isinstance(self.story, InkStory)
        names = {v for k in self.story.knots.values() for key, v in map(split_tag, k.tags) if key == "ending" and v}
        return sorted(names | {sc.ending for sc in self.m.scenes.values() if sc.ending})

    def choice_label(self, path: Path_) -> str:
        return str(path[2])

    def moves(self, state: GameState) -> list[Step]:
        """The current Ink choices, each a ``choose <id>`` step (listed ones become coverage's choices)."""
        if self.rt.is_ending(state):
            return []
        out = []
        for c in self.rt.available_choices(state):
            self.choice_paths.setdefault((state.scene, c.id), ("scenes", state.scene, c.id))
            out.append(Step(Choose(choice_id=c.id), f"choose {c.id}"))
        return out

    def step(self, state: GameState, step: Step) -> tuple[GameState, list[Event], Path_ | None] | None:
        """Take the choice on a copy of ``state`` (``None`` when Ink does not offer it)."""
        child = _copy(state)
        try:
            events = self.rt.apply(child, step.intent)
        except InputError:
            return None
        return child, events, None

    def record(self, cov: Coverage, events: list[Event], gift: Path_ | None) -> None:
        """Scenes (knots) entered, choices taken and endings reached."""
        for e in events:
            if e.kind == "scene":
                sid = e.ids.get("scene", e.scene)
                cov.scenes.add(sid)
                cov.scenes.update(self._threads.get(sid, ()))
            elif e.kind == "choice":
                sid = e.ids.get("scene", e.scene)
                cid = e.ids.get("choice", "")
                self.choice_paths.setdefault((sid, cid), ("scenes", sid, cid))
                cov.reactions.add(("scenes", sid, cid))
            elif e.kind == "ending":
                name = e.ids.get("ending", e.text)
                cov.endings[name] = cov.endings.get(name, 0) + 1


def explorer_for(story: Story, seed: int = 0) -> Explorer:
    """The explorer for ``story``: :class:`InkExplorer` for an Ink story, else :class:`Explorer`."""
    return InkExplorer(story, seed) if isinstance(story, InkStory) else Explorer(story, seed)


def _resolves(text: str, model: Any, scene: Any, action_id: str) -> bool:
    res = resolve(text, model, scene, [])
    return isinstance(res.intent, Say) and res.intent.action_id == action_id


def _failure(exc: Exception, path: Sequence[str], found_by: str) -> Failure:
    if isinstance(exc, WorldloomError):
        return Failure(type(exc).__name__, str(exc), exc.why, exc.where, tuple(path), found_by)
    return Failure(type(exc).__name__, str(exc), str(exc), "", tuple(path), found_by)


_STORY_ERRORS = (StoryRuntimeError, ExpressionError)


# -- breadth-first pass --------------------------------------------------------------------------

@dataclass
class Graph:
    """The explored state graph.

    Attributes:
        keys: node index -> key.
        parent, via: how each node was first reached (``-1``/``""`` for the start).
        depth: moves from the start.
        succ: node -> successor nodes (possible moves, errors excluded).
        ending: node -> ending name, or ``""``.
        open_: nodes whose future is unknown (cut by the bound, or a move raised).
        dead: nodes with no possible move that are not endings.
        bound_hit: the bound stopped new states from being added.
        transitions: moves applied.
        merged: distinct concrete states (variables, visits, choices taken, inventory,
            holdings, relationships, scene) that were merged into an already explored
            abstract state because they cannot differ in future (see :class:`KeySpec`).
    """

    keys: list[Key] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    via: list[str] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    succ: list[list[int]] = field(default_factory=list)
    ending: list[str] = field(default_factory=list)
    open_: set[int] = field(default_factory=set)
    dead: list[int] = field(default_factory=list)
    bound_hit: bool = False
    transitions: int = 0
    merged: int = 0

    def path(self, i: int) -> list[str]:
        """Script lines from the start to node ``i``."""
        out = []
        while i > 0:
            out.append(self.via[i])
            i = self.parent[i]
        return out[::-1]


ProgressFn = Callable[[int, int], None]


def breadth_first(ex: Explorer, max_states: int, cov: Coverage, failures: list[Failure],
                  progress: ProgressFn | None = None) -> Graph:
    """Explore distinct states, at most ``max_states`` of them, scenes least explored first.

    The next state expanded is one whose scene has had the fewest states expanded so
    far (breadth-first among equals: the shallowest, then the first found). A story
    whose states all fit in the bound is explored whole either way; a larger one is
    spread over every scene the bound can reach instead of being spent on the many
    ways to stand in the first few (a 5,000-scene road reaches its far endings), and
    the bound cuts the most-explored scenes' states first.

    Args:
        ex: the explorer.
        max_states: bound on distinct states (>= 1).
        cov: coverage, added to.
        failures: runtime errors, appended to (the path to the state first found to raise).
        progress: called as ``progress(states found, states expanded)`` now and then.

    Returns:
        The :class:`Graph`.
    """
    g = Graph()
    try:
        root, events = ex.start()
    except _STORY_ERRORS as exc:
        failures.append(_failure(exc, [], "start"))
        return g
    ex.record(cov, events, None)
    states: list[GameState | None] = [root]
    index: dict[Key, int] = {}

    def add(state: GameState, key: Key, parent: int, via: str) -> int:
        i = len(g.keys)
        index[key] = i
        g.keys.append(key)
        g.parent.append(parent)
        g.via.append(via)
        g.depth.append(g.depth[parent] + 1 if parent >= 0 else 0)
        g.succ.append([])
        g.ending.append(ex.ending_name(state))
        return i

    add(root, ex.key(root), -1, "")
    concrete = {_fingerprint(root)}
    # (states expanded in its scene when queued, depth, index): the heap pops the least explored scene's
    # shallowest state; an entry whose scene was explored more since it was queued is queued again
    queue: list[tuple[int, int, int]] = [(0, 0, 0)]
    per_scene: dict[str, int] = {}
    expanded = 0
    while queue:
        seen, _, i = queue[0]
        scene = str(g.keys[i][0])
        now = per_scene.get(scene, 0)
        if now > seen:
            heapq.heapreplace(queue, (now, g.depth[i], i))
            continue
        heapq.heappop(queue)
        per_scene[scene] = now + 1
        state = states[i]
        states[i] = None
        assert state is not None
        expanded += 1
        if progress is not None and expanded % 200 == 0:
            progress(len(g.keys), expanded)
        if g.ending[i]:
            continue
        try:
            steps = ex.moves(state)
        except _STORY_ERRORS as exc:
            failures.append(_failure(exc, g.path(i), "breadth-first"))
            g.open_.add(i)
            continue
        possible = 0
        seen_succ: set[int] = set()
        for st in steps:
            try:
                out = ex.step(state, st)
            except _STORY_ERRORS as exc:
                failures.append(_failure(exc, [*g.path(i), st.line], "breadth-first"))
                ex.attempted(cov, state, st)
                g.open_.add(i)
                possible += 1
                continue
            if out is None:
                continue
            possible += 1
            g.transitions += 1
            child, events, gift = out
            ex.record(cov, events, gift)
            k = ex.key(child)
            j = index.get(k)
            h = _fingerprint(child)
            if h not in concrete:
                concrete.add(h)
                if j is not None:
                    g.merged += 1
            if j is None:
                if len(g.keys) >= max_states:
                    g.bound_hit = True
                    g.open_.add(i)
                    continue
                j = add(child, k, i, st.line)
                states.append(child)
                heapq.heappush(queue, (per_scene.get(str(k[0]), 0), g.depth[j], j))
            if j not in seen_succ:
                seen_succ.add(j)
                g.succ[i].append(j)
        if possible == 0:
            g.dead.append(i)
    if progress is not None:
        progress(len(g.keys), expanded)
    return g


def _fingerprint(s: GameState) -> int:
    """A hash of what a state holds that play can depend on (not the turn, frame or log)."""
    return hash((s.scene, tuple(sorted(s.variables.items())), tuple(sorted(s.visits.items())),
                 tuple(sorted(s.chosen.items())), tuple(s.inventory), tuple(sorted(s.holders.items())),
                 tuple(sorted((k, tuple(sorted(v.items()))) for k, v in s.relationships.items())),
                 str(s.world.get("ink", ""))))


def _sccs(nodes: list[int], succ: list[list[int]], allowed: set[int]) -> list[list[int]]:
    """Strongly connected components of the subgraph on ``allowed`` (iterative Tarjan)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[int, Iterator[int]]] = [(root, iter(succ[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in allowed:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ[w])))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


# -- findings ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DeadEnd:
    """Non-ending states of one scene with no possible move."""

    scene: str
    where: str
    states: int
    path: tuple[str, ...]
    state: dict[str, Any]
    found_by: str


@dataclass(frozen=True)
class Loop:
    """A strongly connected set of states, with a cycle, from which no ending is reachable."""

    scenes: tuple[str, ...]
    where: str
    states: int
    path: tuple[str, ...]
    state: dict[str, Any]


def find_loops(ex: Explorer, g: Graph) -> list[Loop]:
    """Loops with no exit in ``g``, one per set of scenes, shortest entry path first."""
    n = len(g.keys)
    rev: list[list[int]] = [[] for _ in range(n)]
    for i, js in enumerate(g.succ):
        for j in js:
            rev[j].append(i)
    good = [i for i in range(n) if g.ending[i] or i in g.open_]
    alive = set(good)
    queue = deque(good)
    while queue:
        for p in rev[queue.popleft()]:
            if p not in alive:
                alive.add(p)
                queue.append(p)
    doomed = set(range(n)) - alive
    groups: dict[tuple[str, ...], list[int]] = {}
    for comp in _sccs(sorted(doomed), g.succ, doomed):
        cyclic = len(comp) > 1 or comp[0] in g.succ[comp[0]]
        if not cyclic:
            continue
        scenes = tuple(sorted({g.keys[i][0] for i in comp}))
        groups.setdefault(scenes, []).extend(comp)
    out = []
    for scenes, members in groups.items():
        first = min(members, key=lambda i: (g.depth[i], i))
        out.append(Loop(scenes, ex.story.where(("scenes", g.keys[first][0])), len(members),
                        tuple(g.path(first)), ex.describe_key(g.keys[first])))
    out.sort(key=lambda lp: (len(lp.path), lp.scenes))
    return out


# -- random playthroughs -------------------------------------------------------------------------

def random_playthrough(ex: Explorer, index: int, seed: int, max_steps: int) -> dict[str, Any]:
    """One seeded random walk; a pure function of ``(story, seed, index, max_steps)``.

    Returns:
        A JSON-able dict: ``coverage``, ``steps``, ``ending``, ``dead_end``
        (``{scene, path, state}`` or ``None``), ``failure`` (or ``None``).
    """
    rng = random.Random(f"worldloom-explore:{seed}:{index}")
    cov = Coverage()
    found_by = f"random #{index}"
    result: dict[str, Any] = {"steps": 0, "ending": "", "dead_end": None, "failure": None}
    try:
        state, events = ex.start()
    except _STORY_ERRORS as exc:
        result["failure"] = asdict(_failure(exc, [], found_by))
        result["coverage"] = cov.to_json()
        return result
    ex.record(cov, events, None)
    path: list[str] = []
    for _ in range(max_steps):
        if ex.rt.is_ending(state):
            result["ending"] = ex.ending_name(state)
            break
        try:
            steps = ex.moves(state)
        except _STORY_ERRORS as exc:
            result["failure"] = asdict(_failure(exc, path, found_by))
            break
        moved = False
        while steps:
            st = steps.pop(rng.randrange(len(steps)))
            try:
                out = ex.step(state, st)
            except _STORY_ERRORS as exc:
                result["failure"] = asdict(_failure(exc, [*path, st.line], found_by))
                ex.attempted(cov, state, st)
                break
            if out is None:
                continue
            state, events, gift = out
            ex.record(cov, events, gift)
            path.append(st.line)
            moved = True
            break
        if result["failure"] is not None:
            break
        if not moved:
            result["dead_end"] = {"scene": state.scene, "path": list(path),
                                  "state": ex.describe_key(ex.key(state))}
            break
    else:
        if ex.rt.is_ending(state):
            result["ending"] = ex.ending_name(state)
    result["steps"] = len(path)
    result["coverage"] = cov.to_json()
    return result


_WORKER_CACHE: dict[tuple[str, int], Explorer] = {}


def _worker(task: tuple[str, int, int, int, int]) -> str:
    """Process-pool entry point: ``(story path, seed, first index, count, max_steps)`` -> JSON text.

    Top-level and argument-only (the story is loaded in the worker), so it is
    spawn-safe; plain JSON text is all that crosses the process boundary.
    """
    story_path, seed, first, count, max_steps = task
    ex = _WORKER_CACHE.get((story_path, seed))
    if ex is None:
        ex = _WORKER_CACHE[(story_path, seed)] = explorer_for(load_story(story_path, use_cache=False), seed)
    return json.dumps([random_playthrough(ex, i, seed, max_steps) for i in range(first, first + count)])


def random_playthroughs(ex: Explorer, story_path: str | None, n: int, seed: int, max_steps: int, jobs: int,
                        progress: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
    """Run ``n`` random playthroughs (indices ``0..n-1``), in ``jobs`` processes when ``jobs > 1``.

    Results come back in index order whatever ``jobs`` is. ``story_path`` is
    needed for ``jobs > 1`` (workers load the story themselves).
    """
    if n <= 0:
        return []
    if jobs <= 1 or story_path is None:
        out = []
        for i in range(n):
            out.append(random_playthrough(ex, i, seed, max_steps))
            if progress is not None:
                progress(1)
        return out
    size = max(1, min(50, n // (jobs * 4) or 1))
    tasks = [(str(story_path), seed, first, min(size, n - first), max_steps) for first in range(0, n, size)]
    results: list[dict[str, Any]] = []
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes=min(jobs, len(tasks))) as pool:
        for text in pool.imap(_worker, tasks):
            chunk = json.loads(text)
            results += chunk
            if progress is not None:
                progress(len(chunk))
    return results


# -- the whole run -------------------------------------------------------------------------------

@dataclass
class CoverageCount:
    """Reached / total for one kind of thing."""

    reached: int
    total: int

    @property
    def percent(self) -> float:
        return 100.0 * self.reached / self.total if self.total else 100.0


@dataclass
class Report:
    """Everything an explore run found (``to_json`` for machines, ``format`` for people).

    Attributes:
        story: the story path.
        seed: the state seed (replay scripts with ``--seed``).
        states, transitions: distinct states and moves of the breadth-first pass.
        merged: distinct concrete states merged into an explored state (:attr:`Graph.merged`).
        max_states, bound_hit: the bound and whether it stopped the pass.
        playthroughs, random_steps: random playthroughs run and their total moves.
        seconds: wall time, s (not part of any comparison).
        endings: names of the endings reached (either pass), sorted.
        all_endings: ending names the story declares.
        coverage: ``scenes``/``choices``/``actions``/``lines``/``overall`` counts.
        unreached: ``(kind, id, where)`` of scenes, choices and actions never reached.
        dead_ends, loops, failures: the findings.
        scripts: finding label -> reproducing script path (after :meth:`save_scripts`).
        key: what a state's key holds.
        notes: caveats (``random()`` used, actions no keyword resolves to...).
    """

    story: str
    seed: int
    states: int
    transitions: int
    merged: int
    max_states: int
    bound_hit: bool
    playthroughs: int
    random_steps: int
    seconds: float
    endings: list[str]
    all_endings: list[str]
    coverage: dict[str, CoverageCount]
    unreached: list[tuple[str, str, str]]
    dead_ends: list[DeadEnd]
    loops: list[Loop]
    failures: list[Failure]
    key: list[str]
    notes: list[str]
    reached: Coverage
    scripts: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No dead end, loop without exit or runtime error."""
        return not (self.dead_ends or self.loops or self.failures)

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    def save_scripts(self, out_dir: str | Path) -> dict[str, str]:
        """Write one reproducing playthrough script per finding into ``out_dir``.

        Returns:
            finding label -> script path. Nothing is written (and the folder is not
            made) when there are no findings.

        Raises:
            ExploreError: the folder or a file cannot be written.
        """
        items: list[tuple[str, str, tuple[str, ...]]] = []
        for n, d in enumerate(self.dead_ends, 1):
            items.append((f"dead_end_{n}_{d.scene}", f"dead end in scene {d.scene!r} ({d.where})", d.path))
        for n, lp in enumerate(self.loops, 1):
            items.append((f"loop_{n}_{lp.scenes[0]}", f"loop without exit: {', '.join(lp.scenes)} ({lp.where})",
                          lp.path))
        for n, f in enumerate(self.failures, 1):
            items.append((f"error_{n}", f"{f.kind}: {f.message}", f.path))
        if not items:
            return {}
        out = Path(out_dir)
        try:
            out.mkdir(parents=True, exist_ok=True)
            for label, what, path in items:
                p = out / f"{label}.txt"
                head = [f"# worldloom explore: {' '.join(what.split())}",
                        f"# replay: worldloom play {self.story} --headless --seed {self.seed} --inputs {p}"]
                p.write_text("\n".join([*head, *path]) + "\n", encoding="utf-8")
                self.scripts[label] = str(p)
        except OSError as exc:
            raise ExploreError(f"cannot save the scripts: {exc}", where=str(out),
                               hint="pass a writable folder with --out") from exc
        return self.scripts

    def to_json(self) -> dict[str, Any]:
        """JSON-able summary (coverage counts, findings, scripts; no per-path coverage)."""
        return {
            "story": self.story, "seed": self.seed, "states": self.states, "transitions": self.transitions,
            "merged": self.merged,
            "max_states": self.max_states, "bound_hit": self.bound_hit, "playthroughs": self.playthroughs,
            "random_steps": self.random_steps, "seconds": round(self.seconds, 4),
            "endings": self.endings, "all_endings": self.all_endings,
            "coverage": {k: {"reached": c.reached, "total": c.total, "percent": round(c.percent, 1)}
                         for k, c in self.coverage.items()},
            "unreached": [{"kind": k, "id": i, "where": w} for k, i, w in self.unreached],
            "dead_ends": [asdict(d) for d in self.dead_ends], "loops": [asdict(lp) for lp in self.loops],
            "errors": [asdict(f) for f in self.failures], "scripts": self.scripts, "key": self.key,
            "notes": self.notes, "ok": self.ok,
        }

    def format(self) -> str:
        """The text report (one finding a line, ``file:line:col`` first)."""
        lines = []
        bound = (f"hit the bound of {self.max_states} states (raise --max-states); dead ends and loops "
                 "are only those within it") if self.bound_hit else f"complete (bound {self.max_states})"
        lines.append(f"explored {counted(self.states, 'state')}, {counted(self.transitions, 'move')}: {bound}")
        lines.append(f"merged {counted(self.merged, 'state')} that cannot differ in future into explored ones")
        lines.append(f"random playthroughs: {self.playthroughs} ({counted(self.random_steps, 'move')}, "
                     f"seed {self.seed})")
        lines.append(f"endings: {len(self.endings)} ({', '.join(sorted(self.endings)) or 'none'})")
        missing = sorted(set(self.all_endings) - set(self.endings))
        if missing:
            lines.append(f"  declared but never reached: {', '.join(missing)}")
        c = self.coverage
        parts = ", ".join(f"{k} {c[k].reached}/{c[k].total} {c[k].percent:.0f}%"
                          for k in ("scenes", "choices", "actions", "lines", "mechanics") if k in c)
        lines.append(f"coverage: {c['overall'].percent:.0f}% ({parts})")
        for kind, ident, where in self.unreached[:20]:
            lines.append(f"  {where}: {kind} {ident!r} never reached")
        if len(self.unreached) > 20:
            lines.append(f"  ... and {len(self.unreached) - 20} more")
        lines.append(f"dead ends: {len(self.dead_ends)}")
        for n, d in enumerate(self.dead_ends, 1):
            lines.append(f"  {d.where}: scene {d.scene!r} has no move ({counted(d.states, 'state')}); "
                         f"{self._script(f'dead_end_{n}_{d.scene}', d.path)}")
        lines.append(f"loops without exit: {len(self.loops)}")
        for n, lp in enumerate(self.loops, 1):
            lines.append(f"  {lp.where}: scenes {', '.join(lp.scenes)} loop with no way to an ending "
                         f"({counted(lp.states, 'state')}); {self._script(f'loop_{n}_{lp.scenes[0]}', lp.path)}")
        lines.append(f"runtime errors: {len(self.failures)}")
        for n, f in enumerate(self.failures, 1):
            lines.append(f"  {f.kind}: {f.message}")
            lines.append(f"    after {counted(len(f.path), 'input')}, found by {f.found_by}; "
                         f"{self._script(f'error_{n}', f.path)}")
        for note in self.notes:
            lines.append(f"note: {note}")
        return "\n".join(lines)

    def _script(self, label: str, path: Sequence[str]) -> str:
        if label in self.scripts:
            return f"script {self.scripts[label]}"
        shown = " | ".join(path[:8]) + (" | ..." if len(path) > 8 else "")
        return f"inputs: {shown or '(none)'}"


def explore(story: Story, *, story_path: str | None = None, max_states: int = DEFAULT_MAX_STATES,
            n_random: int = DEFAULT_RANDOM, seed: int = 0, max_steps: int = DEFAULT_MAX_STEPS, jobs: int = 1,
            show_progress: bool = False) -> Report:
    """Explore ``story``: breadth-first up to ``max_states`` states, then ``n_random`` playthroughs.

    Args:
        story: the loaded story.
        story_path: its path (reports; worker processes load it from here when ``jobs > 1``).
        max_states: bound on distinct states (>= 1).
        n_random: random playthroughs (>= 0).
        seed: seed of the state and of the random walks.
        max_steps: longest random playthrough, moves.
        jobs: processes for the random playthroughs.
        show_progress: draw a rich progress bar on stderr (when it is a terminal).

    Returns:
        The :class:`Report` (scripts not yet saved: call :meth:`Report.save_scripts`).

    Raises:
        ValueError: a bound below its minimum.
        game.errors.ExpressionError: a condition or effect does not compile.
    """
    if max_states < 1 or n_random < 0 or max_steps < 1 or jobs < 1:
        raise ValueError("max_states, max_steps and jobs must be >= 1, n_random >= 0")
    t0 = time.perf_counter()
    ex = explorer_for(story, seed)
    cov = Coverage()
    failures: list[Failure] = []
    with _progress(show_progress) as bar:
        task = bar.add_task("breadth-first", total=max_states) if bar else None

        def on_bfs(found: int, expanded: int) -> None:
            if bar is not None and task is not None:
                bar.update(task, completed=found, description=f"breadth-first ({expanded} expanded)")

        g = breadth_first(ex, max_states, cov, failures, on_bfs)
        rtask = bar.add_task("random playthroughs", total=n_random) if bar else None

        def on_random(k: int) -> None:
            if bar is not None and rtask is not None:
                bar.advance(rtask, k)

        plays = random_playthroughs(ex, story_path, n_random, seed, max_steps, jobs, on_random)
    seconds = time.perf_counter() - t0

    # Merge the random playthroughs (in index order, so any --jobs gives the same report).
    dead_by_scene: dict[str, DeadEnd] = {}
    counts: dict[str, int] = {}
    for i in g.dead:
        sid = g.keys[i][0]
        counts[sid] = counts.get(sid, 0) + 1
        if sid not in dead_by_scene:
            dead_by_scene[sid] = DeadEnd(sid, story.where(("scenes", sid)), 0, tuple(g.path(i)),
                                         ex.describe_key(g.keys[i]), "breadth-first")
    random_steps = 0
    for n, p in enumerate(plays):
        cov.merge(Coverage.from_json(p["coverage"]))
        random_steps += p["steps"]
        if p["failure"] is not None:
            f = p["failure"]
            failures.append(Failure(f["kind"], f["message"], f["why"], f["where"], tuple(f["path"]), f["found_by"]))
        if p["dead_end"] is not None:
            d = p["dead_end"]
            sid = d["scene"]
            if sid not in dead_by_scene:
                counts[sid] = 1
                dead_by_scene[sid] = DeadEnd(sid, story.where(("scenes", sid)), 0, tuple(d["path"]), d["state"],
                                             f"random #{n}")
    dead_ends = [DeadEnd(d.scene, d.where, counts[d.scene], d.path, d.state, d.found_by)
                 for d in sorted(dead_by_scene.values(), key=lambda d: (len(d.path), d.scene))]
    unique: dict[tuple[str, str], Failure] = {}
    for f in failures:
        old = unique.get((f.kind, f.message))
        if old is None or len(f.path) < len(old.path):
            unique[(f.kind, f.message)] = f
    loops = find_loops(ex, g)

    m = story.model
    choices = [p for p in ex.choice_paths.values()]
    actions = [p for p in ex.action_paths.values()]
    all_lines = [p for p, _ in story.lines()]
    coverage = {
        "scenes": CoverageCount(len(cov.scenes & set(m.scenes)), len(m.scenes)),
        "choices": CoverageCount(sum(p in cov.reactions for p in choices), len(choices)),
        "actions": CoverageCount(sum(p in cov.reactions for p in actions), len(actions)),
        "lines": CoverageCount(sum(p in cov.lines for p in all_lines), len(all_lines)),
    }
    mech = mechanic_labels(story)
    if mech:
        coverage["mechanics"] = CoverageCount(len(cov.mechanics & set(mech)), len(mech))
    coverage["overall"] = CoverageCount(sum(c.reached for c in coverage.values()),
                                        sum(c.total for c in coverage.values()))
    unreached = [("scene", sid, story.where(("scenes", sid))) for sid in m.scenes if sid not in cov.scenes]
    unreached += [("choice", ex.choice_label(p), story.where(p[:2]))
                  for p in choices if p not in cov.reactions and p[1] in cov.scenes]
    unreached += [("action", str(m.scenes[str(p[1])].actions[int(p[3])].id), story.where(p))
                  for p in actions if p not in cov.reactions and p[1] in cov.scenes]
    unreached += [("mechanic", label, story.where(p)) for label, p in mech.items() if label not in cov.mechanics]
    unreached += [("line", _line_label(story, p), story.where(p)) for p in all_lines
                  if p[2] == "lines" and p not in cov.lines and p[1] in cov.scenes]
    notes = list(ex.notes)
    if ex.spec.uses_random:
        notes.append(f"conditions call random(): the breadth-first pass follows seed {seed}'s draws only")
    for sid, aid in sorted(ex.unresolvable):
        notes.append(f"action {aid!r} in scene {sid!r}: no keyword resolves to it by text; "
                     "its script line may not reproduce")
    return Report(
        story=str(story_path or story.folder), seed=seed, states=len(g.keys), transitions=g.transitions,
        merged=g.merged,
        max_states=max_states, bound_hit=g.bound_hit, playthroughs=len(plays), random_steps=random_steps,
        seconds=seconds, endings=sorted(cov.endings),
        all_endings=ex.declared_endings(),
        coverage=coverage, unreached=unreached, dead_ends=dead_ends, loops=loops,
        failures=sorted(unique.values(), key=lambda f: (len(f.path), f.kind, f.message)),
        key=ex.spec.describe(), notes=notes, reached=cov)


def _line_label(story: Story, path: Path_) -> str:
    """A scene line's stable id (``<scene>.l<index>`` or its own ``id``)."""
    sid, i = str(path[1]), int(path[3])
    return story.line_id(sid, i, story.model.scenes[sid].lines[i])


class _NoBar:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class _Lines:
    """Progress as a plain line on stderr at most every :data:`PLAIN_EVERY_S` seconds (a log, a pipe, CI),
    with the calls of rich's ``Progress`` the explorer makes (``add_task``, ``update``, ``advance``)."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.tasks: list[list[Any]] = []  # [description, completed, total]
        self.t0 = self.last = time.perf_counter()

    def __enter__(self) -> _Lines:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: int = 0) -> int:
        self.tasks.append([description, 0, total])
        return len(self.tasks) - 1

    def update(self, task: int, completed: int | None = None, description: str | None = None) -> None:
        if completed is not None:
            self.tasks[task][1] = completed
        if description is not None:
            self.tasks[task][0] = description
        self._maybe_print(task)

    def advance(self, task: int, k: int = 1) -> None:
        self.tasks[task][1] += k
        self._maybe_print(task)

    def _maybe_print(self, task: int) -> None:
        now = time.perf_counter()
        if now - self.last >= PLAIN_EVERY_S:
            self.last = now
            what, done, total = self.tasks[task]
            self.console.print(f"explore: {what}: {done:,}/{total:,} ({now - self.t0:.0f} s)", markup=False,
                               highlight=False)


#: Seconds between the plain progress lines of :class:`_Lines`.
PLAIN_EVERY_S = 5.0


def _progress(show: bool) -> Any:
    """A rich ``Progress`` on stderr, or plain lines now and then when stderr is not a terminal
    (``None`` inside the ``with`` when not shown)."""
    if not show:
        return _NoBar()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        return _Lines(console)
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True)


def _coverage_memo(story: Story, **params: Any) -> Path:
    """Where the coverage of one exploration of ``story`` is kept: keyed by its sources' digest,
    the exploration's parameters and the explorer's and runtimes' code."""
    h = hashlib.sha256(json.dumps([story.digest, sorted(params.items())], default=str).encode())
    for name in (__name__, "game.story.runtime", "game.story.ink_runtime", "game.story.expr"):
        module = sys.modules.get(name)
        if module is not None and module.__file__:
            h.update(Path(module.__file__).read_bytes())
    return cache_dir() / f"{h.hexdigest()[:40]}.explore.json"


def remember_coverage(report: Report, story: Story, **params: Any) -> None:
    """Keep ``report``'s coverage for :func:`recalled_coverage` (``params``: the explore keywords it ran
    with). The cache is an optimisation: a write that fails is ignored."""
    if report.reached is None:
        return
    memo = _coverage_memo(story, **params)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(report.reached.to_json()), encoding="utf-8")
        os.replace(tmp, memo)
    except OSError:
        pass


def recalled_coverage(story: Story, **params: Any) -> Coverage | None:
    """The coverage an earlier exploration of this very story with these ``params`` kept, or ``None``."""
    try:
        return Coverage.from_json(json.loads(_coverage_memo(story, **params).read_text(encoding="utf-8")))
    except (OSError, KeyError, TypeError, ValueError):
        return None


def explore_path(path: str | Path, **kw: Any) -> Report:
    """Load the story at ``path`` (no cache, so reports name file:line:col) and :func:`explore` it.

    Raises:
        game.errors.StoryError: the story does not load.
    """
    story = load_story(path, use_cache=False)
    return explore(story, story_path=str(path), **kw)


# -- command line --------------------------------------------------------------------------------

def _at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for whole numbers ``>= minimum``."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from exc
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}")
        return v

    return parse


_positive, _count = _at_least(1), _at_least(0)


def add_parser(subparsers: Any) -> None:
    """Register ``explore`` on an argparse ``subparsers`` object (sets ``func=run``)."""
    p = subparsers.add_parser("explore", help="play every branch automatically; exit 1 on dead ends, "
                              "loops without exit or runtime errors",
                              description="Play the story with the runtime only (no backend): breadth-first over "
                              "distinct states, then seeded random playthroughs.")
    p.add_argument("story", help="story folder or story.yaml")
    p.add_argument("--max-states", type=_positive, default=DEFAULT_MAX_STATES,
                   help=f"bound on distinct states for the breadth-first pass (default {DEFAULT_MAX_STATES})")
    p.add_argument("--random", type=_count, default=DEFAULT_RANDOM, metavar="N",
                   help=f"seeded random playthroughs after it (default {DEFAULT_RANDOM})")
    p.add_argument("--max-steps", type=_positive, default=DEFAULT_MAX_STEPS,
                   help=f"longest random playthrough, moves (default {DEFAULT_MAX_STEPS})")
    p.add_argument("--seed", type=int, default=0, help="seed of the state and the random playthroughs")
    p.add_argument("--jobs", type=_positive, default=1,
                   help="processes for the random playthroughs (default %(default)s)")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"folder for reproducing scripts (default ./{DEFAULT_OUT})")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: the report (default); json: the same, for tools")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``worldloom explore``: prints the report; 1 on findings, else 0.

    Raises:
        game.errors.StoryError, ExploreError: the story does not load, or ``--out`` is not
            writable (the CLI prints it and exits 2).
    """
    story = load_story(args.story, use_cache=False)
    params = {"max_states": args.max_states, "n_random": args.random, "seed": args.seed, "max_steps": args.max_steps}
    report = explore(story, story_path=str(args.story), jobs=args.jobs,
                     show_progress=not args.no_progress and args.format == "text", **params)
    remember_coverage(report, story, **params)  # `worldloom map --coverage` with these bounds reuses it
    report.save_scripts(args.out)
    if args.format == "json":
        print(json.dumps(report.to_json(), indent=2, default=str))
    else:
        print(report.format())
    return 0 if report.ok else 1


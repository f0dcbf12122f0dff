"""`worldloom lint`: coded diagnostics over a story (codes in :mod:`game.story.diagnostics`).

Pure analysis of the validated story: it never plays it and never imports torch.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import sys
import tomllib
from collections import deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from PIL import Image

from game.errors import ExpressionError, StoryError, near, near_hint
from game.state.gamestate import REACTIONS
from game.story.art import art_problems
from game.story.diagnostics import CODES, SEVERITY_ORDER, Severity
from game.story.expr import (
    EFFECT_FUNCTIONS,
    LITERALS,
    WORLD_KEYS,
    Effect,
    UnknownFunction,
    capitalised,
    combine,
    constant_failure,
)
from game.story.ink import is_ink_path
from game.story.loader import cache_dir, cached_digest, load_story, story_file
from game.story.mechanics import anywhere_gotos, mechanic_conditions, mechanic_effects, mechanic_reactions
from game.story.runtime import INTERPOLATION
from game.story.schema import Reaction
from game.story.story import Story
from game.story.strings import check_catalogue, placeholder_problems, po_syntax
from game.story.yamlio import Path_, gc_paused

#: Names a gift's lines may use besides variables (the item's and the character's names).
GIFT_NAMES = ("item", "character")
#: Characters a line may have before the text panel must wrap it too far.
MAX_LINE_CHARS = 160


@dataclass(frozen=True)
class Diagnostic:
    """One finding: where (``file:line:col``), code, severity, message, hint."""

    where: str
    code: str
    severity: Severity
    message: str
    hint: str

    def format(self) -> str:
        return f"{self.where}: {self.code} {self.severity}: {self.message} ({self.hint})"


def severity_overrides(folder: Path) -> dict[str, Severity]:
    """``[lint.severity]`` of the story's ``worldloom.toml``, if any.

    Raises:
        game.errors.StoryError: the TOML is malformed or names an unknown code/severity.
    """
    path = folder / "worldloom.toml"
    if not path.is_file():
        return {}
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise StoryError(f"bad TOML: {exc}", where=str(path)) from exc
    table = doc.get("lint", {}).get("severity", {})
    out: dict[str, Severity] = {}
    for code, sev in table.items():
        if code not in CODES:
            raise StoryError(f"unknown lint code {code!r}", where=str(path))
        if sev not in SEVERITY_ORDER:
            raise StoryError(f"unknown severity {sev!r} for {code}", where=str(path),
                             hint="use error, warning, info or off")
        out[code] = sev
    return out


#: Words that say a thing is not there any more.
GONE = r"(?:is|was|has)\s+(?:gone|lost|missing|vanished)|got away|gone|blew away|flew off|flew away|no longer here"


def gone_in(text: str, ident: str, name: str) -> bool:
    """Whether ``text`` says the thing called ``ident`` / ``name`` (its last word too: "red kite" ->
    "kite") is gone: "the kite is gone", "the kite got away", "you lost the kite", "no kite"."""
    low = text.lower()
    words = {ident.replace("_", " ").lower(), name.lower().removeprefix("the ").strip()}
    words |= {w.split()[-1] for w in words if w.split()}
    for w in sorted(words, key=len, reverse=True):
        n = re.escape(w)
        if re.search(rf"\b{n}\b[^.;!?]{{0,24}}?\b(?:{GONE})\b", low) or \
                re.search(rf"\b(?:lost|without|no)\s+(?:the\s+|your\s+|its\s+)?{n}\b", low):
            return True
    return False


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Scenes reachable from ``start`` in ``graph`` (scene -> scenes it leads to), start included.

    Breadth-first; conditions are ignored (every edge may be taken).
    """
    seen = {start} if start in graph else set()
    queue = deque(seen)
    while queue:
        for nxt in graph[queue.popleft()]:
            if nxt in graph and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


class Linter:
    """Runs every check over one story and collects diagnostics."""

    def __init__(self, story: Story, overrides: dict[str, Severity] | None = None) -> None:
        self.story = story
        self.m = story.model
        self.overrides = overrides or {}
        self.out: list[Diagnostic] = []
        self.obtainable = set(self.m.inventory)
        self._effect_list: list[tuple[Path_, str]] | None = None
        #: Expression source -> what fails every time it runs (WL024), checked once per text.
        self._doomed: dict[str, ExpressionError | None] = {}

    def add(self, code: str, path: Path_, name: object, known: Iterable[str] = (), fix: str = "") -> None:
        """Report ``code`` at ``path`` about ``name``; with ``known`` (the names it could have
        meant), the hint starts with the nearest of them: "did you mean 'kite_flight'?"; with
        ``fix``, with that text (the line to write instead)."""
        c = CODES[code]
        sev = self.overrides.get(code, c.severity)
        if sev == "off":
            return
        self.out.append(Diagnostic(self.story.where(path), code, sev,
                                   c.message.format(name=name), fix + near_hint(name, known) + c.hint))

    # -- helpers -------------------------------------------------------------
    def _effects(self) -> list[tuple[Path_, str]]:
        """Every effect source with its path (listed once per lint)."""
        if self._effect_list is None:
            self._effect_list = self._list_effects()
        return self._effect_list

    def _list_effects(self) -> list[tuple[Path_, str]]:
        out: list[tuple[Path_, str]] = []
        for path, r in self.story.reactions():
            out += [((*path, "do", i), e) for i, e in enumerate(r.do)]
        for sid, sc in self.m.scenes.items():
            out += [(("scenes", sid, "on_enter", i), e) for i, e in enumerate(sc.on_enter)]
        for path, r in mechanic_reactions(self.m):
            out += [((*path, "do", i), e) for i, e in enumerate(r.do)]
        return out + list(mechanic_effects(self.m))

    def _conditions(self) -> list[tuple[Path_, str]]:
        out: list[tuple[Path_, str]] = [((*p, "if"), r.if_) for p, r in self.story.reactions() if r.if_]
        out += [((*p, "if"), ln.if_) for p, ln in self.story.lines() if ln.if_]
        out += [((*p, "if"), r.if_) for p, r in mechanic_reactions(self.m) if r.if_]
        return out + list(mechanic_conditions(self.m))

    def edges(self) -> dict[str, set[str]]:
        """Scene graph: scene -> scenes it can lead to."""
        g: dict[str, set[str]] = {s: set() for s in self.m.scenes}
        for path, r in self.story.reactions():
            if not r.goto:
                continue
            if path[0] == "scenes":
                g[str(path[1])].add(r.goto)
            else:  # story-level on_give: any scene where that character is present
                who = str(path[1])
                for sid, sc in self.m.scenes.items():
                    if who == "any" or who in sc.present:
                        g[sid].add(r.goto)
        for target in anywhere_gotos(self.m):  # a timer, outcome or agent may send the player there from anywhere
            for sid, sc in self.m.scenes.items():
                if not sc.ending:
                    g[sid].add(target)
        return g

    # -- checks ----------------------------------------------------------------
    def run(self) -> list[Diagnostic]:
        self.check_references()
        self.check_mechanics()
        self.check_expressions()
        self.check_graph()
        self.check_lines()
        self.check_gone()
        self.check_assets()
        self.check_ids()
        self.check_actions()
        self.check_interpolation()
        self.check_frozen_gates()
        self.check_catalogues()
        order = {k: i for i, k in enumerate(sorted(CODES))}
        self.out.sort(key=lambda d: (-SEVERITY_ORDER[d.severity], order[d.code], d.where))
        return self.out

    def check_references(self) -> None:
        m = self.m
        if m.start not in m.scenes:
            self.add("WL001", ("start",), m.start, m.scenes)
        for i, it in enumerate(m.inventory):
            if it not in m.items:
                self.add("WL002", ("inventory", i), it, m.items)
        for sid, sc in m.scenes.items():
            if sc.location not in m.locations:
                self.add("WL016", ("scenes", sid, "location"), sc.location)
            for cid in sc.present:
                if cid not in m.cast:
                    self.add("WL003", ("scenes", sid, "present", cid), cid, m.cast)
            for iid in sc.items:
                if iid not in m.items:
                    self.add("WL002", ("scenes", sid, "items", iid), iid, m.items)
                else:
                    self.obtainable.add(iid)
            for cid in sc.on_give:
                if cid not in m.cast and cid != "any":
                    self.add("WL003", ("scenes", sid, "on_give", cid), cid, m.cast)
        for path, r in self.story.reactions():
            if r.goto and r.goto not in m.scenes:
                self.add("WL001", (*path, "goto"), r.goto, m.scenes)
            self._check_react(path, r)
        for path, line in self.story.lines():
            if line.speaker not in ("narrator", "player", "") and line.speaker not in m.cast:
                self.add("WL003", (*path, "speaker"), line.speaker, m.cast)

    def _check_react(self, path: Path_, r: Reaction) -> None:
        """``react:`` names cast members (``WL003``) and reactions the world draws (``WL028``)."""
        for who, reaction in r.react.items():
            if who not in self.m.cast:
                self.add("WL003", (*path, "react", who), who, self.m.cast)
            if reaction not in REACTIONS:
                self.add("WL028", (*path, "react", who), reaction, REACTIONS)

    def _check_calls(self, path: Path_, calls: tuple[tuple[str, tuple[Any, ...]], ...]) -> None:
        m = self.m
        for fn, args in calls:
            if fn in ("has", "count", "take", "drop", "give", "combine") and args and isinstance(args[0], str):
                if args[0] not in m.items:
                    self.add("WL002", path, args[0], m.items)
            if fn == "combine" and len(args) == 2 and isinstance(args[1], str) and args[1] not in m.items:
                self.add("WL002", path, args[1], m.items)
            if fn in ("holds", "gave") and len(args) == 2 and isinstance(args[1], str) and args[1] not in m.items:
                self.add("WL002", path, args[1], m.items)
            if fn in ("trust", "affinity", "rel", "holds", "gave", "react", "give"):
                who = args[1] if fn == "give" else args[0]
                if isinstance(who, str) and who not in m.cast:
                    self.add("WL003", path, who, m.cast)
            if fn == "react" and len(args) == 2 and isinstance(args[1], str) and args[1] not in REACTIONS:
                self.add("WL028", path, args[1], REACTIONS)
            if fn in ("visited",) and isinstance(args[0], str) and args[0] not in m.scenes:
                self.add("WL001", path, args[0], m.scenes)
            self._check_mechanic_call(path, fn, args)

    def _check_mechanic_call(self, path: Path_, fn: str, args: tuple[Any, ...]) -> None:
        m = self.m
        first = args[0] if args and isinstance(args[0], str) else None
        if first is None:
            return
        if fn in ("start", "stop", "left", "running") and first not in m.timers:
            self.add("WL040", path, first)
        elif fn in ("quest", "advance", "stage", "done") and first not in m.quests:
            self.add("WL041", path, first)
        elif fn == "become" and first not in m.roles:
            self.add("WL042", path, first)
        elif fn in ("need", "at", "goal", "heard") and first not in m.agents:
            self.add("WL043", path, first)
        elif fn in ("need", "goal") and len(args) == 2 and isinstance(args[1], str):
            table = m.agents[first].needs if fn == "need" else m.agents[first].goals
            if args[1] not in table:
                self.add("WL049", path, f"{fn}({first}, {args[1]})")

    def _called(self, fn: str) -> set[str]:
        """Constant first arguments of every ``fn(...)`` effect (effects that do not compile are skipped)."""
        out: set[str] = set()
        for _path, src in self._effects():
            try:  # no place for the message: a failure is skipped here (and reported where it is)
                eff = self.story.effect(src)
            except ExpressionError:
                continue
            if eff.kind == "call" and eff.op == fn and eff.calls and eff.calls[0][1]:
                out.add(str(eff.calls[0][1][0]))
        return out

    def check_mechanics(self) -> None:
        """Roles, bounds, timers, outcomes, recipes and agents refer to things that exist."""
        m = self.m
        for name, v in m.variables.items():
            lo, hi = v.min, v.max
            if (lo is not None and hi is not None and lo > hi) or (
                    isinstance(v.default, int | float) and not isinstance(v.default, bool)
                    and ((lo is not None and v.default < lo) or (hi is not None and v.default > hi))):
                self.add("WL046", ("variables", name), name)
        for path, r in mechanic_reactions(m):
            if r.goto and r.goto not in m.scenes:
                self.add("WL001", (*path, "goto"), r.goto, m.scenes)
            self._check_react(path, r)
        for path, r in [*self.story.reactions(), *mechanic_reactions(m)]:
            for role_id in r.roles:
                if role_id not in m.roles:
                    self.add("WL042", (*path, "roles"), role_id)
        for rid, role in m.roles.items():
            for who in role.treat:
                if who not in m.cast:
                    self.add("WL003", ("roles", rid, "treat", who), who)
        if m.roles and not self._called("become"):
            self.add("WL050", ("roles",), ", ".join(m.roles))
        started = self._called("start")
        for tid, t in m.timers.items():
            if not t.start and tid not in started:
                self.add("WL048", ("timers", tid), tid)
        for oid, o in m.outcomes.items():
            if o.goto in m.scenes and not m.scenes[o.goto].ending:
                self.add("WL047", ("outcomes", oid, "goto"), o.goto)
        for rid, rec in m.recipes.items():
            for item in (*rec.items, *([rec.make] if rec.make else [])):
                if item not in m.items:
                    self.add("WL002", ("recipes", rid), item)
            if rec.make in m.items:
                self.obtainable.add(rec.make)
        for cid, a in m.agents.items():
            if cid not in m.cast:
                self.add("WL043", ("agents", cid), cid)
            if a.at not in m.locations:
                self.add("WL016", ("agents", cid, "at"), a.at)
            for i, item in enumerate(a.carries):
                if item not in m.items:
                    self.add("WL002", ("agents", cid, "carries", i), item)
            for aid, act in a.actions.items():
                path = ("agents", cid, "actions", aid)
                if act.kind == "move" and act.to not in m.locations:
                    self.add("WL044", path, f"{aid}: move to {act.to!r}, not a location")
                if act.kind in ("take", "drop", "give") and act.item not in m.items:
                    self.add("WL044", path, f"{aid}: {act.kind} {act.item!r}, not an item")
                if act.kind == "use" and act.item and act.item not in m.items:
                    self.add("WL044", path, f"{aid}: use {act.item!r}, not an item")
                if act.kind in ("give", "talk") and act.to not in (*m.cast, "player", "all", ""):
                    self.add("WL044", path, f"{aid}: {act.kind} to {act.to!r}, not a character")
                if act.kind == "give" and act.to == "player":
                    self.obtainable.add(act.item)
            for i, rule in enumerate(a.rules):
                if rule.act not in a.actions and rule.act != "wait":
                    self.add("WL045", ("agents", cid, "rules", i, "act"), rule.act)
            moves = {act.to for act in a.actions.values() if act.kind == "move"}
            for i, entry in enumerate(a.schedule):
                if entry.at not in moves and entry.at != a.at:
                    self.add("WL044", ("agents", cid, "schedule", i, "at"),
                             f"schedule: no move action to {entry.at!r}")

    def check_expressions(self) -> None:
        declared = set(self.m.variables) | set(WORLD_KEYS)
        compiled_effects: list[tuple[Path_, Effect]] = []
        for path, src in self._effects():
            try:
                eff = self.story.effect(src)
            except ExpressionError as exc:
                self._bad_expression(path, exc)
                continue
            compiled_effects.append((path, eff))
            key = "do: " + src  # effects and conditions of the same text are checked apart
            if key not in self._doomed:
                self._doomed[key] = self._effect_failure(eff)
            doomed = self._doomed[key]
            if doomed is not None:
                self.add("WL024", path, doomed.why)
            if eff.kind == "assign" and eff.target and eff.target.kind == "name" and eff.target.name not in declared:
                self.add("WL014", path, eff.target.name, declared)
            self._undeclared(path, src, eff.names - declared)
            self._check_calls(path, eff.calls)
            if eff.kind == "call" and eff.op == "take":
                arg = eff.calls[0][1][0] if eff.calls and eff.calls[0][1] else None
                if isinstance(arg, str):
                    self.obtainable.add(arg)
        assert EFFECT_FUNCTIONS
        for path, src in self._conditions():
            try:
                cond = self.story.condition(src)
            except ExpressionError as exc:
                self._bad_expression(path, exc)
                continue
            if src not in self._doomed:  # one check per distinct expression: stories repeat them
                self._doomed[src] = constant_failure(cond.tree)
            doomed = self._doomed[src]
            if doomed is not None:
                self.add("WL024", path, doomed.why)
            self._undeclared(path, src, cond.names - declared)
            self._check_calls(path, cond.calls)
            for fn, args in cond.calls:
                if fn == "has" and args and isinstance(args[0], str) and args[0] in self.m.items \
                        and args[0] not in self.obtainable:
                    self.add("WL011", path, args[0])
            if not cond.names and not cond.calls:
                try:
                    always_false = not cond(_FrozenEnv({}))
                except ExpressionError:
                    always_false = False
                if always_false and path[-2:-1] != ("say",):
                    choice_id = getattr(self._reaction_at(path[:-1]), "id", path[-2])
                    self.add("WL012", path, choice_id)

    def _bad_expression(self, path: Path_, exc: ExpressionError) -> None:
        """WL007 for an expression that does not compile; an unknown function's hint starts with
        the known one nearest it (``hass`` -> "did you mean 'has'?", an effect ``giv`` -> 'give')."""
        near = near_hint(exc.name, exc.known) if isinstance(exc, UnknownFunction) else ""
        self.add("WL007", path, exc.why, fix=near)

    def _undeclared(self, path: Path_, src: str, names: Iterable[str]) -> None:
        """WL004 for each undeclared name ``src`` reads; WL027 (with the line to write) for one that is
        a value in another spelling (``true``, ``none``, ``null``: :data:`~game.story.expr.LITERALS`)."""
        for n in names:
            if n.lower() in LITERALS:
                self.add("WL027", path, n, fix=f"write {capitalised(src)!r}; ")
            else:
                self.add("WL004", path, n, [*self.m.variables, *WORLD_KEYS])

    def _effect_failure(self, eff: Effect) -> ExpressionError | None:
        """The error an effect raises every time it runs: a constant part that fails
        (:func:`~game.story.expr.constant_failure`), or text variable ``*=`` a count past
        ``game.limits.MAX_TEXT_CHARS`` (``name *= 100000000``: any text it holds is too long)."""
        for tree in (eff.value, *eff.args):
            found = constant_failure(tree) if tree is not None else None
            if found is not None:
                return found
        target, value = eff.target, eff.value
        var = self.m.variables.get(target.name) if target is not None and target.kind == "name" else None
        if eff.op == "*=" and var is not None and var.type == "str" and isinstance(value, ast.Constant) \
                and isinstance(value.value, int):
            try:
                combine("x", "*=", value.value)
            except ExpressionError as exc:
                return exc
        return None

    def _reaction_at(self, path: Path_) -> Reaction | None:
        for p, r in self.story.reactions():
            if p == path:
                return r
        return None

    def check_graph(self) -> None:
        """Reachability, dead ends and emptying menus. A scene that a ``WL001`` target misspells
        (``goto: light_ending`` beside ``light_end``) is not also reported unreachable (``WL005``) or
        never targeted (``WL015``): the graph is read with each near miss spelt right, so one
        mistake is one finding. A scene those fixes would still not reach is reported as before."""
        g = self.edges()
        start = self.m.start
        seen = reachable(g, start)
        targets = {t for ts in g.values() for t in ts}
        meant = self._meant(g)
        seen_meant = reachable(meant, self._spelt(start))
        targets_meant = {self._spelt(start), *(t for ts in meant.values() for t in ts)}
        for sid, sc in self.m.scenes.items():
            if sid not in seen and sid not in seen_meant:
                self.add("WL005", ("scenes", sid), sid)
            if sid not in targets and sid not in targets_meant and sid != start:
                self.add("WL015", ("scenes", sid), sid)
            if not sc.ending and not g[sid]:
                self.add("WL006", ("scenes", sid), sid)
            if sc.choices and all(c.once for c in sc.choices) and not sc.exits and not sc.ending:
                if self._reaches(g, sid, sid):
                    self.add("WL013", ("scenes", sid), sid)

    def _spelt(self, target: str) -> str:
        """``target``, or the scene its ``WL001`` hint names when it is no scene (itself when none is near)."""
        if target in self.m.scenes:
            return target
        return near(target, self.m.scenes) or target

    def _meant(self, g: dict[str, set[str]]) -> dict[str, set[str]]:
        """``g`` with each undefined target replaced by the scene its ``WL001`` hint names."""
        return {sid: {self._spelt(t) for t in ts} for sid, ts in g.items()}

    @staticmethod
    def _reaches(g: dict[str, set[str]], src: str, dst: str) -> bool:
        seen: set[str] = set()
        queue = deque(g.get(src, ()))
        while queue:
            s = queue.popleft()
            if s == dst:
                return True
            if s in g and s not in seen:
                seen.add(s)
                queue.extend(g[s])
        return False

    def check_lines(self) -> None:
        for path, line in self.story.lines():
            if len(line.text) > MAX_LINE_CHARS:
                self.add("WL008", (*path, "text"), len(line.text))

    def check_gone(self) -> None:
        """WL031: a scene lists an item (``items:``) or a character (``present:``) that its own
        unconditional text (a line without ``if:``, or its prompt) says is gone; the world
        would draw what the player is told is not there."""
        m = self.m
        for sid, scene in m.scenes.items():
            texts: list[tuple[Path_, str]] = [(("scenes", sid, "lines", k, "text"), ln.text)
                                              for k, ln in enumerate(scene.lines) if not ln.if_]
            texts += [(("scenes", sid, "prompt"), scene.prompt)] if scene.prompt else []
            listed = [("items", i, m.items[i].name) for i in scene.items if i in m.items]
            listed += [("present", c, m.cast[c].name) for c in scene.present if c in m.cast]
            for field, ident, name in listed:
                for path, text in texts:
                    if gone_in(text, ident, name):
                        self.add("WL031", path, f"scene {sid} lists {ident} under {field}:, but its text says "
                                 f"it is gone: {text!r}")
                        break

    def assets(self) -> list[tuple[Path_, str]]:
        """Every asset the story names, with its source path (relative to the story folder)."""
        m = self.m
        assets: list[tuple[Path_, str]] = [(("world", "anchors", i), a) for i, a in enumerate(m.world.anchors)]
        assets += [(("items", k, "image"), v.image) for k, v in m.items.items() if v.image]
        assets += [(("cast", k, "image"), v.image) for k, v in m.cast.items() if v.image]
        return assets

    def check_assets(self) -> None:
        for path, rel in self.assets():
            p = self.story.folder / rel
            try:
                with Image.open(p) as im:
                    im.verify()
            except Exception:
                self.add("WL009", path, rel)
        for code, where, name in art_problems(self.story.folder, self.m):  # plates, layers, sprite sheets
            self.add(code, where, name)

    def check_ids(self) -> None:
        seen: dict[str, Path_] = {}
        for path, r in self.story.reactions():
            rid = getattr(r, "id", "")
            if not rid:
                continue
            if rid in seen:
                self.add("WL010", (*path, "id"), rid)
            else:
                seen[rid] = path
        lines: set[str] = set()
        for sid, sc in self.m.scenes.items():
            for i, line in enumerate(sc.lines):
                lid = self.story.line_id(sid, i, line)
                if lid in lines:
                    self.add("WL010", ("scenes", sid, "lines", i, "id"), lid)
                lines.add(lid)

    def check_actions(self) -> None:
        for sid, sc in self.m.scenes.items():
            owner: dict[str, str] = {}
            for i, a in enumerate(sc.actions):
                for k in a.keywords:
                    k = k.lower()
                    if k in owner and owner[k] != a.id:
                        self.add("WL017", ("scenes", sid, "actions", i, "keywords"), f"{owner[k]}/{a.id}")
                    owner.setdefault(k, a.id)


    def check_interpolation(self) -> None:
        """WL019: ``{name}`` in a line or choice text that interpolation cannot fill (shown raw)."""
        known = set(self.m.variables) | set(WORLD_KEYS)
        texts: list[tuple[Path_, str, bool]] = [((*p, "text"), ln.text, p[0] == "on_give" or "on_give" in p)
                                                for p, ln in self.story.lines()]
        texts += [(("scenes", sid, "choices", i, "text"), c.text, False)
                  for sid, sc in self.m.scenes.items() for i, c in enumerate(sc.choices)]
        for path, text, gift in texts:
            for name in dict.fromkeys(INTERPOLATION.findall(text)):
                if name not in known and not (gift and name in GIFT_NAMES):
                    self.add("WL019", path, "{" + name + "}", [f"{{{k}}}" for k in known])

    def check_catalogues(self) -> None:
        """WL021-WL026: each ``locale/<lang>.po``: its syntax (WL025), placeholders its translations drop
        or invent (WL026), and against the string table: missing, stale, unused (each at its line)."""
        folder = self.story.folder / "locale"
        if not folder.is_dir():
            return
        for po in sorted(folder.glob("*.po")):
            try:
                syntax = po_syntax(po)
                if syntax:  # WL025 at each bad line; what polib would make of the rest is not worth guessing
                    for line, what in syntax:
                        self._po("WL025", f"{po}:{line}", f"{what} ({po.stem})")
                    continue
                found = check_catalogue(self.story, po)
                placeholders = placeholder_problems(po)
            except StoryError as exc:
                self.add("WL018", (), exc.why)
                continue
            for line, sid, what in placeholders:
                self._po("WL026", f"{po}:{line}", f"{sid!r} ({po.stem}): {what}")
            for code, ids in (("WL021", found.missing), ("WL022", found.stale), ("WL023", found.unused)):
                for sid in ids:
                    at = found.lines.get(sid)
                    self._po(code, f"{po}:{at}" if at else str(po), f"{sid!r} ({po.stem})")

    def _po(self, code: str, where: str, name: str) -> None:
        """A catalogue finding at ``where`` (``file:line``), unless its code is turned off."""
        c = CODES[code]
        sev = self.overrides.get(code, c.severity)
        if sev != "off":
            self.out.append(Diagnostic(where, code, sev, c.message.format(name=name), c.hint))

    def check_frozen_gates(self) -> None:
        """WL020: a scene whose every way on is gated on a condition that can never hold.

        A condition can never hold when every name it reads is a variable no effect
        assigns, it calls no function, and it is false at those variables' defaults.
        """
        assigned = {e.target.name for _, src in self._effects() for e in [self._effect_or_none(src)]
                    if e is not None and e.kind == "assign" and e.target is not None}
        frozen = {k: v.default for k, v in self.m.variables.items() if k not in assigned}
        ways: dict[str, list[Reaction]] = {}
        anywhere: set[str] = set()  # characters whose story-level gift reactions lead on
        for path, r in self.story.reactions():
            if path[0] == "scenes" and r.goto:
                ways.setdefault(str(path[1]), []).append(r)
            elif r.goto:
                anywhere.add(str(path[1]))
        for sid, rs in ways.items():
            sc = self.m.scenes[sid]
            if sc.ending or "any" in anywhere or anywhere & set(sc.present):
                continue
            gates = [self._never_holds(r.if_, frozen) for r in rs]
            if gates and all(gates):
                self.add("WL020", ("scenes", sid), f"{sid!r} ({rs[0].if_!r})")

    def _effect_or_none(self, src: str) -> Effect | None:
        try:
            return self.story.effect(src)
        except ExpressionError:
            return None

    def _never_holds(self, cond: str, frozen: dict[str, Any]) -> bool:
        if not cond:
            return False
        try:
            compiled = self.story.condition(cond)
        except ExpressionError:
            return False
        if compiled.calls or not compiled.names or not compiled.names <= set(frozen):
            return False
        try:
            return not compiled(_FrozenEnv(frozen))
        except ExpressionError:
            return False


class _FrozenEnv:
    """Variables nothing assigns, at their defaults; any other read is not constant (with no
    values: an environment for constant conditions, where any lookup means not constant)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def name(self, key: str) -> Any:
        if key in self.values:
            return self.values[key]
        raise ExpressionError("not constant")

    def call(self, fn: str, args: tuple[Any, ...]) -> Any:
        raise ExpressionError("not constant")

    def assign(self, *a: Any) -> None:
        raise ExpressionError("not constant")

    def effect_call(self, *a: Any) -> None:
        raise ExpressionError("not constant")


class ExtraCheck(Protocol):
    """A check from a room above ``story/`` (:mod:`game.lint`'s cards, which this room must not
    import), run with the story's own and kept with them in the findings memo."""

    #: a name for the memo key (another set of checks, another memo).
    name: str
    #: modules whose source decides its findings (part of the memo's code digest).
    modules: tuple[str, ...]

    def files(self, story: Story) -> list[str]:
        """The files it reads (relative to the story folder, or absolute): an edit re-lints."""
        ...

    def __call__(self, story: Story, overrides: dict[str, Severity]) -> list[Diagnostic]:
        """Its findings for ``story`` (``overrides``: the story's ``[lint.severity]``)."""
        ...


def lint_story(path: str | Path, use_cache: bool = True, extra: ExtraCheck | None = None,
               story: Story | None = None) -> list[Diagnostic]:
    """Lint the story at ``path``; a story that does not load gives one WL018 error per problem.

    ``story`` is that story already loaded (``worldloom play`` loads it once, for its start
    lint and for play): linted as it is, never loaded again; its findings are the memo's
    when the memo has them.

    ``extra`` adds the findings of another room's check after the story's own (not run
    for a story that does not load); they are kept in the memo with the story's, which
    its files' size and time and its modules' source also key.

    With ``use_cache`` (the default) lint shares the story cache with play
    (:func:`game.story.loader.load_story`): a story play has loaded lints without a
    YAML parse (its line marks are parsed only when a finding needs them), and a
    first lint fills the cache for play. The findings themselves are kept beside the
    story in that cache, keyed by the story file, its sources' digest, the severity overrides, this
    lint's own code and every named asset's and catalogue's size and modification time, so linting
    an unchanged story again reads them back.

    Raises:
        game.errors.StoryError: ``worldloom.toml`` itself is malformed.
    """
    root = story_file(path)
    overrides = severity_overrides(root.parent)
    ink = is_ink_path(path)
    memo = None
    modules = extra.modules if extra is not None else ()
    tag = extra.name if extra is not None else ""
    if use_cache and not ink:
        digest = story.digest if story is not None else cached_digest(root)
        memo = _memo_file(digest, overrides, root, tag) if digest else None
        found = _read_memo(memo, root.parent, modules) if memo else None
        if found is not None:
            return found
    try:
        if story is None:
            story = load_story(path, use_cache=use_cache, compile_now=False)
    except StoryError as exc:
        c = CODES["WL018"]
        return [Diagnostic(where or str(path), "WL018", overrides.get("WL018", c.severity),
                           c.message.format(name=why), c.hint if exc.problems[1:] else exc.hint or c.hint)
                for where, why in exc.problems]
    linter = Linter(story, overrides)
    with gc_paused():  # the checks make many small objects and no cycles
        diags = linter.run()
    files = [rel for _, rel in linter.assets()]
    # its catalogues, and the folder, kept even when it is missing (a missing one stats as None), so a
    # catalogue added or removed, or the first `strings extract`, makes the memo stale
    locale = root.parent / "locale"
    files += ["locale", *(f"locale/{po.name}" for po in sorted(locale.glob("*.po")))]
    if extra is not None:
        diags = diags + extra(story, overrides)
        files += extra.files(story)
    files_seen = {f: i for i, f in reversed(list(enumerate(position(d.where)[0] for d in diags)))}
    diags.sort(key=lambda d: (files_seen[position(d.where)[0]], position(d.where)))  # by line in each file
    if use_cache and not ink:
        _write_memo(_memo_file(story.digest, overrides, root, tag), root.parent, files, diags, modules)
    return diags


def position(where: str) -> tuple[str, int, int]:
    """``(file, line, column)`` of a finding's ``file:line:col`` (``0`` for a part it lacks): lint
    prints each file's findings in this order (the files in the order their first finding came)."""
    parts = where.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1]), int(parts[2])
    parts = where.rsplit(":", 1)
    if len(parts) == 2 and parts[1].isdigit():
        return parts[0], int(parts[1]), 0
    return where, 0, 0


@cache
def _code_digest(modules: tuple[str, ...] = ()) -> str:
    """SHA-256 of the code that decides findings (lint, codes, expressions, schema, loader, the
    catalogue checks, and ``modules``: an extra check's). Read once per process: the memo's read
    and its write (and play's start lint after ``worldloom lint``) need the same sources."""
    h = hashlib.sha256()
    for name in (__name__, "game.story.diagnostics", "game.state.gamestate", "game.story.expr", "game.story.schema",
                 "game.story.loader",
                 "game.story.strings", *modules):
        h.update(_source(name).read_bytes())
    return h.hexdigest()


def _source(name: str) -> Path:
    """The source file of our module ``name`` (``game.cast.cardcheck``), imported or not: an extra
    check's modules are imported only when it runs, and a memo's read must not import them."""
    module = sys.modules.get(name)
    if module is not None and module.__file__:
        return Path(module.__file__)
    base = Path(__file__).resolve().parents[2].joinpath(*name.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _memo_file(digest: str, overrides: dict[str, Severity], root: Path, tag: str = "") -> Path:
    """The memo of one story file (its findings name its path) with one set of overrides and extra check."""
    tail = hashlib.sha256(json.dumps([str(root.resolve()), sorted(overrides.items()), tag]).encode()).hexdigest()[:16]
    return cache_dir() / f"{digest[:40]}.{tail}.lint.json"


def _stat(folder: Path, rel: str) -> list[int] | None:
    try:
        st = (folder / rel).stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _read_memo(memo: Path, folder: Path, modules: tuple[str, ...] = ()) -> list[Diagnostic] | None:
    """The findings kept for this story, or ``None`` (none kept, other code, an asset changed, damaged)."""
    try:
        doc = json.loads(memo.read_text(encoding="utf-8"))
        if doc["code"] != _code_digest(modules):
            return None
        if any(_stat(folder, rel) != stat for rel, stat in doc["assets"]):
            return None
        return [Diagnostic(str(d["where"]), str(d["code"]), d["severity"], str(d["message"]), str(d["hint"]))
                for d in doc["diagnostics"]]
    except (OSError, KeyError, TypeError, ValueError):
        return None


def _write_memo(memo: Path, folder: Path, assets: list[str], diags: list[Diagnostic],
                modules: tuple[str, ...] = ()) -> None:
    doc = {"code": _code_digest(modules), "assets": [[rel, _stat(folder, rel)] for rel in assets],
           "diagnostics": diagnostics_json(diags)}
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(tmp, memo)
    except OSError:
        pass  # the cache is an optimisation only


def diagnostics_json(diags: list[Diagnostic]) -> list[dict[str, Any]]:
    """JSON-able list for editors and CI."""
    return [asdict(d) for d in diags]

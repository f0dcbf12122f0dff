"""Where a story's game mechanics keep their reactions, conditions and effects.

Roles, timers, quests, outcomes, recipes and agents (``docs/story-format.md``, "Game
mechanics") hold reactions, conditions and effects outside the scenes. Lint and the
explorer walk them through these three functions, with their source paths, so a
mechanic is checked and explored like any choice.
"""

from __future__ import annotations

from collections.abc import Iterator

from game.story.schema import Reaction, StoryModel
from game.story.yamlio import Path_


def mechanic_reactions(m: StoryModel) -> Iterator[tuple[Path_, Reaction]]:
    """Every reaction of a mechanic: timers (and their warnings), outcomes, recipes, agents' actions."""
    for tid, t in m.timers.items():
        yield ("timers", tid), t
        for left, w in t.warn.items():
            yield ("timers", tid, "warn", left), w
    for oid, o in m.outcomes.items():
        yield ("outcomes", oid), o
    for rid, r in m.recipes.items():
        yield ("recipes", rid), r
    for cid, a in m.agents.items():
        for aid, act in a.actions.items():
            yield ("agents", cid, "actions", aid), act


def mechanic_conditions(m: StoryModel) -> Iterator[tuple[Path_, str]]:
    """Conditions that are not a reaction's ``if``: agents' rules and goals, quest stages' ``done``."""
    for cid, a in m.agents.items():
        for i, rule in enumerate(a.rules):
            if rule.if_:
                yield ("agents", cid, "rules", i, "if"), rule.if_
        for gid, g in a.goals.items():
            if g.done:
                yield ("agents", cid, "goals", gid, "done"), g.done
    for qid, q in m.quests.items():
        for sid, st in q.stages.items():
            if st.done:
                yield ("quests", qid, "stages", sid, "done"), st.done


def mechanic_effects(m: StoryModel) -> Iterator[tuple[Path_, str]]:
    """Effects that are not a reaction's ``do``: roles' and quest stages' ``do``."""
    for rid, role in m.roles.items():
        for i, src in enumerate(role.do):
            yield ("roles", rid, "do", i), src
    for qid, q in m.quests.items():
        for sid, st in q.stages.items():
            for i, src in enumerate(st.do):
                yield ("quests", qid, "stages", sid, "do", i), src


def anywhere_gotos(m: StoryModel) -> set[str]:
    """Scenes a mechanic may send the player to from any scene (timers, outcomes, recipes, agents)."""
    return {r.goto for _, r in mechanic_reactions(m) if r.goto}

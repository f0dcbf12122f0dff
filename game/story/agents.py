"""Agents: characters who act between the player's turns, within the actions the story declares.

An agent (``agents:`` in the story, keyed by cast id) has a location, needs that
change each turn, goals, a schedule, and a fixed set of actions (``move``, ``take``,
``drop``, ``give``, ``use``, ``talk``, ``wait``). Each turn it takes at most one
action, chosen by, in order:

1. its authored ``rules`` (the first whose ``if`` holds and whose action is possible);
2. its ``schedule`` (the move action towards where it should be now);
3. its ``fallback``: ``wait``, ``random`` (a pick drawn from ``GameState.random``, so
   the same seed and inputs give the same picks) or ``model`` (an
   :class:`AgentPolicy`, e.g. the dialogue model in :mod:`game.cast.agentmind`; a
   pick outside the possible actions is refused and the agent waits; with no
   policy the agent waits, so play and exploration never depend on a model).

Everything an agent does is an ``agent`` event (and the lines, gifts and effects its
action causes) applied to the same :class:`GameState` as the player's intents, so it
is saved, rolled back and replayed with them; the event's ``data`` names ``kind``,
``by`` (what chose it), ``from``, ``to``, ``item`` and ``turn`` (so a replay can give
back a model's pick). This module keeps no state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from game.state import Event, GameState
from game.state.events import EventKind
from game.story.schema import AgentAction, AgentDef, Line, Reaction
from game.story.story import Story

#: Action id an agent's fallback may always pick: do nothing this turn.
WAIT = "wait"
#: Reaction a character shows while it walks out of / into the player's view (the world draws it).
LEAVING, ARRIVING = "walks off", "arrives"
#: Where an agent the scene gives no position stands (world units: 1.0 = one screen width from the
#: location's origin), in the order they are tried: right of centre first (where a lone one has
#: always stood), then outwards, :data:`MIN_GAP` apart (see :func:`free_spot`).
FREE_SPOTS = (0.75, 0.6, 0.9, 0.45, 0.3, 0.15)
#: The least distance between two characters' positions for neither to cover the other (world units:
#: the window's character box is 0.14 of the screen wide, ``game.app.layout.CHARACTER_BOX``).
MIN_GAP = 0.14


class AgentHost(Protocol):
    """What an agent turn needs of the story runtime (:class:`game.story.runtime.StoryRuntime`)."""

    story: Story

    def check(self, state: GameState, cond: str, where: str) -> bool: ...

    def event(self, state: GameState, kind: EventKind, **kw: Any) -> Event: ...

    def react(self, state: GameState, r: Reaction, path: tuple[Any, ...], base_id: str,
              extra: dict[str, str] | None = None) -> list[Event]: ...

    def set_reaction(self, state: GameState, who: str, reaction: str, events: list[Event]) -> None: ...

    def is_ending(self, state: GameState) -> bool: ...


class AgentPolicy(Protocol):
    """Picks an agent's action when no rule or schedule entry applies (``fallback: model``)."""

    def choose(self, story: Story, state: GameState, agent: str, options: Sequence[str]) -> str:
        """One of ``options`` (action ids of ``agent``; :data:`WAIT` is always among them)."""
        ...


def init_agents(story: Story, state: GameState) -> None:
    """Put every agent at its start location, with its needs at their start values and its items."""
    for cid, a in story.model.agents.items():
        row: dict[str, bool | int | float | str] = {"at": a.at, "doing": ""}
        row.update({f"need.{n}": float(d.start) for n, d in a.needs.items()})
        state.agents[cid] = row
        for item in a.carries:
            state.holders[item] = cid


def model_agents(story: Story) -> list[str]:
    """The agents whose ``fallback`` is ``model`` (they need an :class:`AgentPolicy` to do more than wait)."""
    return [cid for cid, a in story.model.agents.items() if a.fallback == "model"]


def location_of(state: GameState, agent: str) -> str:
    """The location id ``agent`` is at (``""`` for a character who is not an agent)."""
    return str(state.agents.get(agent, {}).get("at", ""))


def present(story: Story, state: GameState) -> dict[str, float]:
    """Who is in the player's scene now: character id -> horizontal position (world units).

    A character who is not an agent is where the scene puts it; an agent is there when
    it is at the scene's location, at the scene's position for it, else at a :func:`free_spot`
    (agents in story order: the first at 0.75 when that is free, the next ones beside it, never on
    someone already there while a spot :data:`MIN_GAP` clear is left). The same state gives the
    same positions.
    """
    scene = story.model.scenes.get(state.scene)
    if scene is None:
        return {}
    agents = story.model.agents
    out = {c: x for c, x in scene.present.items() if c not in agents or location_of(state, c) == scene.location}
    for cid in agents:
        if cid not in out and location_of(state, cid) == scene.location:
            out[cid] = free_spot(out.values())
    return out


def free_spot(taken: Iterable[float]) -> float:
    """The first of :data:`FREE_SPOTS` at least :data:`MIN_GAP` from every position in ``taken``
    (world units); when none is, the one farthest from its nearest neighbour (the earlier on a tie)."""
    used = list(taken)
    gaps = [min((abs(x - t) for t in used), default=float("inf")) for x in FREE_SPOTS]
    clear = [x for x, gap in zip(FREE_SPOTS, gaps, strict=True) if gap >= MIN_GAP - 1e-9]
    return clear[0] if clear else FREE_SPOTS[gaps.index(max(gaps))]


def _listeners(story: Story, state: GameState, where: str, speaker: str) -> list[str]:
    """Agents at location ``where`` other than ``speaker``, and ``player`` when she is there."""
    out = [c for c in story.model.agents if c != speaker and location_of(state, c) == where]
    if state.location == where:
        out.append("player")
    return out


def possible(host: AgentHost, state: GameState, agent: str, action_id: str) -> bool:
    """Whether ``agent`` can take ``action_id`` now (its ``if`` and what its kind needs).

    ``move``: not there already; ``take``: the item is free (nobody holds it, nothing used it up);
    ``drop``/``use`` with an item, ``give``: the agent holds it; ``give``/``talk`` to
    someone: they are at the same location (``player``: the player is there).
    """
    if action_id == WAIT:
        return True
    a = host.story.model.agents[agent].actions.get(action_id)
    if a is None:
        return False
    here = location_of(state, agent)
    if a.kind == "move" and a.to == here:
        return False
    if a.kind == "take" and (a.item in state.inventory or a.item in state.holders
                             or state.looks.get(a.item, {}).get("removed")):
        return False
    if a.kind in ("drop", "give") or (a.kind == "use" and a.item):
        if state.holders.get(a.item) != agent:
            return False
    if a.kind in ("give", "talk") and a.to:
        if a.to == "player":
            if state.location != here:
                return False
        elif a.to == "all":
            if not _listeners(host.story, state, here, agent):
                return False
        elif a.to in host.story.model.agents and location_of(state, a.to) != here:
            return False
    where = host.story.where(("agents", agent, "actions", action_id, "if"))
    return host.check(state, a.if_, where)


def options(host: AgentHost, state: GameState, agent: str) -> list[str]:
    """The actions ``agent`` can take now, in declared order, then :data:`WAIT`."""
    return [aid for aid in host.story.model.agents[agent].actions if possible(host, state, agent, aid)] + [WAIT]


def decide(host: AgentHost, state: GameState, agent: str, policy: AgentPolicy | None) -> tuple[str, str]:
    """``(action id, by)``: what ``agent`` does this turn and what chose it.

    ``by`` is ``rule:<index>``, ``schedule``, ``random``, ``model`` or ``fallback``.
    """
    d: AgentDef = host.story.model.agents[agent]
    row = state.agents.setdefault(agent, {"at": d.at})
    for i, rule in enumerate(d.rules):
        if rule.once and row.get(f"rule.{i}"):
            continue
        if host.check(state, rule.if_, host.story.where(("agents", agent, "rules", i, "if"))) \
                and possible(host, state, agent, rule.act):
            if rule.once:
                row[f"rule.{i}"] = True
            return rule.act, f"rule:{i}"
    due = [e for e in d.schedule if e.turn <= state.turn]
    if due:
        target = max(due, key=lambda e: e.turn).at
        if target != location_of(state, agent):
            for aid, a in d.actions.items():
                if a.kind == "move" and a.to == target and possible(host, state, agent, aid):
                    return aid, "schedule"
    if d.fallback == "wait":
        return WAIT, "fallback"
    if d.fallback == "model" and policy is None:  # no model: play and exploration never depend on one
        return WAIT, "fallback"
    opts = options(host, state, agent)
    if d.fallback == "model" and policy is not None:
        pick = policy.choose(host.story, state, agent, opts)
        return (pick, "model") if pick in opts else (WAIT, "refused")
    return opts[min(int(state.random() * len(opts)), len(opts) - 1)], "random"


def _talk(host: AgentHost, state: GameState, agent: str, action_id: str, a: AgentAction) -> list[Event]:
    """The lines of a ``talk`` action: spoken where the agent is, remembered by who hears them."""
    events: list[Event] = []
    here = location_of(state, agent)
    path = ("agents", agent, "actions", action_id, "say")
    for i, line in enumerate(a.say):
        if line.if_ and not host.check(state, line.if_, host.story.where((*path, i, "if"))):
            continue
        speaker = line_speaker(agent, line)
        heard_by = _listeners(host.story, state, here, speaker)
        for who in heard_by:
            if who != "player":
                row = state.agents[who]
                row[f"heard.{speaker}"] = int(row.get(f"heard.{speaker}", 0)) + 1
                row[f"last.{speaker}"] = line.text
        seen = state.location == here
        events.append(host.event(state, "line" if seen else "offstage", speaker=speaker, text=line.text,
                                 ids={"line": line.id or f"{agent}.{action_id}.say{i}", "agent": agent},
                                 data={"heard_by": heard_by, "at": here}))
    return events


def act(host: AgentHost, state: GameState, agent: str, action_id: str, by: str) -> list[Event]:
    """Apply ``agent``'s action ``action_id`` (already :func:`possible`) and return its events.

    Raises:
        game.errors.StoryRuntimeError: an effect or goto of the action fails, naming where.
    """
    row = state.agents[agent]
    row["doing"] = action_id
    if action_id == WAIT:
        return []
    a = host.story.model.agents[agent].actions[action_id]
    here = location_of(state, agent)
    data: dict[str, Any] = {"kind": a.kind, "by": by, "from": here, "turn": state.turn}
    if a.to:
        data["to"] = a.to
    if a.item:
        data["item"] = a.item
    events = [host.event(state, "agent", speaker=agent, ids={"character": agent, "action": action_id},
                         data={**data, "chunk": a.chunk, "seen": here == state.location or
                               (a.kind == "move" and a.to == state.location)})]
    if a.kind == "move":
        row["at"] = a.to
        if here == state.location:
            host.set_reaction(state, agent, LEAVING, events)
        elif a.to == state.location:
            host.set_reaction(state, agent, ARRIVING, events)
    elif a.kind == "take":
        state.holders[a.item] = agent
        events.append(host.event(state, "give", ids={"item": a.item, "to": agent}, data={"by": agent}))
    elif a.kind == "drop":
        state.holders.pop(a.item, None)
    elif a.kind == "give":
        if a.to == "player":
            state.holders.pop(a.item, None)
            state.inventory.append(a.item)
        else:
            state.holders[a.item] = a.to
            state.gifts.setdefault(a.to, []).append(a.item)
        events.append(host.event(state, "give", ids={"item": a.item, "to": a.to}, data={"by": agent}))
    if a.kind == "talk":
        events += _talk(host, state, agent, action_id, a)
        rest: Reaction = a.model_copy(update={"say": ()})
    else:
        rest = a
    path = ("agents", agent, "actions", action_id)
    events += host.react(state, rest, path, f"{agent}.{action_id}")
    return events


def goals(host: AgentHost, state: GameState, agent: str) -> list[Event]:
    """A ``goal`` event for each goal of ``agent`` achieved this turn (its ``done`` holds for the first time)."""
    events = []
    row = state.agents[agent]
    for gid, g in host.story.model.agents[agent].goals.items():
        if not g.done or row.get(f"goal.{gid}"):
            continue
        if host.check(state, g.done, host.story.where(("agents", agent, "goals", gid, "done"))):
            row[f"goal.{gid}"] = True
            events.append(host.event(state, "goal", speaker=agent, text=g.text,
                                     ids={"character": agent, "goal": gid}))
    return events


def grow_needs(story: Story, state: GameState) -> None:
    """Each agent's needs change by ``per_turn``, clamped to ``[min, max]``."""
    for cid, d in story.model.agents.items():
        row = state.agents.setdefault(cid, {"at": d.at})
        for n, need in d.needs.items():
            key = f"need.{n}"
            row[key] = clamp(float(row.get(key, need.start)) + need.per_turn, need.min, need.max)


def clamp(value: float, lo: float | None, hi: float | None) -> float:
    """``value`` within ``[lo, hi]`` (a ``None`` bound is open)."""
    if lo is not None and value < lo:
        value = lo
    if hi is not None and value > hi:
        value = hi
    return value


def agent_turn(host: AgentHost, state: GameState, policy: AgentPolicy | None = None) -> list[Event]:
    """Every agent acts once, in declared order: needs grow, one action each, goals checked.

    Stops early when an action ends the story. Deterministic: random picks draw from
    ``state.random()``; a ``policy`` (a dialogue model) is asked only for ``fallback: model``.

    Raises:
        game.errors.StoryRuntimeError: an agent's condition, effect or goto fails, naming where.
    """
    events: list[Event] = []
    grow_needs(host.story, state)
    for cid in host.story.model.agents:
        if host.is_ending(state):
            break
        aid, by = decide(host, state, cid, policy)
        events += act(host, state, cid, aid, by)
        events += goals(host, state, cid)
    return events


def heard_lines(events: Sequence[Event], listener: str) -> list[tuple[str, str]]:
    """``(speaker, text)`` of the agents' lines ``listener`` heard among ``events``, in order."""
    return [(e.speaker, e.text) for e in events
            if e.kind in ("line", "offstage") and listener in e.data.get("heard_by", ())]


def line_speaker(agent: str, line: Line) -> str:
    """Who speaks ``line`` of ``agent``'s talk action (the agent, unless the line names someone)."""
    return agent if line.speaker in ("narrator", "") else line.speaker

"""An agent's dialogue model picks its action when no authored rule does (``fallback: model``).

The model sees who the character is (name, look), its goals, needs, where it is,
what it last heard each other character say, and the numbered actions it may take
now (always including ``wait``); it answers with one number or id. The pick is
checked against those actions (:func:`parse_pick`: anything else is ``wait``), so a
model can never make a character do something the story did not declare. Decoding
is greedy, so the same game gives the same picks, and a prompt seen before is
answered from a cache.

The model thinks off the session's lock: :class:`PicksAhead` is the turn step that
makes the session's prepare phase run (the rules on a copy of the state, where the
agents' world turn asks the model), so the turn itself finds every pick in the cache
and the window keeps streaming frames meanwhile.

Replays need no model: :class:`RecordedAgentPolicy` answers each agent turn with the
pick recorded in the event log (``agent`` events with ``data.by == "model"``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from game.models.llm import DialogueModel, Message, ModelError
from game.state import AddReference, AnyIntent, Event, GameState, Instruct
from game.story.agents import WAIT, location_of
from game.story.host import TurnHost
from game.story.story import Story

#: Most tokens the model may answer with (a number or an id).
PICK_TOKENS = 8


def agent_messages(story: Story, state: GameState, agent: str, options: Sequence[str]) -> list[Message]:
    """The prompt: a system message describing the character and a user message listing ``options``."""
    m = story.model
    c = m.cast.get(agent)
    d = m.agents[agent]
    row = state.agents.get(agent, {})
    name = c.name if c else agent
    loc = m.locations.get(location_of(state, agent))
    lines = [f"You are {name}" + (f", {c.look}" if c and c.look else "") + "."]
    todo = [g.text for gid, g in d.goals.items() if not row.get(f"goal.{gid}")]
    if todo:
        lines.append("You want: " + "; ".join(todo) + ".")
    if d.needs:
        lines.append("Your needs: " + ", ".join(
            f"{n} {need_word(float(row.get(f'need.{n}', nd.start)), nd.min, nd.max)}"
            for n, nd in d.needs.items()) + ".")
    lines.append(f"You are at {loc.name if loc else location_of(state, agent)}.")
    for key, text in sorted(row.items()):
        if key.startswith("last."):
            who = key[5:]
            other = m.cast.get(who)
            lines.append(f"{other.name if other else who} last told you: \"{text}\"")
    numbered = []
    for i, aid in enumerate(options, 1):
        a = d.actions.get(aid)
        if a is None:
            what = "wait and do nothing"
        else:
            what = a.say[0].text if a.say else f"{a.kind} {a.to or a.item}".strip()
        numbered.append(f"{i}. {aid}: {what}")
    user = "What do you do now? Answer with the number of one action.\n" + "\n".join(numbered)
    return [{"role": "system", "content": " ".join(lines)}, {"role": "user", "content": user}]


def need_word(value: float, lo: float, hi: float) -> str:
    """A need in words: ``low`` (the bottom third of its range), ``rising``, ``pressing`` (the top third).

    Words, not numbers, so the prompt (and the cached pick) changes only when the need
    crosses a third of its range.
    """
    span = hi - lo
    frac = (value - lo) / span if span > 0 else 0.0
    return "low" if frac < 1 / 3 else "rising" if frac < 2 / 3 else "pressing"


def parse_pick(text: str, options: Sequence[str]) -> str:
    """The option ``text`` names: its first number (1-based) or an option id in it; else :data:`WAIT`."""
    low = text.lower()
    num = re.search(r"\d+", low)
    if num is not None and 1 <= int(num.group()) <= len(options):
        return options[int(num.group()) - 1]
    for aid in sorted(options, key=len, reverse=True):
        if re.search(rf"\b{re.escape(aid.lower())}\b", low):
            return aid
    return WAIT


class ModelAgentPolicy:
    """:class:`game.story.agents.AgentPolicy` backed by a dialogue model.

    Args:
        model: any :class:`game.models.llm.DialogueModel` (the embedded SmolLM2, a scripted one...).

    Decoding is greedy, so a pick is a pure function of the prompt: a prompt seen
    before is answered from the cache without the model (the same pick the model
    would make), which is what keeps a long run at the window's frame rate.

    When the model fails (:class:`~game.models.llm.ModelError`: its worker died, a
    prompt did not fit) the agents fall back to the rule policy for the rest of the
    session: their rules and schedule still act, and where neither does they wait, as
    with no model at all; :attr:`error` says why, and the model is not asked again (a
    dead worker would make every turn wait for it).

    Attributes:
        asked: model calls made (for benches).
        reused: picks answered from the cache.
        failures: model errors met (the agent waited instead).
        error: the first model error's text (``""``: none).
    """

    def __init__(self, model: DialogueModel) -> None:
        self.model = model
        self.asked = 0
        self.reused = 0
        self.failures = 0
        self.error = ""
        self._picks: dict[str, str] = {}

    def choose(self, story: Story, state: GameState, agent: str, options: Sequence[str]) -> str:
        """One of ``options``; :data:`WAIT` when the model fails (or failed before) or names none of them."""
        if list(options) == [WAIT] or self.error:
            return WAIT
        messages = agent_messages(story, state, agent, options)
        key = json.dumps(messages, sort_keys=True)
        if key in self._picks:
            self.reused += 1
            return self._picks[key]
        self.asked += 1
        try:
            text = "".join(self.model.stream(messages, max_new_tokens=PICK_TOKENS, temperature=0.0, seed=0))
        except ModelError as exc:
            self.failures += 1
            self.error = f"{agent}'s dialogue model failed ({exc}); the agents act by their rules only"
            return WAIT
        pick = self._picks[key] = parse_pick(text, options)
        return pick


class PicksAhead:
    """The turn step that lets the agents' dialogue model pick off the session's lock.

    A :class:`game.session.steps.Prepares` step: before each turn the session applies the
    rules to a copy of the state, off its lock, for the steps that prepare. The copy's
    world turn asks ``policy`` for every agent the rules leave to the model, and the
    policy keeps each pick by its prompt; the turn under the lock then asks the same
    prompts and gets the same picks from the cache, without the model. So the slow part
    happens while the window still streams frames, and the picks are those the turn
    would have made (a prompt that changed in between is simply asked then).

    Args:
        policy: the agents' :class:`ModelAgentPolicy` (the one the runtime uses).
    """

    def __init__(self, policy: ModelAgentPolicy) -> None:
        self.policy = policy

    def prepares(self, intent: AnyIntent) -> bool:
        """Every intent that gives the agents a turn (not a world edit), while the model works."""
        return not isinstance(intent, Instruct | AddReference) and not self.policy.error

    def prepare(self, host: TurnHost, intent: AnyIntent, events: list[Event]) -> None:
        """Nothing more to do: the rules the session ran on the copy already asked the model."""

    def on_turn(self, host: TurnHost, intent: AnyIntent, events: list[Event]) -> list[Event]:
        """No events of its own (the agents act in the rules)."""
        return []


class RecordedAgentPolicy:
    """Answers ``fallback: model`` from recorded ``agent`` events (a replay without the model).

    Args:
        events: the recorded events (:class:`~game.state.Event`), or transcript rows
            (``{"type": "agent", "ids": {...}, "data": {"by": "model", "turn": N}}``, as
            :mod:`game.headless` writes them); only the model's picks are kept.

    A turn whose pick was not recorded (the model chose ``wait``) waits again.
    """

    def __init__(self, events: Iterable[Event | Mapping[str, Any]]) -> None:
        self.picks: dict[tuple[int, str], str] = {}
        for e in events:
            kind, ids, data = (e.kind, e.ids, e.data) if isinstance(e, Event) else \
                (e.get("type"), e.get("ids") or {}, e.get("data") or {})
            if kind != "agent" or data.get("by") != "model":
                continue
            turn = e.turn if isinstance(e, Event) else data.get("turn")
            if isinstance(turn, int):
                self.picks[(turn, str(ids.get("character", "")))] = str(ids.get("action", WAIT))

    def choose(self, story: Story, state: GameState, agent: str, options: Sequence[str]) -> str:
        """The recorded pick for this turn and agent (``wait`` if none or no longer possible)."""
        pick = self.picks.get((state.turn, agent), WAIT)
        return pick if pick in options else WAIT

"""The story runtime: applies intents (ids only) to a :class:`GameState`.

The runtime is stateless itself: ``Story`` is read-only and every change goes
into the ``GameState`` it is handed, so a checkpoint is a copy of the state and
a rollback is putting an old copy back (Ink's ``Story``/``StoryState`` split).
Every method returns the :class:`Event` list of what happened, in order.
"""

from __future__ import annotations

import re
from typing import Any

from game.errors import ExpressionError, InputError, StoryRuntimeError
from game.state import Choose, Event, GameState, Give, Move, Say, Wait
from game.state.events import EventKind
from game.state.intents import AnyIntent, Instruct
from game.state.trusted import trusted
from game.story import agents as agents_
from game.story.agents import AgentPolicy, clamp
from game.story.expr import LITERALS, WORLD_KEYS, Target, combine
from game.story.schema import Choice, Line, Reaction, RecipeDef
from game.story.story import Story
from game.story.strings import BUILTINS, Translation, reaction_base, translation_for
from game.story.yamlio import Path_

#: ``{name}`` in a line or choice text (:meth:`StoryRuntime.interpolate`).
INTERPOLATION = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Camera speed for a/d, world units (screens) per second.
PAN_SPEED = 0.25
#: How far the camera may pan either way, world units.
PAN_LIMIT = 1.5
DEFAULT_GIVE_LINE = BUILTINS["builtin.give"]

_EVENT_FIELDS = set(Event.model_fields)



class _Env:
    """Binds expressions to one state (implements ``game.story.expr.ExprEnv``)."""

    def __init__(self, runtime: StoryRuntime, state: GameState, events: list[Event]) -> None:
        self.rt = runtime
        self.state = state
        self.events = events

    def name(self, key: str) -> Any:
        if key in self.state.variables:
            return self.state.variables[key]
        if key in WORLD_KEYS:
            return self.state.world.get(key, self.rt.world_default(self.state, key))
        if key.lower() in LITERALS:  # lint's WL027
            raise ExpressionError(f"unknown name {key!r}", hint=f"the value is written {LITERALS[key.lower()]}")
        raise ExpressionError(f"unknown name {key!r}", hint="declare it under variables:")

    def call(self, fn: str, args: tuple[Any, ...]) -> Any:
        s = self.state
        if fn == "has":
            return args[0] in s.inventory
        if fn == "count":
            return s.inventory.count(args[0])
        if fn == "visited":
            return s.visits.get(args[0], 0)
        if fn == "chosen":
            return s.chosen.get(args[0], 0)
        if fn in ("trust", "affinity"):
            return s.relationship(args[0], fn)
        if fn == "rel":
            return s.relationship(args[0], args[1])
        if fn == "holds":  # an item given, or an object the player added that she wears or holds
            return s.holders.get(args[1]) == args[0] or s.objects.get(args[1], {}).get("on") == args[0]
        if fn == "gave":
            return args[1] in s.gifts.get(args[0], [])
        if fn == "world":
            return self.name(args[0]) if args[0] in WORLD_KEYS else s.world.get(args[0], "")
        if fn == "random":
            return s.random()
        if fn == "turn":
            return s.turn
        if fn == "role":
            return s.role
        if fn == "left":
            return s.timers.get(args[0], -1)
        if fn == "running":
            return args[0] in s.timers
        if fn == "stage":
            return s.quests.get(args[0], "")
        if fn == "done":
            return s.quests.get(args[0], "") == "done"
        if fn == "need":
            return float(s.agents.get(args[0], {}).get(f"need.{args[1]}", 0.0))
        if fn == "at":
            return agents_.location_of(s, args[0])
        if fn == "goal":
            return bool(s.agents.get(args[0], {}).get(f"goal.{args[1]}", False))
        if fn == "heard":
            return int(s.agents.get(args[0], {}).get(f"heard.{args[1]}", 0))
        raise ExpressionError(f"unknown function {fn!r}")

    def assign(self, target: Target, op: str, value: Any) -> None:
        s = self.state
        if target.kind == "relation":
            rel = s.relationships.setdefault(target.name, {})
            old_rel = rel.get(target.axis, 0.0)
            rel[target.axis] = float(combine(old_rel, op, value))
            self._effect(f"{target.axis}({target.name})", old_rel, rel[target.axis])
            return
        if target.kind == "need":
            self._need(target, op, value)
            return
        if target.name in s.variables:
            old = s.variables[target.name]
            new = combine(old, op, value)
            decl = self.rt.story.model.variables.get(target.name)
            if decl is not None:
                if decl.min is not None or decl.max is not None:
                    new = clamp(_number(new, target.name), decl.min, decl.max)
                new = _coerce(decl.type, new, target.name)
            s.variables[target.name] = new
        elif target.name in WORLD_KEYS:
            old = s.world.get(target.name, self.rt.world_default(s, target.name))
            new = combine(old, op, value)
            s.world[target.name] = new
        else:
            raise ExpressionError(f"assignment to undeclared variable {target.name!r}",
                                  hint="declare it under variables:")
        self._effect(target.name, old, new)

    def _need(self, target: Target, op: str, value: Any) -> None:
        agent = self.rt.story.model.agents.get(target.name)
        need = agent.needs.get(target.axis) if agent else None
        if agent is None or need is None:
            raise ExpressionError(f"{target.name!r} has no need {target.axis!r}",
                                  hint="declare it under agents: <id>: needs:")
        row = self.state.agents.setdefault(target.name, {"at": agent.at})
        key = f"need.{target.axis}"
        old = float(row.get(key, need.start))
        row[key] = clamp(_number(combine(old, op, value), key), need.min, need.max)
        self._effect(f"need({target.name}, {target.axis})", old, row[key])

    def _effect(self, name: str, old: Any, new: Any) -> None:
        self.events.append(self.rt.event(self.state, "effect", ids={"target": name},
                                          data={"old": old, "new": new}))

    def effect_call(self, fn: str, args: tuple[Any, ...]) -> None:
        s = self.state
        items = self.rt.story.model.items
        if fn in ("take", "drop", "give") and args[0] not in items:
            raise ExpressionError(f"unknown item {args[0]!r}")
        if fn == "take":
            s.inventory.append(str(args[0]))
            s.holders.pop(str(args[0]), None)
            self.events.append(self.rt.event(s, "give", ids={"item": str(args[0]), "to": "player"}))
        elif fn == "drop":
            if args[0] in s.inventory:
                s.inventory.remove(str(args[0]))
        elif fn == "give":
            item, who = str(args[0]), str(args[1])
            if item in s.inventory:
                s.inventory.remove(item)
            s.holders[item] = who
            s.gifts.setdefault(who, []).append(item)
            self.events.append(self.rt.event(s, "give", ids={"item": item, "to": who}))
        elif fn == "react":
            self.rt.set_reaction(s, str(args[0]), str(args[1]), self.events)
        elif fn == "become":
            self.events += self.rt.take_role(s, str(args[0]))
        elif fn in ("start", "stop"):
            timer = self.rt.story.model.timers.get(str(args[0]))
            if timer is None:
                raise ExpressionError(f"unknown timer {args[0]!r}", hint="declare it under timers:")
            if fn == "start":
                s.timers[str(args[0])] = timer.turns
            else:
                s.timers.pop(str(args[0]), None)
            self.events.append(self.rt.event(s, "timer", ids={"timer": str(args[0])},
                                             data={"left": s.timers.get(str(args[0]), -1), "what": fn}))
        elif fn in ("quest", "advance"):
            self.events += self.rt.quest_step(s, str(args[0]), fn)
        elif fn == "combine":
            a, b = str(args[0]), str(args[1])
            if a not in items or b not in items or a not in s.inventory or b not in s.inventory:
                raise ExpressionError(f"combine({a!r}, {b!r}): the player does not hold both")
            self.events += self.rt.combine(s, a, b)


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExpressionError(f"{name} is a number; cannot store {value!r}")
    return float(value)


def _coerce(kind: str, value: Any, name: str) -> Any:
    try:
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind == "bool":
            return bool(value)
        return str(value)
    except (TypeError, ValueError) as exc:
        raise ExpressionError(f"{name} is {kind}; cannot store {value!r}") from exc


class StoryRuntime:
    """Steps a :class:`Story` over a :class:`GameState`.

    Raises (every method):
        game.errors.InputError: the intent is not possible here (unknown or
            unavailable choice, an item the player does not have).
        game.errors.StoryRuntimeError: the story itself is broken at this point
            (a ``goto`` to a missing scene, an effect that fails), with where.
    """

    def __init__(self, story: Story, policy: AgentPolicy | None = None, *,
                 translation: Translation | None = None) -> None:
        """``policy`` picks agents' actions for ``fallback: model`` (their dialogue model;
        ``None``: they wait when no rule applies). ``translation``: the catalogue to play in;
        default the one ``$WORLDLOOM_LANG`` names (``<story>/locale/<lang>.po``, see
        :mod:`game.story.strings`), else none.

        Raises:
            game.errors.StoryError: that catalogue exists but is not readable PO.
        """
        self.story = story
        #: Picks agents' actions for ``fallback: model`` (their dialogue model); ``None``: seeded random.
        self.policy = policy
        m = story.model
        #: Whether the story has any mechanic that runs between turns (timers, quests, outcomes, agents).
        self.has_world_turn = bool(m.timers or m.quests or m.outcomes or m.agents)
        self.translation = translation if translation is not None else translation_for(story)

    def use_policy(self, policy: AgentPolicy | None) -> None:
        """Let ``policy`` (an agent's dialogue model, or a replay of its picks) choose for
        agents with ``fallback: model``; ``None``: they wait when no rule applies."""
        self.policy = policy

    # -- state helpers -------------------------------------------------------
    def new_state(self, seed: int = 0) -> GameState:
        """A fresh state with the story's defaults (not yet in any scene)."""
        m = self.story.model
        state = GameState(
            story_id=m.id,
            variables={k: v.default for k, v in m.variables.items()},
            inventory=list(m.inventory),
            relationships={cid: dict(c.relationship) for cid, c in m.cast.items()},
            seed=seed,
            timers={t: d.turns for t, d in m.timers.items() if d.start},
            quests={q: next(iter(d.stages)) for q, d in m.quests.items() if d.start},
        )
        agents_.init_agents(self.story, state)
        return state

    def world_default(self, state: GameState, key: str) -> Any:
        scene = self.story.model.scenes.get(state.scene)
        loc = self.story.model.locations.get(scene.location) if scene else None
        if key == "weather":
            return loc.weather if loc else "clear"
        if key == "time_of_day":
            return loc.time_of_day if loc else "dusk"
        return ""

    def event(self, state: GameState, kind: EventKind, **kw: Any) -> Event:
        """An event of ``kind`` at ``state``'s turn, frame and scene (``kw``: speaker, text, ids, data).

        Built without validation (:func:`~game.state.trusted.trusted`): every field comes from
        the runtime's own typed values, and this is on every step's path.
        """
        fields: dict[str, Any] = {"kind": kind, "turn": state.turn, "frame": state.frame, "scene": state.scene,
                                  "speaker": "", "text": "", "ids": {}, "data": {}}
        fields.update(kw)
        return trusted(Event, fields, _EVENT_FIELDS)

    def interpolate(self, state: GameState, text: str, extra: dict[str, str] | None = None) -> str:
        """Replace ``{name}`` by a variable, world key or ``extra`` value; unknown names stay.

        With a translation, ``text`` is first looked up by its source text (choice texts, the
        built-in lines); what is not translated stays as written.
        """
        if self.translation is not None:
            text = self.translation.text(text)
        env = dict(extra or {})

        def sub(m: re.Match[str]) -> str:
            key = m.group(1)
            if key in env:
                return env[key]
            if key in state.variables:
                return str(state.variables[key])
            if key in WORLD_KEYS:
                return str(state.world.get(key, self.world_default(state, key)))
            return m.group(0)

        return INTERPOLATION.sub(sub, text)

    def say_builtin(self, string_id: str) -> str:
        """One of the runtime's own strings (:data:`game.story.strings.BUILTINS`), translated."""
        source = BUILTINS[string_id]
        return self.translation.get(string_id, source) if self.translation is not None else source

    def check(self, state: GameState, cond: str, where: str | Path_) -> bool:
        """Whether ``cond`` holds in ``state``; ``where`` is its place (``file:line``, or its source
        path, turned into ``file:line`` only if it fails).

        Raises:
            game.errors.StoryRuntimeError: the condition does not compile or fails to evaluate.
        """
        if not cond:
            return True
        try:
            return self.story.condition(cond)(_Env(self, state, []))
        except ExpressionError as exc:
            at = where if isinstance(where, str) else self.story.where(where)
            raise StoryRuntimeError(f"condition {cond!r} failed: {exc.why}", where=at) from exc

    def set_reaction(self, state: GameState, who: str, reaction: str, events: list[Event]) -> None:
        state.reactions[who] = reaction
        events.append(self.event(state, "reaction", speaker=who, ids={"character": who},
                                 data={"reaction": reaction}))

    def open_to(self, state: GameState, r: Reaction) -> bool:
        """Whether ``r`` is open to the player's role (``roles: []`` is open to all)."""
        return not r.roles or state.role in r.roles

    def present(self, state: GameState) -> dict[str, float]:
        """Who is in the player's scene now (agents come and go): id -> position, world units."""
        return agents_.present(self.story, state)

    # -- mechanics -------------------------------------------------------------
    def take_role(self, state: GameState, role_id: str) -> list[Event]:
        """The player takes role ``role_id``: its effects, how characters take to it, its line.

        Raises:
            game.errors.ExpressionError: no such role.
        """
        role = self.story.model.roles.get(role_id)
        if role is None:
            raise ExpressionError(f"unknown role {role_id!r}", hint="declare it under roles:")
        state.role = role_id
        events = [self.event(state, "role", text=role.name, ids={"role": role_id})]
        env = _Env(self, state, events)
        for who, axes in role.treat.items():
            for axis, delta in axes.items():
                env.assign(Target("relation", who, axis), "+=", delta)
        for i, src in enumerate(role.do):
            self._apply_effect(env, src, ("roles", role_id, "do", i))
        if role.text:
            events.append(self.event(state, "line", text=self.interpolate(state, role.text),
                                     ids={"line": f"role.{role_id}"}))
        return events

    def quest_step(self, state: GameState, quest_id: str, how: str) -> list[Event]:
        """``quest``: start ``quest_id`` (no-op when started); ``advance``/``auto``: finish its stage.

        Finishing a stage applies its ``do`` and ``say`` and moves to the next stage,
        or to ``"done"`` after the last (a ``quest`` event says which).

        Raises:
            game.errors.ExpressionError: no such quest.
        """
        quest = self.story.model.quests.get(quest_id)
        if quest is None:
            raise ExpressionError(f"unknown quest {quest_id!r}", hint="declare it under quests:")
        stages = list(quest.stages)
        current = state.quests.get(quest_id, "")
        if how == "quest":
            if current:
                return []
            state.quests[quest_id] = stages[0]
            return [self.event(state, "quest", text=quest.stages[stages[0]].text,
                               ids={"quest": quest_id, "stage": stages[0]}, data={"what": "start"})]
        if current in ("", "done"):
            return []
        stage = quest.stages[current]
        events: list[Event] = []
        env = _Env(self, state, events)
        nxt = stages[stages.index(current) + 1] if current != stages[-1] else "done"
        state.quests[quest_id] = nxt
        for i, src in enumerate(stage.do):
            self._apply_effect(env, src, ("quests", quest_id, "stages", current, "do", i))
        for i, line in enumerate(stage.say):
            events.append(self._line(state, line, line.id or f"quest.{quest_id}.{current}.say{i}"))
        text = quest.name if nxt == "done" else quest.stages[nxt].text
        events.insert(0, self.event(state, "quest", text=text, ids={"quest": quest_id, "stage": nxt},
                                    data={"what": "done" if nxt == "done" else "stage", "finished": current}))
        return events

    def world_turn(self, state: GameState) -> list[Event]:
        """What happens on its own after a turn that lets time pass, in this order:
        agents act (:func:`game.story.agents.agent_turn`), timers count down (warnings,
        then firing at 0), quest stages whose ``done`` holds complete, and the first
        outcome whose condition holds ends the story. Stops once an ending is reached.

        Raises:
            game.errors.StoryRuntimeError: a mechanic's condition or effect fails, naming where.
        """
        if not self.has_world_turn or self.is_ending(state):
            return []
        m = self.story.model
        events = agents_.agent_turn(self, state, self.policy)
        for tid in list(state.timers):
            if self.is_ending(state):
                return events
            if tid not in state.timers:
                continue
            if tid not in m.timers:  # a timer the story no longer has (a save or a reload from before)
                del state.timers[tid]
                continue
            timer = m.timers[tid]
            state.timers[tid] -= 1
            left = state.timers[tid]
            warn = timer.warn.get(left)
            if warn is not None and left > 0 and \
                    self.check(state, warn.if_, self.story.where(("timers", tid, "warn", left, "if"))):
                events.append(self.event(state, "timer", ids={"timer": tid}, data={"left": left, "what": "warn"}))
                events += self.react(state, warn, ("timers", tid, "warn", left), f"timer.{tid}.warn{left}")
            if left > 0:
                continue
            if timer.repeat:
                state.timers[tid] = timer.turns
            else:
                del state.timers[tid]
            if self.check(state, timer.if_, self.story.where(("timers", tid, "if"))):
                events.append(self.event(state, "timer", ids={"timer": tid},
                                         data={"left": 0, "what": "fired", "chunk": timer.chunk}))
                events += self.react(state, timer, ("timers", tid), f"timer.{tid}")
        for qid, quest in m.quests.items():
            for _ in range(len(quest.stages)):
                current = state.quests.get(qid, "")
                if current not in ("", "done") and current not in quest.stages:  # a stage the story lost
                    current = state.quests[qid] = next(iter(quest.stages))
                if current in ("", "done") or self.is_ending(state):
                    break
                done = quest.stages[current].done
                if not done or not self.check(state, done, self.story.where(("quests", qid, "stages", current,
                                                                              "done"))):
                    break
                events += self.quest_step(state, qid, "auto")
        for oid, outcome in m.outcomes.items():
            if self.is_ending(state):
                break
            if self.check(state, outcome.if_, self.story.where(("outcomes", oid, "if"))):
                events.append(self.event(state, "outcome", text=outcome.kind, ids={"outcome": oid},
                                         data={"kind": outcome.kind, "chunk": outcome.chunk}))
                events += self.react(state, outcome, ("outcomes", oid), f"outcome.{oid}")
        return events

    # -- queries ---------------------------------------------------------------
    def available_choices(self, state: GameState) -> list[Choice]:
        """Choices of the current scene whose condition holds and that are not used up."""
        scene = self.story.model.scenes.get(state.scene)
        if scene is None or scene.ending:
            return []
        out = []
        for i, c in enumerate(scene.choices):
            if (c.once and state.chosen.get(c.id, 0) > 0) or not self.open_to(state, c):
                continue
            if self.check(state, c.if_, ("scenes", state.scene, "choices", i, "if")):
                out.append(c)
        return out

    def is_ending(self, state: GameState) -> bool:
        scene = self.story.model.scenes.get(state.scene)
        return bool(scene and scene.ending)

    # -- stepping --------------------------------------------------------------
    def begin(self, state: GameState) -> list[Event]:
        """Enter the start scene."""
        return self.stuck(state, self.enter(state, self.story.model.start, "start"))

    def stuck(self, state: GameState, events: list[Event]) -> list[Event]:
        """``events``, and a ``warning`` (``ids.code == "empty_menu"``) when this turn left the
        player in a scene whose menu is empty with no way on: every choice used up (``once``)
        or closed by its condition, no exit open, no action to say, and not an ending. The
        story is broken there (``worldloom lint`` warns of it); the player is told so rather
        than shown an empty menu."""
        scene = self.story.model.scenes.get(state.scene)
        if scene is None or scene.ending or not scene.choices or scene.actions or self.available_choices(state):
            return events
        for d, exit_ in scene.exits.items():
            if self.check(state, exit_.if_, self.story.where(("scenes", state.scene, "exits", d, "if"))):
                return events
        title = scene.title or state.scene
        return [*events, self.event(state, "warning", ids={"code": "empty_menu", "scene": state.scene},
                                    text=f"Nothing is left to choose in {title}: every choice here is used up "
                                         "or closed and there is no way on. The story is broken here; "
                                         "roll back, or load a save.")]

    def enter(self, state: GameState, scene_id: str, cause: str, where: str = "") -> list[Event]:
        """Enter ``scene_id``: visit count, location, on_enter effects, entry lines."""
        if scene_id not in self.story.model.scenes:
            raise StoryRuntimeError(f"goto to unknown scene {scene_id!r}",
                                    where=where or self.story.where(("start",)))
        scene = self.story.model.scenes[scene_id]
        events: list[Event] = []
        previous_location = state.location
        state.scene = scene_id
        state.visits[scene_id] = state.visits.get(scene_id, 0) + 1
        if scene.location != previous_location:
            state.camera_x = 0.0
        state.location = scene.location
        state.reactions.clear()
        events.append(self.event(state, "scene", text=scene.title, ids={"scene": scene_id},
                                 data={"location": scene.location, "cause": cause,
                                       "cut": scene.location != previous_location}))
        env = _Env(self, state, events)
        for i, src in enumerate(scene.on_enter):
            self._apply_effect(env, src, ("scenes", scene_id, "on_enter", i))
        for i, line in enumerate(scene.lines):
            path = ("scenes", scene_id, "lines", i)
            if line.if_ and not self.check(state, line.if_, (*path, "if")):
                continue
            events.append(self._line(state, line, self.story.line_id(scene_id, i, line)))
        if scene.ending:
            events.append(self.event(state, "ending", text=scene.ending, ids={"ending": scene.ending}))
        return events

    def _line(self, state: GameState, line: Line, line_id: str, extra: dict[str, str] | None = None) -> Event:
        speaker = line.speaker
        text = self.translation.get(line_id, line.text) if self.translation is not None else line.text
        return self.event(state, "line", speaker=speaker, text=self.interpolate(state, text, extra),
                          ids={"line": line_id})

    def _apply_effect(self, env: _Env, src: str, path: tuple[Any, ...]) -> None:
        try:
            self.story.effect(src).apply(env)
        except ExpressionError as exc:
            raise StoryRuntimeError(f"effect {src!r} failed: {exc.why}", where=self.story.where(path),
                                    hint=exc.hint) from exc

    def react(self, state: GameState, r: Reaction, path: tuple[Any, ...], base_id: str,
              extra: dict[str, str] | None = None) -> list[Event]:
        """Apply an authored reaction: effects, reactions, lines (``{item}``-style ``extra``), goto.

        ``path`` is its place in the story source (for error locations); ``base_id`` prefixes
        the stable ids of its lines.

        Raises:
            game.errors.StoryRuntimeError: an effect or the goto fails, naming where.
        """
        events: list[Event] = []
        env = _Env(self, state, events)
        for i, src in enumerate(r.do):
            self._apply_effect(env, src, (*path, "do", i))
        for who, reaction in r.react.items():
            self.set_reaction(state, who, reaction, events)
        for i, line in enumerate(r.say):
            if line.if_ and not self.check(state, line.if_, (*path, "say", i, "if")):
                continue
            events.append(self._line(state, line, line.id or f"{base_id}.say{i}", extra))
        if r.goto:
            saved = dict(state.reactions)
            where = self.story.where((*path, "goto")) if r.goto not in self.story.model.scenes else ""
            events += self.enter(state, r.goto, base_id, where)
            if not events[-1].kind == "ending":
                state.reactions.update({k: v for k, v in saved.items()
                                        if k in self.story.model.scenes[state.scene].present})
        return events

    def apply(self, state: GameState, intent: AnyIntent) -> list[Event]:
        """Apply one intent; returns what happened.

        ``Instruct`` and ``AddReference`` are handled by the world room; here they
        only record a ``say`` event so nothing is silently dropped.
        """
        state.turn += 1
        state.reactions.clear()
        events = self._apply_intent(state, intent)
        if self.has_world_turn and self.passes_time(intent, events):  # (a story without them: nothing to ask)
            events += self.world_turn(state)
        return events

    @staticmethod
    def passes_time(intent: AnyIntent, events: list[Event]) -> bool:
        """Whether the world takes its turn after ``intent``: every choice, gift, word and
        wait, and a move through an exit; not a camera pan or a world edit."""
        if isinstance(intent, Move):
            return any(e.kind == "exit" for e in events)
        return isinstance(intent, Choose | Give | Say | Wait)

    def _apply_intent(self, state: GameState, intent: AnyIntent) -> list[Event]:
        if isinstance(intent, Choose):
            return self.stuck(state, self.choose(state, intent.choice_id))
        if isinstance(intent, Move):
            return self.move(state, intent)
        if isinstance(intent, Give):
            return self.stuck(state, self.give(state, intent.item_id, intent.character_id))
        if isinstance(intent, Say):
            return self.stuck(state, self.say(state, intent))
        if isinstance(intent, Wait):
            return []
        text = intent.text if isinstance(intent, Instruct) else intent.path
        return [self.event(state, "say", text=text, data={"unhandled": intent.type})]

    def choose(self, state: GameState, choice_id: str) -> list[Event]:
        scene = self.story.model.scenes[state.scene]
        index = next((i for i, c in enumerate(scene.choices) if c.id == choice_id), None)
        if index is None:
            raise InputError(f"scene {state.scene!r} has no choice {choice_id!r}")
        choice = scene.choices[index]
        # only this choice's own rule: once-only, the player's role, and its condition (the others cannot matter)
        if scene.ending or (choice.once and state.chosen.get(choice.id, 0) > 0) or not self.open_to(state, choice) \
                or not self.check(state, choice.if_, ("scenes", state.scene, "choices", index, "if")):
            raise InputError(f"choice {choice_id!r} is not available now")
        state.chosen[choice_id] = state.chosen.get(choice_id, 0) + 1
        shown = self.translation.get(f"choice.{choice.id}", choice.text) if self.translation else choice.text
        events = [self.event(state, "choice", text=shown,
                             ids={"choice": choice_id, "scene": state.scene},
                             data={"chunk": choice.chunk})]
        return events + self.react(state, choice, ("scenes", state.scene, "choices", index), choice_id)

    def move(self, state: GameState, intent: Move) -> list[Event]:
        scene = self.story.model.scenes[state.scene]
        exit_ = scene.exits.get(intent.direction)
        path = ("scenes", state.scene, "exits", intent.direction)
        if exit_ is not None and self.open_to(state, exit_) and self.check(state, exit_.if_, (*path, "if")):
            events = [self.event(state, "exit", text=exit_.label,
                                 ids={"direction": intent.direction, "scene": state.scene})]
            return events + self.react(state, exit_, path, f"{state.scene}.exit_{intent.direction}")
        dx = {"a": -PAN_SPEED, "d": PAN_SPEED}.get(intent.direction, 0.0) * intent.seconds
        state.camera_x = max(-PAN_LIMIT, min(PAN_LIMIT, state.camera_x + dx))
        return [self.event(state, "move", ids={"direction": intent.direction},
                           data={"seconds": intent.seconds, "camera_x": round(state.camera_x, 4)})]

    def give_reaction(self, state: GameState, character_id: str,
                      keys: list[str]) -> tuple[Reaction, tuple[Any, ...]] | None:
        """The authored ``on_give`` reaction for a gift to ``character_id``, with its source path.

        Looks in the scene's table, then the story's; for the character, then ``any``;
        for each of ``keys`` in order (item id, its tags, ``default``); the first whose
        condition holds wins. ``None`` when the author foresaw nothing.
        """
        m = self.story.model
        scene = m.scenes[state.scene]
        for table, base in ((scene.on_give, ("scenes", state.scene, "on_give")), (m.on_give, ("on_give",))):
            for who in (character_id, "any"):
                for key in keys:
                    r = table.get(who, {}).get(key)
                    if r is not None and self.check(state, r.if_, (*base, who, key, "if")):
                        return r, (*base, who, key)
        return None

    def give(self, state: GameState, item_id: str, character_id: str) -> list[Event]:
        m = self.story.model
        if item_id not in m.items:
            raise InputError(f"no item {item_id!r} in this story")
        if item_id not in state.inventory:
            raise InputError(f"you do not have the {m.items[item_id].name}")
        if character_id in m.items and character_id not in m.cast:
            return self.combine(state, item_id, character_id)
        if character_id not in self.present(state):
            raise InputError(f"{character_id!r} is not here")
        item = m.items[item_id]
        found = self.give_reaction(state, character_id, [item_id, *item.tags, "default"])
        who_name = m.cast[character_id].name if character_id in m.cast else character_id
        extra = {"item": item.name, "character": who_name}
        events = [self.event(state, "give", ids={"item": item_id, "to": character_id},
                             data={"matched": found[1][-1] if found else "builtin"})]
        state.inventory.remove(item_id)
        state.gifts.setdefault(character_id, []).append(item_id)
        keep = found[0].keep if found else True
        if keep:
            state.holders[item_id] = character_id
        else:
            state.inventory.append(item_id)
        if found is None:
            events.append(self.event(state, "line", text=self.interpolate(state, DEFAULT_GIVE_LINE, extra),
                                     ids={"line": "builtin.give"}))
            self.set_reaction(state, character_id, "tilt", events)
            return events
        r, path = found
        return events + self.react(state, r, path, reaction_base(path, ""), extra)

    def recipe(self, state: GameState, a: str, b: str) -> tuple[str, RecipeDef] | None:
        """The recipe combining items ``a`` and ``b`` (either order) open to the player now, or ``None``."""
        for rid, r in self.story.model.recipes.items():
            if set(r.items) == {a, b} and a != b and self.open_to(state, r) and \
                    self.check(state, r.if_, self.story.where(("recipes", rid, "if"))):
                return rid, r
        return None

    def combine(self, state: GameState, a: str, b: str) -> list[Event]:
        """Combine held items ``a`` and ``b`` by the story's ``recipes:`` (``give <item> <item>``).

        Raises:
            game.errors.InputError: the player does not hold both.
        """
        m = self.story.model
        if b not in state.inventory or a == b:
            raise InputError(f"you do not have the {m.items[b].name} to use the {m.items[a].name} on")
        found = self.recipe(state, a, b)
        if found is None:
            text = f"The {m.items[a].name} and the {m.items[b].name} do not go together."
            return [self.event(state, "line", text=text, ids={"line": "builtin.combine"})]
        rid, r = found
        make = r.make
        events = [self.event(state, "combine", ids={"recipe": rid, "item": a, "with": b},
                             data={"make": make, "chunk": r.chunk})]
        if not r.keep:  # used up: gone from the world too (no agent can take them)
            for used in (a, b):
                state.inventory.remove(used)
                state.looks.setdefault(used, {})["removed"] = True
        if make:
            state.inventory.append(make)
            events.append(self.event(state, "give", ids={"item": make, "to": "player"}))
        names = {"item": m.items[a].name, "with": m.items[b].name}
        return events + self.react(state, r, ("recipes", rid), f"recipe.{rid}", names)

    def say(self, state: GameState, intent: Say) -> list[Event]:
        events = [self.event(state, "say", speaker="player", text=intent.text,
                             ids={"action": intent.action_id} if intent.action_id else {},
                             data={"target": intent.target} if intent.target else {})]
        if not intent.action_id:
            return events
        scene = self.story.model.scenes[state.scene]
        index = next((i for i, a in enumerate(scene.actions) if a.id == intent.action_id), None)
        if index is None:
            raise InputError(f"scene {state.scene!r} has no action {intent.action_id!r}")
        action = scene.actions[index]
        path = ("scenes", state.scene, "actions", index)
        if action.once and state.chosen.get(action.id, 0) > 0:
            return events + [self.event(state, "not_understood", text=self.say_builtin("builtin.already"))]
        if not self.open_to(state, action):
            return events + [self.event(state, "not_understood", text="That is not yours to do.")]
        if not self.check(state, action.if_, (*path, "if")):
            return events + [self.event(state, "not_understood", text=self.say_builtin("builtin.nothing"))]
        state.chosen[action.id] = state.chosen.get(action.id, 0) + 1
        events.append(self.event(state, "action", ids={"action": action.id}))
        return events + self.react(state, action, path, action.id)

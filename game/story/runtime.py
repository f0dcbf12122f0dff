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
from game.state.intents import AddReference, Instruct
from game.story.expr import WORLD_KEYS, Target
from game.story.schema import Choice, Line, Reaction
from game.story.story import Story
from game.story.strings import BUILTINS, Translation, translation_for
from game.story.yamlio import Path_

#: ``{name}`` in a line or choice text (:meth:`StoryRuntime.interpolate`).
INTERPOLATION = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Camera speed for a/d, world units (screens) per second.
PAN_SPEED = 0.25
#: How far the camera may pan either way, world units.
PAN_LIMIT = 1.5
DEFAULT_GIVE_LINE = BUILTINS["builtin.give"]

_EVENT_FIELDS = set(Event.model_fields)

AnyIntent = Move | Choose | Say | Give | Wait | Instruct | AddReference


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
        raise ExpressionError(f"unknown function {fn!r}")

    def assign(self, target: Target, op: str, value: Any) -> None:
        s = self.state
        if target.kind == "relation":
            rel = s.relationships.setdefault(target.name, {})
            old_rel = rel.get(target.axis, 0.0)
            rel[target.axis] = float(_combine(old_rel, op, value))
            self._effect(f"{target.axis}({target.name})", old_rel, rel[target.axis])
            return
        if target.name in s.variables:
            old = s.variables[target.name]
            new = _combine(old, op, value)
            decl = self.rt.story.model.variables.get(target.name)
            if decl is not None:
                new = _coerce(decl.type, new, target.name)
            s.variables[target.name] = new
        elif target.name in WORLD_KEYS:
            old = s.world.get(target.name, self.rt.world_default(s, target.name))
            new = _combine(old, op, value)
            s.world[target.name] = new
        else:
            raise ExpressionError(f"assignment to undeclared variable {target.name!r}",
                                  hint="declare it under variables:")
        self._effect(target.name, old, new)

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


def _combine(old: Any, op: str, value: Any) -> Any:
    if op == "=":
        return value
    try:
        if op == "+=":
            return old + value
        if op == "-=":
            return old - value
        if op == "*=":
            return old * value
    except TypeError as exc:
        raise ExpressionError(f"cannot apply {op} to {old!r} and {value!r}") from exc
    raise ExpressionError(f"unknown operator {op}")


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

    def __init__(self, story: Story, translation: Translation | None = None) -> None:
        """``translation``: the catalogue to play in; default the one ``$WORLDLOOM_LANG`` names
        (``<story>/locale/<lang>.po``, see :mod:`game.story.strings`), else none.

        Raises:
            game.errors.StoryError: that catalogue exists but is not readable PO.
        """
        self.story = story
        self.translation = translation if translation is not None else translation_for(story)

    # -- state helpers -------------------------------------------------------
    def new_state(self, seed: int = 0) -> GameState:
        """A fresh state with the story's defaults (not yet in any scene)."""
        m = self.story.model
        return GameState(
            story_id=m.id,
            variables={k: v.default for k, v in m.variables.items()},
            inventory=list(m.inventory),
            relationships={cid: dict(c.relationship) for cid, c in m.cast.items()},
            seed=seed,
        )

    def world_default(self, state: GameState, key: str) -> Any:
        scene = self.story.model.scenes.get(state.scene)
        loc = self.story.model.locations.get(scene.location) if scene else None
        if key == "weather":
            return loc.weather if loc else "clear"
        if key == "time_of_day":
            return loc.time_of_day if loc else "dusk"
        return ""

    def event(self, state: GameState, kind: str, **kw: Any) -> Event:
        """An event of ``kind`` at ``state``'s turn, frame and scene (``kw``: speaker, text, ids, data).

        Built without validation (``model_construct``): every field comes from the runtime's
        own typed values, and this is on every step's path.
        """
        fields: dict[str, Any] = {"kind": kind, "turn": state.turn, "frame": state.frame, "scene": state.scene,
                                  "speaker": "", "text": "", "ids": {}, "data": {}}
        fields.update(kw)
        return Event.model_construct(_fields_set=_EVENT_FIELDS, **fields)

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

    # -- queries ---------------------------------------------------------------
    def available_choices(self, state: GameState) -> list[Choice]:
        """Choices of the current scene whose condition holds and that are not used up."""
        scene = self.story.model.scenes.get(state.scene)
        if scene is None or scene.ending:
            return []
        out = []
        for i, c in enumerate(scene.choices):
            if c.once and state.chosen.get(c.id, 0) > 0:
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
        return self.enter(state, self.story.model.start, "start")

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
        if isinstance(intent, Choose):
            return self.choose(state, intent.choice_id)
        if isinstance(intent, Move):
            return self.move(state, intent)
        if isinstance(intent, Give):
            return self.give(state, intent.item_id, intent.character_id)
        if isinstance(intent, Say):
            return self.say(state, intent)
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
        # only this choice's own rule: once-only, and its condition (the others cannot matter)
        if scene.ending or (choice.once and state.chosen.get(choice.id, 0) > 0) or not self.check(
                state, choice.if_, ("scenes", state.scene, "choices", index, "if")):
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
        if exit_ is not None and self.check(state, exit_.if_, (*path, "if")):
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
        scene = m.scenes[state.scene]
        if character_id not in scene.present:
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
        return events + self.react(state, r, path, f"give.{character_id}.{path[-1]}", extra)

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
        if not self.check(state, action.if_, (*path, "if")):
            return events + [self.event(state, "not_understood", text=self.say_builtin("builtin.nothing"))]
        state.chosen[action.id] = state.chosen.get(action.id, 0) + 1
        events.append(self.event(state, "action", ids={"action": action.id}))
        return events + self.react(state, action, path, action.id)

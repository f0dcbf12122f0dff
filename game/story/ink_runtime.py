"""`InkRuntime`: steps a compiled Ink story over a :class:`GameState`.

What plays the Ink is worldloom's own interpreter (:mod:`game.story.ink_vm`) when the story is
within its scope, else ``bink`` (:func:`pick_engine`; ``$WORLDLOOM_INK_ENGINE=bink`` forces bink).
The two write the same save format (Ink's own), so a state saved by one loads into the other.
Below, "bink" stands for either.

It is a :class:`~game.story.runtime.StoryRuntime` (``Session`` calls the same
methods: ``new_state``, ``begin``, ``apply``, ``available_choices``,
``interpolate``, ``is_ending``, ``enter``), but the story position lives in Ink's
own state: bink's ``save_state`` JSON in ``GameState.world["ink"]`` plus the choices
made since it was saved in ``GameState.world["ink_ops"]`` (each with what the external
functions returned, one JSON list a line), so a checkpoint, a rollback, a save and a
load carry it like any other field (JSON, no pickle), and a checkpoint at every choice
costs no ``save_state`` (bink saves its whole state again every
:data:`SNAPSHOT_EVERY` choices and after any other step). The bink story is re-synced
lazily whenever the state handed in is not the one it last produced: bink loads the
saved state and makes the moves again, external functions answering as they did (Ren'Py
rolls forward the same way, ``renpy/rollback.py``); a move that no longer fits an edited
story resumes at the start of the knot, with a warning.

What the player sees maps onto worldloom's events (``docs/ink.md``):

* each Ink line -> a ``line`` event with a stable id ``<knot>.l<n>`` (the n-th line
  since the knot was entered), its speaker from ``# speaker:`` or ``Name: text``;
* entering a knot -> a ``scene`` event (the knot is the scene), ``# scene: place``
  -> a new location (``cut``: the director asks for a ``scene_cut``);
* ``# music:`` / ``# sound:`` -> an ``audio`` event; ``# chunk:`` -> the chunk hint;
* Ink choices -> :class:`~game.story.schema.Choice` objects whose ids are
  ``<knot>.<slug of the text>``, stable across saves and edits elsewhere, or pinned
  by a ``# id: name`` tag on the choice (``<knot>.name``; a value with a dot is the
  whole id); a ``# id:`` tag on a line pins that line's id the same way;
* Ink variables -> ``GameState.variables`` after every step (``effect`` events for
  the ones that changed); values a hook writes there are pushed back into Ink;
* external functions ``give``, ``take``, ``drop``, ``has``, ``trust``, ``affinity``,
  ``rel``, ``relate``, ``react`` (and any added with :meth:`InkRuntime.bind`) act on
  the state. bink swallows exceptions raised inside external functions; this
  runtime records them and raises :class:`~game.errors.StoryRuntimeError` naming
  the function after the step (``Session`` then restores the state).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from game.errors import InputError, StoryError, StoryRuntimeError
from game.state import AnyIntent, Event, GameState
from game.state.trusted import trusted
from game.story.bink_calls import Tagged, step_calls
from game.story.ink import (
    DIRECTIVES,
    HOOK,
    RETURN_HOOK,
    ROOT_SCENE,
    SPEAKER_RE,
    TUNNEL_MARK,
    InkStory,
    chunk_hint,
    location_of,
    new_bink_story,
    slug,
    split_tag,
)
from game.story.ink_vm import InkVm
from game.story.runtime import _EVENT_FIELDS, DEFAULT_GIVE_LINE, StoryRuntime
from game.story.schema import Choice
from game.story.story import Story
from game.words import counted

#: ``GameState.world`` key holding bink's ``save_state`` JSON.
INK_STATE = "ink"
#: ``GameState.world`` key holding the number of lines shown since the current knot was entered.
INK_LINE = "ink_line"
#: ``GameState.world`` key holding the :attr:`~game.story.ink.KnotInfo.shape` of the knot the state is in.
INK_SHAPE = "ink_shape"
#: ``GameState.world`` key holding the ending's name once the story has ended (absent before).
INK_ENDING = "ink_ending"
#: ``GameState.world`` key holding the line counters of the knots a tunnel was called from (``"3,0"``).
INK_LINES_BELOW = "ink_lines_below"
#: ``GameState.world`` key holding the moves made since :data:`INK_STATE` was saved, one JSON list a line
#: (``["c", index, knot, knot shape, [results of external calls]]`` a choice, ``["v", name, value]`` a variable
#: set from outside Ink); absent when :data:`INK_STATE` is the position itself.
INK_OPS = "ink_ops"
#: Choices a state may hold in :data:`INK_OPS` before the runtime saves bink's whole state again. A
#: ``save_state`` costs ~80 µs on a 5,000-knot story (more as Ink's visit counts grow), so at 64 it adds
#: ~1.3 µs a choice; a resync (a rollback, a load) replays at most 63 moves, ~50 µs each (``bench/explore.py``).
SNAPSHOT_EVERY = 64
#: Environment variable naming the Ink engine (``auto``, ``vm`` or ``bink``; see :func:`pick_engine`).
ENGINE_ENV = "WORLDLOOM_INK_ENGINE"
#: Ink function called when the player gives an item (``=== function on_give(item, who) ===``).
ON_GIVE = "on_give"

#: An external function: ``fn(state, *ink_args) -> value`` (bool, int, float, str or None).
External = Callable[..., Any]


def _to_ink(value: Any) -> bool | int | float | str | None:
    """A Python value as one bink can pass back to Ink."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _from_ink(value: Any) -> bool | int | float | str:
    """An Ink value as a ``GameState.variables`` value (lists and other kinds read as text)."""
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return float(f"{value:.6g}")
    items = getattr(value, "items", None)
    if isinstance(items, list):
        return ", ".join(str(name).rpartition(".")[2] for name, _ in items)
    return "" if value is None else str(value)


def _event(state: GameState, kind: str, text: str, ids: dict[str, str], data: dict[str, Any],
           speaker: str = "") -> Event:
    """:meth:`StoryRuntime.event` for the events every Ink step makes, without its keyword merge."""
    return trusted(Event, {"kind": kind, "turn": state.turn, "frame": state.frame, "scene": state.scene,
                           "speaker": speaker, "text": text, "ids": ids, "data": data}, _EVENT_FIELDS)


#: A :class:`Choice`'s fields with their defaults, for each Ink choice's (see :func:`~game.state.trusted.trusted`).
_CHOICE = dict(Choice.model_construct(id="choice", text="").__dict__)
_CHOICE_FIELDS = set(Choice.model_fields)


@dataclass(frozen=True, slots=True)
class InkChoice:
    """One current Ink choice: its index in bink's list, stable ``id`` and ``text``."""

    index: int
    id: str
    text: str


@dataclass(frozen=True, slots=True)
class _Menu:
    """One menu as read from Ink, built once for its scene and ``(text, tags)`` list (see
    :meth:`InkRuntime._read_choices`): the choices both ways, and by id what taking one needs
    (the choice, the ``# chunk:`` hint of its tags or None, the tags its ``choice`` event carries)."""

    choices: list[InkChoice]
    objects: list[Choice]
    by_id: dict[str, tuple[InkChoice, str | int | None, list[str]]]


#: The menu before Ink has offered one (and after a step that leaves none).
_NO_MENU = _Menu([], [], {})


class InkRuntime(StoryRuntime):
    """Plays an :class:`~game.story.ink.InkStory` (see the module docstring).

    One runtime owns one bink story; a ``Session`` makes one per session. Not
    thread-safe by itself (``Session`` calls it under its lock).

    Raises (every stepping method):
        game.errors.InputError: an unknown or unavailable choice, a gift that is not possible.
        game.errors.StoryRuntimeError: Ink reported an error, or an external function raised
            (named in the message; the exception is chained).
    """

    story: InkStory

    def __init__(self, story: InkStory, snapshot_every: int = SNAPSHOT_EVERY, engine: str | None = None) -> None:
        super().__init__(story)
        #: What plays the Ink: ``"vm"`` (worldloom's interpreter, :mod:`game.story.ink_vm`) or ``"bink"``.
        self.engine = pick_engine(story, engine)
        root = story.vm_root if self.engine == "vm" else None
        if root is not None:
            self.ink: Any = InkVm(root, str(story.path))
        else:
            spare, story.spare_bink = story.spare_bink, None
            self.ink = spare if spare is not None else new_bink_story(story.json_text, str(story.path))
        #: Choices a state holds as moves (:data:`INK_OPS`) before bink's state is saved whole again;
        #: 1 saves it after every step (what the explorer keys states on).
        self.snapshot_every = max(1, snapshot_every)
        #: ``(INK_STATE, INK_OPS)`` of the state bink is in (plus :attr:`_pending`); None: unknown.
        self._synced: tuple[str, str] | None = None
        #: Moves made on bink since it was synced (variables pushed), written with the next step.
        self._pending: list[str] = []
        #: Results of the external calls of the step being recorded; None outside a step.
        self._record: list[Any] | None = None
        #: Results to hand back while replaying moves (:meth:`_replay`); None when not replaying.
        self._replaying: list[Any] | None = None
        self._vars: dict[str, bool | int | float | str] = {}
        #: The current menu (its choices are :attr:`_choices`, :attr:`_choice_objects`).
        self._menu_now = _NO_MENU
        self._choices: list[InkChoice] = []
        self._choice_objects: list[Choice] = []
        #: Menus read before: (scene, translation, bink's (text, tags) each) -> the menu.
        self._menus: dict[tuple[Any, ...], _Menu] = {}
        #: Lines in :attr:`_synced`'s moves (``INK_OPS``), kept so a step need not count them.
        self._ops_n = 0
        #: bink's saved state right after ``reset_state`` with each seed (:meth:`_seed`), made once.
        self._seeded: dict[int, str] = {}
        #: Choices built before: (scene, translation, place in the menu, (text, tags)) -> both forms.
        self._choice_cache: dict[tuple[Any, ...], tuple[InkChoice, Choice]] = {}
        #: Whether bink can continue (None: ask it); False after every step, which runs Ink until it cannot.
        self._more: bool | None = None
        #: Tags read before: tag -> ``split_tag(tag)``, ``("", "")`` for a global tag (not a directive).
        self._tag_parts: dict[str, tuple[str, str]] = {}
        #: ``# scene:`` values read before -> their location id.
        self._tag_locations: dict[str, str] = {}
        self._slugs: dict[str, str] = {}
        #: Divert targets the scene hook was called with -> their scene id.
        self._target_scenes: dict[str, str] = {}
        self._texts: dict[str, str] = {}
        self._state: GameState | None = None
        self._events: list[Event] = []
        self._errors: list[tuple[str, Exception]] = []
        self._ink_errors: list[str] = []
        #: Events a resync made (a warning, the knot's lines) for the next step on :attr:`_deferred_for`.
        self._deferred: list[Event] = []
        #: The state object the :attr:`_deferred` events belong to (not a copy made of it, such as the
        #: one ``Session``'s prepare phase runs the rules on).
        self._deferred_for: GameState | None = None
        self._cause = "start"
        self._chunk: str | int | None = None
        self._ending = ""
        self._global = set(story.global_tags)
        self._bound: set[str] = set()
        self._lists: set[str] = set()
        #: Variables Ink assigned during the current step (its observers say so), name -> Ink value.
        self._changed: dict[str, Any] = {}
        self.ink.set_error_handler(self._on_ink_error)
        self.ink.set_allow_external_function_fallbacks(True)
        #: The calls on every line and choice (bink's straight on its C library; the interpreter's own).
        self.calls: Any = self.ink if self.engine == "vm" else step_calls(self.ink)
        self.calls.bind_text_function(HOOK, self._hook)
        self.calls.bind_text_function(RETURN_HOOK, self._return_hook)
        builtins: dict[str, External] = {
            "give": self._give, "take": self._take, "drop": self._drop, "has": self._has, "trust": self._trust,
            "affinity": self._affinity, "rel": self._rel, "relate": self._relate, "react": self._react_fn}
        for name, fn in builtins.items():
            self.bind(name, fn, lookahead_safe=name in ("has", "trust", "affinity", "rel"))
        for name in sorted(story.externals - set(builtins) - story.functions):
            self.ink.bind_external_function(name, self._unbound(name))
            self._bound.add(name)
        for name in story.model.variables:  # a step reads back only what Ink assigned, not every variable
            self.ink.observe_variable(name, self._observed)

    def _observed(self, name: str, value: Any) -> None:
        if self._replaying is None:
            self._changed[name] = value

    def _unbound(self, name: str) -> Callable[..., None]:
        """A stand-in for an external function nothing bound: a ``warning`` event, no value."""

        def stand_in(_name: str, *args: Any) -> None:
            if self._replaying is not None:
                return
            if self._record is not None:
                self._record.append(None)
            if self._state is not None:
                self._events.append(self.event(self._state, "warning", ids={"external": name},
                                               text=f"Ink called EXTERNAL {name}({', '.join(map(repr, args))}), "
                                                    "which nothing binds; it returned nothing"))

        return stand_in

    # -- external functions ----------------------------------------------------
    def bind(self, name: str, fn: External, lookahead_safe: bool = False) -> None:
        """Bind Ink's ``EXTERNAL name(...)`` to ``fn(state, *args) -> value``.

        ``fn`` runs inside the step with the state being changed; what it raises is
        reported after the step as a :class:`StoryRuntimeError` naming ``name``.
        ``lookahead_safe`` lets Ink call it while looking ahead for glue (pure reads only).
        Binding a name again replaces the earlier function (the built-ins included).
        """

        def callback(_name: str, *args: Any) -> Any:
            if self._replaying is not None:  # the value it gave when the move was made
                return self._replaying.pop(0) if self._replaying else None
            state = self._state
            try:
                if state is None:
                    raise RuntimeError("called outside a story step")
                value = _to_ink(fn(state, *args))
            except Exception as exc:  # bink would swallow it: keep it for after the step
                self._errors.append((name, exc))
                value = None
            if self._record is not None:
                self._record.append(value)
            return value

        if name in self._bound:
            self.ink.unbind_external_function(name)
        self.ink.bind_external_function(name, callback, lookahead_safe=lookahead_safe)
        self._bound.add(name)

    def _on_ink_error(self, message: str, is_error: bool) -> None:
        if self._replaying is not None:
            if is_error:
                self._ink_errors.append(message)
            return
        if is_error:
            self._ink_errors.append(message)
        elif self._state is not None:
            self._events.append(self.event(self._state, "warning", text=f"ink: {message}"))

    def _hook(self, target: str) -> None:
        if self._replaying is not None:
            return
        state = self._state
        try:
            if state is None:
                raise RuntimeError("called outside a story step")
            name = str(target)
            if name.startswith(TUNNEL_MARK):  # a tunnel call: keep the caller's line count for the return
                name = name[len(TUNNEL_MARK):]
                below = str(state.world.get(INK_LINES_BELOW, ""))
                count = str(int(state.world.get(INK_LINE, 0)))
                state.world[INK_LINES_BELOW] = f"{below},{count}" if below else count
            scene_id = self._target_scenes.get(name)
            if scene_id is None:
                scene_id = self._target_scenes[name] = self.story.scene_for_target(name)
            self._enter_scene(state, scene_id)
        except Exception as exc:  # bink would swallow it
            self._errors.append((HOOK, exc))

    def _return_hook(self, caller: str) -> None:
        """A tunnel returned: the caller's knot is the scene again (no new visit); its line count resumes."""
        if self._replaying is not None:
            return
        state = self._state
        try:
            if state is None:
                raise RuntimeError("called outside a story step")
            scene_id = str(caller)
            below = str(state.world.get(INK_LINES_BELOW, ""))
            head, _, rest = below.rpartition(",") if "," in below else ("", "", below)
            state.world[INK_LINE] = int(rest) if rest else 0
            if head:
                state.world[INK_LINES_BELOW] = head
            else:
                state.world.pop(INK_LINES_BELOW, None)
            state.scene = scene_id
            self._events.append(self.event(state, "scene", text=self.story.model.scenes[scene_id].title,
                                           ids={"scene": scene_id},
                                           data={"location": state.location, "cause": "return", "cut": False}))
        except Exception as exc:  # bink would swallow it
            self._errors.append((RETURN_HOOK, exc))

    def _give(self, state: GameState, item: Any, who: Any) -> None:
        item_id, who_id = slug(str(item)), slug(str(who))
        if item_id in state.inventory:
            state.inventory.remove(item_id)
        state.holders[item_id] = who_id
        state.gifts.setdefault(who_id, []).append(item_id)
        self._events.append(self.event(state, "give", ids={"item": item_id, "to": who_id}))

    def _take(self, state: GameState, item: Any) -> None:
        item_id = slug(str(item))
        state.inventory.append(item_id)
        state.holders.pop(item_id, None)
        self._events.append(self.event(state, "give", ids={"item": item_id, "to": "player"}))

    def _drop(self, state: GameState, item: Any) -> None:
        item_id = slug(str(item))
        if item_id in state.inventory:
            state.inventory.remove(item_id)

    def _has(self, state: GameState, item: Any) -> bool:
        return slug(str(item)) in state.inventory

    def _trust(self, state: GameState, who: Any) -> float:
        return state.relationship(slug(str(who)), "trust")

    def _affinity(self, state: GameState, who: Any) -> float:
        return state.relationship(slug(str(who)), "affinity")

    def _rel(self, state: GameState, who: Any, axis: Any) -> float:
        return state.relationship(slug(str(who)), str(axis))

    def _relate(self, state: GameState, who: Any, axis: Any, delta: Any) -> float:
        who_id, name = slug(str(who)), str(axis)
        rel = state.relationships.setdefault(who_id, {})
        old = rel.get(name, 0.0)
        rel[name] = old + float(delta)
        self._events.append(self.event(state, "effect", ids={"target": f"{name}({who_id})"},
                                       data={"old": old, "new": rel[name]}))
        return rel[name]

    def _react_fn(self, state: GameState, who: Any, reaction: Any) -> None:
        self.set_reaction(state, slug(str(who)), str(reaction), self._events)

    # -- syncing with bink -------------------------------------------------------
    def _where(self, state: GameState) -> str:
        info = self.story.knots.get(state.scene)
        return f"{self.story.path}#{info.name}" if info else str(self.story.path)

    def _seed(self, seed: int) -> None:
        """Set Ink's random seed, just after ``reset_state`` (its state has no API for it; the state
        JSON has). The seeded fresh state is the same every time for a seed: it is made once."""
        saved = self._seeded.get(seed)
        if saved is None:
            doc = json.loads(self.ink.save_state())
            doc["storySeed"] = seed % 2_147_483_647
            if len(self._seeded) > 64:
                self._seeded.clear()
            saved = self._seeded[seed] = json.dumps(doc)
        self.ink.load_state(saved)

    def _push_variables(self, state: GameState) -> None:
        """Write into Ink the variables ``state`` holds that differ from what Ink last had."""
        for name, value in state.variables.items():
            if name in self._lists:  # an Ink LIST reads as text; it is not written back
                continue
            if name in self.story.model.variables and self._vars.get(name) != value:
                try:
                    self.ink.set_variable(name, value)
                except (RuntimeError, TypeError) as exc:
                    raise StoryRuntimeError(f"cannot set Ink variable {name!r} to {value!r}: {exc}",
                                            where=self._where(state)) from exc
                self._pending.append(json.dumps(["v", name, value]))
        self._vars = dict(state.variables)

    def _read_choices(self, scene: str) -> None:
        """Read bink's current choices and give them ids under ``scene`` (duplicates get ``_2``...).

        A ``# id:`` tag on a choice pins its id (see :func:`pinned_id`).
        """
        found = self.calls.choices(True)
        if not found:
            menu = _NO_MENU
        else:
            key = (scene, id(self.translation), *found)
            menu = self._menus.get(key)  # type: ignore[assignment]
            if menu is None:  # the same menu again (a loop, a rollback, a replay): its ids are known
                if len(self._menus) > 10_000:
                    self._menus.clear()
                menu = self._menus[key] = self._menu(scene, found)
        self._menu_now = menu
        self._choices, self._choice_objects = menu.choices, menu.objects

    def _shape(self, scene: str) -> str:
        """The :attr:`~game.story.ink.KnotInfo.shape` of ``scene``'s knot (``""``: not a knot)."""
        info = self.story.knots.get(scene)
        return info.shape if info is not None else ""

    def _json_text(self, text: str) -> str:
        """``json.dumps(text)``, remembered (a move names its knot)."""
        found = self._texts.get(text)
        if found is None:
            if len(self._texts) > 10_000:
                self._texts.clear()
            found = self._texts[text] = json.dumps(text)
        return found

    def _slug(self, text: str) -> str:
        """``slug(text, 48)``, remembered (the same choice texts come back in many knots)."""
        found = self._slugs.get(text)
        if found is None:
            if len(self._slugs) > 10_000:
                self._slugs.clear()
            found = self._slugs[text] = slug(text, 48)
        return found

    def _menu(self, scene: str, found: list[Tagged]) -> _Menu:
        """The ids, texts and :class:`Choice` objects of bink's choices ``found`` (``(text, tags)``).

        Each choice is built once for its scene, place in the menu and ``(text, tags)``
        (:attr:`_choice_cache`: a menu that lost or gained a choice at its end, such as after a
        once-only choice, reuses the others); a menu where two choices get the same id is built
        whole, the later ones numbered.
        """
        cache = self._choice_cache
        tid = id(self.translation)
        out: list[InkChoice] = []
        objects: list[Choice] = []
        for i, item in enumerate(found):
            key = (scene, tid, i, item)
            hit = cache.get(key)
            if hit is None:
                if len(cache) > 20_000:
                    cache.clear()
                hit = cache[key] = self._choice(scene, i, item)
            out.append(hit[0])
            objects.append(hit[1])
        if len(out) > 1 and len({c.id for c in out}) < len(out):
            out, objects = self._menu_with_repeats(scene, found)
        return _Menu(out, objects, {c.id: (c, *self._choice_event_tags(tags))
                                     for c, (_, tags) in zip(out, found, strict=True)})

    def _choice_event_tags(self, tags: tuple[str, ...]) -> tuple[str | int | None, list[str]]:
        """What a choice's tags give its ``choice`` event: the ``# chunk:`` hint (None: none) and
        the tags that are neither global nor a directive."""
        if not tags:
            return None, []
        hint = next((chunk_hint(v) for k, v in map(split_tag, tags) if k == "chunk"), None)
        return hint, [t for t in tags if t not in self._global and split_tag(t)[0] not in DIRECTIVES]

    def _base_id(self, scene: str, i: int, raw: str, tags: tuple[str, ...]) -> str:
        """The id of choice ``i`` of a menu in ``scene`` before any numbering of repeats."""
        text = raw.strip()
        pin = next((v for k, v in map(split_tag, tags) if k == "id" and v), "") if tags else ""
        return pinned_id(scene, pin) if pin else f"{scene}.{self._slug(text) if text else f'c{i}'}"

    def _choice(self, scene: str, i: int, item: Tagged, cid: str = "") -> tuple[InkChoice, Choice]:
        """Choice ``i`` of a menu in ``scene``, ``item`` its ``(text, tags)``: its :class:`InkChoice`
        and :class:`Choice` (id ``cid``, else its own base id)."""
        raw, tags = item
        text = raw.strip()
        cid = cid or self._base_id(scene, i, raw, tags)
        shown = self.translation.line(text) if self.translation is not None else text
        fields = dict(_CHOICE)
        fields["id"], fields["text"] = cid, shown  # from the source text: ids never translate
        return InkChoice(i, cid, shown), trusted(Choice, fields, _CHOICE_FIELDS)

    def _menu_with_repeats(self, scene: str, found: list[Tagged]) -> tuple[list[InkChoice], list[Choice]]:
        """:meth:`_menu` for a menu where choices share an id: the second gets ``_2``, and so on."""
        out: list[InkChoice] = []
        objects: list[Choice] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(found):
            base = self._base_id(scene, i, *item)
            count = seen[base] = seen.get(base, 0) + 1
            ink_choice, choice = self._choice(scene, i, item, base if count == 1 else f"{base}_{count}")
            out.append(ink_choice)
            objects.append(choice)
        return out, objects

    def sync(self, state: GameState) -> bool:
        """Make bink's state the one ``state`` holds; ``False`` if the story has not begun.

        A state whose position no longer fits the story is resumed at the start of its
        knot, variables kept: Ink cannot load it (the saved path is gone), or the knot's
        :attr:`~game.story.ink.KnotInfo.shape` differs from the one the state recorded
        (a choice or divert was added or removed, so the saved path would now land
        elsewhere). The warning and the knot's lines come with the next step's events
        (or from :meth:`resume`).
        """
        saved = state.world.get(INK_STATE)
        if not isinstance(saved, str):
            return False
        ops = state.world.get(INK_OPS, "")
        if self._synced != (saved, ops):  # a tuple compares its items by identity first: cheap when synced
            shape = state.world.get(INK_SHAPE)
            info = self.story.knots.get(state.scene)
            if isinstance(shape, str) and (info is None or info.shape != shape):
                name = info.name if info else state.scene
                self._defer(state, self._reenter(state, f"knot {name!r} changed since this state was saved "
                                                        "(its choices, gathers or diverts moved)"))
                return True
            self._pending = []
            self._more = None
            try:
                self.ink.load_state(saved)
                if isinstance(ops, str) and ops:
                    self._replay(ops)
            except RuntimeError as exc:
                self._synced = None
                self._defer(state, self._reenter(state, f"the saved Ink position does not fit this story ({exc})"))
                return True
            self._synced = (saved, ops if isinstance(ops, str) else "")
            self._ops_n = self._synced[1].count("\n")
            self._vars = {}
            self._read_vars_quiet()
            self._read_choices(state.scene)
        if state.variables != self._vars:
            self._push_variables(state)
        return True

    def _replay(self, ops: str) -> None:
        """Make again, on the loaded state, the moves ``ops`` holds (:data:`INK_OPS`).

        External functions are not called: each gives back the value it gave when the move
        was made (so the state's inventory and relationships are not touched twice); hooks,
        warnings and variable observers are silent.

        Raises:
            RuntimeError: a move does not fit: its knot's shape changed (a choice, gather or
                divert was added or removed there; wording may change), no such choice, Ink
                failed, or the story called its external functions differently.
        """
        self._ink_errors = []
        try:
            for line in ops.splitlines():
                op = json.loads(line)
                if op[0] == "v":
                    self.ink.set_variable(op[1], op[2])
                    continue
                _, index, scene, shape, results = op
                if shape != self._shape(scene):
                    raise RuntimeError(f"knot {scene!r} changed since the move was made there")
                if not isinstance(index, int) or not 0 <= index < len(self.calls.choices(False)):
                    raise RuntimeError(f"choice {index} of knot {scene!r} is no longer there")
                self._replaying = list(results)
                self.calls.choose(index)
                while self.calls.can_continue():
                    self.calls.cont()
                if self._ink_errors:
                    raise RuntimeError(self._ink_errors[0])
                if self._replaying:
                    raise RuntimeError("the story calls its external functions differently now")
                self._replaying = None
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            raise RuntimeError(f"unreadable moves ({exc!r})") from exc
        finally:
            self._replaying = None
            self._ink_errors = []

    def _read_vars_quiet(self) -> None:
        out: dict[str, bool | int | float | str] = {}
        for name in self.story.model.variables:
            try:
                value = self.ink.get_variable(name)
            except TypeError:  # a divert target: no Python value, and never written back
                self._lists.add(name)
                continue
            except RuntimeError:
                continue
            if not isinstance(value, bool | int | float | str):
                self._lists.add(name)
            out[name] = _from_ink(value)
        self._vars = out

    def resume(self, state: GameState) -> list[Event]:
        """Sync to ``state`` (after a reload or a load) and return what that caused (usually nothing)."""
        self.sync(state)
        return self._take_deferred(state)

    def _defer(self, state: GameState, events: list[Event]) -> None:
        """Keep ``events`` (a resync's) for the next step on ``state``; ones kept for another state are dropped."""
        if self._deferred_for is not state:
            self._deferred = []
        self._deferred_for = state
        self._deferred += events

    def _take_deferred(self, state: GameState) -> list[Event]:
        """The events deferred for ``state`` (this very object), handed over once; none for another state."""
        if self._deferred_for is not state or not self._deferred:
            return []
        events, self._deferred, self._deferred_for = self._deferred, [], None
        return events

    def _reenter(self, state: GameState, why: str) -> list[Event]:
        """Resume at the start of the current knot (variables kept), with a ``warning`` saying ``why``."""
        scene = state.scene if state.scene in self.story.knots else ROOT_SCENE
        events = [self.event(state, "warning", text=f"{why}; resumed at the start of {scene!r}",
                             ids={"scene": scene})]
        return events + self.enter(state, scene, "resume", fresh=True)

    # -- the step ------------------------------------------------------------------
    def _step(self, state: GameState, events: list[Event], action: Callable[[], None] | int | None,
              move: tuple[int, str] | None = None) -> None:
        """Run ``action`` (a number: take that choice) then continue Ink to the next choice or the
        end, appending events.

        ``move``: the choice ``(index, scene)`` that ``action`` takes, recorded in :data:`INK_OPS`
        (with what the external functions returned) instead of saving bink's whole state.
        """
        self._state, self._events = state, events
        self._errors, self._ink_errors = [], []
        self._more = None
        self._record = [] if move is not None else None
        self._changed = {}
        self._chunk, self._ending = None, ""
        try:
            if isinstance(action, int):
                self.calls.choose(action)
            elif action is not None:
                action()
            can_continue, cont, line = self.calls.can_continue, self.calls.cont, self._ink_line
            errors, ink_errors = self._errors, self._ink_errors
            while can_continue():
                text, tags = cont()
                line(state, text, tags, events)
                if errors or ink_errors:
                    break
            else:
                self._more = False
        except RuntimeError as exc:
            self._synced = None
            self._more = None
            raise StoryRuntimeError(f"ink: {exc}", where=self._where(state)) from exc
        finally:
            self._state = None
            record, self._record = self._record, None
        if self._errors:
            self._synced = None
            name, error = self._errors[0]
            more = (f"{counted(len(self._errors) - 1, 'more error')} in external functions"
                    if len(self._errors) > 1 else "")
            raise StoryRuntimeError(f"external function {name!r} raised {type(error).__name__}: {error}",
                                    where=self._where(state), hint=more) from error
        if self._ink_errors:
            self._synced = None
            raise StoryRuntimeError(f"ink: {self._ink_errors[0]}", where=self._where(state))
        self._finish(state, events)
        self._checkpoint(state, None if move is None or record is None else [*move, record])

    def _checkpoint(self, state: GameState, move: list[Any] | None) -> None:
        """Put Ink's position into ``state``: the step's ``move`` appended to :data:`INK_OPS`
        (the state bink was synced to before the step, plus the variables pushed since), or,
        every :attr:`snapshot_every` moves and after any other step, bink's whole saved state."""
        synced, pending = self._synced, self._pending
        if move is not None and synced is not None:
            n = self._ops_n + len(pending) + 1
            if n < self.snapshot_every:
                base, ops = synced
                index, scene, results = move
                line = (f'["c", {index}, {self._json_text(scene)}, "{self._shape(scene)}", '
                        f'{json.dumps(results) if results else "[]"}]\n')
                if pending:
                    ops += "".join(f"{p}\n" for p in pending)
                    self._pending = []
                new_ops = ops + line
                state.world[INK_OPS] = new_ops
                self._synced, self._ops_n = (base, new_ops), n
                return
        if pending:
            self._pending = []
        saved: str = self.ink.save_state()
        state.world[INK_STATE] = saved
        state.world.pop(INK_OPS, None)
        self._synced, self._ops_n = (saved, ""), 0

    def _finish(self, state: GameState, events: list[Event]) -> None:
        """After a step: choices, the ending and variables (``effect`` events) into ``state``."""
        scene = state.scene
        world = state.world
        self._read_choices(scene)
        info = self.story.knots.get(scene)
        if not self._choices and not self._can_continue():
            name = self._ending or (info.ending if info and info.ending else scene)
            events.append(self.event(state, "ending", text=name, ids={"ending": name}))
            world[INK_ENDING] = name
        elif INK_ENDING in world:
            del world[INK_ENDING]
        if info is not None:
            world[INK_SHAPE] = info.shape
        changed = self._changed
        if not changed:  # Ink assigned nothing this step: the variables are what Ink last had
            self._vars = dict(state.variables)
            return
        self._changed = {}
        old = state.variables
        new: dict[str, bool | int | float | str] = {}
        for name, raw in sorted(changed.items()):  # what Ink assigned this step (its observers), by name
            if not isinstance(raw, bool | int | float | str):
                self._lists.add(name)
            new[name] = value = _from_ink(raw)
            if old.get(name) != value:
                events.append(_event(state, "effect", "", {"target": name}, {"old": old.get(name), "new": value}))
        state.variables = {**old, **new}
        self._vars = dict(state.variables)

    def _can_continue(self) -> bool:
        """Whether bink can continue (remembered: a step runs Ink until it cannot)."""
        more = self._more
        if more is None:
            more = self._more = self.calls.can_continue()
        return more

    def _enter_scene(self, state: GameState, scene_id: str) -> None:
        """Ink entered a knot: scene, visits, place, reactions of who is still there; a ``scene`` event."""
        info = self.story.knots[scene_id]
        scene = self.story.model.scenes[scene_id]
        previous = state.location
        state.scene = scene_id
        visits = state.visits
        visits[scene_id] = visits.get(scene_id, 0) + 1
        if info.location:
            if info.location != previous:  # a pydantic assignment costs a call: only what changes
                state.location = info.location
        elif not previous:
            state.location = scene.location
        if state.location != previous:
            state.camera_x = 0.0
        if state.reactions:
            state.reactions = {k: v for k, v in state.reactions.items() if k in scene.present}
        state.world[INK_LINE] = 0
        self._events.append(_event(state, "scene", scene.title, {"scene": scene_id},
                                   {"location": state.location, "cause": self._cause,
                                    "cut": state.location != previous}))

    def _ink_line(self, state: GameState, raw: str, tags: tuple[str, ...], events: list[Event]) -> None:
        """One line of Ink output with its tags: directives first, then the ``line`` event."""
        if not state.scene:  # text before the first knot
            self._enter_scene(state, ROOT_SCENE)
        speaker = "narrator"
        pin = ""
        extra: list[str] = []
        parts = self._tag_parts
        for tag in tags:
            found = parts.get(tag)
            if found is None:
                if len(parts) > 10_000:
                    parts.clear()
                found = parts[tag] = ("", "") if tag in self._global else split_tag(tag)
            key, value = found
            if not key and not value and tag in self._global:
                continue
            if key == "scene" and value:
                location = self._tag_locations.get(value)
                if location is None:
                    if len(self._tag_locations) > 10_000:
                        self._tag_locations.clear()
                    location = self._tag_locations[value] = location_of(value)[0]
                if location != state.location:
                    state.location = location
                    state.camera_x = 0.0
                    events.append(self.event(state, "scene", text=self.story.model.scenes[state.scene].title,
                                             ids={"scene": state.scene},
                                             data={"location": location, "cause": "tag", "cut": True}))
            elif key == "chunk":
                self._chunk = chunk_hint(value) or self._chunk
            elif key in ("music", "sound") and value:
                events.append(self.event(state, "audio", text=value, ids={"audio": key},
                                         data={"channel": key, "cue": value}))
            elif key == "speaker" and value:
                speaker = slug(value)
            elif key == "ending" and value:
                self._ending = value
            elif key == "id" and value:
                pin = value
            elif key not in DIRECTIVES:
                extra.append(tag)
        text = raw.strip()
        if not text:
            return
        if self.translation is not None:  # by its text: Ink lines have no ids of their own (strings.ink_strings)
            text = self.translation.line(text)
        m = SPEAKER_RE.match(text) if ":" in text else None  # the pattern needs a colon
        if m and (speaker == "narrator" or slug(m.group(1)) == speaker):
            speaker, text = slug(m.group(1)), m.group(2).strip()
        world = state.world
        n = int(world.get(INK_LINE, 0))
        world[INK_LINE] = n + 1
        line_id = pinned_id(state.scene, pin) if pin else f"{state.scene}.l{n}"
        events.append(_event(state, "line", text, {"line": line_id}, {"tags": extra} if extra else {}, speaker))

    # -- the StoryRuntime interface ------------------------------------------------
    def begin(self, state: GameState) -> list[Event]:
        """Start the Ink story from the top (seeded from ``state.seed``) and run to the first choice."""
        self.ink.reset_state()
        self._seed(state.seed)
        self._synced = None
        self._read_vars_quiet()
        self._push_variables(state)
        state.world[INK_LINE] = 0
        events: list[Event] = []
        self._cause = "start"
        self._step(state, events, None)
        return events

    def enter(self, state: GameState, scene_id: str, cause: str, where: str = "", fresh: bool = False) -> list[Event]:
        """Divert to the knot ``scene_id`` (the top for :data:`ROOT_SCENE`), keeping the variables.

        Raises:
            StoryRuntimeError: no such knot.
        """
        if scene_id not in self.story.knots:
            raise StoryRuntimeError(f"no knot {scene_id!r} in this Ink story", where=where or str(self.story.path))
        if scene_id == ROOT_SCENE or fresh or not self.sync(state):
            self.ink.reset_state()
            self._seed(state.seed)
            self._read_vars_quiet()
            self._push_variables(state)
        self._synced = None
        events: list[Event] = []
        self._cause = cause
        knot = self.story.knots[scene_id].name

        def go() -> None:
            if scene_id == ROOT_SCENE:
                state.scene = ""  # the root's first line (or the first divert) enters the scene
            else:
                self._enter_scene(state, scene_id)
                self.ink.choose_path_string(knot)

        self._step(state, events, go)
        return events

    def available_choices(self, state: GameState) -> list[Choice]:
        """The current Ink choices as :class:`Choice` objects (``id`` and ``text`` only)."""
        if not self.sync(state):
            return []
        return list(self._choice_objects)

    def ink_choices(self, state: GameState) -> list[InkChoice]:
        """The current Ink choices (with their index in bink's list)."""
        return list(self._choices) if self.sync(state) else []

    def is_ending(self, state: GameState) -> bool:
        """Whether the Ink story has ended (no choice and nothing left to continue)."""
        if not self.sync(state):
            return False
        return not self._choices and not self._can_continue()

    def apply(self, state: GameState, intent: AnyIntent) -> list[Event]:
        """Apply one intent (see :meth:`StoryRuntime.apply`); events deferred by a resync come first."""
        self.sync(state)
        if self._deferred:
            return self._take_deferred(state) + super().apply(state, intent)
        return super().apply(state, intent)

    def stuck(self, state: GameState, events: list[Event]) -> list[Event]:
        """:meth:`StoryRuntime.stuck`; at once ``events`` when Ink offers a choice (the state is
        the one Ink is in after every step, so the menu just read is the state's)."""
        if self._choice_objects and self._synced is not None \
                and self._synced == (state.world.get(INK_STATE), state.world.get(INK_OPS, "")):
            return events
        return super().stuck(state, events)

    def choose(self, state: GameState, choice_id: str) -> list[Event]:
        """Take the current Ink choice ``choice_id`` and continue to the next choice or the end."""
        self.sync(state)
        found = self._menu_now.by_id.get(choice_id)
        if found is None:
            shown = ", ".join(c.id for c in self._choices) or "none"
            raise InputError(f"no current choice {choice_id!r}", hint=f"available: {shown}")
        picked, hint, extra = found
        scene = state.scene
        chosen = state.chosen
        chosen[choice_id] = chosen.get(choice_id, 0) + 1
        data: dict[str, Any] = {}  # filled after the step: the chunk hint may come from its lines
        events: list[Event] = [trusted(Event, {"kind": "choice", "turn": state.turn, "frame": state.frame,
                                               "scene": scene, "speaker": "", "text": picked.text,
                                               "ids": {"choice": choice_id, "scene": scene}, "data": data},
                                       _EVENT_FIELDS)]
        self._cause = choice_id
        self._step(state, events, picked.index, (picked.index, scene))
        data["chunk"] = hint or self._chunk  # the step's # chunk: lines, when the choice's tags name none
        if extra:
            data["tags"] = list(extra)
        return events

    def give(self, state: GameState, item_id: str, character_id: str) -> list[Event]:
        """The player gives an item: Ink's ``on_give(item, who)`` function answers, if the story has one.

        The function's output becomes lines; returning ``false`` hands the item back.
        Without it the built-in line plays and the character tilts its head.
        """
        m = self.story.model
        if item_id not in state.inventory:
            name = m.items[item_id].name if item_id in m.items else item_id
            raise InputError(f"you do not have the {name}")
        scene = m.scenes.get(state.scene)
        if scene is None or character_id not in scene.present:
            raise InputError(f"{character_id!r} is not here")
        self.sync(state)
        events = [self.event(state, "give", ids={"item": item_id, "to": character_id},
                             data={"matched": ON_GIVE if ON_GIVE in self.story.functions else "builtin"})]
        state.inventory.remove(item_id)
        state.gifts.setdefault(character_id, []).append(item_id)
        state.holders[item_id] = character_id
        if ON_GIVE not in self.story.functions:
            extra = {"item": m.items[item_id].name if item_id in m.items else item_id,
                     "character": m.cast[character_id].name if character_id in m.cast else character_id}
            events.append(self.event(state, "line", text=self.interpolate(state, DEFAULT_GIVE_LINE, extra),
                                     ids={"line": "builtin.give"}))
            self.set_reaction(state, character_id, "tilt", events)
            return events
        result: list[Any] = []

        def call() -> None:
            result.append(self.ink.evaluate_function(ON_GIVE, [item_id, character_id]))

        self._step(state, events, call)
        value, output = result[0] if result else (None, "")
        for i, text in enumerate(t.strip() for t in str(output or "").splitlines()):
            if text:
                events.append(self.event(state, "line", text=text, ids={"line": f"give.{character_id}.{item_id}.{i}"}))
        if value is False:
            state.holders.pop(item_id, None)
            state.inventory.append(item_id)
        return events


def pick_engine(story: InkStory, engine: str | None = None) -> str:
    """``"vm"`` or ``"bink"``: what plays ``story``.

    ``engine`` (else ``$WORLDLOOM_INK_ENGINE``, else ``"auto"``): ``"auto"`` is worldloom's own
    interpreter when the story is within its scope (:attr:`~game.story.ink.InkStory.vm_root`),
    bink otherwise; ``"vm"`` insists on the interpreter; ``"bink"`` always plays through bink.

    Raises:
        StoryError: an unknown engine name, or ``"vm"`` for a story outside the interpreter's
            scope (the message says what and where).
    """
    choice = (engine or os.environ.get(ENGINE_ENV, "") or "auto").strip().lower()
    if choice not in ("auto", "vm", "bink"):
        raise StoryError(f"unknown Ink engine {choice!r}", where=f"${ENGINE_ENV}" if engine is None else "",
                         hint="auto, vm or bink")
    if choice == "bink":
        return "bink"
    if story.vm_root is not None:
        return "vm"
    if choice == "vm":
        raise StoryError(story.vm_refusal or "this Ink story is outside the interpreter's scope",
                         where=str(story.path), hint=f"unset ${ENGINE_ENV} to play it through bink")
    return "bink"


def pinned_id(scene: str, value: str) -> str:
    """The id a ``# id: value`` tag pins: ``<scene>.<value>``, or ``value`` itself when it has a dot.

    Each dot-separated part is made a valid id (:func:`~game.story.ink.slug`).
    """
    parts = [slug(p) for p in value.split(".") if p.strip()]
    return ".".join(parts) if len(parts) > 1 else f"{scene}.{parts[0] if parts else slug(value)}"


def runtime_for(story: Story) -> StoryRuntime:
    """The runtime that plays ``story``: :class:`InkRuntime` for Ink, :class:`StoryRuntime` otherwise."""
    if isinstance(story, InkStory):
        return InkRuntime(story)
    return StoryRuntime(story)


__all__ = ["ENGINE_ENV", "INK_ENDING", "INK_LINE", "INK_OPS", "INK_SHAPE", "INK_STATE", "SNAPSHOT_EVERY", "InkChoice",
           "InkRuntime", "pick_engine", "pinned_id", "runtime_for"]

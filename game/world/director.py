"""The Director: turns story state + events + cast into a :class:`WorldRequest`.

It decides the prompt, the structured scene, the per-frame actions, the anchors
and the chunk length, and marks which memory tier each part came from
(``WorldRequest.tiers``: part name -> tier, plus the object cache's counts):

* ``sink_global``: never changes during a session: the world style, the style
  anchor images, each character's identity reference (:meth:`Director.global_anchors`);
* ``sink_current``: the location *as it now is* (at night, in the rain, with the
  lantern by the tree, the creature in its blue scarf), rebuilt from
  ``GameState`` only at authored events (scene, exit, choice, action, gift,
  ending, start, load, rollback) and accepted world edits; camera moves and waits
  reuse it unchanged (:meth:`Director.current_anchors`). The error bank
  re-anchors to this level, so a correction never undoes what the player did;
* ``rolling``: the last ``rolling_size`` chunks verbatim (sequence number, the
  event, the events' ids, the frame it started at, the prompt), bounded;
* ``object_cache``: one entry per entity (:class:`game.world.objects.ObjectMemory`):
  description, reference image, sprite key and embedding, built once and reused
  until the entity changes; this request's hits and misses are reported as
  ``tiers["object_cache.hits"]`` / ``["object_cache.misses"]`` (numbers as text);
* ``request``: this turn's own parts (event, reactions, actions, references, audio cue,
  each living character's expression and what she says this turn).

Actions: every request carries one :class:`ActionFrame` per frame it will yield
(``action_frames``): the key of a ``Move`` held for its frames (WASD), the mouse
look motion of the cause (``Cause.mouse``, normalised per frame), and the camera
pose the story's pan gives each frame (``x`` from ``camera_x`` moving ``camera_dx``
per frame). What a backend does not read is reported by it (``FrameChunk.ignored``).
A reaction's first block is the backend's smallest (``ChunkPolicy.first_block``).

Characters with a card (a :class:`CastView` in :attr:`Director.cast`, given by
:func:`game.session.assembly.open_game`) send their card's look and first reference
image as their identity anchor (``char.<id>`` image and ``char.<id>.look`` text, global
sink), their look in the scene's entities, and, every turn, their expression (from the
relationship) and the first sentence of their reply in the prompt. A turn in which a
character replies gets a chunk long enough for her to say it (``data.speech_s`` of the
``reply`` events).

Every field is bounded by the story (scene size, a fixed rolling window, capped
objects per place), so a request after 10,000 turns is the size of one after 100
(``tests/world/test_tiers.py``).
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from game.state import Event, GameState
from game.story.agents import present
from game.story.art import ArtError, load_sheet, sheet_image_path
from game.story.story import Story
from game.world.backends.scenery import Vocabulary
from game.world.chunking import ChunkPolicy
from game.world.objects import ObjectMemory
from game.world.protocol import (
    ActionFrame,
    Anchor,
    CameraPose,
    Capabilities,
    Entity,
    Scene,
    SessionStart,
    SwitchMode,
    WorldRequest,
)

#: Event kinds in order of how much they change what the world should show.
PRIORITY = ("scene", "exit", "ending", "outcome", "timer", "choice", "action", "give", "combine", "agent", "edit",
            "reaction", "say", "move")
#: Causes whose event carries the author's chunk hint in ``data.chunk`` (a choice, a timer, an agent's action...).
HINTED = frozenset({"choice", "outcome", "timer", "combine", "agent"})
#: Causes after which the current sink is rebuilt from the state.
REBUILD = frozenset({"scene", "exit", "ending", "choice", "action", "give", "edit", "reaction", "start", "load",
                     "rollback", "outcome", "timer", "combine", "agent"})
#: Longest rolling-history entry, characters.
ROLLING_CHARS = 240

#: Words describing each reaction in the text prompt.
REACTION_WORDS = {
    "leap": "leaps up with delight",
    "recoil": "recoils, wary",
    "nuzzle": "nuzzles close, trusting",
    "tilt": "tilts its head, curious",
    "sleep": "curls up asleep",
    "flee": "flees into the trees",
    "idle": "watches quietly",
}
#: An on_enter effect that sets a world key to a literal (``time_of_day = 'night'``): the scenes
#: ahead are prepared as they will look once entered.
SETS_WORLD = re.compile(r"^\s*(time_of_day|weather|light)\s*=\s*['\"]([^'\"]*)['\"]\s*$")
#: Lights that mean the moon is up (the time of day defaults to night under them).
MOON_LIGHTS = frozenset({"moonrise", "moonlight"})
#: How the light world key reads in the prompt.
LIGHT_WORDS = {
    "lantern": "lit by a warm lantern glow", "moonlight": "silvered by moonlight", "firelight": "lit by firelight",
    "candle": "lit by candlelight", "glow": "in a soft warm glow", "bright": "brightly lit", "dim": "dimly lit",
    "moonrise": "under the rising moon",
}


class CastView(Protocol):
    """What the director reads of a living character (one with a card)."""

    def identity(self) -> tuple[str, str]:
        """``(look text, reference image path)`` from her card: the identity anchor (``""`` for none)."""
        ...

    def expression(self, state: GameState) -> str:
        """Her expression now (``warm``, ``guarded``...), from the relationship in ``state``."""
        ...


def speech_seconds(events: Sequence[Event]) -> float | None:
    """Seconds the ``reply`` events of a turn take to say (their ``data.speech_s``), or ``None``."""
    total = sum(float(e.data.get("speech_s", 0.0) or 0.0) for e in events if e.kind == "reply")
    return total if total > 0 else None


@dataclass(frozen=True)
class Cause:
    """Why a request is made: the event kind, its stable id, a hint, a duration.

    ``direction`` is the WASD key a ``Move`` holds, ``camera_from`` the camera's ``x``
    before the turn, ``mouse`` the look motion ``(dx, dy)`` per frame (normalised, see
    :class:`ActionFrame`).
    """

    event: str
    event_id: str = ""
    hint: str | int | None = None
    seconds: float | None = None
    direction: str = ""
    camera_from: float | None = None
    mouse: tuple[float, float] = (0.0, 0.0)


def action_frames(n: int, direction: str, mouse: tuple[float, float], start_x: float,
                  dx: float) -> tuple[ActionFrame, ...]:
    """``n`` action frames: ``direction`` held (``""``: no key), ``mouse`` each frame, and the
    camera at ``start_x + i * dx`` world units in frame ``i``."""
    keys = (direction,) if direction else ()
    return tuple(ActionFrame(keys=keys, mouse=mouse, camera=CameraPose(x=round(start_x + i * dx, 6)))
                 for i in range(n))


def world_value(story: Story, state: GameState, key: str, scene_id: str = "") -> str:
    """``state.world[key]``, else the location's default (of ``scene_id``, else the current scene).

    A moon the story raised (``light`` is ``moonrise`` or ``moonlight``) makes the
    default time of day ``night``: no sunset after moonrise unless the story sets
    ``time_of_day`` itself.
    """
    scene = story.model.scenes.get(scene_id or state.scene)
    loc = story.model.locations.get(scene.location) if scene else None
    default = {"weather": loc.weather if loc else "clear",
               "time_of_day": loc.time_of_day if loc else "dusk"}.get(key, "")
    if key == "time_of_day" and str(state.world.get("light", "")) in MOON_LIGHTS:
        default = "night"
    return str(state.world.get(key, default))


#: Reads a location's words for a room (by words only: no model is loaded for it).
_ROOMS = Vocabulary(None)


def indoors(story: Story, location_id: str) -> bool:
    """Whether ``location_id`` is a room, so that its weather is outside the windows.

    The location's ``indoors:`` when the author set it; else whether its prompt or name
    names an interior of the scenery vocabulary (kitchen, lantern room, watch room, hut,
    inn, glasshouse...: :data:`game.world.backends.scenery.VOCAB`), read by words only.
    An unknown location is outdoors.
    """
    loc = story.model.locations.get(location_id)
    if loc is None:
        return False
    if loc.indoors is not None:
        return loc.indoors
    return bool(_ROOMS.read(f"{loc.name}. {loc.prompt}").interior)


def moon_rises(story: Story) -> bool:
    """Whether the story raises the moon itself: some scene's ``on_enter`` sets ``light`` to
    ``moonrise`` or ``moonlight`` (then its nights before that have no moon in the sky)."""
    return any(k == "light" and v in MOON_LIGHTS for sc in story.model.scenes.values() for e in sc.on_enter
               for k, v in SETS_WORLD.findall(str(e)))


def scene_light(story: Story, light: str) -> str:
    """The light a scene is drawn in: the one the story set, else ``moonless`` where the story
    raises the moon later (:func:`moon_rises`: no moon is up before "moonrise"), else ``""``."""
    return light or ("moonless" if moon_rises(story) else "")


def setting(story: Story, scene_id: str) -> str:
    """What the place of ``scene_id`` shows, in words: its location's prompt, then the scene's."""
    m = story.model
    scene = m.scenes.get(scene_id)
    loc = m.locations.get(scene.location) if scene else None
    parts = [loc.prompt if loc and loc.prompt else (loc.name if loc else "")]
    if scene is not None and scene.prompt:
        parts.append(scene.prompt)
    return "; ".join(p.strip() for p in parts if p.strip())


def next_scenes(story: Story, scene_id: str) -> list[str]:
    """The scenes one turn may lead to from ``scene_id`` (once each, not itself): where its
    choices and exits go, then the endings the story's outcomes and timers go to from anywhere."""
    m = story.model
    scene = m.scenes.get(scene_id)
    if scene is None:
        return []
    targets = [c.goto for c in scene.choices if c.goto] + [e.goto for e in scene.exits.values() if e.goto]
    if not scene.ending:
        targets += [o.goto for o in m.outcomes.values()] + [t.goto for t in m.timers.values() if t.goto]
    return list(dict.fromkeys(t for t in targets if t in m.scenes and t != scene_id))


def outline(story: Story, state: GameState, scene_id: str) -> Scene:
    """Scene ``scene_id`` as it will look once entered from ``state`` (place, palette, time,
    weather, setting, light; without its entities): its ``on_enter`` effects that set a
    world key to a literal count."""
    m = story.model
    loc_id = m.scenes[scene_id].location
    loc = m.locations.get(loc_id)
    sets = {k: v for e in m.scenes[scene_id].on_enter for k, v in SETS_WORLD.findall(str(e))}
    if sets.get("light") in MOON_LIGHTS and "time_of_day" not in state.world:
        sets.setdefault("time_of_day", "night")
    return Scene(location=loc_id, palette=loc.palette if loc else loc_id,
                 time_of_day=sets.get("time_of_day") or world_value(story, state, "time_of_day", scene_id),
                 weather=sets.get("weather") or world_value(story, state, "weather", scene_id),
                 setting=setting(story, scene_id),
                 light=scene_light(story, sets.get("light") or str(state.world.get("light", ""))))


def opening(story: Story, state: GameState) -> tuple[Scene, ...]:
    """The start scene and the scenes one choice or exit away from it, as they will look
    from ``state`` (a fresh state, before the story began): what a backend may prepare while
    the game loads (see :class:`game.world.protocol.PaintsAhead`). It reads the story only,
    so :func:`game.session.assembly.open_game` computes it before the session (and its
    :class:`Director`) is built."""
    start = story.model.start
    if start not in story.model.scenes:
        return ()
    return (outline(story, state, start), *(outline(story, state, sid) for sid in next_scenes(story, start)))


class Director:
    """Builds requests for one session.

    Args:
        story: the story.
        caps: the backend's capabilities.
        session_id: backend session id.
        policy: the chunk policy.
        rolling_size: how many past chunks the rolling-history tier keeps.
        embed: ``texts -> (N, D)`` unit vectors for the object cache's embeddings
            (e.g. ``get_embedder().encode``), or ``None``; settable later as
            ``director.objects.embed``.
        cast: character id -> the view of a living character (her identity anchor and
            expression; the cast room's :meth:`~game.cast.castroom.Castroom.views`).

    Attributes:
        objects: the object cache tier.
        current_version: how many times the current sink was rebuilt.
    """

    def __init__(self, story: Story, caps: Capabilities, session_id: str,
                 policy: ChunkPolicy | None = None, rolling_size: int = 4,
                 embed: Callable[[Sequence[str]], np.ndarray] | None = None,
                 cast: Mapping[str, CastView] | None = None) -> None:
        self.story = story
        self.caps = caps
        self.session_id = session_id
        self.policy = policy or ChunkPolicy()
        self.rolling: deque[str] = deque(maxlen=rolling_size)
        self.seq = 0
        self.objects = ObjectMemory(embed)
        self.current_version = 0
        self._current: tuple[Anchor, ...] = ()
        self._last_prompt = ""
        #: character id -> her card's view (identity anchor, expression); see :class:`CastView`.
        self.cast: dict[str, CastView] = dict(cast or {})

    # -- anchors -------------------------------------------------------------
    def asset(self, rel: str) -> str:
        """Absolute path of a story asset, or ``""`` for none (absolute paths pass through)."""
        return str((self.story.folder / rel).resolve()) if rel else ""

    def global_anchors(self) -> tuple[Anchor, ...]:
        """The global sink: style text, style anchor images, character identities."""
        m = self.story.model
        out = [Anchor("world.style", "text", "style", m.world.style)] if m.world.style else []
        out += [Anchor(f"world.anchor{i}", "image", "world", self.asset(p))
                for i, p in enumerate(m.world.anchors)]
        for cid, c in m.cast.items():
            view = self.cast.get(cid)
            look, image = view.identity() if view is not None else ("", "")
            if image or look:
                if image:
                    out.append(Anchor(f"char.{cid}", "image", "character", image))
                out.append(Anchor(f"char.{cid}.look" if image else f"char.{cid}", "text", "character",
                                  look or c.look))
                continue
            out.append(Anchor(f"char.{cid}", "image" if c.image else "text", "character",
                              self.asset(c.image) if c.image else c.look))
        for cid in m.cast:
            sheet = self.sheet(cid)
            if sheet:
                out.append(Anchor(f"char.{cid}.sheet", "text", "character", sheet))
        return tuple(out)

    def sheet(self, cid: str) -> str:
        """A character's sprite sheet as JSON (``image`` made absolute), or ``""`` (none, or unreadable:
        lint reports it)."""
        c = self.story.model.cast.get(cid)
        if c is None or c.sheet is None:
            return ""
        try:
            sheet = load_sheet(self.story.folder, c.sheet)
            image = sheet_image_path(self.story.folder, c.sheet)
        except ArtError:
            return ""
        return json.dumps({"image": str(image.resolve()), "frame": list(sheet.frame),
                           "cells": {k: list(v) for k, v in sheet.cells.items()}}, sort_keys=True)

    def _cast_look(self, cid: str, story_look: str) -> str:
        """A character's look: the story's, else her card's."""
        view = self.cast.get(cid)
        return story_look or (view.identity()[0] if view is not None else "")

    def rebuild_current(self, state: GameState) -> tuple[Anchor, ...]:
        """Rebuild the current sink from ``state`` (the location now, with the player's changes)."""
        anchors = [Anchor(f"location.{state.location}", "text", "location", self.location_text(state),
                          tier="sink_current")]
        loc = self.story.model.locations.get(state.location)
        if loc is not None and loc.plate:  # author art: the background and its parallax layers
            anchors.append(Anchor(f"location.{state.location}.plate", "image", "location", self.asset(loc.plate),
                                  tier="sink_current"))
            anchors += [Anchor(f"location.{state.location}.layer{k}", "image", "location", self.asset(rel),
                               tier="sink_current") for k, rel in enumerate(loc.layers)]
        for oid, obj in sorted(state.objects.items()):
            if obj.get("image") and self._visible(state, obj):
                anchors.append(Anchor(f"object.{oid}", "image", "object", str(obj["image"]), tier="sink_current"))
        self._current = tuple(anchors)
        self.current_version += 1
        return self._current

    def current_anchors(self, state: GameState) -> tuple[Anchor, ...]:
        """The current sink as last rebuilt (built now if it never was)."""
        return self._current or self.rebuild_current(state)

    def session_start(self, state: GameState, seed: int) -> SessionStart:
        return SessionStart(self.session_id, seed, self.prompt(state, []), self.global_anchors())

    # -- the scene -----------------------------------------------------------
    def ahead(self, state: GameState) -> tuple[Scene, ...]:
        """The scenes one choice, exit, outcome or timer away from the current one (without their
        entities)."""
        return tuple(outline(self.story, state, sid) for sid in next_scenes(self.story, state.scene))

    def in_view(self, state: GameState) -> dict[str, float]:
        """Who the chunk shows: those in the scene now (agents come and go, see
        :func:`game.story.agents.present`), and one who left this very turn, drawn leaving
        (her reaction says how: ``walk_off``)."""
        here = present(self.story, state)
        scene = self.story.model.scenes.get(state.scene)
        for cid, x in (scene.present.items() if scene is not None else ()):
            if cid not in here and cid in state.reactions:
                here[cid] = x
        return here

    def _visible(self, state: GameState, obj: dict[str, bool | int | float | str]) -> bool:
        scene = self.story.model.scenes.get(state.scene)
        on = str(obj.get("on", ""))
        if on:
            return scene is not None and on in self.in_view(state)
        return obj.get("location") == state.location

    def changes_text(self, state: GameState) -> str:
        """The player's changes that show here, as prompt text ("a golden lantern by the tree; ...")."""
        m = self.story.model
        parts: list[str] = []
        for _, obj in sorted(state.objects.items()):
            if not self._visible(state, obj):
                continue
            on = str(obj.get("on", ""))
            look = str(obj.get("look", obj.get("name", "")))
            if on:
                who = m.cast[on].name if on in m.cast else on
                verb = "wears" if obj.get("kind") == "worn" else "holds"
                parts.append(f"{who} {verb} {look}")
            else:
                near = str(obj.get("near", ""))
                near_name = m.cast[near].name if near in m.cast else (m.items[near].name if near in m.items
                                                                      else near)
                the = near_name if near_name.lower().startswith("the ") else f"the {near_name}"
                parts.append(f"{look} by {the}" if near else look)
        for ident, change in sorted(state.looks.items()):
            colour = " ".join(str(change.get(k, "")) for k in ("size", "colour") if change.get(k))
            if colour and (ident in m.cast or ident in m.items):
                name = m.cast[ident].name if ident in m.cast else m.items[ident].name
                parts.append(f"{name} is now {colour}")
        return "; ".join(parts)

    def location_text(self, state: GameState) -> str:
        loc = self.story.model.locations.get(state.location)
        name = loc.name if loc else state.location
        base = loc.prompt if loc and loc.prompt else name
        weather = world_value(self.story, state, "weather")
        tod = world_value(self.story, state, "time_of_day")
        extra = f", {weather}" if weather and weather != "clear" else ""
        if extra and indoors(self.story, state.location):
            extra += " outside the windows"  # a room's weather is seen through its glass, not inside it
        light = str(state.world.get("light", ""))
        if light:
            extra += f", {LIGHT_WORDS.get(light, light)}"
        changes = self.changes_text(state)
        return f"{base}, at {tod}{extra}" + (f"; {changes}" if changes else "")

    def _look(self, state: GameState, ident: str, base: str) -> str:
        change = state.looks.get(ident, {})
        words = " ".join(str(change.get(k, "")) for k in ("size", "colour") if change.get(k))
        return f"now {words}: {base}" if words else base

    def scene(self, state: GameState) -> Scene:
        """The structured scene: location, palette, time, weather, entities (with the player's objects)."""
        m = self.story.model
        scene = m.scenes.get(state.scene)
        loc = m.locations.get(state.location)
        entities: list[Entity] = []
        if scene is not None:
            here = self.in_view(state)
            worn: dict[str, list[str]] = {}
            for oid, obj in sorted(state.objects.items()):
                on = str(obj.get("on", ""))
                if on and on in here:
                    worn.setdefault(on, []).append(oid)
            for cid, x in here.items():
                c = m.cast.get(cid)
                held = tuple(i for i, who in state.holders.items() if who == cid) + tuple(worn.get(cid, ()))
                entities.append(Entity(cid, "character", c.name if c else cid,
                                       self._look(state, cid, self._cast_look(cid, c.look if c else "")),
                                       self.asset(c.image) if c else "", x=x,
                                       state=state.reactions.get(cid, "idle"), holding=held,
                                       expression=self.mood(state, cid)))
            for iid, x in scene.items.items():
                if iid in state.inventory or iid in state.holders or state.looks.get(iid, {}).get("removed"):
                    continue
                it = m.items.get(iid)
                entities.append(Entity(iid, "item", it.name if it else iid,
                                       self._look(state, iid, it.look if it else ""),
                                       self.asset(it.image) if it else "", x=x))
            for iid, who in state.holders.items():
                if who not in here:
                    continue
                it = m.items.get(iid)
                if it is not None:
                    entities.append(Entity(iid, "item", it.name, self._look(state, iid, it.look),
                                           self.asset(it.image), x=here[who], y=0.1, state=f"held:{who}"))
            for oid, obj in sorted(state.objects.items()):
                if not self._visible(state, obj):
                    continue
                on = str(obj.get("on", ""))
                kind = str(obj.get("kind", "object"))
                x = here.get(on, 0.5) if on else float(obj.get("x", 0.5))
                y = 0.1 if on else float(obj.get("y", 0.0))
                rests = str(obj.get("rests", ""))  # set down on a feature of the place (a gift's ``put:``)
                entities.append(Entity(oid, "object", str(obj.get("name", oid)), str(obj.get("look", "")),
                                       str(obj.get("image", "")), x=x, y=y,
                                       state=(f"{'worn' if kind == 'worn' else 'held'}:{on}" if on
                                              else f"on:{rests}" if rests else "idle")))
        return Scene(location=state.location, palette=loc.palette if loc else state.location,
                     time_of_day=world_value(self.story, state, "time_of_day"),
                     weather=world_value(self.story, state, "weather"), entities=tuple(entities),
                     setting=setting(self.story, state.scene),
                     light=scene_light(self.story, str(state.world.get("light", ""))))

    def mood(self, state: GameState, cid: str) -> str:
        """A character's expression: her card's (from the relationship), else one read from trust and
        affinity (``warm`` at affinity >= 3, ``wary`` below trust 0, else ``""``)."""
        view = self.cast.get(cid)
        if view is not None:
            return view.expression(state)
        rel = state.relationships.get(cid, {})
        if rel.get("affinity", 0.0) >= 3:
            return "warm"
        if rel.get("trust", 0.0) < 0:
            return "wary"
        return ""

    def prompt(self, state: GameState, events: list[Event]) -> str:
        """The text prompt: style, location now, scene prompt, who is there doing what."""
        m = self.story.model
        scene = m.scenes.get(state.scene)
        parts = [m.world.style] if m.world.style else []
        parts.append(self.location_text(state))
        if scene is not None and scene.prompt:
            parts.append(scene.prompt)
        if scene is not None:
            for cid in self.in_view(state):
                c = m.cast.get(cid)
                who = (c.look or c.name) if c else cid
                doing = REACTION_WORDS.get(state.reactions.get(cid, "idle"), state.reactions.get(cid, ""))
                held = [m.items[i].name for i, h in state.holders.items() if h == cid and i in m.items]
                part = f"{who} {doing}" + (f", holding the {' and '.join(held)}" if held else "")
                view = self.cast.get(cid)
                if view is not None:
                    part += f", looking {view.expression(state)}"
                    said = next((e.text for e in events if e.kind == "reply" and e.speaker == cid and e.text), "")
                    if said:
                        first = said.split(". ")[0].strip().rstrip(".")
                        part += f", saying \"{first[:120]}\""
                parts.append(part)
        return ". ".join(p.strip().rstrip(".") for p in parts if p) + "."

    # -- requests --------------------------------------------------------------
    def cause(self, events: list[Event], fallback: str = "idle", seconds: float | None = None,
              direction: str = "", camera_from: float | None = None,
              mouse: tuple[float, float] = (0.0, 0.0)) -> Cause:
        """The most significant event of a turn (see :data:`PRIORITY`).

        A timer that fires (the tide rising) or an agent's action the player can see
        (a character walking off) is a cause like the player's own events; an agent
        acting out of view, and a timer's warning or start, are not.
        """
        kinds = {e.kind: e for e in events if not (e.kind == "agent" and not e.data.get("seen", True))
                 and not (e.kind == "timer" and e.data.get("what") != "fired")}
        for kind in PRIORITY:
            if kind in kinds:
                e = kinds[kind]
                hint = e.data.get("chunk") if kind in HINTED else None
                if kind == "scene":
                    sc = self.story.model.scenes.get(e.ids.get("scene", ""))
                    hint = sc.chunk if sc and sc.chunk else ("cut" if e.data.get("cut") else "medium")
                    # the player's choice caused the turn: its own chunk hint wins over the scene's
                    chosen = kinds["choice"].data.get("chunk") if "choice" in kinds else None
                    hint = chosen or hint
                    event_id = e.ids.get("scene", "")
                else:
                    event_id = next(iter(e.ids.values()), "")
                secs = seconds if kind == "move" else speech_seconds(events) if kind == "say" else None
                return Cause(kind, event_id, hint, secs, direction, camera_from, mouse)
        return Cause(fallback, "", None, seconds, direction, camera_from, mouse)

    def switch_mode(self, cause: Cause, events: list[Event], prompt: str, preempt: bool) -> SwitchMode | None:
        """How the backend switches to this request.

        ``plain`` for a step (``None`` when nothing but the camera moves and nothing
        was cut short), ``recache`` for an edit, a choice or a reaction, ``scene_cut``
        for a new place.
        """
        switch: SwitchMode | None
        if prompt == self._last_prompt and cause.event in ("move", "idle", "wait"):
            switch = "plain" if preempt else None
        else:
            switch = self.policy.switch(cause.event)
        if cause.event == "scene" and not any(e.data.get("cut") for e in events if e.kind == "scene"):
            switch = "recache"
        return switch

    def build(self, state: GameState, events: list[Event], cause: Cause,
              references: tuple[str, ...] = (), audio: str = "", preempt: bool = False) -> WorldRequest:
        """The next request. Advances ``seq``, the rolling history and (at events) the current sink.

        Args:
            state: the state after the turn.
            events: the turn's events.
            cause: from :meth:`cause`.
            references: reference image paths sent with this request (a dropped image).
            audio: path of an audio cue (the player's voice clip), or ``""``.
            preempt: this request cuts a running chunk short (a step then switches ``plain``).
        """
        self.seq += 1
        n = self.policy.frames(cause.event, self.caps, cause.hint, cause.seconds)
        n_out = self.caps.round_up(n)
        prompt = self.prompt(state, events)
        switch = self.switch_mode(cause, events, prompt, preempt)
        self._last_prompt = prompt
        if cause.event in REBUILD or not self._current or any(e.kind == "edit" for e in events):
            self.rebuild_current(state)
        direction = cause.direction if cause.event == "move" else ""
        actions = tuple(direction for _ in range(n_out)) if direction else ()
        start_x = state.camera_x if cause.camera_from is None else cause.camera_from
        dx = (state.camera_x - start_x) / n_out
        sounds = tuple(f"{e.data.get('channel', 'sound')}:{e.data.get('cue', '')}" for e in events
                       if e.kind == "audio" and e.data.get("cue"))
        # the reaction's cue, else the turn's first sound (an Ink ``# sound:`` tag)
        cue = next((e.data.get("reaction", "") for e in events if e.kind == "reaction"), "") or \
            (sounds[0] if sounds else "")
        directives = tuple(dict.fromkeys(str(t) for e in events if e.kind in ("line", "choice")
                                         for t in e.data.get("tags", ())))
        scene = self.scene(state)
        _, hits, misses = self.objects.refresh(scene.entities, self.seq)
        request = WorldRequest(
            session_id=self.session_id,
            seq=self.seq,
            min_frames=n,
            prompt=prompt,
            switch_mode=switch,
            scene=scene,
            actions=actions,
            action_frames=action_frames(n_out, direction, cause.mouse, start_x, dx),
            first_block_frames=self.policy.first_block(cause.event, self.caps),
            camera_x=round(start_x, 6),
            camera_dx=dx,
            references=references,
            audio=audio,
            cue=str(cue),
            sounds=sounds,
            directives=directives,
            event=cause.event,
            event_id=cause.event_id,
            anchors=self.global_anchors() + self._current,
            rolling=tuple(self.rolling),
            ahead=self.ahead(state),
            # each block is due within its own play time (the error bank's guard shows the
            # fallback one block after a missed deadline)
            deadline_ms=round(1000 * self.caps.frames_per_block / self.caps.fps) if self.caps.fps > 0 else 0,
            tiers={"prompt.style": "sink_global", "prompt.location": "sink_current",
                   "prompt.changes": "sink_current", "anchors.global": "sink_global",
                   "anchors.current": "sink_current", "scene.weather": "sink_current",
                   "scene.time_of_day": "sink_current", "rolling": "rolling", "scene.entities": "object_cache",
                   "actions": "request", "cue": "request", "references": "request", "audio": "request",
                   "sounds": "request", "directives": "request",
                   "object_cache.hits": str(hits), "object_cache.misses": str(misses),
                   "sink_current.version": str(self.current_version),
                   **({"prompt.expression": "request", "prompt.speech": "request"} if self.cast else {})},
        )
        ids = ",".join(f"{e.kind}:{next(iter(e.ids.values()), '')}" for e in events
                       if e.kind in PRIORITY and e.kind != "move")[:80]
        entry = f"#{self.seq} {cause.event}:{cause.event_id} frame={state.frame} [{ids}] {prompt}"
        self.rolling.append(entry[:ROLLING_CHARS])
        return request

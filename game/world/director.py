"""The Director: turns story state + events + cast into a :class:`WorldRequest`.

It decides the prompt, the structured scene, the per-frame actions, the anchors
and the chunk length, and marks which memory tier each part came from:

* ``sink_global``: never changes during a session (world style, style anchors,
  each character's identity reference);
* ``sink_current``: rebuilt from ``GameState`` (the location as it now is: time
  of day, weather);
* ``rolling``: the last ``rolling_size`` chunk summaries, verbatim;
* ``object_cache``: one entry per entity (look, reference image);
* ``request``: this turn's own parts (event, reactions, actions).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from game.state import Event, GameState
from game.story.story import Story
from game.world.chunking import ChunkPolicy
from game.world.protocol import Anchor, Capabilities, Entity, Scene, SessionStart, WorldRequest

#: Event kinds in order of how much they change what the world should show.
PRIORITY = ("scene", "exit", "ending", "choice", "action", "give", "reaction", "say", "move")

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


@dataclass(frozen=True)
class Cause:
    """Why a request is made: the event kind, its stable id, a hint, a duration."""

    event: str
    event_id: str = ""
    hint: str | int | None = None
    seconds: float | None = None
    direction: str = ""
    camera_from: float | None = None


class Director:
    """Builds requests for one session.

    Args:
        story: the story.
        caps: the backend's capabilities.
        session_id: backend session id.
        policy: the chunk policy.
        rolling_size: how many past chunks the rolling-history tier keeps.
    """

    def __init__(self, story: Story, caps: Capabilities, session_id: str,
                 policy: ChunkPolicy | None = None, rolling_size: int = 4) -> None:
        self.story = story
        self.caps = caps
        self.session_id = session_id
        self.policy = policy or ChunkPolicy()
        self.rolling: deque[str] = deque(maxlen=rolling_size)
        self.seq = 0
        self._last_prompt = ""

    # -- anchors -------------------------------------------------------------
    def asset(self, rel: str) -> str:
        """Absolute path of a story asset, or ``""`` for none."""
        return str((self.story.folder / rel).resolve()) if rel else ""

    def global_anchors(self) -> tuple[Anchor, ...]:
        """The global sink: style text, style anchor images, character identities."""
        m = self.story.model
        out = [Anchor("world.style", "text", "style", m.world.style)] if m.world.style else []
        out += [Anchor(f"world.anchor{i}", "image", "world", self.asset(p))
                for i, p in enumerate(m.world.anchors)]
        out += [Anchor(f"char.{cid}", "image" if c.image else "text", "character",
                       self.asset(c.image) if c.image else c.look)
                for cid, c in m.cast.items()]
        return tuple(out)

    def current_anchors(self, state: GameState) -> tuple[Anchor, ...]:
        """The current sink: the location as the state says it is now."""
        return (Anchor(f"location.{state.location}", "text", "location",
                       self.location_text(state), tier="sink_current"),)

    def session_start(self, state: GameState, seed: int) -> SessionStart:
        return SessionStart(self.session_id, seed, self.prompt(state, []), self.global_anchors())

    # -- the scene -----------------------------------------------------------
    def world_value(self, state: GameState, key: str) -> str:
        scene = self.story.model.scenes.get(state.scene)
        loc = self.story.model.locations.get(scene.location) if scene else None
        default = {"weather": loc.weather if loc else "clear",
                   "time_of_day": loc.time_of_day if loc else "dusk"}.get(key, "")
        return str(state.world.get(key, default))

    def location_text(self, state: GameState) -> str:
        loc = self.story.model.locations.get(state.location)
        name = loc.name if loc else state.location
        base = loc.prompt if loc and loc.prompt else name
        weather = self.world_value(state, "weather")
        tod = self.world_value(state, "time_of_day")
        extra = f", {weather}" if weather and weather != "clear" else ""
        return f"{base}, at {tod}{extra}"

    def scene(self, state: GameState) -> Scene:
        """The structured scene: location, palette, time, weather, entities."""
        m = self.story.model
        scene = m.scenes.get(state.scene)
        loc = m.locations.get(state.location)
        entities: list[Entity] = []
        if scene is not None:
            for cid, x in scene.present.items():
                c = m.cast.get(cid)
                held = tuple(i for i, who in state.holders.items() if who == cid)
                entities.append(Entity(cid, "character", c.name if c else cid, c.look if c else "",
                                       self.asset(c.image) if c else "", x=x,
                                       state=state.reactions.get(cid, "idle"), holding=held))
            for iid, x in scene.items.items():
                if iid in state.inventory or iid in state.holders:
                    continue
                it = m.items.get(iid)
                entities.append(Entity(iid, "item", it.name if it else iid, it.look if it else "",
                                       self.asset(it.image) if it else "", x=x))
            for iid, who in state.holders.items():
                if who not in scene.present:
                    continue
                it = m.items.get(iid)
                if it is not None:
                    entities.append(Entity(iid, "item", it.name, it.look, self.asset(it.image),
                                           x=scene.present[who], y=0.1, state=f"held:{who}"))
        return Scene(location=state.location, palette=loc.palette if loc else state.location,
                     time_of_day=self.world_value(state, "time_of_day"),
                     weather=self.world_value(state, "weather"), entities=tuple(entities))

    def prompt(self, state: GameState, events: list[Event]) -> str:
        """The text prompt: style, location now, scene prompt, who is there doing what."""
        m = self.story.model
        scene = m.scenes.get(state.scene)
        parts = [m.world.style] if m.world.style else []
        parts.append(self.location_text(state))
        if scene is not None and scene.prompt:
            parts.append(scene.prompt)
        if scene is not None:
            for cid in scene.present:
                c = m.cast.get(cid)
                who = (c.look or c.name) if c else cid
                doing = REACTION_WORDS.get(state.reactions.get(cid, "idle"), state.reactions.get(cid, ""))
                held = [m.items[i].name for i, h in state.holders.items() if h == cid and i in m.items]
                parts.append(f"{who} {doing}" + (f", holding the {' and '.join(held)}" if held else ""))
        return ". ".join(p.strip().rstrip(".") for p in parts if p) + "."

    # -- requests --------------------------------------------------------------
    def cause(self, events: list[Event], fallback: str = "idle", seconds: float | None = None,
              direction: str = "", camera_from: float | None = None) -> Cause:
        """The most significant event of a turn (see :data:`PRIORITY`)."""
        kinds = {e.kind: e for e in events}
        for kind in PRIORITY:
            if kind in kinds:
                e = kinds[kind]
                hint = e.data.get("chunk") if kind == "choice" else None
                if kind == "scene":
                    sc = self.story.model.scenes.get(e.ids.get("scene", ""))
                    hint = sc.chunk if sc and sc.chunk else ("cut" if e.data.get("cut") else "medium")
                    event_id = e.ids.get("scene", "")
                else:
                    event_id = next(iter(e.ids.values()), "")
                secs = seconds if kind == "move" else None
                return Cause(kind, event_id, hint, secs, direction, camera_from)
        return Cause(fallback, "", None, seconds, direction, camera_from)

    def build(self, state: GameState, events: list[Event], cause: Cause,
              references: tuple[str, ...] = (), audio: str = "") -> WorldRequest:
        """The next request. Advances ``seq`` and the rolling history."""
        self.seq += 1
        n = self.policy.frames(cause.event, self.caps, cause.hint, cause.seconds)
        n_out = self.caps.round_up(n)
        prompt = self.prompt(state, events)
        switch = None if prompt == self._last_prompt and cause.event in ("move", "idle", "wait") \
            else self.policy.switch(cause.event)
        if cause.event == "scene" and not any(e.data.get("cut") for e in events if e.kind == "scene"):
            switch = "recache"
        self._last_prompt = prompt
        direction = cause.direction if cause.event == "move" else ""
        actions = tuple(direction for _ in range(n_out)) if direction else ()
        start_x = state.camera_x if cause.camera_from is None else cause.camera_from
        dx = (state.camera_x - start_x) / n_out
        cue = next((e.data.get("reaction", "") for e in events if e.kind == "reaction"), "")
        request = WorldRequest(
            session_id=self.session_id,
            seq=self.seq,
            min_frames=n,
            prompt=prompt,
            switch_mode=switch,
            scene=self.scene(state),
            actions=actions,
            camera_x=round(start_x, 6),
            camera_dx=dx,
            references=references,
            audio=audio,
            cue=str(cue),
            event=cause.event,
            event_id=cause.event_id,
            anchors=self.global_anchors() + self.current_anchors(state),
            rolling=tuple(self.rolling),
            tiers={"prompt.style": "sink_global", "prompt.location": "sink_current",
                   "anchors.global": "sink_global", "anchors.current": "sink_current",
                   "rolling": "rolling", "scene.entities": "object_cache",
                   "actions": "request", "cue": "request"},
        )
        self.rolling.append(f"#{self.seq} {cause.event}:{cause.event_id} {prompt[:120]}")
        return request

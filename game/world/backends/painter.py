"""The painter: turns a request's structured scene into frames.

:meth:`Painter.plan` resolves a request once (look, backdrop, particles, which
sprite stands for each entity, what it holds, what could not be used);
:meth:`Painter.paint` then draws one frame of it into a ``(H, W, 3)`` uint8
array. Every pixel is a pure function of the plan, the frame's index within the
request and within the session, and the camera; nothing reads a clock or a
global random generator.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np
from PIL import Image

from game.world.backends.cache import ObjectCache
from game.world.backends.landscape import Backdrop, build_backdrop
from game.world.backends.motion import STATES, Pose, pose
from game.world.backends.palette import Look, resolve_look
from game.world.backends.particles import Particles, build_particles
from game.world.backends.raster import RGB, U8, blit, draw_line
from game.world.backends.seeds import unit
from game.world.backends.sprites import (
    Sprite,
    colour_from_text,
    colour_word,
    creature,
    effect,
    figure,
    from_image,
    kite,
    lantern,
    leaf,
    scarf,
    transform,
    trinket,
)
from game.world.protocol import Anchor, Entity, WorldRequest

#: Heights of things, as fractions of the frame height.
CREATURE_H = 0.22
FIGURE_H = 0.3
IMAGE_H = 0.26
ITEM_H = 0.09
#: Held items, as fractions of the holder's height.
HELD_H = 0.42
HELD_KITE_H = 0.62
#: Squash-and-stretch and head-tilt steps between cached pose variants.
SCALE_STEP = 0.02
TILT_STEP = 4.0
#: Frames of fade-in after a ``scene_cut``.
CUT_FADE = 6


@dataclass(frozen=True)
class Actor:
    """An entity resolved for drawing.

    Attributes:
        entity: the scene entity.
        kind: ``creature``, ``figure``, ``image``, ``kite``, ``leaf``, ``gem`` or ``box``.
        colour: body colour for drawn placeholders.
        image: the loaded picture for ``image`` actors.
        image_path: its path (part of the cache key).
        height: drawn height in frame pixels.
        phase: the actor's own phase in ``[0, 1)``.
        state: the state drawn (unknown states become ``idle``).
        held: items it holds, as actors.
    """

    entity: Entity
    kind: str
    colour: RGB
    image: Image.Image | None
    image_path: str
    height: int
    phase: float
    state: str
    held: tuple[Actor, ...] = ()

    @property
    def key(self) -> tuple[object, ...]:
        """What the sprite depends on: id, look, image and size."""
        e = self.entity
        return (self.kind, e.id, e.name, e.look, self.image_path, self.height)


@dataclass(frozen=True)
class Plan:
    """A request resolved for painting (see :meth:`Painter.plan`)."""

    look: Look
    backdrop: Backdrop
    behind: tuple[Particles, ...]
    front: tuple[Particles, ...]
    actors: tuple[Actor, ...]
    notes: tuple[str, ...]
    light: RGB = (1.0, 1.0, 1.0)
    fade: int = 0
    order: dict[str, int] = field(default_factory=dict)


def _light(look: Look) -> RGB:
    """Colour multiplier for sprites: half the land's time-of-day grade, dimmer in rain."""
    dim = 0.86 if look.rain > 0 else 1.0
    r, g, b = (round((0.5 + 0.5 * c) * dim, 2) for c in look.sky.grade)
    return (r, g, b)


def _load_picture(path: str) -> Image.Image | None:
    """A picture as RGBA cropped to its visible part, or ``None`` when it cannot be read."""
    try:
        with Image.open(path) as im:
            im.load()
            rgba = im.convert("RGBA")
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    box = rgba.getchannel("A").getbbox()
    if box is None:
        return None
    return rgba.crop(box)


class Painter:
    """Draws frames of ``width`` x ``height`` at ``fps``; sprites go through ``cache``.

    Attributes:
        sprites_built: base sprites drawn so far (each entity look once).
        backdrops_built: backdrops painted so far.
    """

    def __init__(self, width: int, height: int, fps: float, cache: ObjectCache[Sprite]) -> None:
        self.width = width
        self.height = height
        self.fps = fps
        self.cache = cache
        self.sprites_built = 0
        self.backdrops_built = 0
        self._backdrops: OrderedDict[tuple[object, ...], Backdrop] = OrderedDict()
        self._particles: OrderedDict[tuple[object, ...], tuple[tuple[Particles, ...], ...]] = (
            OrderedDict()
        )
        self._pictures: OrderedDict[str, Image.Image | None] = OrderedDict()

    # ------------------------------------------------------------------ planning

    def picture(self, path: str) -> Image.Image | None:
        """The picture at ``path``, loaded once (``None`` when unreadable)."""
        if path in self._pictures:
            self._pictures.move_to_end(path)
            return self._pictures[path]
        pic = _load_picture(path)
        self._pictures[path] = pic
        if len(self._pictures) > 64:
            self._pictures.popitem(last=False)
        return pic

    def plan(self, request: WorldRequest, seed: int, anchors: tuple[Anchor, ...]) -> Plan:
        """Resolve ``request`` for painting.

        Args:
            request: the chunk request (its scene, prompt, references, switch mode).
            seed: the session seed (clouds, stars, weather particles).
            anchors: anchors in force, later ones winning; an image anchor
                ``char.<id>`` / ``object.<id>`` / ``<id>`` gives an entity without
                its own image its picture.
        """
        scene = request.scene
        notes: list[str] = []
        tint = self._reference_tint(request.references, notes)
        look = resolve_look(scene.palette, scene.time_of_day, scene.weather, request.prompt, tint)
        bkey = (scene.location, look, self.width, self.height, seed)
        backdrop = self._backdrops.get(bkey)
        if backdrop is None:
            backdrop = build_backdrop(scene.location, look, self.width, self.height, seed)
            self.backdrops_built += 1
            self._backdrops[bkey] = backdrop
            if len(self._backdrops) > 3:
                self._backdrops.popitem(last=False)
        else:
            self._backdrops.move_to_end(bkey)
        pkey = (look, self.width, self.height, seed)
        systems = self._particles.get(pkey)
        if systems is None:
            systems = build_particles(look, self.width, self.height, seed)
            self._particles[pkey] = systems
            if len(self._particles) > 8:
                self._particles.popitem(last=False)
        pictures = {a.id: a.ref for a in anchors if a.kind == "image"}
        by_id = {e.id: e for e in scene.entities}
        held_ids = {h for e in scene.entities for h in e.holding}
        actors: list[Actor] = []
        for e in sorted(scene.entities, key=lambda e: e.kind == "character"):
            if e.id in held_ids and e.kind != "character":
                continue
            actor = self._actor(e, pictures, notes, None)
            held = tuple(
                self._actor(by_id.get(h, Entity(id=h, kind="item", name=h)), pictures, notes, actor)
                for h in e.holding
            )
            actors.append(replace(actor, held=held))
        return Plan(
            look=look,
            backdrop=backdrop,
            behind=systems[0],
            front=systems[1],
            actors=tuple(actors),
            notes=tuple(notes),
            light=_light(look),
            fade=CUT_FADE if request.switch_mode == "scene_cut" else 0,
            order={e.id: k for k, e in enumerate(scene.entities)},
        )

    def _reference_tint(self, references: tuple[str, ...], notes: list[str]) -> RGB | None:
        colours = []
        for path in references:
            pic = self.picture(path)
            if pic is None:
                notes.append(f"references: cannot read {path}")
                continue
            thumb = np.asarray(pic.resize((16, 16), Image.Resampling.BILINEAR), dtype=np.float32)
            weight = thumb[:, :, 3:4] / 255.0
            total = float(weight.sum())
            if total > 0:
                colours.append((thumb[:, :, :3] * weight).sum(axis=(0, 1)) / total)
        if not colours:
            return None
        mean = np.mean(colours, axis=0)
        return (float(mean[0]), float(mean[1]), float(mean[2]))

    def _actor(
        self, e: Entity, pictures: dict[str, str], notes: list[str], holder: Actor | None
    ) -> Actor:
        text = f"{e.id} {e.name} {e.look}".lower()
        path = e.image or next(
            (pictures[k] for k in (f"char.{e.id}", f"object.{e.id}", f"item.{e.id}", e.id)
             if k in pictures),
            "",
        )
        pic = self.picture(path) if path else None
        if path and pic is None:
            notes.append(f"image {e.id}: cannot read {path}; drew a placeholder")
            path = ""
        state = e.state if e.state in STATES else "idle"
        if e.kind == "character" and e.state not in STATES:
            notes.append(f"state {e.id}={e.state}: not a reaction this backend draws; drew idle")
        if e.kind == "character":
            if pic is not None:
                kind, frac = "image", IMAGE_H
            elif any(w in text for w in ("creature", "horned", "horn")):
                kind, frac = "creature", CREATURE_H
            else:
                kind, frac = "figure", FIGURE_H
            height = frac * self.height
        else:
            if pic is not None:
                kind = "image"
            elif "kite" in text:
                kind = "kite"
            elif "leaf" in text or "leaves" in text:
                kind = "leaf"
            elif any(w in text for w in ("lantern", "lamp")):
                kind = "lantern"
            elif "scarf" in text:
                kind = "scarf"
            elif any(w in text for w in ("gem", "crystal", "jewel", "stone")):
                kind = "gem"
            elif any(w in text for w in ("box", "gift", "present", "parcel")):
                kind = "box"
            else:
                kind = "gem" if unit("trinket", e.id) < 0.5 else "box"
            if holder is None:
                height = ITEM_H * self.height * (1.4 if kind == "kite" else 1.0)
            else:
                height = holder.height * (HELD_KITE_H if kind == "kite" else HELD_H)
        default = {"kite": (222.0, 52.0, 48.0), "leaf": (94.0, 174.0, 74.0),
                   "lantern": (246.0, 196.0, 92.0)}.get(kind)
        colour = colour_word(f"{e.look} {e.name}") or default or colour_from_text("", e.id)
        return Actor(
            entity=e,
            kind=kind,
            colour=colour,
            image=pic,
            image_path=path,
            height=max(4, int(round(height))),
            phase=unit("phase", e.id),
            state=state,
        )

    # ------------------------------------------------------------------ sprites

    def sprite(
        self, actor: Actor, eyes: str, tint: str, head: float, sx: float, sy: float, mirror: bool,
        light: RGB = (1.0, 1.0, 1.0),
    ) -> Sprite:
        """The actor's sprite in a pose and light, from the object cache (built on first use)."""
        head_q = round(head / TILT_STEP) * TILT_STEP
        base_key = ("sprite", *actor.key, eyes, tint, head_q, light)
        base = self.cache.get(base_key, lambda: self._build(actor, eyes, tint, head_q, light))
        sxq, syq = round(sx / SCALE_STEP) * SCALE_STEP, round(sy / SCALE_STEP) * SCALE_STEP
        if abs(sxq - 1.0) < 1e-6 and abs(syq - 1.0) < 1e-6 and not mirror:
            return base
        return self.cache.get(
            ("pose", base_key, round(sxq, 2), round(syq, 2), mirror),
            lambda: transform(base, sxq, syq, mirror),
        )

    def _build(self, actor: Actor, eyes: str, tint: str, head: float, light: RGB) -> Sprite:
        self.sprites_built += 1
        spr = self._draw(actor, eyes, tint, head)
        if light == (1.0, 1.0, 1.0):
            return spr
        lit = spr.rgb.astype(np.float32) * np.array(light, dtype=np.float32)
        return replace(spr, rgb=np.clip(lit + 0.5, 0, 255).astype(np.uint8))

    def _draw(self, actor: Actor, eyes: str, tint: str, head: float) -> Sprite:
        h = actor.height
        if actor.kind == "creature":
            return creature(h, actor.colour, eyes, tint, head)
        if actor.kind == "figure":
            return figure(h, actor.colour, eyes, tint, head)
        if actor.kind == "image" and actor.image is not None:
            return from_image(actor.image, h, tint, head * 0.5)
        if actor.kind == "kite":
            return kite(h, actor.colour)
        if actor.kind == "leaf":
            return leaf(h, actor.colour)
        if actor.kind == "lantern":
            return lantern(h, actor.colour)
        if actor.kind == "scarf":
            return scarf(h, actor.colour)
        return trinket(h, actor.colour, box=actor.kind == "box")

    # ------------------------------------------------------------------ painting

    def paint(
        self, out: U8, plan: Plan, local: int, frame: int, camera_x: float, camera_y: float
    ) -> set[str]:
        """Draw one frame into ``out`` (``(H, W, 3)`` uint8); returns the entity ids that showed.

        Args:
            out: the frame, fully overwritten.
            plan: from :meth:`plan`.
            local: frame index within the request.
            frame: frame index within the session.
            camera_x: world units; ``camera_y``: screen heights (look up > 0).
        """
        plan.backdrop.compose(out, camera_x, camera_y, frame)
        for system in plan.behind:
            system.draw(out, frame, camera_x)
        feet = plan.backdrop.feet_row(camera_y)
        drawn: set[str] = set()
        for actor in plan.actors:
            drawn |= self._draw_actor(out, actor, local, frame, camera_x, feet, plan.light)
        for system in plan.front:
            system.draw(out, frame, camera_x)
        if local < plan.fade:
            k = (local + 1) * 256 // (plan.fade + 1)
            out[...] = ((out.astype(np.uint16) * k) >> 8).astype(np.uint8)
        return drawn

    def _draw_actor(
        self, out: U8, actor: Actor, local: int, frame: int, camera_x: float, feet: float,
        light: RGB,
    ) -> set[str]:
        e = actor.entity
        h = actor.height
        is_char = e.kind == "character"
        p = pose(actor.state, local, frame, self.fps, actor.phase) if is_char else Pose()
        centre = self.width / 2.0
        x = (e.x - camera_x) * self.width
        x += (centre - x) * p.toward
        side = 1.0 if x >= centre else -1.0
        x += side * p.away * self.width
        face = side if p.flee else -side
        if not is_char:
            face = 1.0
        x += p.x * h * face
        ground = feet - e.y * (feet - 0.12 * self.height)
        if not is_char and e.y > 0.0:
            ground += 0.02 * self.height * math.sin(frame * 0.12 + actor.phase * 6.28)
        y = ground - p.y * h
        spr = self.sprite(actor, p.eyes, p.tint, p.head, p.sx, p.sy, face < 0, light)
        if is_char and e.y <= 0.0:
            shade = effect("shadow", max(3, int(0.8 * h / (1.0 + p.y))))
            blit(out, shade.rgb, shade.alpha, int(round(x - shade.foot[0])),
                 int(round(ground - shade.foot[1])), opacity=int(70 / (1.0 + 2.0 * p.y)))
        x0, y0 = int(round(x - spr.foot[0])), int(round(y - spr.foot[1]))
        drawn: set[str] = set()
        if blit(out, spr.rgb, spr.alpha, x0, y0):
            drawn.add(e.id)
        hand = (x0 + spr.hold[0], y0 + spr.hold[1])
        for j, item in enumerate(actor.held):
            if self._draw_held(out, item, j, hand, face, h, frame, light):
                drawn.add(item.entity.id)
        for ef in p.effects:
            if ef.alpha <= 0.02:
                continue
            fx = effect(ef.kind, max(3, int(round(ef.size * h))))
            ex, ey = x + ef.x * h * face, ground - ef.y * h
            blit(out, fx.rgb, fx.alpha, int(round(ex - fx.foot[0])), int(round(ey - fx.foot[1])),
                 opacity=int(255 * min(1.0, ef.alpha)))
        return drawn

    def _draw_held(
        self, out: U8, item: Actor, index: int, hand: tuple[float, float], face: float,
        holder_h: int, frame: int, light: RGB,
    ) -> bool:
        spr = self.sprite(item, "", "", 0.0, 1.0, 1.0, face < 0, light)
        if item.kind == "kite":
            sway = math.sin(frame * 0.15 + item.phase * 6.28)
            gx = hand[0] + face * (0.45 + 0.06 * sway) * holder_h
            gy = hand[1] - (0.95 + 0.04 * math.cos(frame * 0.11)) * holder_h
            draw_line(out, hand, (gx, gy), np.array((236, 232, 220), dtype=np.uint8))
            return blit(out, spr.rgb, spr.alpha, int(round(gx - spr.hold[0])),
                        int(round(gy - spr.hold[1])))
        if item.kind == "scarf":  # worn: looped under the head
            return blit(out, spr.rgb, spr.alpha, int(round(hand[0] - spr.hold[0])),
                        int(round(hand[1] + 0.02 * holder_h - spr.hold[1])))
        # Other gifts rest beside the holder, low and to the side, so they never hide its face.
        dx = (0.42 + index * 0.22) * holder_h * face
        dy = 0.38 * holder_h
        return blit(out, spr.rgb, spr.alpha, int(round(hand[0] + dx - spr.hold[0])),
                    int(round(hand[1] + dy - spr.hold[1])))

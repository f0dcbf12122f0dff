"""The painter: turns a request's structured scene into frames.

:meth:`Painter.plan` resolves a request once (look, backdrop, particles, which
sprite stands for each entity, what it holds, what could not be used);
:meth:`Painter.paint` then draws one frame of it into a ``(H, W, 3)`` uint8
array. Every pixel is a pure function of the plan, the frame's index within the
request and within the session, and the camera; nothing reads a clock or a
global random generator.
"""

from __future__ import annotations

import functools
import json
import math
import re
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
from PIL import Image

from game.work import on_behalf
from game.world.backends.cache import ObjectCache
from game.world.backends.figures import beard_box, face_for, outfit, person, pose_for
from game.world.backends.landscape import LOOK_MAX, Backdrop, build_backdrop
from game.world.backends.layout import Box, Layout
from game.world.backends.motion import STATES, Pose, pose
from game.world.backends.palette import Look, resolve_look
from game.world.backends.particles import Particles, build_particles
from game.world.backends.raster import RGB, U8, blit, draw_line, mul_rgb
from game.world.backends.rooms import build_room
from game.world.backends.scenery import Embed, Setting, Vocabulary
from game.world.backends.seeds import unit
from game.world.backends.sprites import (
    Pen,
    Sprite,
    campfire,
    colour_from_text,
    colour_word,
    creature,
    effect,
    from_image,
    kite,
    lantern,
    leaf,
    scarf,
    shade,
    thing,
    transform,
    trinket,
)
from game.world.backends.stage import Plate, plate_from_art
from game.world.protocol import Anchor, Entity, Scene, WorldRequest

#: Heights of things, as fractions of the frame height.
CREATURE_H = 0.22
FIGURE_H = 0.36
#: How much larger characters stand in a room than outdoors (the camera is closer).
ROOM_SCALE = 1.6
IMAGE_H = 0.26
ITEM_H = 0.09
#: Held items, as fractions of the holder's height.
HELD_H = 0.42
HELD_KITE_H = 0.62
#: How tall a held thing is beside a person holding it, as a share of her height (about its
#: real size over a person's 1.7 m, at least 0.05 so that it shows); a creature (about 0.5 m)
#: holds things at :data:`CREATURE_HOLDS` times that share, up to :data:`HELD_H`.
HELD_SIZE = {"stone": 0.06, "leaf": 0.08, "lemon": 0.05, "tin": 0.09, "key": 0.07, "bottle": 0.14,
             "book": 0.1, "gem": 0.05, "box": 0.12, "lantern": 0.18, "campfire": 0.3}
CREATURE_HOLDS = 3.0
#: Squash-and-stretch and head-tilt steps between cached pose variants.
SCALE_STEP = 0.02
TILT_STEP = 4.0
#: Frames of fade-in after a ``scene_cut``; the first frame already shows this share of the scene.
CUT_FADE = 4
CUT_FLOOR = 0.55
#: Stages (backdrops and rooms) kept painted, in frame-size pixels (each about 25 MB at 960x540).
STAGES_KEPT = 8
#: Radius of a lantern's light, as a share of the frame height; how much warmer it makes what it reaches.
LANTERN_REACH = 0.3
#: Surfaces a person sets things down on: layout name -> where its top is, as a share of its box
#: from the top (a desk's box starts at its lamp; see :mod:`game.world.backends.rooms`).
SURFACES = {"table": 0.0, "desk": 0.43}
#: Gulls drawn where the setting names them (outdoors).
GULLS = 4
#: Seconds the lighthouse beam takes for one turn.
BEAM_TURN_S = 6.0
#: A setting that says a kite is up (a held kite then flies high on its string).
FLYING = re.compile(r"\bkite\b[^;.]*\b(climb\w*|fl(?:y|ies|ying)|soar\w*|aloft|up)\b")
#: Entity kinds a prop noun can be drawn as (vocabulary name -> sprite kind).
PROP_KINDS = {"kite": "kite", "leaf": "leaf", "leaf_bed": "leaf", "lantern": "lantern", "scarf": "scarf",
              "gem": "gem", "stone": "gem", "box": "box", "campfire": "campfire", "plants": "leaf",
              "desk": "lantern", "stove": "box", "table": "box", "chart": "box", "lemon": "lemon",
              "tin": "tin", "key": "key", "bottle": "bottle", "book": "book"}
#: Things drawn by :func:`~game.world.backends.sprites.thing`, with their colour when the look names none.
THINGS: dict[str, RGB] = {"lemon": (238.0, 204.0, 64.0), "tin": (172.0, 50.0, 42.0), "key": (74.0, 72.0, 78.0),
                          "bottle": (58.0, 118.0, 72.0), "book": (118.0, 62.0, 46.0)}


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
        noun: the vocabulary name of a thing; ``body``: a body pose the scene's setting gives a
            character (``lie``; see :func:`_setting_pose`), ``""`` for the reaction's own.
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
    noun: str = ""
    body: str = ""

    @property
    def key(self) -> tuple[object, ...]:
        """What the sprite depends on: id, look, image and size."""
        e = self.entity
        return (self.kind, e.id, e.name, e.look, self.image_path, self.height)


@dataclass(frozen=True)
class Plan:
    """A request resolved for painting (see :meth:`Painter.plan`)."""

    look: Look
    backdrop: Backdrop | Plate
    behind: tuple[Particles, ...]
    front: tuple[Particles, ...]
    actors: tuple[Actor, ...]
    notes: tuple[str, ...]
    light: RGB = (1.0, 1.0, 1.0)
    fade: int = 0
    order: dict[str, int] = field(default_factory=dict)
    setting: Setting = field(default_factory=lambda: Setting("", ()))
    flown: bool = False


def _light(look: Look) -> RGB:
    """Colour multiplier for sprites: half the land's time-of-day grade, dimmer in rain."""
    dim = 0.86 if look.rain > 0 else 1.0
    r, g, b = (round((0.5 + 0.5 * c) * dim, 2) for c in look.sky.grade)
    return (r, g, b)


def _load_picture_raw(path: str) -> Image.Image | None:
    """A picture as RGBA, uncropped, or ``None`` when it cannot be read."""
    try:
        with Image.open(path) as im:
            im.load()
            return im.convert("RGBA")
    except (OSError, ValueError, Image.DecompressionBombError):
        return None


def _load_picture(path: str) -> Image.Image | None:
    """A picture as RGBA cropped to its visible part, or ``None`` when it cannot be read."""
    rgba = _load_picture_raw(path)
    if rgba is None:
        return None
    alpha = rgba.getchannel("A")
    box = alpha.getbbox()
    if box is None:
        return None
    w, h = rgba.size
    corners = [alpha.getpixel((x, y)) for x, y in ((0, 0), (w - 1, 0), (0, h - 1), (w - 1, h - 1))]
    cropped = rgba.crop(box)
    # A card or portrait is opaque to its corners; a cut-out figure has a transparent background.
    cropped.info["portrait"] = all(isinstance(c, int) and c > 250 for c in corners) and min(w, h) >= 64
    return cropped


class Painter:
    """Draws frames of ``width`` x ``height`` at ``fps``; sprites go through ``cache``.

    Attributes:
        sprites_built: base sprites drawn so far (each entity look once).
        backdrops_built: backdrops painted so far.
    """

    def __init__(self, width: int, height: int, fps: float, cache: ObjectCache[Sprite],
                 embed: Embed | None = None) -> None:
        self.width = width
        self.height = height
        self.fps = fps
        self.cache = cache
        self.vocab = Vocabulary(embed)
        self._indoors = False
        self._sheet_specs: dict[str, str] = {}
        self._sheet_images: dict[str, Image.Image | None] = {}
        self._lock = threading.Lock()
        self._pending: dict[tuple[object, ...], Future[None]] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._pool_thread: int | None = None  # the paint-ahead thread's ident (a request waits on it)
        self.sprites_built = 0
        self.backdrops_built = 0
        self._backdrops: OrderedDict[tuple[object, ...], Backdrop | Plate] = OrderedDict()
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
        look = resolve_look(scene.palette, scene.time_of_day, scene.weather, request.prompt, tint, scene.light)
        self._await(scene.location, look, scene.setting, seed)
        setting = self.vocab.read(scene.setting)
        notes += setting.notes
        art = self._art(scene.location, anchors)
        art_stage = self._art_stage(art, look, notes) if art else None
        backdrop = art_stage or self.stage(scene.location, look, setting, seed)
        self._indoors = bool(setting.interior) and art_stage is None
        pkey = (look, self.width, self.height, seed, bool(setting.interior))
        systems = self._particles.get(pkey)
        if systems is None:
            systems = ((), ()) if setting.interior else build_particles(look, self.width, self.height, seed)
            self._particles[pkey] = systems
            if len(self._particles) > 8:
                self._particles.popitem(last=False)
        pictures = {a.id: a.ref for a in anchors if a.kind == "image"}
        self._sheet_specs = {a.id[5:-6]: a.ref for a in anchors
                             if a.kind == "text" and a.id.startswith("char.") and a.id.endswith(".sheet")}
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
            actors.append(_setting_pose(replace(actor, held=held), setting))
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
            setting=setting,
            flown=bool(FLYING.search(scene.setting.lower())),
        )

    @staticmethod
    def _art(location: str, anchors: tuple[Anchor, ...]) -> tuple[str, ...]:
        """The author's plate and layers for ``location`` from the anchors (plate first), or ``()``."""
        found = {a.id: a.ref for a in anchors if a.kind == "image" and a.id.startswith(f"location.{location}.")}
        plate = found.get(f"location.{location}.plate", "")
        if not plate:
            return ()
        layers = sorted((int(k.rsplit("layer", 1)[1]), v) for k, v in found.items()
                        if k.rsplit(".", 1)[1].startswith("layer") and k.rsplit("layer", 1)[1].isdigit())
        return (plate, *(v for _, v in layers))

    def _art_stage(self, art: tuple[str, ...], look: Look, notes: list[str]) -> Plate | None:
        """The author's art as a stage (cached); ``None`` (noted) when the plate cannot be read."""
        light = _light(look)
        key = ("art", art, light, self.width, self.height)
        with self._lock:
            found = self._backdrops.get(key)
        if isinstance(found, Plate):
            return found
        pictures = [_load_picture_raw(p) for p in art]
        if pictures[0] is None:
            notes.append(f"plate {art[0]}: cannot read it; drew the vocabulary's place instead")
            return None
        layers = [p for p in pictures[1:] if p is not None]
        if len(layers) < len(art) - 1:
            notes.append("layers: some parallax layers cannot be read; drew the rest")
        margin = int(math.ceil(LOOK_MAX * self.height * 0.5)) + 1
        built = plate_from_art(pictures[0], layers, self.width, self.height, light, margin)
        with self._lock:
            self.keep(key, built)
        return built

    def stage_key(self, location: str, look: Look, setting: Setting, seed: int) -> tuple[object, ...]:
        """What a stage depends on (its cache key): the look without its drifting particles."""
        still = replace(look, fireflies=False, petals=None)
        return (location, still, setting.interior, setting.things, self.width, self.height, seed)

    def prepare(self, scene: Scene, seed: int) -> None:
        """Read ``scene``'s setting and paint its stage in the background (one worker thread), so
        that the first block there costs what a warm block costs. Returns at once: even the
        reading (which may load the sentence embedder) happens on the worker; :meth:`plan` waits
        for a scene still being prepared rather than doing the work twice."""
        look = resolve_look(scene.palette, scene.time_of_day, scene.weather, scene.setting, None, scene.light)
        key = self._text_key(scene.location, look, scene.setting, seed)
        with self._lock:
            if key in self._pending and not self._pending[key].done():
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="paint-ahead",
                                                initializer=self._note_thread)
            for done in [k for k, f in self._pending.items() if f.done()]:
                del self._pending[done]  # prepared and never entered (a choice not taken)
            self._pending[key] = self._pool.submit(self._prepare, scene.location, look, scene.setting, seed)

    def _note_thread(self) -> None:
        self._pool_thread = threading.get_ident()

    def _text_key(self, location: str, look: Look, text: str, seed: int) -> tuple[object, ...]:
        """What a scene to prepare is before its setting is read (the stage key's words)."""
        still = replace(look, fireflies=False, petals=None)
        return (location, still, text, self.width, self.height, seed)

    def _prepare(self, location: str, look: Look, text: str, seed: int) -> None:
        setting = self.vocab.read(text)
        key = self.stage_key(location, look, setting, seed)
        with self._lock:
            if key in self._backdrops:
                return
        built = self.build_stage(location, look, setting, seed)
        with self._lock:
            if key not in self._backdrops:
                self.keep(key, built)

    def _await(self, location: str, look: Look, text: str, seed: int) -> None:
        """Wait for the preparation of this scene if it is under way (see :meth:`prepare`); one
        still queued behind others is taken back and done now instead."""
        with self._lock:
            pending = self._pending.pop(self._text_key(location, look, text, seed), None)
        if pending is not None and not pending.cancel():
            with on_behalf(self._pool_thread):  # its work is this request's progress (the guard's clock)
                pending.result()

    def settle(self) -> None:
        """Wait until every stage being painted ahead is done (benchmarks: "the player has read")."""
        with self._lock:
            futures = list(self._pending.values())
        for f in futures:
            f.result()
        with self._lock:
            for key in [k for k, f in self._pending.items() if f.done()]:
                del self._pending[key]

    def close(self) -> None:
        """Stop painting ahead (waits for the stage being painted)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def build_stage(self, location: str, look: Look, setting: Setting, seed: int) -> Backdrop | Plate:
        """Paint the static stage of a place: its room, else its landscape with its landmarks."""
        if setting.interior:
            return build_room(setting.interior, look, self.width, self.height, frozenset(setting.things))
        return build_backdrop(location, look, self.width, self.height, seed, setting)

    def stage(self, location: str, look: Look, setting: Setting, seed: int) -> Backdrop | Plate:
        """The stage for a place, from the cache or painted now (see :meth:`keep`)."""
        key = self.stage_key(location, look, setting, seed)
        with self._lock:
            found = self._backdrops.get(key)
            if found is not None:
                self._backdrops.move_to_end(key)
                return found
        built = self.build_stage(location, look, setting, seed)
        with self._lock:
            self.keep(key, built)
        return built

    def has_stage(self, key: tuple[object, ...]) -> bool:
        return key in self._backdrops

    def keep(self, key: tuple[object, ...], stage: Backdrop | Plate) -> None:
        """Remember a painted stage (the least recently used beyond :data:`STAGES_KEPT` is dropped)."""
        self.backdrops_built += 1
        self._backdrops[key] = stage
        while len(self._backdrops) > STAGES_KEPT:
            self._backdrops.popitem(last=False)

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
        if pic is not None and e.kind == "character" and _is_portrait(pic):
            notes.append(f"image {e.id}: {path} is a portrait (no transparent background); drew a figure from "
                         "the look instead")
            pic, path = None, ""
        state = e.state if e.state in STATES else "idle"
        if e.kind == "character" and e.state not in STATES:
            notes.append(f"state {e.id}={e.state}: not a reaction this backend draws; drew idle")
        noun = ""
        sheet = self._sheet_specs.get(e.id, "") if e.kind == "character" else ""
        if sheet and self._sheet(sheet) is None:
            notes.append(f"sheet {e.id}: cannot read its image; drew the vocabulary's figure")
            sheet = ""
        if sheet:
            pic, path = None, sheet
        if e.kind == "character":
            beast = any(w in text for w in ("creature", "horned", "horn"))
            if sheet:  # as tall as the drawn figure (or creature) would be
                kind, frac = "sheet", CREATURE_H if beast else FIGURE_H
            elif pic is not None:
                kind, frac = "image", IMAGE_H
            elif beast:
                kind, frac = "creature", CREATURE_H
            else:
                kind, frac = "figure", FIGURE_H
            height = frac * self.height * (ROOM_SCALE if self._indoors else 1.0)
        else:
            noun, sim = self.vocab.noun(f"{e.name}; {e.look}" if e.look else e.name)
            if pic is not None:
                kind = "image"
            else:
                kind = PROP_KINDS.get(noun, "")
                if not kind:
                    kind = "gem" if unit("trinket", e.id) < 0.5 else "box"
                    notes.append(f"{e.id}: nothing in the vocabulary is near {e.name!r} "
                                 f"(best {sim:.2f}); drew a {kind}")
            if holder is None:
                height = ITEM_H * self.height * (1.4 if noun == "kite" else 1.0)
            elif noun in ("kite", "scarf") or (kind == "image" and noun not in HELD_SIZE):
                height = holder.height * (HELD_KITE_H if noun == "kite" else HELD_H)
            else:  # a picture of a known thing (the stone) is held at that thing's size
                size = HELD_SIZE.get(noun, 0.12) if kind == "image" else HELD_SIZE.get(kind, 0.12)
                share = size * (CREATURE_HOLDS if holder.kind == "creature" else 1.0)
                height = holder.height * min(HELD_H, share)
            height *= _size_of(e.look)
        default = {"kite": (222.0, 52.0, 48.0), "leaf": (94.0, 174.0, 74.0),
                   "lantern": (246.0, 196.0, 92.0), "campfire": (250.0, 150.0, 60.0), **THINGS}.get(kind)
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
            noun=noun,
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
        if actor.kind == "sheet":
            _, face, body, _ = (eyes.split("/") + ["", "neutral", "stand", "0"])[:4]
            return self._from_sheet(actor, face, body, tint)
        if actor.kind in ("creature", "figure"):
            blink, face, body, step = (eyes.split("/") + ["", "neutral", "stand", "0"])[:4]
            if actor.kind == "creature":
                return creature(h, actor.colour, blink, tint, head, face)
            return person(h, outfit(actor.entity.look, actor.colour), face, body, int(step), tint,
                          blink == "closed")
        if actor.kind == "image" and actor.image is not None:
            return from_image(actor.image, h, tint, head * 0.5, _edited_colour(actor.entity.look))
        if actor.kind == "kite":
            return kite(h, actor.colour)
        if actor.kind == "leaf":
            return leaf(h, actor.colour)
        if actor.kind == "lantern":
            return lantern(h, actor.colour)
        if actor.kind == "campfire":
            return campfire(h, actor.colour, int(eyes or 0))
        if actor.kind == "scarf":
            return scarf(h, actor.colour)
        if actor.kind in THINGS:
            return thing(actor.kind, h, actor.colour)
        return trinket(h, actor.colour, box=actor.kind == "box")

    def _sheet(self, spec: str) -> Image.Image | None:
        """A sprite sheet's whole picture (RGBA, uncropped), loaded once; ``None`` when unreadable."""
        if spec not in self._sheet_images:
            try:
                path = str(json.loads(spec)["image"])
            except (ValueError, KeyError, TypeError):
                path = ""
            self._sheet_images[spec] = _load_picture_raw(path) if path else None
        return self._sheet_images[spec]

    def _from_sheet(self, actor: Actor, face: str, body: str, tint: str) -> Sprite:
        """The actor's cell of its sprite sheet for ``face`` and ``body`` pose: ``pose.face``, else a
        sitting/walking/giving pose, else the face, else ``neutral``, else the first cell; scaled so
        that the first cell's figure is ``actor.height`` tall, standing on that figure's feet."""
        spec = json.loads(actor.image_path)
        sheet = self._sheet(actor.image_path)
        assert sheet is not None
        fw, fh = (int(v) for v in spec["frame"])
        cells: dict[str, list[int]] = spec["cells"]
        moving = body if body not in ("stand", "hold") else ""
        name = next((n for n in (f"{body}.{face}", moving, face, body, "neutral") if n and n in cells),
                    next(iter(cells)))

        def cell(n: str) -> Image.Image:
            col, row = cells[n]
            return sheet.crop((col * fw, row * fh, (col + 1) * fw, (row + 1) * fh))

        ref = cell(next(iter(cells))).getchannel("A").getbbox() or (0, 0, fw, fh)
        scale = actor.height / max(1, ref[3] - ref[1])
        w, h = max(1, int(round(fw * scale))), max(1, int(round(fh * scale)))
        arr = np.asarray(cell(name).resize((w, h), Image.Resampling.LANCZOS), dtype=np.uint8)
        rgb = shade(arr[:, :, :3], _edited_colour(actor.entity.look), tint == "dark")
        foot = ((ref[0] + ref[2]) / 2.0 * scale, ref[3] * scale)
        return Sprite(np.ascontiguousarray(rgb), np.ascontiguousarray(arr[:, :, 3]), foot,
                      (foot[0] + 0.3 * actor.height, foot[1] - 0.5 * actor.height))

    # ------------------------------------------------------------------ painting

    def paint(
        self, out: U8, plan: Plan, local: int, frame: int, camera_x: float, camera_y: float
    ) -> Layout:
        """Draw one frame into ``out`` (``(H, W, 3)`` uint8); returns its layout record (call
        :meth:`~game.world.backends.layout.Layout.finish` to settle what is visible).

        Args:
            out: the frame, fully overwritten.
            plan: from :meth:`plan`.
            local: frame index within the request.
            frame: frame index within the session.
            camera_x: world units; ``camera_y``: screen heights (look up > 0).
        """
        layout = Layout(self.width, self.height)
        self._rested: dict[str, int] = {}
        plan.backdrop.compose(out, camera_x, camera_y, frame)
        for name, kind, box in plan.backdrop.boxes(camera_x, camera_y):
            layout.add(name, kind, box)  # type: ignore[arg-type]
        for system in plan.behind:
            system.draw(out, frame, camera_x)
        if plan.setting.has("beam"):
            self._beam(out, frame, layout)
        if plan.setting.has("gulls") and not plan.setting.interior:
            self._gulls(out, frame, camera_x, plan.light, layout)
        feet = plan.backdrop.feet_row(camera_y)
        for actor in plan.actors:
            if actor.kind in ("lantern", "campfire"):
                self._light_pool(out, actor, camera_x, feet)
        for actor in plan.actors:
            self._draw_actor(out, actor, local, frame, camera_x, feet, self._lit(plan, actor), layout,
                             plan.flown)
        for system in plan.front:
            system.draw(out, frame, camera_x)
        if local < plan.fade:
            k = int(256 * (CUT_FLOOR + (1.0 - CUT_FLOOR) * local / plan.fade))
            out[...] = ((out.astype(np.uint16) * k) >> 8).astype(np.uint8)
        return layout

    def _lit(self, plan: Plan, actor: Actor) -> RGB:
        """The light on ``actor``: the scene's, warmed by a lantern or fire within reach."""
        if actor.kind in ("lantern", "campfire"):
            return (1.0, 1.0, 1.0)
        reach = LANTERN_REACH * self.height / self.width
        near = any(a.kind in ("lantern", "campfire") and abs(a.entity.x - actor.entity.x) < reach
                   for a in plan.actors) or any(h.kind == "lantern" for h in actor.held)
        if not near:
            return plan.light
        r, g, b = plan.light
        return (round(min(1.15, r * 0.5 + 0.62), 2), round(min(1.05, g * 0.5 + 0.5), 2),
                round(min(0.9, b * 0.5 + 0.34), 2))

    def _light_pool(self, out: U8, actor: Actor, camera_x: float, feet: float) -> None:
        """Warm light falling on the ground and on what is near a lantern or fire."""
        size = max(8, int(2 * LANTERN_REACH * self.height))
        pool = effect("pool", size)
        x = (actor.entity.x - camera_x) * self.width
        y = feet - actor.entity.y * (feet - 0.12 * self.height) - 0.4 * actor.height
        blit(out, pool.rgb, pool.alpha, int(round(x - pool.foot[0])), int(round(y - pool.foot[1])), opacity=150)

    def _draw_actor(
        self, out: U8, actor: Actor, local: int, frame: int, camera_x: float, feet: float,
        light: RGB, layout: Layout, flown: bool = False,
    ) -> None:
        e = actor.entity
        h = actor.height
        is_char = e.kind == "character"
        # lying down it breathes, but does not hop or sidle (the reaction keeps only its face)
        motion = "idle" if actor.body == "lie" and actor.state in ("leap", "tilt", "nuzzle") else actor.state
        p = pose(motion, local, frame, self.fps, actor.phase) if is_char else Pose()
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
        rest = self._rest_spot(e, layout)
        if rest is not None:  # set down on a feature of the place (``on:shelf``): standing on its top
            x, ground = rest
        elif not is_char and e.y > 0.0:
            ground += 0.02 * self.height * math.sin(frame * 0.12 + actor.phase * 6.28)
        bed = next((b for n, _, b in layout.drawn() if n == "hollow"), None) if actor.body == "lie" else None
        if bed is not None:  # it lies in the door of the hollow, on its bed spilling over the sill
            x, ground = (bed[0] + bed[2]) / 2.0, bed[3] + 0.3 * h
        y = ground - p.y * h
        eyes = str((frame // 3) % 4) if actor.kind == "campfire" else p.eyes
        if actor.body == "lie":  # what it holds lies under it, flat on the bed
            for item in actor.held:
                self._lay_under(out, item, x, ground, h, light, layout)
        if actor.kind in ("creature", "figure", "sheet"):
            body = actor.body or pose_for(actor.state, e.pose, bool(actor.held))
            layout.poses[e.id] = body
            eyes = f"{p.eyes}/{face_for(actor.state, e.expression)}/{body}/{(frame // 6) % 2 if body == 'walk' else 0}"
        spr = self.sprite(actor, eyes, p.tint, p.head, p.sx, p.sy, face < 0, light)
        if is_char and e.y <= 0.0:
            shade = effect("shadow", max(3, int(0.8 * h / (1.0 + p.y))))
            blit(out, shade.rgb, shade.alpha, int(round(x - shade.foot[0])),
                 int(round(ground - shade.foot[1])), opacity=int(70 / (1.0 + 2.0 * p.y)))
        x0, y0 = int(round(x - spr.foot[0])), int(round(y - spr.foot[1]))
        blit(out, spr.rgb, spr.alpha, x0, y0)
        layout.add(e.id, e.kind, _box(spr, x0, y0))
        if actor.kind == "figure" and outfit(e.look, actor.colour).beard is not None:
            self._feature(layout, f"{e.id}.beard", beard_box(eyes.split("/")[2]), spr, x0, y0, face < 0)
        if actor.kind == "campfire":
            self._smoke(out, x, y0, h, frame)
        hand = (x0 + spr.hold[0], y0 + spr.hold[1])
        # A picture has no hand: things it wears go round its middle, under the head.
        neck = (x0 + spr.width / 2.0, y0 + 0.55 * spr.height) if actor.kind == "image" else hand
        spots = self._set_down(actor, layout, x0, spr.width) if actor.kind == "figure" else []
        for j, item in enumerate(actor.held if actor.body != "lie" else ()):
            # a person holds the first thing in her hand (a small thing does not hide her face)
            in_hand = actor.kind == "figure" and j == 0 and item.noun not in ("kite", "scarf")
            if actor.kind == "figure" and not in_hand and item.noun not in ("kite", "scarf"):
                self._put(out, item, spots, j, hand, face, h, light, layout)
                continue
            self._draw_held(out, item, -1 if in_hand else j, neck if item.noun == "scarf" else hand, face, h,
                            frame, light, layout, flown, ground)
        for ef in p.effects:
            if ef.alpha <= 0.02:
                continue
            fx = effect(ef.kind, max(3, int(round(ef.size * h))))
            ex, ey = x + ef.x * h * face, ground - ef.y * h
            blit(out, fx.rgb, fx.alpha, int(round(ex - fx.foot[0])), int(round(ey - fx.foot[1])),
                 opacity=int(255 * min(1.0, ef.alpha)))

    def _rest_spot(self, e: Entity, layout: Layout) -> tuple[float, float] | None:
        """Where a thing set down on a feature (state ``on:<feature>``, e.g. a gift's ``put: shelf``)
        stands: ``(x, y)`` frame pixels of its bottom centre on the feature's top, the first near its
        right end and each next one a step to the left; ``None`` when it is not set down or the
        feature is not drawn in this frame (it is then drawn where it lies)."""
        if e.kind == "character" or not e.state.startswith("on:"):
            return None
        name = e.state[3:]
        box = next((b for n, _, b in reversed(layout.drawn()) if n == name), None)
        if box is None:
            return None
        a, top, c, _ = box
        k = self._rested.get(name, 0)
        self._rested[name] = k + 1
        step = max(4.0, 0.045 * self.width)
        return max(float(a) + step / 2.0, c - step * (k + 0.7)), float(top)

    def _set_down(self, actor: Actor, layout: Layout, x0: int, width: int) -> list[tuple[float, float]]:
        """Where a person sets down what she holds beyond what is in her hand: spots along the top
        of the room's table or desk (:data:`SURFACES`), nearest her first and clear of her, as
        ``(x, y)`` frame pixels of a thing's bottom centre; ``[]`` where there is none."""
        spots: list[tuple[float, float]] = []
        for name, _, (a, b, c, d) in layout.drawn():
            top = SURFACES.get(name)
            if top is None:
                continue
            y = b + top * (d - b)
            step = max(4.0, 0.05 * self.width)
            xs = [a + step * (k + 0.7) for k in range(int((c - a) / step))]
            spots += [(sx, y) for sx in xs if not x0 - 0.3 * step < sx < x0 + width + 0.3 * step]
        centre = x0 + width / 2.0
        return sorted(spots, key=lambda p: abs(p[0] - centre))

    def _put(self, out: U8, item: Actor, spots: list[tuple[float, float]], index: int, hand: tuple[float, float],
             face: float, holder_h: int, light: RGB, layout: Layout) -> None:
        """A gift a person holds beyond the first: set down on a table or desk spot, else carried in
        the crook of her arm (stacked above her hand, against her coat), never on the floor."""
        spr = self.sprite(item, "", "", 0.0, 1.0, 1.0, face < 0, light)
        if index - 1 < len(spots):
            sx, sy = spots[index - 1]
            x0, y0 = int(round(sx - spr.width / 2.0)), int(round(sy - spr.height))
        else:
            x0 = int(round(hand[0] - face * (0.06 + 0.05 * index) * holder_h - spr.width / 2.0))
            y0 = int(round(hand[1] - (0.05 + 0.07 * index) * holder_h - spr.height / 2.0))
        blit(out, spr.rgb, spr.alpha, x0, y0)
        layout.add(item.entity.id, item.entity.kind, _box(spr, x0, y0))

    def _lay_under(self, out: U8, item: Actor, x: float, ground: float, holder_h: int, light: RGB,
                   layout: Layout) -> None:
        """A held thing laid flat under its lying holder: a kite spread out wider than the holder
        (the spars bent, it covers the bed), anything else beside its chin; recorded in the layout."""
        kite_ = item.noun == "kite"
        spr = self.sprite(item, "", "", 0.0, 3.0 if kite_ else 1.0, 0.7 if kite_ else 1.0, False, light)
        cx = x if kite_ else x + 0.3 * holder_h
        x0, y0 = int(round(cx - spr.width / 2.0)), int(round(ground + 0.2 * holder_h - spr.height))
        blit(out, spr.rgb, spr.alpha, x0, y0)
        layout.add(item.entity.id, item.entity.kind, _box(spr, x0, y0))

    @staticmethod
    def _feature(layout: Layout, name: str, box: tuple[float, float, float, float], spr: Sprite, x0: int, y0: int,
                 mirror: bool) -> None:
        """Record a part of a figure (``box`` in :func:`~game.world.backends.figures.person`'s units,
        0.8 x 1.1 heights) drawn in ``spr`` at ``(x0, y0)``, mirrored when it faces left."""
        kx, ky = spr.width / 0.8, spr.height / 1.1
        a, c = box[0] * kx, box[2] * kx
        if mirror:
            a, c = spr.width - c, spr.width - a
        layout.add(name, "prop", (x0 + int(a), y0 + int(box[1] * ky), x0 + int(math.ceil(c)),
                                  y0 + int(math.ceil(box[3] * ky))))

    def _beam(self, out: U8, frame: int, layout: Layout) -> None:
        """The lighthouse beam wheeling out over the water from its lamp: the lighthouse's in
        view, else the lamp above the frame (you stand on the gallery); it sweeps across,
        foreshortened as it turns toward you (one turn in :data:`BEAM_TURN_S`)."""
        turn = (frame / (BEAM_TURN_S * self.fps)) % 1.0
        reach = math.sin(2.0 * math.pi * turn)
        q = round(abs(reach) * 8) / 8
        if q < 0.125:
            return
        tower = next((b for name, _, b in layout.drawn() if name == "lighthouse"), None)
        foot = next((b for name, _, b in layout.drawn() if name == "tower_foot"), None)
        scale = 0.5 if tower is not None else 1.0
        spr = self.cache.get(("beam", self.width, self.height, q, reach < 0, scale),
                             lambda: _beam_sprite(self.width, self.height, q * scale, reach < 0))
        if tower is not None:  # the lamp of the lighthouse sprite (see landmarks.lighthouse)
            x0, y0, x1, y1 = tower
            ox, oy = x0 + (x1 - x0) * 0.47 / 0.9, y0 + (y1 - y0) * 0.17
        elif foot is not None:  # at the foot of the tower: the lamp is above the frame, over the tower
            ox, oy = (foot[0] + foot[2]) / 2.0, 0.15 * self.height
        else:
            ox, oy = 0.5 * self.width, 0.04 * self.height
        x0, y0 = int(round(ox - spr.foot[0])), int(round(oy - spr.foot[1]))
        blit(out, spr.rgb, spr.alpha, x0, y0)
        layout.add("beam", "prop", _box(spr, x0, y0))

    def _gulls(self, out: U8, frame: int, camera_x: float, light: RGB, layout: Layout) -> None:
        """A few gulls wheeling over the water: white wings in a shallow ``m``, each flapping and
        drifting on its own slow loop across the upper sky (recorded as one ``gulls`` part)."""
        boxes: list[Box] = []
        for k in range(GULLS):
            t = frame / self.fps
            x = ((0.18 + 0.23 * k + 0.012 * t * (1 + 0.3 * k)) % 1.1 - 0.05 - 0.1 * camera_x % 1.0) * self.width
            y = (0.14 + 0.07 * k + 0.02 * math.sin(0.5 * t + 1.7 * k)) * self.height
            size = max(8, int(self.height * (0.08 - 0.01 * k)))
            flap = int(((frame + 5 * k) // 3) % 4)
            spr = self.cache.get(("gull", size, flap, light), functools.partial(_gull_sprite, size, flap, light))
            x0, y0 = int(round(x - spr.foot[0])), int(round(y - spr.foot[1]))
            blit(out, spr.rgb, spr.alpha, x0, y0)
            boxes.append(_box(spr, x0, y0))
        layout.add("gulls", "prop", (min(b[0] for b in boxes), min(b[1] for b in boxes),
                                     max(b[2] for b in boxes), max(b[3] for b in boxes)))

    def _smoke(self, out: U8, x: float, top: int, h: int, frame: int) -> None:
        """Grey puffs rising and fading above a fire."""
        for k in range(5):
            age = (frame / (2.2 * self.fps) + k / 5.0) % 1.0
            puff = effect("smoke", max(3, int(h * (0.35 + 0.6 * age))))
            px = x + 0.25 * h * math.sin(age * 5.0 + k) + 0.3 * h * age
            py = top - 1.6 * h * age
            blit(out, puff.rgb, puff.alpha, int(round(px - puff.foot[0])), int(round(py - puff.foot[1])),
                 opacity=int(170 * (1.0 - age)))

    def _draw_held(
        self, out: U8, item: Actor, index: int, hand: tuple[float, float], face: float,
        holder_h: int, frame: int, light: RGB, layout: Layout, flown: bool, feet: float,
    ) -> None:
        spr = self.sprite(item, "", "", 0.0, 1.0, 1.0, face < 0, light)
        kind = item.entity.kind
        if item.noun == "kite":
            sway = math.sin(frame * 0.15 + item.phase * 6.28)
            if flown:  # high on a long string, tugging in the wind
                gx = hand[0] + face * (0.16 + 0.015 * sway) * self.width
                gy = (0.16 + 0.02 * math.cos(frame * 0.11)) * self.height + spr.hold[1]
                mid = ((hand[0] + gx) / 2 + face * 0.02 * self.width, (hand[1] + gy) / 2 + 0.06 * self.height)
                colour = np.array((236, 232, 220), dtype=np.uint8)
                draw_line(out, hand, mid, colour)
                draw_line(out, mid, (gx, gy), colour)
                x0, y0 = int(round(gx - spr.hold[0])), int(round(gy - spr.hold[1]))
            else:  # not flying: it lies on the ground beside its holder, the string to its hand
                gx = hand[0] + face * (0.55 + 0.02 * sway) * holder_h
                x0, y0 = int(round(gx - spr.foot[0])), int(round(feet - spr.height * 0.85))
                draw_line(out, hand, (x0 + spr.hold[0], y0 + spr.hold[1]), np.array((236, 232, 220), dtype=np.uint8))
        elif item.noun == "scarf":  # worn: looped under the head
            x0, y0 = int(round(hand[0] - spr.hold[0])), int(round(hand[1] + 0.02 * holder_h - spr.hold[1]))
        elif index < 0:  # in the hand
            x0, y0 = int(round(hand[0] - spr.hold[0])), int(round(hand[1] - spr.hold[1]))
        else:  # other gifts rest beside the holder, low and to the side, so they never hide its face
            dx = (0.42 + index * 0.22) * holder_h * face
            dy = 0.38 * holder_h
            x0, y0 = int(round(hand[0] + dx - spr.hold[0])), int(round(hand[1] + dy - spr.hold[1]))
        blit(out, spr.rgb, spr.alpha, x0, y0)
        layout.add(item.entity.id, kind, _box(spr, x0, y0))


def _gull_sprite(size: int, flap: int, light: RGB) -> Sprite:
    """A gull seen from below, ``size`` px wide: two wings in an ``m``, raised or lowered by ``flap``
    (0..3), white with dark tips, in the scene's ``light``."""
    lift = (0.34, 0.16, -0.02, 0.16)[flap]
    pen = Pen(size, 1.0, 0.6)
    white = mul_rgb((244.0, 244.0, 238.0), light)
    edge = mul_rgb((120.0, 124.0, 134.0), light)
    tip = mul_rgb((50.0, 50.0, 56.0), light)
    for side in (-1, 1):
        wing = ((0.5, 0.32), (0.5 + side * 0.22, 0.3 - lift), (0.5 + side * 0.46, 0.34 - 0.4 * lift))
        pen.line(wing, edge, 0.11)
        pen.line(wing, white, 0.06)
        pen.line((wing[2], (0.5 + side * 0.49, 0.36 - 0.3 * lift)), tip, 0.06)
    pen.ellipse((0.44, 0.26, 0.56, 0.4), white)
    return pen.finish(foot=(0.5, 0.33), hold=(0.5, 0.33))


def _beam_sprite(width: int, height: int, length: float, left: bool) -> Sprite:
    """A soft wedge of light ``length`` (0..1) of half the frame long, from its narrow end (``foot``)."""
    w = max(4, int(0.55 * width * length))
    h = max(4, int(0.3 * height))
    xs = np.arange(w, dtype=np.float32)[None, :] / w
    ys = (np.arange(h, dtype=np.float32)[:, None] - h / 2.0) / (h / 2.0)
    spread = 0.08 + 0.92 * xs
    inside = np.clip((spread - np.abs(ys)) / (0.35 * spread), 0.0, 1.0)
    alpha = inside * (0.75 - 0.45 * xs)
    rgb = np.empty((h, w, 3), np.uint8)
    rgb[...] = (255, 246, 214)
    a = np.clip(alpha * 255 + 0.5, 0, 255).astype(np.uint8)
    spr = Sprite(rgb=rgb, alpha=a, foot=(0.0, h / 2.0), hold=(0.0, h / 2.0))
    return transform(spr, 1.0, 1.0, True) if left else spr


#: Setting poses (scenery ``pose`` entries) -> ``(state an idle character takes, body pose)``.
SETTING_POSES = {"leaping": ("leap", "leap"), "lying": ("", "lie")}


def _setting_pose(actor: Actor, setting: Setting) -> Actor:
    """``actor`` in the pose its scene's setting gives it: a phrase that names it (its id or a word
    of its name) and says what it is doing ("the creature leaping after it": an idle creature
    leaps; "the creature curled up on it": it lies down, keeping its reaction's face)."""
    e = actor.entity
    if e.kind != "character" or not setting.poses:
        return actor
    words = {e.id.lower(), *(w for w in re.findall(r"[a-z]+", e.name.lower()) if w not in ("the", "a", "an"))}
    for name, phrase in setting.poses:
        if words & set(re.findall(r"[a-z]+", phrase.lower())):
            state, body = SETTING_POSES[name]
            return replace(actor, state=state if state and actor.state == "idle" else actor.state,
                           body=body if actor.state != "flee" else "")
    return actor


def _edited_colour(look: str) -> RGB | None:
    """The colour a look edit gave ("now blue: ..." -> blue), or ``None``."""
    return colour_word(look.split(":")[0]) if look.startswith("now ") else None


#: How much larger a thing a world edit made ``big`` (or ``small``) is drawn.
SIZE_WORDS = {"big": 1.6, "small": 0.6}


def _size_of(look: str) -> float:
    """The scale a size word gives a thing: an object's look ("a big lantern") or an item's edited
    look ("now big blue: ..."); 1.0 without one."""
    head = look.split(":")[0] if look.startswith("now ") else " ".join(look.split()[:3])
    words = head.lower().split()
    return next((SIZE_WORDS[w] for w in words if w in SIZE_WORDS), 1.0)


def _is_portrait(pic: Image.Image) -> bool:
    """Whether a picture is a card or portrait (opaque to its corners) rather than a cut-out figure."""
    return bool(pic.info.get("portrait", False))


def _box(spr: Sprite, x0: int, y0: int) -> Box:
    """The frame box of a sprite's visible pixels drawn with its top-left at ``(x0, y0)``."""
    a, b, c, d = spr.bbox
    return (x0 + a, y0 + b, x0 + c, y0 + d)

"""Applying world edits to :class:`~game.state.GameState`, with in-world refusals.

``Session`` routes ``Instruct`` and ``AddReference`` intents here
(:func:`install`). An edit the scene allows changes the state and says so in the
world (an ``edit`` event and a narrated line); an edit the author refuses
(``allow_edits:`` on the scene or story, ``locked: true`` on an item or cast
member) or one that cannot be done (removing what is not there, rain when it
already rains) changes nothing and still gets a line, never a silent nothing.

Where edits live (all JSON-able, saved and rolled back with the state):

* ``state.world["weather" | "time_of_day" | "light"]``: story conditions read
  them (``weather == 'rain'``), the Director sends them as ``scene.weather`` /
  ``scene.time_of_day`` and in the prompt;
* ``state.objects[id]``: what the player added (a lantern, a worn scarf, a
  dropped picture): ``name, noun, look, colour, size, x, y, location, image, on,
  kind, turn`` (``on`` = the character wearing or holding it);
* ``state.looks[id]``: changes to authored entities (``colour``, ``size``, ``removed``).

Unforeseen gifts (a dropped image, an added object handed to a character) go
through the author's ``on_give`` table like any gift: the scene's table, then the
story's, for the character or ``any``, keyed by the object id, its noun, its kind
(``picture`` / ``object``) or ``default``; with no entry the built-in line and a
``tilt`` answer. The gift is remembered in ``state.gifts`` under the object id, so
a later scene can test ``gave('creature', 'picture')``. Object ids are their noun
(``lantern``, ``lantern_2``); dropped images are ``picture``, ``picture_2``...
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from game.errors import InputError
from game.images import picture_caption, picture_subject
from game.inputs.phrasebook import phrasebook
from game.locale import UI, ui
from game.state import AddReference, Event, GameState, Instruct
from game.state.events import EventKind
from game.story.host import TurnHost
from game.story.runtime import DEFAULT_GIVE_LINE
from game.story.schema import Scene
from game.story.story import Story
from game.story.strings import language, reaction_base
from game.words import opening
from game.world.backends.sprites import COLOUR_WORDS
from game.world.director import indoors

#: Every world edit a scene may allow.
ALL_EDITS = ("weather", "time_of_day", "light", "add_object", "remove_object", "change_object", "look")
#: Objects the player may add per location, and things per character.
MAX_OBJECTS_PER_PLACE = 12
MAX_WORN = 4

#: Default colour per common object noun, so a placed thing is never colourless.
DEFAULT_COLOURS: dict[str, str] = {
    "lantern": "golden", "lamp": "golden", "candle": "white", "scarf": "red", "hat": "brown", "ribbon": "pink",
    "bow": "pink", "ball": "red", "box": "brown", "crate": "brown", "chair": "brown", "bench": "brown",
    "barrel": "brown", "flower": "pink", "flowers": "pink", "bell": "golden", "crown": "golden",
    "apple": "red", "rock": "grey", "stone": "grey", "mushroom": "red", "umbrella": "blue", "kite": "red",
}

#: Edits with a built-in in-world refusal line (``edit.refuse.<edit>`` of :data:`game.locale.UI`;
#: a scene's ``refuse:`` replaces them); another edit gets ``edit.refuse.default``.
REFUSALS = ("weather", "time_of_day", "light", "add_object", "remove_object", "change_object", "look")
_WORDS = re.compile(r"[a-z0-9]+")


#: What the edit handlers need from a turn: the story, its runtime, the state.
EditHost = TurnHost


# -- helpers --------------------------------------------------------------------------
def allowed(story: Story, scene_id: str) -> tuple[str, ...]:
    """The edits allowed in ``scene_id``: the scene's ``allow_edits``, else the story's, else all."""
    scene = story.model.scenes.get(scene_id)
    if scene is not None and scene.allow_edits is not None:
        return tuple(scene.allow_edits)
    if story.model.allow_edits is not None:
        return tuple(story.model.allow_edits)
    return ALL_EDITS


def _ev(host: EditHost, kind: EventKind, **kw: Any) -> Event:
    return host.runtime.event(host.state, kind, **kw)


def _line(host: EditHost, text: str, line_id: str, **data: Any) -> Event:
    return _ev(host, "line", speaker="narrator", text=text, ids={"line": line_id}, data=data)


def _name(host: EditHost, ident: str) -> str:
    m = host.story.model
    if ident in m.cast:
        return m.cast[ident].name
    if ident in m.items:
        return m.items[ident].name
    obj = host.state.objects.get(ident)
    return str(obj.get("name", ident)) if obj else ident.replace("_", " ")


def _the(name: str) -> str:
    """``"the " + name`` unless the name already has its article ("the creature")."""
    return name if name.lower().startswith(("the ", "a ", "an ")) else f"the {name}"


def refuse(host: EditHost, edit: str, why: str, text: str = "", params: dict[str, str] | None = None) -> list[Event]:
    """An in-world line for a refused or impossible ``edit`` (nothing changes).

    Args:
        host: the session.
        edit: the edit name.
        why: ``not_allowed``, ``locked``, ``missing``, ``already``, ``full``, ``not_here``, ``bad_image``.
        text: the line; default: the scene's ``refuse:`` entry, else the built-in one (:data:`REFUSALS`).
        params: the edit's parameters (``{character}`` in a line names its character).
    """
    scene = host.story.model.scenes.get(host.state.scene)
    if not text:
        own = scene.refuse if scene is not None else {}
        text = own.get(edit) or own.get("default") or ui(f"edit.refuse.{edit if edit in REFUSALS else 'default'}")
    now = str(host.state.world.get("time_of_day", host.runtime.world_default(host.state, "time_of_day")))
    extra = {"time_of_day": ui(f"edit.word.{now}") if f"edit.word.{now}" in UI else now,
             "character": opening(_name(host, (params or {}).get("character", ""))) if (params or {}).get("character")
             else "They"}
    text = host.runtime.interpolate(host.state, text, extra)
    return [_line(host, text, f"edit.refused.{edit}", refused=edit, why=why)]


def _said(host: EditHost, text: str) -> list[Event]:
    return [_ev(host, "say", speaker="player", text=text, data={"to_world": True})] if text else []


def _world_value(host: EditHost, key: str) -> str:
    return str(host.state.world.get(key, host.runtime.world_default(host.state, key)))


def _new_id(state: GameState, noun: str) -> str:
    base = re.sub(r"[^a-z0-9_]", "_", noun.lower()).strip("_") or "thing"
    if not re.match(r"^[a-z_]", base):
        base = f"obj_{base}"
    ident, n = base, 1
    while ident in state.objects:
        n += 1
        ident = f"{base}_{n}"
    return ident


def _unit(key: str) -> float:
    """A stable number in [0, 1) from ``key`` (placement without a random draw)."""
    h = 0
    for ch in key:
        h = (h * 131 + ord(ch)) % 1_000_003
    return h / 1_000_003


def place(host: EditHost, params: dict[str, str], key: str) -> tuple[float, float]:
    """Where a new object goes: ``(x, y)`` in world units (x) and 0..1 above the ground (y).

    ``near``/``behind``/``front`` a known character, item or object: beside it, on
    the side with more room; ``left``/``right``/``middle``/``here``/``there``: on the
    screen the camera shows now; ``sky``/``above``: up in the air; ``on``: just above
    its anchor; an anchor the story does not know ("the tree"): a stable place in
    view, clear of the characters.
    """
    st = host.state
    scene = host.story.model.scenes.get(st.scene)
    present = dict(scene.present) if scene else {}
    items = dict(scene.items) if scene else {}
    spots = {**items, **present, **{k: float(v.get("x", 0.5)) for k, v in st.objects.items()
                                     if v.get("location") == st.location and not v.get("on")}}
    view = st.camera_x
    rel = params.get("relation", "")
    near = params.get("near", "")
    y = {"sky": 0.55, "above": 0.45, "on": 0.08}.get(rel, 0.0)
    if near in spots:
        ax = spots[near]
        left = sum(1 for x in spots.values() if ax - 0.25 < x < ax)
        right = sum(1 for x in spots.values() if ax < x < ax + 0.25)
        side = -1.0 if left < right else 1.0
        if rel in ("left_of",):
            side = -1.0
        elif rel in ("right_of",):
            side = 1.0
        dx = 0.0 if rel in ("on", "above", "under") else 0.13 * side
        return round(ax + dx, 3), y
    x = {"left": 0.22, "left_of": 0.22, "right": 0.78, "right_of": 0.78, "middle": 0.5, "here": 0.42,
         "there": 0.72, "sky": 0.5}.get(rel)
    if x is None:
        x = 0.2 + 0.6 * _unit(f"{key}:{near}")
        for _ in range(8):  # keep clear of the characters
            if all(abs(x - cx) > 0.12 for cx in present.values()):
                break
            x = 0.15 + (x + 0.17 - 0.15) % 0.7
    return round(view + x, 3), y


def _scene(host: EditHost) -> Scene | None:
    return host.story.model.scenes.get(host.state.scene)


# -- the edits ---------------------------------------------------------------------------
# The lines of value edits are ``edit.<edit>.<value>`` of :data:`game.locale.UI`; weather in a
# room (:func:`game.world.director.indoors`) changes outside, and its line (``...indoors``) says
# where it is seen: it never rains in the kitchen.


def apply_instruct(host: EditHost, intent: Instruct) -> list[Event]:
    """Apply a world edit (see the module doc). Always returns at least one line.

    Raises:
        game.errors.StoryRuntimeError: an ``on_give`` reaction of the story is broken.
    """
    edit = intent.edit
    p = dict(intent.params)
    events = _said(host, intent.text)
    if edit == "give_object":
        if not p.get("object") and p.get("name"):
            return events + give_new(host, p)
        return events + give_object(host, p.get("object", ""), p.get("character", ""))
    if edit not in ALL_EDITS:
        return events + refuse(host, "default", "unknown", ui("edit.nothing_happens"))
    if edit not in allowed(host.story, host.state.scene):
        return events + refuse(host, edit, "not_allowed", params=p)
    if edit in ("weather", "time_of_day", "light"):
        return events + _set_value(host, edit, p.get("value", ""))
    if edit == "add_object":
        return events + _add(host, p)
    if edit == "remove_object":
        return events + _remove(host, p.get("target", ""))
    if edit == "change_object":
        return events + _change(host, p)
    return events + _look(host, p)


def _set_value(host: EditHost, key: str, value: str) -> list[Event]:
    if not value:
        return refuse(host, key, "missing", ui("edit.unclear"))
    old = _world_value(host, key)
    if old == value:
        room = key == "weather" and indoors(host.story, host.state.location)
        sid = f"edit.already.{key}.{value}" + (".outside" if room else "")
        sid = sid if sid in UI else f"edit.already.{key}"
        return refuse(host, key, "already", ui(sid) if sid in UI else ui("edit.unclear"))
    host.state.world[key] = value
    room = key == "weather" and indoors(host.story, host.state.location)
    sid = f"edit.{key}.{value}" + (".indoors" if room else "")
    if sid in UI:
        line = ui(sid)
    elif room:
        line = ui("edit.weather.indoors", value=value)
    else:
        line = f"The {key.replace('_', ' ')} changes: {value}."
    data: dict[str, Any] = {"old": old, "new": value, **({"outside": True} if room else {})}
    return [_ev(host, "edit", ids={"edit": key}, data=data), _line(host, line, sid)]


def _look_text(noun: str, colour: str, size: str) -> str:
    words = " ".join(w for w in (size, colour, noun) if w)
    article = "an" if words[:1] in "aeiou" else "a"
    return f"{article} {words}"


def _noun(host: EditHost, name: str) -> str:
    """The noun a new object is called by: ``name`` itself, unless it is the id of a thing
    the player already has ("put a lantern by the stump" with a worn ``creature_lantern``
    -> ``lantern``; an item id -> the item's name), so no id reaches the player's text."""
    obj = host.state.objects.get(name)
    if obj is not None:
        return str(obj.get("noun") or obj.get("name") or name)
    items = host.story.model.items
    return items[name].name if name in items else name


def _add(host: EditHost, p: dict[str, str]) -> list[Event]:
    st = host.state
    noun = _noun(host, p.get("name", ""))
    if not noun:
        return refuse(host, "add_object", "missing", ui("edit.nothing_comes"))
    here = [o for o in st.objects.values() if o.get("location") == st.location and not o.get("on")]
    if len(here) >= MAX_OBJECTS_PER_PLACE:
        return refuse(host, "add_object", "full", ui("edit.no_room"))
    colour = p.get("colour") or DEFAULT_COLOURS.get(noun, "")
    size = p.get("size", "")
    ident = _new_id(st, noun)
    x, y = place(host, p, ident)
    look = _look_text(noun, colour, size)
    st.objects[ident] = {"name": noun, "noun": noun, "look": look, "colour": colour, "size": size, "x": x,
                         "y": y, "location": st.location, "image": "", "on": "", "kind": "object",
                         "turn": st.turn, "near": p.get("near", ""), "relation": p.get("relation", "")}
    where = ""
    if p.get("near"):
        rel = {"near": "by", "behind": "behind", "front": "in front of", "on": "on", "under": "under",
               "above": "above", "left_of": "left of", "right_of": "right of"}.get(p.get("relation", ""), "by")
        where = f" {rel} {_the(_name(host, p['near']))}"
    elif p.get("relation") in ("left", "right"):
        where = f" on the {p['relation']}"
    line = f"{opening(look)} is there now{where}."
    return [_ev(host, "edit", ids={"edit": "add_object", "target": ident}, data={"new": look, "x": x}),
            _line(host, line, "edit.add_object")]


def _find(host: EditHost, target: str) -> tuple[str, str]:
    """``(kind, id)`` of ``target``: ``object``, ``item``, ``character`` or ``("", "")``."""
    st = host.state
    m = host.story.model
    if target in st.objects:
        return "object", target
    for oid, obj in st.objects.items():
        if obj.get("noun") == target or obj.get("name") == target:
            return "object", oid
    if target in m.items:
        return "item", target
    if target in m.cast:
        return "character", target
    return "", ""


def _remove(host: EditHost, target: str) -> list[Event]:
    st = host.state
    kind, ident = _find(host, target)
    scene = _scene(host)
    name = _name(host, ident or target)
    if kind == "object":
        obj = st.objects[ident]
        here = obj.get("location") == st.location or (obj.get("on") and scene is not None
                                                       and obj.get("on") in scene.present)
        if not here:
            return refuse(host, "remove_object", "not_here", f"There is no {name} here.")
        del st.objects[ident]
        return [_ev(host, "edit", ids={"edit": "remove_object", "target": ident}, data={"old": name}),
                _line(host, f"The {name} is gone.", "edit.remove_object")]
    if kind == "item":
        item = host.story.model.items[ident]
        if item.locked:
            return refuse(host, "remove_object", "locked", f"The {name} will not go.")
        if ident in st.inventory:
            return refuse(host, "remove_object", "not_here", f"You are holding the {name}; it stays with you.")
        lying = scene is not None and ident in scene.items and ident not in st.holders
        if not lying or st.looks.get(ident, {}).get("removed"):
            return refuse(host, "remove_object", "not_here", f"There is no {name} here.")
        st.looks.setdefault(ident, {})["removed"] = True
        return [_ev(host, "edit", ids={"edit": "remove_object", "target": ident}, data={"old": name}),
                _line(host, f"The {name} is gone.", "edit.remove_object")]
    if kind == "character":
        return refuse(host, "remove_object", "locked", f"{opening(name)} stays where it is.")
    return refuse(host, "remove_object", "missing", f"There is no {target.replace('_', ' ') or 'such thing'} here.")


def _change(host: EditHost, p: dict[str, str]) -> list[Event]:
    st = host.state
    kind, ident = _find(host, p.get("target", ""))
    colour, size = p.get("colour", ""), p.get("size", "")
    if kind == "character":
        return _look(host, {"character": ident, "colour": colour})
    if not kind:
        return refuse(host, "change_object", "missing", f"There is no {p.get('target', 'such thing')} here.")
    if not colour and not size:
        return refuse(host, "change_object", "missing", ui("edit.unclear"))
    name = _name(host, ident)
    if kind == "object":
        obj = st.objects[ident]
        noun = str(obj.get("noun", name))
        obj["colour"] = colour or str(obj.get("colour", ""))
        obj["size"] = size or str(obj.get("size", ""))
        old = str(obj.get("look", ""))
        obj["look"] = _look_text(noun, str(obj["colour"]), str(obj["size"]))
        new = str(obj["look"])
    else:
        item = host.story.model.items[ident]
        if item.locked:
            return refuse(host, "change_object", "locked", f"The {name} stays just as it is.")
        look = st.looks.setdefault(ident, {})
        old = f"{look.get('size', '')} {look.get('colour', '')}".strip() or item.name
        if colour:
            look["colour"] = colour
        if size:
            look["size"] = size
        new = f"{look.get('size', '')} {look.get('colour', '')}".strip()
    change = " and ".join(x for x in (colour, {"big": "bigger", "small": "smaller"}.get(size, "")) if x)
    return [_ev(host, "edit", ids={"edit": "change_object", "target": ident}, data={"old": old, "new": new}),
            _line(host, f"The {name} is {change} now.", "edit.change_object")]


def _look(host: EditHost, p: dict[str, str]) -> list[Event]:
    st = host.state
    m = host.story.model
    who = p.get("character", "")
    scene = _scene(host)
    if who not in m.cast:
        return refuse(host, "look", "missing", "There is nobody like that here.")
    name = opening(m.cast[who].name)
    if scene is None or who not in scene.present:
        return refuse(host, "look", "not_here", f"{name} is not here.")
    if m.cast[who].locked:
        return refuse(host, "look", "locked", f"{name} shakes it off; it will not wear that.")
    wear, colour = p.get("wear", ""), p.get("colour", "")
    if not wear:
        if not colour:
            return refuse(host, "look", "missing", ui("edit.unclear"))
        change = st.looks.setdefault(who, {})
        old = str(change.get("colour", ""))
        change["colour"] = colour
        return [_ev(host, "edit", ids={"edit": "look", "target": who}, data={"old": old, "new": colour}),
                _line(host, f"{name} is {colour} now.", "edit.look.colour")]
    worn = {oid: o for oid, o in st.objects.items() if o.get("on") == who}
    same = next((oid for oid, o in worn.items() if o.get("noun") == wear), "")
    if same:
        obj = st.objects[same]
        old = str(obj.get("look", ""))
        obj["colour"] = colour or str(obj.get("colour", ""))
        obj["look"] = _look_text(wear, str(obj["colour"]), str(obj.get("size", "")))
        return [_ev(host, "edit", ids={"edit": "look", "target": same}, data={"old": old, "new": obj["look"]}),
                _line(host, f"{name} now wears {obj['look']}.", "edit.look")]
    if len(worn) >= MAX_WORN:
        return refuse(host, "look", "full", f"{name} cannot carry anything more.")
    colour = colour or DEFAULT_COLOURS.get(wear, "")
    ident = _new_id(st, f"{who}_{wear}")
    look = _look_text(wear, colour, p.get("size", ""))
    st.objects[ident] = {"name": wear, "noun": wear, "look": look, "colour": colour, "size": p.get("size", ""),
                         "x": 0.0, "y": 0.1, "location": "", "image": "", "on": who, "kind": "worn",
                         "turn": st.turn}
    return [_ev(host, "edit", ids={"edit": "look", "target": ident}, data={"new": look, "on": who}),
            _line(host, f"{name} now wears {look}.", "edit.look")]


# -- dropped images ------------------------------------------------------------------------
def add_reference(host: EditHost, intent: AddReference,
                  validate: Callable[[str], str] | None = None) -> list[Event]:
    """Place a dropped image as an object whose reference is the image (or give it).

    Args:
        host: the session.
        intent: ``path`` of the image; ``entity_id`` the character it was dropped on
            (it becomes a gift), or ``""`` to place it in view: at ``intent.x`` (a fraction of
            the view from its left edge, on the ground) where the player dropped it, else
            where :func:`place` puts ``here``.
        validate: ``path -> absolute path``, raising ``InputError`` for a bad image
            (``game.images.validate_image`` in a session); ``None`` checks only
            that the file exists.

    Returns:
        Events; a bad image gives an in-world line and changes nothing.
    """
    st = host.state
    try:
        path = validate(intent.path) if validate else str(Path(intent.path).resolve(strict=True))
    except (InputError, OSError) as exc:
        why = exc.why if isinstance(exc, InputError) else str(exc)
        return refuse(host, "add_object", "bad_image",
                      ui("edit.bad_picture", why=why))
    if "add_object" not in allowed(host.story, st.scene):
        return refuse(host, "add_object", "not_allowed")
    here = [o for o in st.objects.values() if o.get("location") == st.location and not o.get("on")]
    if len(here) >= MAX_OBJECTS_PER_PLACE:
        return refuse(host, "add_object", "full", ui("edit.no_room"))
    scene = _scene(host)
    target = intent.entity_id
    ident = _new_id(st, "picture")
    caption = picture_caption(path)
    subject = caption or picture_subject(path, nameless=frozenset(COLOUR_WORDS))
    x, y = place(host, {"relation": "here"}, ident) if intent.x is None else (round(st.camera_x + intent.x, 3), 0.0)
    look = f"a picture of {subject}" if subject else "a picture"
    if caption:  # its own words, quoted: a caption is a title, not a noun phrase
        said = f"A picture, “{caption}”, is there now, as if it had always been."
    elif subject:
        said = f"A picture of {subject} is there now, as if it had always been."
    else:  # a name that says nothing of what it shows (IMG_2034, red.png): not "a picture of red"
        said = "Your picture is there now, as if it had always been."
    st.objects[ident] = {"name": "picture", "noun": "picture", "look": look, "colour": "",
                         "size": "", "x": x, "y": y, "location": st.location, "image": path, "on": "",
                         "kind": "picture", "turn": st.turn}
    events = [_ev(host, "edit", ids={"edit": "add_reference", "target": ident},
                  data={"image": path, "x": x}),
              _line(host, said, "edit.add_reference")]
    if target and scene is not None and target in scene.present:
        events += give_object(host, ident, target)
    return events


# -- unforeseen gifts -------------------------------------------------------------------------
def give_new(host: EditHost, p: dict[str, str]) -> list[Event]:
    """"give her a lantern": make the thing the player names (``name``, optional ``colour``,
    ``size``) and hand it to ``character`` through the ``on_give`` tables (:func:`give_object`).

    It is made as :func:`_add` makes an object, so the scene must allow ``add_object``;
    a refusal, a full place or an absent character changes nothing and says so.

    Raises:
        game.errors.StoryRuntimeError: the matching reaction is broken (bad effect or goto).
    """
    st = host.state
    who, noun = p.get("character", ""), p.get("name", "")
    scene = _scene(host)
    if "add_object" not in allowed(host.story, st.scene):
        return refuse(host, "add_object", "not_allowed")
    if scene is None or who not in scene.present:
        return refuse(host, "give", "not_here", f"{opening(_name(host, who) if who else 'nobody')} is not here.")
    here = [o for o in st.objects.values() if o.get("location") == st.location and not o.get("on")]
    if len(here) >= MAX_OBJECTS_PER_PLACE:
        return refuse(host, "add_object", "full", ui("edit.no_room"))
    colour = p.get("colour") or DEFAULT_COLOURS.get(noun, "")
    size = p.get("size", "")
    ident = _new_id(st, noun)
    look = _look_text(noun, colour, size)  # English: what the world model is told
    book = phrasebook(language())  # playing in another language: the thing is named in it
    name = book.native(noun) if book is not None else noun
    shown = look if book is None else " ".join(book.native(w) for w in (p.get("size", ""), p.get("colour", ""), noun)
                                               if w)
    st.objects[ident] = {"name": name, "noun": noun, "look": look, "colour": colour, "size": size,
                         "x": float(scene.present[who]), "y": 0.0, "location": st.location, "image": "", "on": "",
                         "kind": "object", "turn": st.turn, "near": who, "relation": "near"}
    return [_ev(host, "edit", ids={"edit": "add_object", "target": ident}, data={"new": look, "for": who}),
            _line(host, ui("edit.give_new", look=shown), "edit.give_new"),
            *give_object(host, ident, who)]


def give_object(host: EditHost, ident: str, who: str) -> list[Event]:
    """Hand the player's object ``ident`` to character ``who`` through the ``on_give`` tables.

    Raises:
        game.errors.StoryRuntimeError: the matching reaction is broken (bad effect or goto).
    """
    st = host.state
    scene = _scene(host)
    kind, oid = _find(host, ident)
    if kind != "object":
        return refuse(host, "give", "missing", f"You have no {ident.replace('_', ' ') or 'such thing'} to give.")
    if scene is None or who not in scene.present:
        return refuse(host, "give", "not_here", f"{opening(_name(host, who))} is not here.")
    obj = st.objects[oid]
    if obj.get("on") == who or obj.get("owner") == who:  # in her hands, or set down by her already
        return refuse(host, "give", "already", f"{opening(_name(host, who))} already has the {obj.get('name')}.")
    found = host.runtime.give_reaction(st, who, [oid, str(obj.get("noun", "")), str(obj.get("kind", "object")),
                                                  "default"])
    item, cname = str(obj.get("name", oid)), _name(host, who)
    extra = {"item": item, "character": cname}
    events = [_ev(host, "give", ids={"item": oid, "to": who}, data={"matched": found[1][-1] if found else "builtin",
                                                                    "object": True})]
    st.gifts.setdefault(who, []).append(oid)
    keep = found[0].keep if found else True
    put = found[0].put if found else ""
    if keep and put:  # she sets it down where her lines say: on that feature of the place, still hers
        obj["on"], obj["rests"], obj["location"], obj["owner"] = "", put, st.location, who
    elif keep:
        obj["on"], obj["kind"] = who, ("picture" if obj.get("kind") == "picture" else "held")
    if found is None:
        events.append(_line(host, host.runtime.interpolate(st, DEFAULT_GIVE_LINE, extra), "builtin.give"))
        host.runtime.set_reaction(st, who, "tilt", events)
        return events
    r, path = found
    return events + host.runtime.react(st, r, path, reaction_base(path, ""), extra)

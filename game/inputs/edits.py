"""The world-edit vocabulary: what a player may ask the world to become.

Each :class:`EditSpec` is one kind of :class:`~game.state.Instruct` (``edit``):
example sentences (ranked by meaning against what the player typed), the values
it takes (``rain``, ``night``...) with the words that name them, and which
parameters the slot parser must fill before the edit can be applied. The
examples use generic nouns on purpose ("a box", "a chair"), so a story's own
things ("the kite") pull the ranking toward the story's choices, and the slot
parser decides which object an edit is about.

Edits (``Instruct.edit``) and their parameters (``Instruct.params``):

==================  ==========================================================
``weather``         ``value``: ``rain`` | ``snow`` | ``fog`` | ``clear``
``time_of_day``     ``value``: ``night`` | ``dawn`` | ``day`` | ``dusk``
``light``           ``value``: ``lantern`` | ``moonlight`` | ``firelight`` | ``candle`` | ``glow`` |
                    ``bright`` | ``dim``
``add_object``      ``name`` (noun), optional ``colour``, ``size``, ``relation``, ``near``
                    (character/item/object id or a word such as ``tree``)
``remove_object``   ``target`` (object or item id, or a noun)
``change_object``   ``target``, and ``colour`` and/or ``size``
``look``            ``character``, and ``wear`` (a noun such as ``scarf``) and/or ``colour``
``give_object``     ``object``, ``character`` (a player's object handed over), or ``name``,
                    ``character``, optional ``colour``, ``size`` (a new thing made and handed
                    over: "give her a lantern"); not ranked here
==================  ==========================================================
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from game.inputs.slots import WEARABLES, Slots
from game.locale import UI, ui


@dataclass(frozen=True)
class EditSpec:
    """One kind of world edit.

    Attributes:
        name: the ``Instruct.edit`` it produces.
        label: how a clarifying question names it ("change the weather").
        examples: sentences ranked by meaning against the input.
        values: canonical value -> words and phrases naming it (``value`` edits only).
        question: what to ask when the kind is clear but the value is not.
    """

    name: str
    label: str
    examples: tuple[str, ...]
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    question: str = ""


EDITS: dict[str, EditSpec] = {
    "weather": EditSpec(
        "weather", "change the weather",
        ("make it rain", "let it snow", "bring in the fog", "it starts raining", "clear the sky",
         "change the weather", "make the weather stormy", "a storm rolls in", "make it misty",
         "stop the rain", "let the sun come out", "it is snowing now", "a heavy storm begins",
         "send a snowstorm"),
        {"rain": ("rain", "raining", "rains", "rainy", "rainfall", "drizzle", "drizzling", "pour", "pouring",
                  "downpour", "shower", "showers", "storm", "stormy", "thunderstorm", "wet", "thunder",
                  "rainstorm", "rain storm"),
         "snow": ("snow", "snowing", "snows", "snowy", "snowfall", "blizzard", "snowflakes", "flurries",
                  "wintry", "snowstorm", "snow storm"),
         "fog": ("fog", "foggy", "mist", "misty", "haze", "hazy", "murky", "fog bank"),
         "clear": ("clear", "sunny", "sunshine", "dry", "clear skies", "clear the sky", "fair weather",
                   "sun come out", "sun out", "blue sky", "nice weather")},
        "Rain, snow, fog, or clear skies?"),
    "time_of_day": EditSpec(
        "time_of_day", "change the time of day",
        ("make it night", "it is night now", "turn it to dawn", "make it daytime", "let the sun set",
         "skip to the evening", "change the time of day", "let the sun rise", "make it midnight",
         "fast forward to morning"),
        {"night": ("night", "nighttime", "night time", "midnight", "dark", "darkness", "nightfall"),
         "dawn": ("dawn", "sunrise", "daybreak", "morning", "sunup", "sun rise"),
         "day": ("day", "daytime", "noon", "midday", "daylight", "afternoon", "broad daylight"),
         "dusk": ("dusk", "sunset", "evening", "twilight", "sundown", "gloaming", "sun set")},
        "Night, dawn, day, or dusk?"),
    "light": EditSpec(
        "light", "change the light",
        ("light the scene with a lantern glow", "make the light warmer", "let moonlight fall on everything",
         "make it brighter", "dim the light", "add a warm glow to the light", "light it by firelight",
         "bathe everything in candlelight"),
        {"lantern": ("lantern glow", "lantern light", "lamplight", "lamp light", "lantern-lit", "lantern lit"),
         "moonlight": ("moonlight", "moonlit", "moon light", "moonbeams"),
         "firelight": ("firelight", "fire light", "campfire", "bonfire", "firelit"),
         "candle": ("candlelight", "candle light", "candlelit", "candles"),
         "glow": ("glow", "glowing", "warm light", "warmer", "golden light"),
         "bright": ("bright", "brighter", "brightness", "lighter", "more light"),
         "dim": ("dim", "dimmer", "darker", "less light", "gloomy")},
        "Lantern glow, moonlight, firelight, brighter, or dimmer?"),
    "add_object": EditSpec(
        "add_object", "add something",
        ("add a box by the rock", "put a chair next to the tree", "place a bench here",
         "make a ball appear", "there should be a barrel on the left", "spawn a crate",
         "create a small table", "put a bucket over there", "i want a bench near the water"),
        question="Add what?"),
    "remove_object": EditSpec(
        "remove_object", "remove something",
        ("remove the box", "take the bench away", "make the barrel disappear", "get rid of the chair",
         "delete the crate", "clear away the bucket"),
        question="Remove what?"),
    "change_object": EditSpec(
        "change_object", "change how something looks",
        ("make the box blue", "paint the chair red", "make the barrel bigger", "turn the bench green",
         "change the colour of the crate", "make the ball smaller", "colour the table yellow"),
        question="Change what, and how?"),
    "look": EditSpec(
        "look", "dress a character",
        ("give the character a blue scarf", "put a hat on her", "dress him in a red coat",
         "make her wear a yellow ribbon", "the character should wear a scarf", "tie a bow around its neck",
         "put a collar on it"),
        question="Wear what?"),
}

#: Words one of which an edit's line must contain (else it loses
#: :data:`game.inputs.meaning.NO_CUE`): a removal needs a verb of removal, a
#: recolour a colour or size, and so on. Value edits are cued by their values.
CUES: dict[str, tuple[str, ...]] = {
    "add_object": ("add", "put", "place", "appear", "create", "spawn", "bring", "there should be", "there is",
                   "want a", "drop", "set", "plant", "build", "conjure", "summon", "hang", "make a", "make an",
                   "stand", "leave a", "need a", "give us", "let there be", "more"),
    "remove_object": ("remove", "take away", "away", "get rid", "delete", "disappear", "vanish",
                      "clear away", "take out", "gone", "erase", "lose the", "no more", "banish"),
    "change_object": ("make", "paint", "colour", "color", "turn", "change", "dye", "tint", "recolour",
                      "recolor", "bigger", "smaller", "larger", "grow", "shrink", "should be"),
    "look": ("give", "put", "dress", "wear", "wears", "wearing", "tie", "on", "make", "paint", "colour", "color",
             "turn", "dye"),
}

#: Edits that take a ``value`` named by words.
VALUE_EDITS = ("weather", "time_of_day", "light")

#: Every word that names an edit value (never an object noun).
VALUE_WORDS: frozenset[str] = frozenset(
    p for spec in EDITS.values() for phrases in spec.values.values() for p in phrases if " " not in p
) | {"weather", "light", "lights", "time", "sky", "sun", "moon", "clouds", "cloud", "colour", "color", "size"}

def _has(text: str, phrase: str) -> bool:
    return re.search(rf"\b{re.escape(phrase)}\b", text) is not None


def cued(edit: str, text: str) -> bool:
    """Whether ``text`` holds a word that cues ``edit`` (value edits: one of their values or names)."""
    if edit in VALUE_EDITS:
        return bool(find_value(edit, text)) or any(_has(text, w) for w in (edit.split("_")[0], "weather", "sky"))
    return any(_has(text, c) for c in CUES.get(edit, ()))


def find_value(edit: str, text: str) -> str:
    """The canonical value of a ``value`` edit named in ``text`` (longest phrase wins), or ``""``.

    The phrase "time of day" itself names no value.
    """
    spec = EDITS.get(edit)
    if spec is None:
        return ""
    text = re.sub(r"\btimes? of (the )?day\b", "time", text)
    best = ("", 0)
    for value, phrases in spec.values.items():
        for p in phrases:
            if len(p) > best[1] and _has(text, p):
                best = (value, len(p))
    return best[0]


def object_nouns(slots: Slots) -> tuple[str, ...]:
    """Head nouns of ``slots`` that can name an object (not weather, time or light words)."""
    return tuple(n for n in slots.nouns if n not in VALUE_WORDS)


def params_for(edit: str, slots: Slots, text: str) -> tuple[dict[str, str], bool]:
    """Fill the parameters of ``edit`` from ``slots``.

    Args:
        edit: an edit name of :data:`EDITS`.
        slots: the parsed slots of the line.
        text: the (corrected, positive) text.

    Returns:
        ``(params, complete)``: ``complete`` is ``False`` when a required parameter is missing.
    """
    params: dict[str, str] = {}
    if edit in VALUE_EDITS:
        value = find_value(edit, text)
        if value:
            params["value"] = value
        return params, bool(value)
    colour = slots.colours[-1] if slots.colours else ""
    size = slots.sizes[-1] if slots.sizes else ""
    nouns = object_nouns(slots)
    if edit == "add_object":
        if nouns:
            params["name"] = nouns[0]
        elif slots.objects or slots.items:
            params["name"] = (slots.objects or slots.items)[0]
        if colour:
            params["colour"] = colour
        if size:
            params["size"] = size
        if slots.position is not None:
            params["relation"] = slots.position.relation
            near = slots.position.anchor_id or slots.position.anchor
            if near:
                params["near"] = near
        return params, "name" in params
    if edit in ("remove_object", "change_object"):
        # only things that exist, and a character only when named (not "it")
        target = slots.objects + slots.items + (() if slots.pronoun else slots.characters)
        if target:
            params["target"] = target[0]
        if edit == "change_object":  # a character's recolour becomes ``look`` (the resolver turns it)
            if params.get("target") in slots.characters and any(n in WEARABLES for n in nouns):
                return params, False  # "make the creature wear a green crown" is a look edit
            if colour:
                params["colour"] = colour
            if size:
                params["size"] = size
            return params, "target" in params and ("colour" in params or "size" in params)
        return params, "target" in params
    if edit == "look":
        pos = slots.position
        if slots.characters:
            params["character"] = slots.characters[0]
        elif pos is not None and pos.anchor_kind == "character" and pos.relation in ("on", "near", "above"):
            params["character"] = pos.anchor_id
        wear = [n for n in nouns if n in WEARABLES] or list(nouns)
        if wear:
            params["wear"] = wear[0]
        if colour:
            params["colour"] = colour
        return params, "character" in params and ("wear" in params or "colour" in params)
    return params, False


def describe(edit: str, params: dict[str, str], name: Callable[[str], str] | None = None) -> str:
    """A short player-facing phrase for an edit ("make it rain", "add a golden lantern").

    Args:
        edit: the edit name.
        params: its parameters; ``character``, ``target`` and ``object`` hold ids.
        name: id -> the name the player sees ("eve" -> "Eve", "lamp_oil" -> "tin of lamp
            paraffin"); default: the id with its underscores as spaces.
    """
    shown = name or (lambda ident: ident.replace("_", " "))
    v = params.get("value", "")
    if edit in VALUE_EDITS:  # input.do.<edit>.<value> ("make it rain"), input.do.<edit> with no value
        sid = f"input.do.{edit}.{v}"
        return ui(sid) if v and sid in UI else (f"make it {v}" if v else ui(f"input.do.{edit}"))
    look = " ".join(x for x in (params.get("size", ""), params.get("colour", "")) if x)
    who = _the(shown(params["character"])) if params.get("character") else ui("input.the_character")
    target = _the(shown(params["target"])) if params.get("target") else ui("input.the_thing")
    if edit == "add_object":
        return ui("input.do.add_object", thing=f"{look + ' ' if look else ''}{params.get('name') or ui('input.thing')}")
    if edit == "remove_object":
        return ui("input.do.remove_object", target=target)
    if edit == "change_object":
        return ui("input.do.change_object", target=target, look=look).strip()
    if edit == "look":
        if not params.get("wear"):
            return ui("input.do.look.colour", who=who, colour=params.get("colour", "")).strip()
        wear = " ".join(x for x in (params.get("colour", ""), params.get("wear", "")) if x)
        return ui("input.do.look", who=who, wear=wear).strip()
    if edit == "give_object":
        if params.get("name"):
            return ui("input.do.give_new", who=who, thing=params["name"])
        return ui("input.do.give", who=who, thing=shown(params.get("object", "")) or ui("input.thing"))
    return edit.replace("_", " ")


def _the(name: str) -> str:
    """``"the " + name`` unless it has its article or is a proper name ("Eve", "the creature")."""
    if name.lower().startswith(("the ", "a ", "an ")) or name[:1].isupper():
        return name
    return ui("input.the", name=name)

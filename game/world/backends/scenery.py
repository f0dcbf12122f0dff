"""The scene vocabulary: the places and things the procedural painter can draw, read from words.

A scene's ``setting`` (its location's prompt and its own, see
:class:`game.world.protocol.Scene`) names what the place shows: "a huge old oak on a
slope, hollow at its foot, dry brown leaves inside". :func:`read_setting` splits it
into phrases and finds, per phrase, the vocabulary entries it names by their words
(``oak``, ``hollow``, ``leaf bed``); a phrase that names nothing is matched by
meaning (MiniLM sentence vectors of the phrase against each entry's description,
cosine >= :data:`NEAR`) and, when nothing is near, reported in the notes, never
dropped silently. :func:`nearest_thing` does the same for the noun of an entity
(an object a world edit added: "a campfire", "a brolly").

Entries come in four kinds: ``interior`` (the whole stage is a room), ``landmark``
(painted into the static layers at a fixed place), ``prop`` (drawn per frame or
beside the landmarks) and ``pose`` (what a character the phrase names is doing:
leaping, lying down). Names are stable: the painter's layout record uses them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from game.errors import WorldloomError
from game.world.undrawn import UNDRAWN

#: ``texts -> (N, D)`` unit vectors (e.g. ``get_embedder().encode``).
Embed = Callable[[Sequence[str]], np.ndarray]
#: Least cosine similarity at which a phrase is taken to mean a vocabulary entry. Measured with
#: all-MiniLM-L6-v2 against the descriptions below: "a singing kettle" -> stove 0.62, "a wooden
#: bench" -> table 0.66; unrelated phrases ("a brolly", "flotsam", "gulls") score 0.2-0.4, and
#: near misses ("wind" -> window 0.46) stay under it.
NEAR = 0.5

ThingKind = Literal["interior", "landmark", "prop", "pose"]


@dataclass(frozen=True)
class Thing:
    """One vocabulary entry.

    Attributes:
        name: stable name (``oak``, ``kitchen``, ``kite``).
        kind: ``interior``, ``landmark`` or ``prop``.
        words: words and phrases that name it (whole words, lower case).
        about: one line describing it, for matching by meaning.
        needs: names of other entries drawn with it (a hollow needs its oak).
        by_meaning: whether a phrase may be mapped to it by meaning (``False`` for things
            that must be named outright: a lighthouse beam, a window).
    """

    name: str
    kind: ThingKind
    words: tuple[str, ...]
    about: str
    needs: tuple[str, ...] = ()
    by_meaning: bool = True


VOCAB: tuple[Thing, ...] = (
    Thing("kitchen", "interior", ("kitchen",), "a kitchen room with a stove and a table",
          ("stove", "table", "window")),
    Thing("lantern_room", "interior", ("lantern room", "fresnel", "beehive lens", "great lens"),
          "the glass lantern room at the top of a lighthouse with its great lens", ("lens",)),
    Thing("watch_room", "interior", ("watch room", "watchroom"),
          "a round watch room under the lighthouse lamp with a chart and a logbook",
          ("chart", "desk", "window")),
    Thing("hut", "interior", ("hut", "cabin", "shack", "cottage", "shed", "net shed", "inn", "tavern", "pub"),
          "the inside of a small wooden hut",
          ("table", "window")),
    Thing("glasshouse", "interior", ("glasshouse", "greenhouse", "oil store glazed"),
          "a glasshouse full of plants, tomato vines and a lemon tree in a tub", ("plants",)),
    Thing("oak", "landmark", ("oak",), "a huge old oak tree with spreading roots"),
    Thing("hollow", "landmark", ("hollow",), "a dark hollow opening at the foot of an old tree", ("oak",)),
    Thing("ash_trees", "landmark", ("ash trees", "ash tree", "trees", "woods", "wood", "forest"),
          "a stand of tall slender trees"),
    Thing("pines", "landmark", ("pine", "pines", "fir", "firs", "conifer", "conifers", "spruce"),
          "tall dark pine trees"),
    Thing("stump", "landmark", ("stump",), "an old mossy tree stump"),
    Thing("bracken", "landmark", ("bracken", "fern", "ferns", "undergrowth"), "a fringe of bracken ferns"),
    Thing("creek", "landmark", ("creek", "stream", "brook", "river"), "a shallow creek of running water"),
    Thing("stepping_stones", "landmark", ("stepping stones",), "flat stepping stones in a creek",
          ("creek",)),
    Thing("reeds", "landmark", ("reeds", "rushes", "bulrushes"), "tall reeds at the water's edge"),
    Thing("lighthouse", "landmark", ("lighthouse", "light tower"), "a white lighthouse tower on an island",
          ("sea",)),
    Thing("causeway", "landmark", ("causeway", "spine", "black stones"),
          "a causeway of black stones across the sea at low water", ("sea",)),
    Thing("sea", "landmark", ("sea", "sound", "ocean", "tide", "water at low water", "black water", "waves",
                              "quay", "harbour", "harbor", "slipway"),
          "the open sea with its waves and tide"),
    Thing("cobles", "landmark", ("cobles", "coble", "boats", "boat", "fishing boats", "dinghy", "dinghies"),
          "small wooden fishing boats moored in a harbour", ("sea",)),
    Thing("lobster_pots", "landmark", ("lobster pots", "lobster pot", "creels", "crab pots"),
          "lobster pots stacked on a quay"),
    Thing("tower_foot", "landmark", ("foot of a white lighthouse", "foot of the lighthouse", "foot of the tower",
                                     "iron door", "tower door"),
          "the foot of a lighthouse tower with its iron door", ("sea",)),
    Thing("railing", "landmark", ("gallery", "iron rail", "railing", "balcony"),
          "an iron railing of a lighthouse gallery high above the sea", ("sea",)),
    Thing("leaping", "pose", ("leaping", "leaps", "leap", "jumping", "bounding"), "a character leaping in the air",
          by_meaning=False),
    Thing("lying", "pose", ("lying", "lies down", "lying down", "curled up", "curls up"),
          "a character lying down on its bed", by_meaning=False),
    Thing("rain_on_glass", "prop", ("rain on the windows", "rain on the window", "rain on the glass",
                                    "rain streaked", "rain-streaked"),
          "rain running down the window glass", ("window",), by_meaning=False),
    Thing("gulls", "prop", ("gulls", "gull", "seagulls", "seabirds"), "gulls wheeling over the water",
          by_meaning=False),
    Thing("unlit", "prop", ("unlit", "not lit", "lamp out"), "a lighthouse lamp that is not lit",
          by_meaning=False),
    Thing("beam", "prop", ("beam", "sweeping light"), "the beam of a lighthouse sweeping over the water",
          by_meaning=False),
    Thing("stove", "prop", ("stove", "range", "oven"), "a black iron stove with a kettle"),
    Thing("table", "prop", ("table",), "a wooden table"),
    Thing("window", "prop", ("window", "windows"), "a window looking out at the sky", by_meaning=False),
    Thing("lens", "prop", ("lens",), "a huge glass lighthouse lens"),
    Thing("chart", "prop", ("chart", "map"), "a chart of the sea pinned on a wall"),
    Thing("desk", "prop", ("logbook", "desk", "brass lamp"), "a desk with an open logbook and a brass lamp"),
    Thing("plants", "prop", ("tomato", "vines", "lemon tree", "salad", "plants"), "potted plants and vines"),
    Thing("leaf_bed", "prop", ("leaf bed", "bed of leaves", "brown leaves", "old leaves", "dry leaves"),
          "a bed of dry brown leaves", ("hollow",)),
    Thing("kite", "prop", ("kite",), "a red diamond kite on a string"),
    Thing("lantern", "prop", ("lantern", "lamp"), "a lit lantern giving warm light"),
    Thing("campfire", "prop", ("campfire", "bonfire", "fire"), "a campfire with flames and smoke"),
    Thing("leaf", "prop", ("leaf",), "a single green leaf"),
    Thing("scarf", "prop", ("scarf",), "a knitted scarf"),
    Thing("stone", "prop", ("stone", "pebble", "rock"), "a small grey stone"),
    Thing("nets", "prop", ("nets", "net", "fishing nets"), "fishing nets hung up to dry"),
    Thing("lemon", "prop", ("lemon", "orange", "fruit", "apple"), "a yellow lemon"),
    Thing("tin", "prop", ("tin", "can", "flask", "paraffin", "oil can", "jar"), "a metal tin or flask of oil"),
    Thing("key", "prop", ("key",), "an iron key"),
    Thing("bottle", "prop", ("bottle", "rum", "wine"), "a glass bottle with a cork"),
    Thing("book", "prop", ("book", "almanac", "journal"), "a small book"),
    Thing("box", "prop", ("box", "gift", "present", "parcel", "crate"), "a small box"),
    Thing("gem", "prop", ("gem", "crystal", "jewel", "glass"), "a shining gem"),
)
BY_NAME: dict[str, Thing] = {t.name: t for t in VOCAB}

#: Words that carry no thing (a phrase made only of these is not reported).
_FILLER = frozenset(
    "a an the of on in at by to with and or its it is are as from over under into inside "
    "blue dusk dawn night day light last cold warm soft old small big huge little great "
    "tide turning ahead low high above below far near around like arms roots slope pale "
    "grey gray black white dark bright".split()
)
#: A setting that says a lamp or lens is dark ("the great lens, dark and cold"), read over the whole
#: text because the phrase split at "and" would leave only filler words.
_DARK_LAMP = re.compile(r"\b(lens|lamp|lighthouse)\b[^;.:]{0,12}\b(dark|unlit|cold)\b")
_SPLIT = re.compile(r"[,;:.!?]|\band\b|\bwith\b")
_WORD = re.compile(r"[a-z']+")


@dataclass(frozen=True)
class Setting:
    """What a setting text names.

    Attributes:
        interior: the interior entry it names first, or ``""`` (outdoors).
        things: every entry it names (with what they need), in vocabulary order.
        mapped: ``(phrase, entry)`` pairs found by meaning rather than by word.
        notes: phrases nothing in the vocabulary is near.
        poses: ``(pose entry, phrase)`` for each phrase that says what someone is doing ("the
            creature leaping after it"): the painter gives that pose to the characters it names.
    """

    interior: str
    things: tuple[str, ...]
    mapped: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    poses: tuple[tuple[str, str], ...] = ()

    def has(self, name: str) -> bool:
        return name in self.things


def _named(phrase: str) -> list[str]:
    """Entries a phrase names by their words, longest phrase first (``lantern room`` before ``lantern``)."""
    low = f" {' '.join(_WORD.findall(phrase.lower()))} "
    hits: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    words = sorted(((w, t.name) for t in VOCAB for w in t.words), key=lambda p: -len(p[0]))
    for word, name in words:
        for m in re.finditer(rf"(?<= ){re.escape(word)}s?(?= )", low):
            span = (m.start(), m.end())
            if any(a < span[1] and span[0] < b for a, b in taken):
                continue
            taken.append(span)
            hits.append((m.start(), name))
    return [name for _, name in sorted(hits)]


class Vocabulary:
    """Reads settings and nouns against :data:`VOCAB`, by word and, with ``embed``, by meaning.

    Args:
        embed: sentence embedder (unit vectors), or ``None`` to match by words only
            (then a phrase that names nothing is reported, since it cannot be matched).
    """

    def __init__(self, embed: Embed | None = None) -> None:
        self.embed = embed
        #: Why the embedder could not be used (it failed to load), or ``""``.
        self.unavailable = ""
        self._about: np.ndarray | None = None
        self._settings: dict[str, Setting] = {}
        self._nouns: dict[str, tuple[str, float]] = {}

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        assert self.embed is not None
        v = np.asarray(self.embed(list(texts)), dtype=np.float32)
        norm = np.linalg.norm(v, axis=1, keepdims=True)
        out: np.ndarray = v / np.maximum(norm, 1e-8)
        return out

    def _nearest(self, phrase: str, kinds: tuple[ThingKind, ...]) -> tuple[str, float]:
        """The nearest entry of ``kinds`` to ``phrase`` by meaning and its cosine (``("", 0)`` without an embedder)."""
        if self.embed is None:
            return "", 0.0
        try:
            if self._about is None:
                self._about = self._vectors([f"{t.name.replace('_', ' ')}: {t.about}" for t in VOCAB])
            q = self._vectors([phrase])[0]
        except WorldloomError as exc:  # the model would not load: match by words from now on
            self.embed, self.unavailable = None, str(exc)
            return "", 0.0
        sims = self._about @ q
        allowed = np.array([t.kind in kinds and t.by_meaning for t in VOCAB])
        sims = np.where(allowed, sims, -1.0)
        k = int(np.argmax(sims))
        return VOCAB[k].name, float(sims[k])

    def read(self, text: str) -> Setting:
        """What ``text`` names (cached per text)."""
        if text in self._settings:
            return self._settings[text]
        names: list[str] = []
        mapped: list[tuple[str, str]] = []
        notes: list[str] = []
        poses: list[tuple[str, str]] = []
        for raw in _SPLIT.split(text):
            phrase = raw.strip()
            words = [w for w in _WORD.findall(phrase.lower()) if w not in _FILLER]
            if not words:
                continue
            found = _named(phrase)
            if found:
                poses += [(n, phrase) for n in found if BY_NAME[n].kind == "pose"]
                names += [n for n in found if BY_NAME[n].kind != "pose"]
                continue
            name, sim = self._nearest(phrase, ("landmark", "prop", "interior"))
            if name and sim >= NEAR:
                names.append(name)
                mapped.append((phrase, name))
            else:
                why = (f"nearest is {name} at {sim:.2f}" if name else
                       f"no embedder to match by meaning{': ' + self.unavailable if self.unavailable else ''}")
                notes.append(f"{UNDRAWN}nothing in the vocabulary is near {phrase!r} ({why}); not drawn")
        if _DARK_LAMP.search(text.lower()):
            names.append("unlit")
        interior = next((n for n in names if BY_NAME[n].kind == "interior"), "")
        full = _with_needs(names)
        if interior:  # one room: the other rooms' words name their furniture, not another stage
            full = [n for n in full if BY_NAME[n].kind != "interior" or n == interior]
        order = {t.name: k for k, t in enumerate(VOCAB)}
        setting = Setting(interior, tuple(sorted(full, key=order.__getitem__)), tuple(mapped), tuple(notes),
                          tuple(poses))
        self._settings[text] = setting
        return setting

    def noun(self, text: str) -> tuple[str, float]:
        """The prop ``text`` (an entity's name and look) names: by word, else nearest by meaning.

        Returns:
            ``(entry name, cosine)``; cosine 1.0 for a match by word; ``("", cosine)``
            when nothing is near (or there is no embedder).
        """
        if text in self._nouns:
            return self._nouns[text]
        props = [n for n in _named(text) if BY_NAME[n].kind == "prop"]
        if props:
            found = (props[0], 1.0)
        else:
            name, sim = self._nearest(text, ("prop",))
            found = (name, sim) if sim >= NEAR else ("", sim)
        self._nouns[text] = found
        return found


def _with_needs(names: list[str]) -> list[str]:
    out: list[str] = []
    todo = list(names)
    while todo:
        n = todo.pop(0)
        if n in out:
            continue
        out.append(n)
        todo += list(BY_NAME[n].needs)
    return out

"""The slot parser: which object, which colour, what size, where.

Sentence embeddings rank *what kind* of thing the player asks for, but they
cannot tell a blue scarf from a red one, or the kite from the leaf. This module
reads those parameters straight from the words, over a :class:`Lexicon` built
from the story itself (items, characters, places, tags, and the objects the
player added) plus fixed vocabularies of colours, sizes and positions.

Typos are corrected first against the lexicon and the words the scene's
candidates use (:meth:`Lexicon.correct`): ``"ofer the kiet"`` reads as
``"offer the kite"``. Only words of four letters or more that are neither known
to the lexicon nor common English (a whole word of the MiniLM tokenizer's
30,522-entry vocabulary, :func:`common_words`) are corrected, and only to a known
word with the same first letter and a difflib similarity of at least 0.75, so
"ball" stays a ball and never becomes a bell.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache

from game.story.negation import normalise
from game.story.schema import Scene, StoryModel

_WORD = re.compile(r"[a-z0-9']+")

#: Colour words -> the canonical colour (what goes into the look and the backend).
COLOURS: dict[str, str] = {
    "red": "red", "crimson": "red", "scarlet": "red", "ruby": "red", "maroon": "red",
    "blue": "blue", "navy": "blue", "azure": "blue", "sky-blue": "blue", "cobalt": "blue",
    "teal": "teal", "turquoise": "teal", "cyan": "teal",
    "green": "green", "emerald": "green", "lime": "green", "olive": "green", "mossy": "moss", "moss": "moss",
    "yellow": "yellow", "lemon": "yellow", "gold": "golden", "golden": "golden", "amber": "golden",
    "orange": "orange", "ginger": "orange", "copper": "orange",
    "purple": "purple", "violet": "purple", "lilac": "lilac", "lavender": "lilac", "magenta": "pink",
    "pink": "pink", "rose": "pink",
    "white": "white", "ivory": "white", "cream": "white", "snowy-white": "white",
    "grey": "grey", "gray": "grey", "silver": "silver", "black": "black", "ebony": "black",
    "brown": "brown", "tan": "brown", "russet": "russet", "rusty": "russet",
}
#: Size words -> ``big`` / ``small``.
SIZES: dict[str, str] = {
    "big": "big", "bigger": "big", "large": "big", "larger": "big", "huge": "big", "giant": "big",
    "enormous": "big", "massive": "big", "tall": "big", "taller": "big",
    "small": "small", "smaller": "small", "little": "small", "tiny": "small", "mini": "small", "wee": "small",
    "short": "small", "shorter": "small",
}
#: Position phrases -> relation; longest first.
RELATIONS: tuple[tuple[str, str], ...] = (
    ("to the left of", "left_of"), ("to the right of", "right_of"), ("in front of", "front"),
    ("on top of", "on"), ("next to", "near"), ("close to", "near"), ("left of", "left_of"),
    ("right of", "right_of"), ("beside", "near"), ("besides", "near"), ("by", "near"), ("near", "near"),
    ("nearby", "near"), ("behind", "behind"), ("under", "under"), ("beneath", "under"), ("below", "under"),
    ("above", "above"), ("over", "above"), ("on", "on"), ("at", "near"), ("against", "near"),
)
#: Standalone places on the screen -> relation with no anchor.
SIDES: tuple[tuple[str, str], ...] = (
    ("on the left", "left"), ("to the left", "left"), ("on the right", "right"), ("to the right", "right"),
    ("in the middle", "middle"), ("in the centre", "middle"), ("in the center", "middle"),
    ("in the sky", "sky"), ("in the air", "sky"), ("up high", "sky"), ("here", "here"), ("over there", "there"),
)
#: Things a character can wear (look edits put them on a character).
WEARABLES = frozenset({
    "scarf", "hat", "cap", "bow", "ribbon", "collar", "coat", "cloak", "cape", "bell", "necklace", "crown",
    "glasses", "boots", "bandana", "shawl", "mask", "jacket", "sweater", "jumper", "tie", "bowtie", "wreath",
    "garland", "flower", "flowers", "bandanna", "helmet", "hood", "mittens", "gloves", "socks", "sash", "belt",
    "badge", "pendant", "earring", "earrings", "backpack", "saddle", "blanket", "harness", "beret", "bonnet",
})
#: Words that never name an object (determiners, verbs of the edit vocabulary, pronouns...).
NOT_NOUNS = frozenset({
    "a", "an", "the", "some", "another", "one", "two", "my", "your", "its", "it", "their", "his", "her", "him",
    "them", "this", "that", "these", "those", "please", "add", "put", "place", "make", "let", "give", "hand",
    "offer", "create", "spawn", "bring", "set", "remove", "take", "away", "delete", "get", "rid", "of",
    "paint", "colour", "color", "turn", "change", "dress", "wear", "wears", "wearing", "tie", "be", "is", "are",
    "should", "could", "would", "can", "will", "there", "here", "new", "with", "and", "to", "in", "into",
    "appear", "disappear", "vanish", "now", "me", "i", "you", "we", "us", "little", "bit", "very", "more",
    "less", "also", "too", "up", "down", "out", "off", "just", "like", "want", "wants", "what", "about",
    "how", "kindly", "go", "do", "does", "lets", "let's", "need", "needs", "have", "has", "had",
    "hold", "holding", "show", "look", "looks", "looking", "for", "from", "as", "so", "all", "around", "round",
    "onto", "upon", "then", "maybe", "perhaps", "really", "quite", "right", "left", "side", "middle",
    "instead", "again", "back", "same", "than", "own", "sky", "air",
})
#: Verbs of actions and talk, which never head an object phrase.
VERBS = frozenset({
    "sing", "hum", "wave", "sit", "stand", "run", "walk", "jump", "dance", "whistle", "call", "shout", "say",
    "tell", "ask", "wait", "stay", "leave", "follow", "pick", "drop", "throw", "touch", "pet", "stroke",
    "feed", "hug", "watch", "listen", "sleep", "play", "fly", "climb", "swim", "reach", "wade", "crouch",
    "kneel", "step", "keep", "help", "fold", "open", "close", "rest", "think", "see", "hear", "move",
    "went", "going", "thank", "thanks", "start", "begin", "stop", "end", "fall", "falls", "rise", "rises",
    "hello", "hi", "hey", "goodbye", "bye", "yes", "ok", "okay",
})
_DETERMINERS = frozenset({"a", "an", "the", "some", "another", "one", "my", "your", "its", "their", "his", "her",
                          "this", "that", "little", "big", "small", "tiny", "large", "huge"})
#: Pronouns that stand for the one character present.
PRONOUNS = frozenset({"it", "him", "her", "them", "she", "he", "they", "its", "his", "their"})


@cache
def common_words() -> frozenset[str]:
    """Common English words: the whole-word entries of the MiniLM tokenizer vocabulary.

    Empty when the model package is not installed (then every unknown word may be corrected).
    """
    try:
        from game.models.embedder import default_model_path

        path = default_model_path() / "vocab.txt"
        return frozenset(w for w in path.read_text(encoding="utf-8").split() if w.isalpha())
    except Exception:  # the model package is optional here: no list means no filter
        return frozenset()


@dataclass(frozen=True)
class Term:
    """One thing the story knows by name.

    Attributes:
        id: stable id (item id, character id, location id, object id or tag).
        kind: ``item``, ``character``, ``place``, ``tag`` or ``object``.
        phrases: lower-case phrases that name it (``("kite", "red kite")``), longest first.
    """

    id: str
    kind: str
    phrases: tuple[str, ...]


def _phrases(*texts: str) -> tuple[str, ...]:
    out: set[str] = set()
    for text in texts:
        t = normalise(text.replace("_", " "))
        if not t:
            continue
        out.add(t)
        ws = [w for w in _WORD.findall(t) if w not in NOT_NOUNS]
        if ws:
            out.add(ws[-1])  # the head noun: "red kite" -> "kite", "the creature" -> "creature"
            plain = " ".join(w for w in ws if w not in COLOURS and w not in SIZES)
            if plain:
                out.add(plain)
    return tuple(sorted(out, key=lambda p: (-len(p), p)))


@dataclass
class Lexicon:
    """The words of one story (and, once bound, one scene and the player's objects).

    Attributes:
        terms: everything nameable.
        vocabulary: every known word (for typo correction).
        present: characters in the scene (pronouns resolve to the only one).
    """

    terms: list[Term] = field(default_factory=list)
    vocabulary: set[str] = field(default_factory=set)
    present: tuple[str, ...] = ()

    @classmethod
    def from_story(cls, story: StoryModel, scene: Scene | None = None,
                   objects: Mapping[str, Mapping[str, object]] | None = None,
                   extra_words: Iterable[str] = ()) -> Lexicon:
        """Build the lexicon of ``story`` (in ``scene``, with the player's ``objects``).

        Args:
            story: the story model (items, cast, locations, tags).
            scene: the current scene (its present characters), or ``None``.
            objects: ``GameState.objects`` (object id -> fields with ``name`` and ``noun``).
            extra_words: more known words (the candidates' example texts).
        """
        lex = cls()
        for iid, item in story.items.items():
            lex.terms.append(Term(iid, "item", _phrases(iid, item.name)))
            for tag in item.tags:
                lex.terms.append(Term(tag, "tag", _phrases(tag)))
        for cid, member in story.cast.items():
            lex.terms.append(Term(cid, "character", _phrases(cid, member.name)))
        for lid, loc in story.locations.items():
            lex.terms.append(Term(lid, "place", _phrases(lid, loc.name)))
        for oid, obj in (objects or {}).items():
            lex.terms.append(Term(oid, "object", _phrases(str(obj.get("name", oid)), str(obj.get("noun", "")))))
        if scene is not None:
            lex.present = tuple(scene.present)
        for term in lex.terms:
            for p in term.phrases:
                lex.vocabulary.update(_WORD.findall(p))
        lex.vocabulary.update(COLOURS, SIZES)
        for text in extra_words:
            lex.vocabulary.update(_WORD.findall(normalise(text)))
        return lex

    def correct(self, text: str) -> str:
        """``text`` with likely typos replaced by known words (see the module doc)."""
        names = sorted({w for t in self.terms for p in t.phrases for w in _WORD.findall(p) if len(w) >= 3})
        vocab = sorted(w for w in self.vocabulary if len(w) >= 3)
        common = common_words()
        out = []
        for w in _WORD.findall(normalise(text)):
            if len(w) >= 4 and w not in self.vocabulary and w not in NOT_NOUNS and w not in common:
                for pool in (names, vocab):  # the story's own names first
                    close = [c for c in difflib.get_close_matches(w, pool, n=3, cutoff=0.75) if c[0] == w[0]]
                    if close:
                        w = close[0]
                        break
            out.append(w)
        return " ".join(out)

    def delex(self, text: str, nouns: Iterable[str] = ()) -> str:
        """``text`` with the story's own things said generically ("make the kite green" ->
        "make the box green"; characters become "the character"; each of ``nouns`` becomes
        "box"), for comparing with the story-agnostic edit examples."""
        generic = set(nouns)
        ws = ["box" if w in generic else w for w in _WORD.findall(normalise(text))]
        hits = self.find(" ".join(ws), ("item", "object", "character"))
        if not hits:
            return " ".join(ws)
        out: list[str] = []
        i = 0
        for pos, term in hits:
            phrase = next(p for p in term.phrases if ws[pos:pos + p.count(" ") + 1] == p.split())
            out += ws[i:pos]
            out.append("character" if term.kind == "character" else "box")
            i = pos + phrase.count(" ") + 1
        out += ws[i:]
        return " ".join(out)

    def find(self, text: str, kinds: tuple[str, ...]) -> list[tuple[int, Term]]:
        """Terms of ``kinds`` named in ``text``, as ``(word position, term)`` in order."""
        ws = _WORD.findall(normalise(text))
        joined = " " + " ".join(ws) + " "
        hits: dict[str, tuple[int, Term]] = {}
        taken: set[int] = set()
        spans = sorted(((p, t) for t in self.terms if t.kind in kinds for p in t.phrases),
                       key=lambda pt: -len(pt[0]))
        for phrase, term in spans:
            needle = f" {phrase} "
            start = joined.find(needle)
            while start >= 0:
                pos = joined[:start + 1].count(" ") - 1
                n = phrase.count(" ") + 1
                if not taken & set(range(pos, pos + n)):
                    taken.update(range(pos, pos + n))
                    if term.id not in hits:
                        hits[term.id] = (pos, term)
                start = joined.find(needle, start + 1)
        return sorted(hits.values(), key=lambda h: h[0])


@dataclass(frozen=True)
class Position:
    """Where something goes: a relation and what it is relative to.

    Attributes:
        relation: ``near``, ``left_of``, ``right_of``, ``front``, ``behind``, ``on``,
            ``under``, ``above``, ``left``, ``right``, ``middle``, ``sky``, ``here``, ``there``.
        anchor: the word it is relative to (``tree``), or ``""``.
        anchor_id: the character/item/object id of the anchor when the story knows it.
        anchor_kind: ``character``, ``item`` or ``object`` when ``anchor_id`` is set.
    """

    relation: str
    anchor: str = ""
    anchor_id: str = ""
    anchor_kind: str = ""


@dataclass(frozen=True)
class Slots:
    """Parameters read from a line.

    Attributes:
        text: the corrected text the slots were read from.
        items: story item ids named, in order.
        characters: character ids named, in order (a pronoun gives the only one present).
        places: location ids named.
        tags: item tags named.
        objects: ids of the player's objects named.
        nouns: other head nouns (things the story does not know: ``lantern``), in order.
        colours: canonical colours named, in order.
        sizes: ``big`` / ``small`` named.
        position: where, or ``None``.
        pronoun: whether a character was found through a pronoun only.
    """

    text: str
    items: tuple[str, ...] = ()
    characters: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    objects: tuple[str, ...] = ()
    nouns: tuple[str, ...] = ()
    colours: tuple[str, ...] = ()
    sizes: tuple[str, ...] = ()
    position: Position | None = None
    pronoun: bool = False

    @property
    def things(self) -> tuple[str, ...]:
        """Story items and the player's objects named, in order."""
        return self.items + self.objects


def _position(text: str, lex: Lexicon) -> tuple[Position | None, str]:
    """The position phrase in ``text`` and the text without it."""
    for phrase, rel in SIDES:
        m = re.search(rf"\b{phrase}\b(?! of)", text)
        if m:
            return Position(rel), (text[:m.start()] + text[m.end():]).strip()
    for phrase, rel in RELATIONS:
        m = re.search(rf"\b{phrase}\s+(?:(?:the|a|an|her|his|its|their|that|this|my|your)\s+)?"
                      rf"((?:[a-z']+\s+)?[a-z']+)", text)
        if not m:
            continue
        tail = m.group(1).split()
        anchor = tail[-1] if tail[-1] not in NOT_NOUNS else tail[0]
        if anchor in NOT_NOUNS and anchor not in PRONOUNS:
            continue
        found = lex.find(m.group(1), ("character", "item", "object"))
        anchor_id = found[0][1].id if found else ""
        kind = found[0][1].kind if found else ""
        if not anchor_id and anchor in PRONOUNS and len(lex.present) == 1:
            anchor_id, kind = lex.present[0], "character"
        return Position(rel, anchor, anchor_id, kind), (text[:m.start()] + text[m.end():]).strip()
    return None, text


def parse(text: str, lex: Lexicon) -> Slots:
    """Read the slots of ``text`` (already corrected or not) over ``lex``.

    Possessives read as their owner ("the creature's neck" names the creature).

    Returns:
        :class:`Slots`; empty tuples where nothing was found.
    """
    t = re.sub(r"(\w)'s\b", r"\1", normalise(text))
    position, rest = _position(t, lex)
    chars = [term.id for _, term in lex.find(rest, ("character",))]
    items = [term.id for _, term in lex.find(rest, ("item",))]
    objects = [term.id for _, term in lex.find(rest, ("object",))]
    places = [term.id for _, term in lex.find(t, ("place",))]
    tags = [term.id for _, term in lex.find(rest, ("tag",))]
    ws = _WORD.findall(rest)
    pronoun = False
    if not chars and len(lex.present) == 1 and any(w in PRONOUNS for w in ws):
        chars = [lex.present[0]]
        pronoun = True
    known: set[str] = set()
    for _, term in lex.find(rest, ("character", "item", "object", "place", "tag")):
        for p in term.phrases:
            known.update(_WORD.findall(p))
    nouns: list[str] = []
    loose: list[str] = []  # heads not introduced by a determiner, colour or size: used only when nothing else
    run: list[str] = []
    before = ""
    for w in [*ws, "."]:
        if w == "." or w in NOT_NOUNS or w in VERBS or w in PRONOUNS or w in known or w.isdigit():
            heads = [x for x in run if x not in COLOURS and x not in SIZES]
            if heads:
                introduced = before in _DETERMINERS or run[0] in COLOURS or run[0] in SIZES or len(run) > 1
                (nouns if introduced else loose).append(heads[-1])
            run = []
            before = w
            continue
        run.append(w)
    nouns = nouns or loose
    colours = [COLOURS[w] for w in _WORD.findall(t) if w in COLOURS]
    sizes = [SIZES[w] for w in _WORD.findall(t) if w in SIZES]
    return Slots(text=t, items=tuple(items), characters=tuple(chars), places=tuple(places), tags=tuple(tags),
                 objects=tuple(objects), nouns=tuple(dict.fromkeys(nouns)), colours=tuple(colours),
                 sizes=tuple(sizes), position=position, pronoun=pronoun)

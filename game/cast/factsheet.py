"""Her fact sheet: what her card says, as checkable data beside its prose.

:meth:`FactSheet.from_card` reads every text of a card that states something of her
world (description, scenario, core facts, lorebook entries, authored answers, example
replies, greetings, the structured ``facts``) and keeps:

- **quantities**: every number with the word it counts, ``(value, unit)``
  (:func:`quantities`: "for seven years" -> ``(7, "year")``, "two hundred people" ->
  ``(200, "people")``, "1871" -> ``(1871, "")``); a structured fact with a ``unit``
  adds ``(value, unit)`` too ("36" + "years old" -> ``(36, "year")``);
- **names**: every capitalised word that is not a sentence opening (Skerrow,
  Harrowby, Hild, Admiral, Katrine...), lower-cased;
- **facts**: the card's structured :class:`~game.cast.card.Fact` entries.

Units are singular, lower-case nouns ("years" -> ``year``); a number followed by a
word that is not a noun-like unit ("ten past five") has unit ``""``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from game.cast.card import CharacterCard, Fact
from game.cast.told import NUMBER_WORD, parse_number

#: Words after a number that are not what it counts.
_NOT_UNITS = frozenset(
    "a an the of and or but to in on at by for from with past to till until every each more less than times "
    "or so odd about and or is are was were o'clock am pm in its it his her their my your our this that these those "
    "before after ago since".split())
_NUMBER = re.compile(rf"(?<![\w-])({NUMBER_WORD})(?:(?![\w-])|(?=-[A-Za-z]))", re.I)  # "21-year-old" too
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
#: Capitalised words any reply may use (calendar, the pronoun, interjections).
COMMON_CAPITALS = frozenset(
    "i i'm i've i'd i'll january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays "
    "saturdays sundays christmas easter god lord oh ah aye hm hmm mm well yes no ok okay mister mrs mr miss "
    "ms sir ma'am".split())


#: Kin words a claim may be made about ("my grandmother was ..."), as :attr:`FactSheet.about` keys.
KIN = frozenset("grandmother grandfather gran granny grandma grandpa mother father mum mam dad mama papa husband "
                "wife brother sister son daughter aunt uncle cousin niece nephew granddaughter grandson "
                "grandchild".split())


#: Kinds of place, each with the words that name the same kind (an island is an isle; a village,
#: not a town or a city). A card's "Skerrow, a tidal island" gives Skerrow the kind ``island``.
PLACE_KINDS: dict[str, str] = {w: group.split()[0] for group in (
    "island isle islet skerry", "village hamlet", "town", "city metropolis capital", "port harbour harbor",
    "causeway path road track crossing", "bridge", "mountain", "hill", "valley glen", "river stream", "lake loch",
    "sea ocean", "sound strait channel firth", "bay cove", "beach strand", "reef", "forest wood woods",
    "country nation", "kingdom", "county", "continent", "peninsula cape", "desert", "castle fortress",
    "farm", "mainland") for w in group.split()}
_KIND = "|".join(sorted(PLACE_KINDS, key=len, reverse=True))
_PLACE = r"(?P<name>[A-Z][\w'’-]+)"
#: "Skerrow, a tidal island"; "the mainland village of Harrowby"; "a causeway of black stones called
#: the Spine"; "Harrowby is the fishing village"; "Skerrow's a hard island".
PLACE_PATTERNS = tuple(re.compile(rx) for rx in (
    rf"\b{_PLACE}, (?:a|an|the) (?:[a-z-]+ ){{0,3}}?(?P<kind>{_KIND})\b",
    rf"\b(?:a|an|the) (?:[a-z-]+ ){{0,3}}?(?P<kind>{_KIND}) (?:of|called|named) (?:the )?{_PLACE}",
    rf"\b(?P<kind>{_KIND}) [^.,;!?]{{0,40}}? (?:called|named|known as) (?:the )?{_PLACE}",
    rf"\b{_PLACE}(?: is|'s|’s| was) (?:a|an|the|just a|only a) (?:[a-z-]+ ){{0,3}}?(?P<kind>{_KIND})\b",
))


def place_kinds(text: str) -> list[tuple[str, str]]:
    """``(place, kind)`` for every place ``text`` says is of a kind (:data:`PLACE_PATTERNS`),
    the place lower-cased and the kind as its group's first word ("isle" -> ``island``)."""
    out: list[tuple[str, str]] = []
    for rx in PLACE_PATTERNS:
        for m in rx.finditer(text):
            out.append((m.group("name").lower().removesuffix("'s").removesuffix("’s"),
                        PLACE_KINDS[m.group("kind")]))
    return out


def singular(word: str) -> str:
    """``word`` lower-cased without a plural ending ("years" -> "year", "ferries" -> "ferry")."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


@dataclass(frozen=True)
class Quantity:
    """A number in a text: ``value``, the ``unit`` it counts (singular; ``""`` when none), the words ``said``."""

    value: int
    unit: str
    said: str


def quantities(text: str) -> list[Quantity]:
    """Every number in ``text`` with its unit (see the module doc). "one" and "a" alone are not numbers."""
    out: list[Quantity] = []
    for m in _NUMBER.finditer(text):
        said = re.sub(r"^(?:(?:a|and)\s+)+|(?:\s+(?:a|and))+$", "", m.group(1).strip(" -"), flags=re.I)
        if not said or said.lower() in ("one", "a", "and"):
            continue
        value = parse_number(said)
        if value is None:
            continue
        after = _WORD.match(text, m.end() + (1 if text[m.end():m.end() + 1] in " -" else 0))
        unit = ""
        if after and after.start() <= m.end() + 1:
            w = after.group(0).lower().split("-")[0]  # "year-old" counts years
            if w not in _NOT_UNITS and len(w) > 2:
                unit = singular(w)
        out.append(Quantity(value, unit, said))
    return out


def capitalised_names(text: str) -> list[str]:
    """Capitalised words that do not open a sentence (lower-cased): the names a text uses."""
    out: list[str] = []
    for m in re.finditer(r"[A-Za-z\u00c0-\u024f][\w'\u00c0-\u024f-]*", text):
        w = m.group(0)
        if not w[:1].isupper():
            continue
        before = text[:m.start()].rstrip(" \"'“‘(*")
        if not before or before[-1] in ".!?:…\n":
            continue
        out.append(w.lower().removesuffix("'s").removesuffix("’s"))
    return out


@dataclass(frozen=True)
class FactSheet:
    """What her card states, as data (see the module doc).

    Attributes:
        facts: the card's structured facts.
        quantities: ``(value, unit)`` pairs stated; ``unit`` ``""`` for a bare number.
        values: every number stated, whatever it counts.
        units: unit -> the values stated for it.
        names: capitalised words the card uses (lower-case), her name and home included.
        vocabulary: every lower-case word the texts use (what she may call herself: "keeper").
        places: place (lower-case) -> the kinds of place her card says it is (:func:`place_kinds`:
            ``skerrow`` -> ``{"island"}``, ``harrowby`` -> ``{"village"}``).
        about: name or kin word (lower-case) -> the words of every text that mentions it (a
            sentence of the prose; a whole lorebook entry or structured fact, its keys and
            questions): what the card says of Hild, Admiral, "grandmother" (for
            :class:`~game.cast.verifier.Verifier`'s claims about them).
    """

    facts: tuple[Fact, ...] = ()
    quantities: frozenset[tuple[int, str]] = frozenset()
    values: frozenset[int] = frozenset()
    units: dict[str, frozenset[int]] | None = None
    names: frozenset[str] = frozenset()
    vocabulary: frozenset[str] = frozenset()
    about: dict[str, frozenset[str]] | None = None
    places: dict[str, frozenset[str]] | None = None

    @classmethod
    def from_texts(cls, texts: Iterable[str], facts: Iterable[Fact] = (), names: Iterable[str] = (),
                   groups: Iterable[Iterable[str]] = ()) -> FactSheet:
        """A sheet from free ``texts`` (read sentence by sentence for :attr:`about`), structured
        ``facts``, extra ``names`` and ``groups`` (texts that speak of one thing together: a lorebook
        entry with its keys)."""
        texts = list(texts)
        group_lists: list[list[str]] = [list(g) for g in groups]
        facts = tuple(facts)
        pairs: set[tuple[int, str]] = set()
        known: set[str] = {w.lower() for n in names for w in re.findall(r"[\w'-]+", n)}
        all_texts = [*texts, *(t for g in group_lists for t in g), *(f.say for f in facts), *(f.value for f in facts)]
        lower = set(re.findall(r"\b[a-z][a-z'-]+\b", " ".join(all_texts)))
        for t in all_texts:
            pairs.update((q.value, q.unit) for q in quantities(t))
            known.update(capitalised_names(t))
            # a sentence-opening capitalised word the texts never write in lower case is a name too
            known.update(w.lower() for w in re.findall(r"\b[A-Z][\w'-]+", t) if w.lower() not in lower)
        for f in facts:
            n = parse_number(f.value) if f.value else None
            if n is None:
                n = next((q.value for q in quantities(f.value)), None)
            if n is not None and f.unit:
                pairs.add((n, singular(f.unit.split()[0])))
            known.update(w.lower() for w in re.findall(r"[A-Z][\w'-]+", f.value))
        units: dict[str, set[int]] = {}
        for v, u in pairs:
            if u:
                units.setdefault(u, set()).add(v)
        units_ = {u: frozenset(vs) for u, vs in units.items()}
        pieces: list[list[str]] = [[sentence] for t in texts for sentence in re.split(r"(?<=[.!?;])\s+", t)]
        pieces += group_lists + [[*f.questions, f.say, f.value] for f in facts]
        about: dict[str, set[str]] = {}
        for piece in pieces:
            found = [w.lower().removesuffix("'s").removesuffix("’s") for w in re.findall(r"[A-Za-z][\w'’-]*",
                                                                                     " ".join(piece))]
            words = {*found, *(singular(w) for w in found)}
            for w in words & (known | KIN):
                about.setdefault(w, set()).update(words)
        places: dict[str, set[str]] = {}
        for t in all_texts:
            for name, kind in place_kinds(t):
                if name in known:  # "Lonely's a mainland word": a sentence opening, not a place
                    places.setdefault(name, set()).add(kind)
        return cls(facts, frozenset(pairs), frozenset(v for v, _ in pairs), units_, frozenset(known),
                   frozenset(lower), {k: frozenset(v) for k, v in about.items()},
                   {k: frozenset(v) for k, v in places.items()})

    @classmethod
    def from_card(cls, card: CharacterCard) -> FactSheet:
        """Her card's sheet: every text that states something of her world (not ``creator_notes``)."""
        texts = [card.description, card.scenario, card.personality, card.speaking_style, *card.core_facts,
                 *card.traits, *card.greetings, *card.group_greetings, *(e.char for e in card.examples),
                 *(a.answer for a in card.answers), *(a.unknown for a in card.answers)]
        groups = [[entry.name, entry.content, *entry.keys] for entry in card.lorebook.entries]
        return cls.from_texts(texts, card.facts, (card.name, card.nickname, card.home), groups)


__all__ = ["COMMON_CAPITALS", "KIN", "PLACE_KINDS", "PLACE_PATTERNS", "FactSheet", "Quantity", "capitalised_names",
           "place_kinds", "quantities", "singular"]

"""What the player tells her about themselves: facts pulled from a line, as beliefs to keep.

:func:`facts_told` reads one player line and returns the :class:`Told` facts in it, by
authored patterns (no model; deterministic, so transcripts and replays agree):

============  =========================================================  ============================
what          phrasings (case-insensitive where marked)                  belief
============  =========================================================  ============================
name          "my name is X", "call me X", "I'm X", "I am X", "I'm X,    ``player.name`` (and
              X Y", "X here", "the name's X", "it's X" (X capitalised    ``player.full_name`` when a
              for the I'm/I am/it's forms)                               surname is given)
age           "I'm 34", "I am thirty-four (years old)", "I turned 40",   ``player.age``
              "my age is 34"
home          "I live in X", "I'm from X", "I come from X", "home is X",  ``player.home``
              "I grew up in X", "we live in X", "I'm visiting from X",
              "I'm a beekeeper from X", "I came up on the train from X" (X
              capitalised)
work          "I'm a beekeeper", "I work as a nurse", "I mend clocks     ``player.work``
              for a living" ("clock mender")
someone       "my dog is called Biscuit", "my dog's name is Biscuit",    ``player_<relation>.name``
              "I have a dog called Biscuit", "my sister Anna",
              "Biscuit, my dog", "there's a grey cat at home, Pepper"
count         "I keep forty hives", "I have 3 kids", "there are 12       ``player_<noun>.count``
              sheep on my farm"
place         "I keep forty hives near Rotterdam" (a capitalised place    ``player_<noun>.place``
              after near/in/at/outside/by/on)                            ("near Rotterdam")
carer         "My dog is called Biscuit. He's staying with my sister",    ``player_<relation>.carer``
              "my sister is looking after him/Biscuit/my dog", "my       ("with your sister", "with
              neighbour, Mrs Duncan, is feeding her" (a pronoun with    your neighbour Mrs Duncan")
              nothing before it in the line: the last one told of)
likes         "I love X", "I like X", "I enjoy X", "X is my favourite",  ``player.likes`` (a list)
              "nothing beats X", "I'm fond of X"
dislikes      "I hate X", "I can't stand X", "I don't like X"            ``player.dislikes``
favourite     "my favourite colour is green"                             ``player.favourite colour``
gift          "I brought you X", "I made you X", "here's X for you"      ``player.gave`` (a list)
============  =========================================================  ============================

Also: a name said alone then owned ("Tove. That's me.", "Marit's the name"); the name of any noun of the
player's ("my grandson's called Nils", "my boat is the Mary Ellen", "two goldfish, Salt and Pepper");
counts fronted or hedged ("Five pipes I own", "something like six hundred rocks"); likes as a list or a
definition ("Things I adore: X", "X is my favourite thing"); dislikes without "I" ("Never could
stomach X"); a gift by any verb of making ("I knitted this scarf for you", "I carved you a spoon").
Pronouns are resolved first (:mod:`game.cast.coref`), so "I've a ferret. He's called Juniper." and
"Eels. Can't abide them." are read as if the noun were said again. What no pattern reads is still
kept in the player's own words (:mod:`game.cast.ownwords`).

Numbers may be digits or words ("forty-one", "two hundred"): :func:`parse_number`.
A line that asks ("is my dog called Rex?") or denies ("my name isn't Bob") tells
nothing; hedges are not names ("I'm tired", "I'm not sure": :data:`NOT_NAMES`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from game.cast.coref import kind_of, resolve
from game.words import opening

Kind = Literal["person", "object", "place", "thing"]

#: Number words and their values (compounds like "forty-one" and "two hundred" are summed).
#: Source of a belief the player told her (:meth:`game.cast.memory.Memory.learn`).
TOLD_SOURCE = "the player said so"
#: Source of ``player.gave`` for a thing the player handed her in the story (a ``give`` event).
GIFT_SOURCE = "the player gave it to me"

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"hundred": 100, "thousand": 1000}
NUMBER_WORD = (r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:\.\d+)?|(?:(?:" + "|".join([*_TENS, *_UNITS, *_SCALES, "a", "and"]) +
               r")(?:[\s-]+|(?=\W|$)))+)")


def parse_number(text: str) -> int | None:
    """The integer ``text`` spells ("40", "forty", "forty-one", "two hundred", "1,871"), else ``None``."""
    t = text.strip().lower().replace(",", "")
    if re.fullmatch(r"\d+", t):
        return int(t)
    words = [w for w in re.split(r"[\s-]+", t) if w and w != "and"]
    if not words or words == ["a"]:
        return None
    total, current, seen = 0, 0, False
    for w in words:
        if w in _UNITS:
            current += _UNITS[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w in _SCALES:
            current = max(1, current) * _SCALES[w]
            if w == "thousand":
                total, current = total + current, 0
        elif w == "a":
            current += 0 if seen else 1
            continue
        else:
            return None
        seen = True
    return total + current if seen else None


#: Capitalised words that are not names after "I'm"/"I am"/"it's" (hedges, feelings, greetings).
NOT_NAMES = frozenset(
    "not a an the just so sorry fine glad here there back home ok okay well good great tired cold hungry lost "
    "afraid sure new only really very too also still always never from in on at with going trying looking "
    "thinking wondering happy sad scared worried married single alone alright yes no hello hi hey thanks thank "
    "please maybe english scottish irish welsh british french german dutch american norwegian danish swedish "
    "what who why how when where nobody somebody everyone anyone none nothing something walker friend stranger "
    "traveller traveler sailor keeper captain lord lady sir madam miss mister mr mrs ms dr doctor professor "
    "it this that me you him her them we they your my his our their".split())

_CAP = r"[A-Z\u00c0-\u00de][\w'\u00c0-\u024f-]{0,30}"
_NAME_WORD = r"[^\W\d_][\w'-]{0,31}"
_RELATIONS = (
    "dog|puppy|cat|kitten|horse|pony|parrot|budgie|rabbit|hamster|goat|cow|pig|donkey|tortoise|snake|ferret|"
    "sister|brother|mother|mum|mom|father|dad|wife|husband|partner|son|daughter|friend|best friend|boyfriend|"
    "girlfriend|grandmother|grandma|granny|gran|grandfather|grandpa|grandad|aunt|uncle|cousin|niece|nephew|"
    "neighbour|neighbor|boss|teacher|baby|boat|dinghy|car|van|farm|bees|queen bee"
)
#: The relations and pets a player may name ("my dog", "my sister"), one word or two.
RELATION_WORDS = frozenset(_RELATIONS.split("|"))
_PETS = frozenset("dog puppy cat kitten horse pony parrot budgie rabbit hamster goat cow pig donkey tortoise snake "
                  "ferret boat dinghy car van farm bees queen bee".split())
_ASKING = re.compile(r"\?\s*$|(?:^|[.!?]\s*)(?:is|are|was|were|do|does|did|can|could|would|will|what|whats|who|whos|"
                     r"where|wheres|when|why|how|hows)\b", re.I)
#: A line that dares her to recall ("bet you can't remember what I do", "you've forgotten my dog") asks;
#: it tells nothing (a sentence of it kept as the player's words was said back as a fact).
RECALL_DARE = re.compile(r"\byou\b[^.?!]{0,24}\b(?:remember|recall|forgot|forgotten)\b", re.I)
_DENIAL = re.compile(r"\b(?:not|never|no longer)\b|n['’]t\b", re.I)


@dataclass(frozen=True)
class Told:
    """One fact a player's line told: ``entity.key = value``.

    Attributes:
        entity: ``player`` or ``player_<relation or counted noun>`` (``player_dog``, ``player_hives``).
        key: ``name``, ``full_name``, ``age``, ``home``, ``work``, ``count``, ``likes``, ``dislikes``,
            ``favourite <thing>``, ``gave``, ``relation``.
        value: the value as said (a name capitalised; a count as digits).
        kind: the entity's kind for :class:`game.cast.memory.Belief`.
        many: the key holds a list (``likes``, ``dislikes``, ``gave``): add to it, do not replace.
    """

    entity: str
    key: str
    value: str
    kind: Kind = "thing"
    many: bool = False


def _cap(word: str) -> str:
    return opening(word)


def _is_name(word: str, *, need_cap: bool) -> bool:
    w = word.strip("'-")
    if not w or w.lower() in NOT_NAMES:
        return False
    return not need_cap or w[:1].isupper()


#: "My name is" in the languages a player may play in (``--lang``): French, Spanish, Italian, German,
#: Dutch, Portuguese ("je m'appelle Tomas", typed "je m appelle" or "je mappelle" too; "me llamo Ada").
FOREIGN_NAME_FORMS = (r"je m['’ ]?appelle|mon nom est|moi c'est|moi c’est|me llamo|mi nombre es|mi chiamo|"
                      r"il mio nome è|ich heiße|ich heisse|mein name ist|ik heet|mijn naam is|meu nome é|chamo-me")

_NAME_FORMS: tuple[tuple[re.Pattern[str], bool], ...] = tuple((re.compile(rx), cap) for rx, cap in (
    (rf"(?i:\b(?:my name is|my name's|the name is|call me|everyone calls me|"
     rf"i am called|i'm called|i’m called|they call me|the name's|name's|"
     rf"my friends call me|people call me|{FOREIGN_NAME_FORMS}))\s+({_NAME_WORD})(?:\s+({_NAME_WORD}))?", False),
    (rf"(?i:\b(?:i'm|i’m|i am|im))\s+({_CAP})(?:,?\s+({_CAP}))?(?:\s*,\s*({_CAP})\s+({_CAP}))?"
     rf"(?=\s*(?:[,.!;:]|$|\s+(?:and|by the way|from|here|by|of)\b))", True),
    (rf"(?:^|[.!?]\s+)({_CAP})\s+here\b", True),
    (rf"(?:^|[.!?]\s+)({_CAP})(?:['’]s| is) the name\b", True),
    # a name said alone, then owned: "Tove. That's me.", "Declan Moore. Pleased to meet you."
    (rf"^\s*({_CAP})(?:\s+({_CAP}))?\s*[.,!]\s*(?i:that['’]s me|(?:pleased|nice|glad|good) to meet you|"
     rf"just\s+(?-i:{_CAP})\b|at your service)", True),
))


def told_name(text: str) -> tuple[str, str]:
    """``(first name, full name)`` the player gives in ``text`` (``("", "")`` when none).

    "I'm Tomas, Tomas Verhoeven" -> ``("Tomas", "Tomas Verhoeven")``; "I am Tomas" ->
    ``("Tomas", "Tomas")``; "my name's ada" -> ``("Ada", "Ada")``.
    """
    if _ASKING.search(text) and not re.search(r"(?i)\b(?:my name|call me)\b", text):
        return "", ""
    for rx, need_cap in _NAME_FORMS:
        for m in rx.finditer(text):
            groups = [g for g in m.groups() if g]
            if re.search(r"(?i)\b(?:my name is|my name's)\s+not\b", m.group(0)):
                return "", ""
            if not groups or not _is_name(groups[0], need_cap=need_cap):
                continue
            first = _cap(groups[0].strip("'-"))
            # "Tomas, Tomas Verhoeven": the repeated first name starts the full name
            rest = groups[1:3] if len(groups) >= 3 and groups[1] == groups[0] else groups[:2]
            if len(rest) == 2 and not _is_name(rest[1], need_cap=True):
                rest = rest[:1]
            full = " ".join(_cap(w.strip("'-")) for w in rest)
            if full == first:  # "The name's Ingrid. Ingrid Halvorsen.": the surname said after
                again = re.search(rf"\b{re.escape(first)}\s+({_CAP})\b", text[m.end():])
                if again and _is_name(again.group(1), need_cap=True):
                    full = f"{first} {_cap(again.group(1))}"
            return first, full
    return "", ""


_AGE = tuple(re.compile(rx, re.I) for rx in (
    rf"\b(?:i'm|i’m|i am|im)\s+({NUMBER_WORD})(?:\s+(?:years?|yrs?)(?:\s+old)?|\s*$|\s*[,.!;]|(?<=\s)and\b)",
    rf"\bi (?:just )?turned\s+({NUMBER_WORD})\b",
    rf"\bmy age is\s+({NUMBER_WORD})\b",
    rf"^\s*({NUMBER_WORD})\s*(?:i am|i'm|i’m)\b",  # "Fifty-seven I am, and not a grey hair."
    rf"\bi(?:'ll| will) be\s+({NUMBER_WORD})\s+(?:next|this|come|in|on|at)\b",
))
_HOME = re.compile(rf"(?i:\b(?:i live in|i live on|i live at|i'm from|i’m from|i am from|i come from|i grew up in|"
                   rf"home is|my home is in|my home is|i was born in|i'm living in|i am living in|we live in|"
                   rf"home for me is|home's|i'm visiting from|i am visiting from|i'm over from|back home in|"
                   rf"i'm based in|i am based in|i'm a [a-z]+ from|i am a [a-z]+ from|"
                   rf"home(?:'s|’s| is)\s+(?:an?|the|my)\s+(?:[a-z]+\s+){{1,3}}?(?:in|on|near|outside)))\s+(?:the\s+)?"
                   rf"({_CAP}(?:[ -](?:{_CAP}|on|upon|de|la|le|am|an|der))*(?:\s+{_CAP})?)")
_WORK = re.compile(r"(?i:\b(?:i'm a|i’m a|i am a|i'm an|i am an|i work as an?|i'm working as an?|by trade i'm an?|"
                   r"i do)\s+)([a-z][a-z-]+(?:\s+[a-z][a-z-]+)?)(?=\s*(?:[,.!;]|$|\s+(?:by|in|at|from|for|and)\b))")
#: "Carpentry's my trade", "nursing is my job": the work as the player names it.
_WORK_IS = re.compile(r"(?:^|[.!?]\s+)([a-z]+(?:\s+[a-z]+)?)(?:'s|’s|\s+is)\s+my\s+(?:trade|job|work|profession|"
                      r"line of work|living|craft)\b", re.I)
_WORK_NOUNS = re.compile(r"(?:er|or|ist|ian|ant|ent|man|woman|smith|wright|keeper|maker|nurse|chef|cook|"
                         r"pilot|poet|vet|monk|nun|judge|guide|clerk|midwife|scientist|sailor|driver|student)$")
#: A noun of the player's ("my grandson", "my boat") that may be named; their own facts are not.
_NOUN = r"(?!(?:name|age|home|job|work|trade|favourite|favorite|surname)\b)[a-z][a-z-]{2,}"
_SOMEONE = tuple(re.compile(rx, re.I) for rx in (
    rf"\bmy\s+(?:[a-z]+\s+)?({_NOUN})(?:'s name is|’s name is|'s called|’s called| is called| are called|"
    rf"'s named|’s named| is named| are named|'re called|’re called| was called| were called)\s+"
    rf"({_NAME_WORD}(?:\s+and\s+{_NAME_WORD})?)",
    rf"\bmy\s+(?:(?:old|little|big|younger|older|late|dear|pet|elder|baby)\s+)?({_RELATIONS})(?:'s name is|'s called|"
    rf" is called| is named| was called| was named| called| named|,|\s)\s*({_NAME_WORD})",
    rf"\bi (?:have|had|own|keep|got|'ve got|’ve got) an?\s+(?:(?:old|little|big|young|pet)\s+)?({_RELATIONS})\s+"
    rf"(?:called|named)\s+({_NAME_WORD})",
    # "My boat is the Mary Ellen": a capitalised name said as what the thing is
    rf"\bmy\s+(?:[a-z]+\s+)?({_NOUN})\s+(?:is|was)\s+(?:the\s+)?({_CAP}(?:\s+{_CAP})?)(?=\s*(?:[,.!;]|$))",
    rf"\b({_CAP}),?\s+(?:is\s+)?my\s+(?:(?:old|little|big|younger|older|late|dear|pet)\s+)?({_RELATIONS})\b",
))
#: Nouns whose plural does not end in "s" ("two goldfish", "forty sheep").
_SAME_PLURAL = r"(?:goldfish|fish|sheep|deer|geese|mice|children|people|cattle|salmon|trout|swine)"
_PLURAL_NOUN = rf"((?:[a-z]+\s+)?(?:[a-z]+s|{_SAME_PLURAL}))"
_HEDGE = r"(?:(?:about|around|roughly|nearly|almost|exactly|over|just|only|maybe|perhaps|at least|more than|" \
         r"something like|close to|some)\s+)?"
_COUNT = tuple(re.compile(rx, re.I) for rx in (
    rf"\b(?:i|we)\s*(?:have|had|keep|kept|own|run|raise|look after|care for|'ve got|’ve got|have got|'ve|’ve|tend|"
    rf"grow|breed|manage|milk|got)\s+(?:got\s+)?{_HEDGE}({NUMBER_WORD})\s*{_PLURAL_NOUN}\b",
    rf"\bthere are\s+{_HEDGE}({NUMBER_WORD})\s*{_PLURAL_NOUN}\s+(?:on|in|at)\s+my\b",
    rf"\bmy\s+({NUMBER_WORD})\s*{_PLURAL_NOUN}\b",
    # fronted: "Five pipes I own", "three kilns we've got"
    rf"(?:^|[.!?]\s+){_HEDGE}({NUMBER_WORD})\s*{_PLURAL_NOUN}\s+(?:i|we)\s*(?:own|have|keep|'ve got|’ve got|have got|"
    rf"'ve|run|keep)\b",
))
#: One pattern for what the player likes or cannot abide: "I (really) love / like / enjoy / adore / hate /
#: can't stand / don't like X", "I'm (very) fond of X", "nothing (in the world) beats X", "there's nothing
#: like X". Group 1: the phrase that says how they feel (:data:`_AGAINST` reads a dislike in it); group 2: X.
_LIKE_VERBS = (r"love|like|enjoy|adore|hate|dislike|loathe|detest|don't like|do not like|don’t like|"
               r"(?:can't|cannot|can’t|could never|never could|couldn't ever|can never) (?:stand|bear|abide|stomach)|"
               r"(?:'ve|’ve|have)?\s*(?:always\s+)?(?:hated|loved|adored|loathed|detested)")
_LIKES = re.compile(rf"(?i:\b(i\s*(?:really\s+|just\s+|absolutely\s+)?(?:{_LIKE_VERBS})|"
                    rf"(?:(?<=^)|(?<=[.!?,]\s))(?:never could|could never|can't|cannot|can’t|couldn't ever) "
                    rf"(?:stand|bear|abide|stomach)|"
                    rf"(?:i'm|i’m|i am)\s+(?:very\s+|so\s+|awfully\s+|really\s+)?fond of|"
                    rf"nothing(?:\s+in the world|\s+on earth)?\s+beats|there(?:'s|’s| is) nothing like)\s+)"
                    rf"([^.!?;,]{{2,60}})")
#: Words in the feeling phrase of :data:`_LIKES` that make it a dislike.
_AGAINST = re.compile(r"hate|dislike|loathe|detest|n't|n’t|\bnot\b|\bnever\b|stand|bear|abide|stomach", re.I)
#: Where a liked or disliked thing ends: "spiders since I was small", "the cold, to be honest".
_LIKE_END = re.compile(r"\s+(?:since|because|ever since|when|if|though|to be honest|as a|for years|all my life)\b.*$",
                       re.I)
#: First words of a liked "thing" that is a person or a clause, not a thing ("I love you", "I like that").
_NOT_A_THING = frozenset("you it that this being when how if me him her us them".split())
#: Likes said as a list or a definition: "Things I adore: X and Y", "what I like best is X", "the thing I
#: love most is X" (group 1: the verb; 2: X), and "X is my absolute favourite thing", "X, Y. Those are
#: my favourite things." (group 3: X).
_LIKES_LISTED = re.compile(
    rf"(?i:\b(?:the\s+)?(?:things?|what|stuff|food)\s+(?:i|we)\s+(?:really\s+|most\s+)?({_LIKE_VERBS}|adore)"
    rf"(?:\s+(?:most|best|more than anything|above all))?(?:\s+(?:is|are|would be)\s+|\s*:\s*))([^.!?;]{{2,80}})"
    rf"|(?:^|[.!?]\s+)([^.!?;]{{2,60}}?)[.,]?\s+(?i:(?:is|are|those are|these are|that's|that is|they're)\s+my\s+"
    rf"(?:absolute\s+|very\s+|all-time\s+)?(?:favourite|favorite)\s+(?:things?|food|foods|thing to do)\b)")
_FAVOURITE = re.compile(r"(?i:\bmy\s+fav(?:ou?)rite\s+)([a-z]+(?:\s+[a-z]+)?)\s+(?:is|are|was)\s+([^.!?;,]{2,40})")
#: Verbs whose "I <verb>ed you X" is not a gift ("I asked you a question", "I told you a lie").
_NOT_GIVING = frozenset("asked told showed promised owed wished warned reminded called texted emailed sent taught "
                        "offered bet charged cost saved spared envied forgave paid".split())
_GIFT = tuple(re.compile(rx, re.I) for rx in (
    r"(?:\bi(?:'ve|’ve| have| just)?\s+|(?:^|(?<=[.!?]\s)))(brought|made|got|found|baked|carried|picked|bought|"
    r"[a-z]{3,}ed)\s+(?:you|for you)\s+((?:an?|some|the|this|these|that|those|two|three|\d+)\s+[^.!?;,]{2,50})",
    # "I knitted this scarf for you", "I've made some bread for you"
    r"\bi(?:'ve|’ve| have| just)?\s+(brought|made|got|found|baked|bought|[a-z]{3,}ed)\s+((?:an?|some|the|this|these|"
    r"that|those)\s+[^.!?;,]{2,40}?)\s+for you\b",
    r"\b(?:here's|here is|this is)\s+((?:an?|some|the)\s+[^.!?;,]{2,40}?)\s+for you\b",
    r"\bi want you to have\s+([^.!?;,]{2,50})",
))
_PLACE_AFTER = re.compile(rf"\s+(near|in|at|outside|by|on|just outside|close to)\s+(?:the\s+)?"
                          rf"({_CAP}(?:[ -](?:{_CAP}|on|upon|de|la|le|am|an|der))*)")
_STAYING = (r"(?:staying|living|stopping|boarding|lodging|being looked after|being cared for|being minded|"
            r"being kept|looked after|minded)")
_CARER = tuple(re.compile(rx, re.I) for rx in (
    # "He's staying with my sister", "Biscuit is being looked after by Anna", "my dog is staying with my sister"
    rf"\b(he|she|it|they|my\s+(?:{_RELATIONS})|{_NAME_WORD})\s*(?:'s|’s|\s+is|\s+are|'re|’re)\s+(?:now\s+)?"
    rf"{_STAYING}\s+(?:with|by|at)\s+(my\s+(?:{_RELATIONS})|{_NAME_WORD})",
    # "my sister is looking after him", "Anna's minding Biscuit"
    rf"\b(my\s+(?:{_RELATIONS})|{_NAME_WORD})(?:,\s*((?:(?:mrs|mr|ms|miss|dr)\.?\s+)?{_CAP}),)?"
    rf"\s*(?:(?:'s|’s|\s+is|\s+are)\s+(?:looking after|minding|caring for|keeping|feeding|watching)|"
    rf"\s+(?:looks after|minds|cares for|feeds|watches|walks|keeps an eye on|has))\s+"
    rf"(him|her|it|them|my\s+(?:{_RELATIONS})|{_NAME_WORD})",
))
#: "I came up on the train from Aberdeen", "we drove over from Galway": where the player travelled from
#: is taken for home (a later "I live in X" replaces it).
_CAME_FROM = re.compile(rf"(?i:\b(?:i|we)\s+(?:came|come|travelled|traveled|drove|flew|sailed|walked|cycled|"
                        rf"have come|'ve come|’ve come)(?:\s+(?:up|down|over|across|out|all the way))?"
                        rf"(?:\s+(?:on|by|in)\s+(?:the\s+|a\s+)?[a-z]+)?\s+from)\s+(?:the\s+)?({_CAP}(?:[ -]{_CAP})*)")
#: "I mend clocks for a living": the trade as an agent noun ("clock mender").
_TRADE = re.compile(r"(?i:\b(?:i|i've|i have)\s+(?:always\s+)?)([a-z]+)\s+([a-z]+?)s?\s+for a (?:living|trade)\b")
#: "There's a grey cat waiting at home, Pepper.", "I've got an old dog at home, Rufus.": a pet or person
#: named after the sentence that brings it in.
_NAMED_AFTER = re.compile(rf"(?i:\b(?:there's|there’s|there is|there are|i've got|i’ve got|i have|i've|i’ve|i keep|"
                          rf"we have|we've got|we've|we’ve)\s+(?:an?|two|three|four)\s+)"
                          rf"((?:[a-z]+\s+){{0,2}}[a-z]+)\b[^.!?;,]{{0,40}},\s*({_CAP}(?:\s+and\s+{_CAP})?)\s*(?:[.!]|$)")
_PRONOUNS = frozenset("he she it they him her them".split())
_NOT_COUNTED = frozenset("years months weeks days hours minutes seconds times ways things people ones reasons "
                         "questions words".split())
_FILLER = re.compile(r"^(?:the|a|an|some|my|your)\s+", re.I)


def _tidy(value: str) -> str:
    value = " ".join(value.split()).strip(" '\"")
    value = re.sub(r"\s+(?:too|as well|very much|a lot|so much|though|really|here|tonight|today)$", "", value,
                   flags=re.I)
    return value


def _carers(text: str, found: list[Told], known: Mapping[str, str]) -> list[Told]:
    """Who has the player's pet or person ("He's staying with my sister": ``player_dog.carer =
    with your sister``): the one cared for is a relation named ("my dog"), a name told in ``found``
    ("Biscuit") or ``known`` from earlier lines, or a pronoun for the last relation named before it
    in the line, else (the line names none) the last of ``known``: the one she heard of last."""
    told = [*((e, n) for e, n in known.items()), *((f.entity, f.value) for f in found if f.key == "name")]
    names = [(e, n.lower(), text.lower().find(n.lower())) for e, n in told if e.startswith("player_")]

    def who(phrase: str, at: int) -> str:
        p = phrase.lower().strip()
        if p.startswith("my "):
            return "player_" + " ".join(p.split()[1:]).replace(" ", "_")
        if p in _PRONOUNS:
            before = [e for e, _, pos in names if 0 <= pos < at]
            if before:
                return before[-1]
            # "He's staying with my sister" on its own: the pet or person she heard of last
            earlier = [e for e in known if e.startswith("player_")]
            return earlier[-1] if earlier and not [f for f in found if f.entity.startswith("player_")] else ""
        return next((e for e, n, _ in names if n == p), "")

    def carer(phrase: str, called: str = "") -> str:
        p = " ".join(phrase.split())
        if p.lower().startswith("my "):
            # "my neighbour, Mrs Duncan,": the name said beside the relation is kept with it
            named = " ".join(_cap(w) for w in called.split()) if called and _is_name(called.split()[-1],
                                                                                         need_cap=True) else ""
            return "with your " + p[3:].lower() + (f" {named}" if named else "")  # no comma: not a vocative
        return "" if not _is_name(p, need_cap=True) else "with " + _cap(p)

    out: list[Told] = []
    for i, rx in enumerate(_CARER):
        for m in rx.finditer(text):
            cared, by, called = (m.group(1), m.group(2), "") if i == 0 else (m.group(3), m.group(1), m.group(2) or "")
            entity, value = who(cared, m.start()), carer(by, called)
            relation = p_rel if (p_rel := by.lower().removeprefix("my ").strip()) else ""
            if entity and value and entity != "player_" + relation.replace(" ", "_") \
                    and not _DENIAL.search(m.group(0)):
                out.append(Told(entity, "carer", value, "thing" if entity.removeprefix("player_") in _PETS
                                else "person"))
    return out


def facts_told(text: str, known: Mapping[str, str] | None = None, before: str = "") -> list[Told]:
    """The facts the player's line ``text`` tells about themselves and their people (see the module doc);
    ``known``: the names she already holds, ``player_<relation>`` -> name ("Biscuit" in a later line), in
    the order she heard them (the last is the one a bare "He's staying with my sister" is about);
    ``before``: the player's previous line. Pronouns are resolved first (:func:`game.cast.coref.resolve`,
    within the line and from ``before``): "I've a ferret. He's called Juniper." names the ferret."""
    out: list[Told] = []
    if not text.strip():
        return out
    asking = bool(_ASKING.search(text) or RECALL_DARE.search(text))
    text = resolve(text, before)
    first, full = told_name(text)
    if first:
        out.append(Told("player", "name", first, "person"))
        if full and full != first:
            out.append(Told("player", "full_name", full, "person"))
    if asking:
        return out
    for rx in _AGE:
        m = rx.search(text)
        if m:
            n = parse_number(m.group(1))
            if n is not None and 3 <= n <= 120:
                out.append(Told("player", "age", str(n), "person"))
                break
    m = _HOME.search(text) or _CAME_FROM.search(text)
    if m and not _DENIAL.search(text[:m.start()][-12:]) and m.group(1).lower() not in NOT_NAMES:
        out.append(Told("player", "home", _tidy(m.group(1)), "person"))
    m = _WORK.search(text)
    if m and _WORK_NOUNS.search(m.group(1).split()[-1].lower()) and m.group(1).lower() not in NOT_NAMES:
        out.append(Told("player", "work", m.group(1).lower(), "person"))
    m = _WORK_IS.search(text)
    if m and not any(f.key == "work" for f in out) and m.group(1).lower() not in NOT_NAMES:
        out.append(Told("player", "work", m.group(1).lower(), "person"))
    m = _TRADE.search(text)
    if m and not any(f.key == "work" for f in out) and not _DENIAL.search(m.group(0)):
        verb, thing = m.group(1).lower(), m.group(2).lower()
        out.append(Told("player", "work", f"{thing} {verb + 'r' if verb.endswith('e') else verb + 'er'}", "person"))
    named: set[str] = set()
    for m in _NAMED_AFTER.finditer(text):
        # the person or animal among the first words ("a grey cat waiting"); "a question, Eve" names no one
        rel = next((w for w in m.group(1).lower().split() if w in RELATION_WORDS or kind_of(w) != "thing"), "")
        if rel:
            if rel not in named and _is_name(m.group(2).split()[0], need_cap=True):
                named.add(rel)
                out.append(Told("player_" + rel.replace(" ", "_"), "name", m.group(2),
                                "person" if kind_of(rel) == "person" and rel not in _PETS else "thing"))
    for i, rx in enumerate(_SOMEONE):
        for m in rx.finditer(text):
            rel, name = (m.group(2), m.group(1)) if i == 4 else (m.group(1), m.group(2))
            rel = rel.lower()
            if rel in named or not _is_name(name.split()[0], need_cap=(i > 1 or not re.search(
                    r"(?i)called|named|name is", m.group(0)))):
                continue
            named.add(rel)
            kind: Kind = "person" if rel not in _PETS and kind_of(rel) == "person" else "thing"
            parts = [p for i, p in enumerate(name.split(" and ")) if i == 0 or _is_name(p.split()[0], need_cap=True)]
            value = " and ".join(" ".join(_cap(w.strip("'-")) for w in part.split()) for part in parts)
            out.append(Told("player_" + rel.replace(" ", "_"), "name", value, kind))
    for rx in _COUNT:
        for m in rx.finditer(text):
            n = parse_number(m.group(1))
            noun = _FILLER.sub("", m.group(2).lower()).split()[-1]
            if n is None or noun in _NOT_COUNTED or len(noun) < 3:
                continue
            out.append(Told("player_" + noun, "count", str(n), "thing"))
            where = _PLACE_AFTER.match(text, m.end())
            if where and where.group(2).lower() not in NOT_NAMES:
                out.append(Told("player_" + noun, "place", f"{where.group(1).lower()} {where.group(2)}", "thing"))
    out += _carers(text, out, known or {})
    listed: list[tuple[int, int]] = []
    for m in _LIKES_LISTED.finditer(text):
        what = _tidy(_LIKE_END.sub("", m.group(2) or m.group(3) or ""))
        if what and what.lower().split()[0] not in _NOT_A_THING and not _DENIAL.search(m.group(0)):
            listed.append(m.span())
            against = bool(m.group(1) and _AGAINST.search(m.group(1)))
            out.append(Told("player", "dislikes" if against else "likes", what, "person", many=True))
    for m in _LIKES.finditer(text):
        if any(a <= m.start() < b for a, b in listed):
            continue  # "what I like best is chai": the listed form above read it
        what = _tidy(_LIKE_END.sub("", m.group(2)))
        first_word = what.lower().split()[0] if what else ""
        if not what or first_word in _NOT_A_THING or _DENIAL.search(text[:m.start()][-12:]):
            continue  # "I love you", "nothing beats me at chess", "it's not that I like tea"
        out.append(Told("player", "dislikes" if _AGAINST.search(m.group(1)) else "likes", what, "person",
                        many=True))
    m = _FAVOURITE.search(text)
    if m:
        out.append(Told("player", f"favourite {m.group(1).lower()}", _tidy(m.group(2)), "person"))
    for rx in _GIFT:
        m = rx.search(text)
        if m and not (m.lastindex == 2 and m.group(1).lower() in _NOT_GIVING):
            out.append(Told("player", "gave", _tidy(m.group(m.lastindex or 1)), "person", many=True))
            break
    return out


__all__ = ["FOREIGN_NAME_FORMS", "GIFT_SOURCE", "NOT_NAMES", "NUMBER_WORD", "RECALL_DARE", "RELATION_WORDS",
           "TOLD_SOURCE", "Told", "facts_told", "parse_number", "told_name"]

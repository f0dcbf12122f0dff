"""Grounded answers: a question about something she knows is answered with that fact.

:meth:`Grounding.match` takes the player's (sanitised) line and, when it asks for

- **a fact the player told her** (a :class:`~game.cast.memory.Belief` with source
  "the player said so": name, age, home, work, a relation's or pet's name, how many
  of something, likes, dislikes, favourites, gifts), or
- **a fact of her card** (a structured :class:`~game.cast.card.Fact` with questions),

returns a :class:`Grounded` answer that states the fact, in her voice: the card's
``grounded`` template for that key (``{value}`` and ``{thing}`` filled in), else
:data:`TEMPLATES`; a card fact's own ``say`` line, else its value.

A line asks for a fact when its MiniLM cosine to one of the fact's questions
(:func:`questions_for`: authored per key, ``{thing}`` the relation or counted noun)
is at least ``threshold`` (default :data:`GROUNDING_THRESHOLD`), it speaks in the
same grammatical person as the question ("my dog" is not "your dog"), its question word
asks for the same kind of answer (:func:`asks_for`: "who" is not "how long"), it is a
question (``?`` or a question word first, or "remind me", "tell me"), and for a
relation, pet or count the line names that thing. Nothing is matched for a fact
she has not been told: the model answers, and the verifier keeps it from making one
up.

An ask for the player's name is read by meaning (:meth:`Grounding.asks_name`: MiniLM over
:data:`NAME_ASKS`, which must beat :data:`NOT_NAME_ASKS`), question or not ("Bet you've forgotten my
name."). A first-person question no belief answers may be about the player's own words, kept by
her memory (:meth:`Grounding.own_words`, :mod:`game.cast.ownwords`): said back in her voice, id
``said.<turn>``.

A question in the player's own person that matches no fact well enough may still be
*about* one ("Which treat did I say I'm fond of?" after "I love honey cake"):
:meth:`Grounding.hint` returns the closest told fact at or above :data:`HINT_FLOOR`
(the cosine to its questions or to the fact said as a sentence, :func:`statement`).
The dialogue pipeline puts that fact last in the prompt (:func:`fact_note`, right
before generation, where a small model uses it) and, when the hint's score reaches
:data:`HINT_ENFORCE`, rejects a reply that does not say the value (:func:`says_value`),
regenerates, and at last says the grounded answer itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from game.cast.card import CharacterCard, Fact
from game.cast.coref import kind_of
from game.cast.factsheet import quantities
from game.cast.ownwords import Said, owned_nouns
from game.cast.ownwords import answer as said_answer
from game.cast.similarity import tokens
from game.cast.told import GIFT_SOURCE, RELATION_WORDS, parse_number, told_name
from game.words import opening

#: MiniLM cosine at or above which a line asks for a fact (as ``AUTHORED_THRESHOLD``: paraphrases
#: of these short questions score 0.55-0.9; an unrelated question of the same person at most ~0.5).
GROUNDING_THRESHOLD = 0.6

#: Score (mean of two MiniLM cosines, see :meth:`Grounding.hint`) from which the closest told fact
#: is put last in the prompt. Measured on Eve's bench facts: held-out recall questions score
#: 0.30-0.48 for the right fact ("Which treat did I say I'm fond of?" 0.38 for "I love honey
#: cake", next 0.28); other first-person questions 0.14-0.36 ("What should I do tomorrow?" 0.22).
HINT_FLOOR = 0.3
#: From this score a reply that leaves out the hinted value is regenerated (see the module doc),
#: when the line asks to be reminded and the fact leads the next by HINT_MARGIN.
HINT_ENFORCE = 0.3
HINT_MARGIN = 0.02

#: Ways a player asks her for their own name, in other words than :data:`QUESTIONS` (a line is read as
#: one by meaning: :meth:`Grounding.asks_name`), and lines near them that ask something else.
NAME_ASKS: tuple[str, ...] = (
    "What's my name?", "What do people call me?", "What am I called?", "Do you remember my name?",
    "Have you forgotten my name?", "I bet you've forgotten my name.", "You don't remember my name, do you?",
    "Do you know who I am?", "Who am I?", "What name did I give you?", "Say my name.", "Can you tell me my name?",
    "What did I say I was called?", "What do my friends call me?", "Go on, what's my name?")
NOT_NAME_ASKS: tuple[str, ...] = (
    "What's your name?", "What should I call you?", "Who are you?", "What's my surname?", "What's my full name?",
    "What's my dog called?", "What is my sister's name?", "What do people call you?", "Where am I?",
    "What am I doing here?", "Do you know where I live?", "What do I do for a living?", "How old am I?")
#: MiniLM cosine from which a line asks for the player's name (the best of :data:`NAME_ASKS`, which must
#: also beat the best of :data:`NOT_NAME_ASKS`). Chosen on ``bench/data/told_dev.yaml`` (in-sample).
NAME_ASK_THRESHOLD = 0.6

#: Questions that ask for a told fact, by belief key (``{thing}``: the relation or counted noun).
QUESTIONS: dict[str, tuple[str, ...]] = {
    "name": ("What's my name?", "Do you remember my name?", "Who am I?", "What did I say my name was?"),
    "full_name": ("What's my full name?", "What is my surname?", "What's my last name?"),
    "age": ("How old am I?", "What's my age?", "Do you remember how old I am?", "How old did I say I was?"),
    "home": ("Where do I live?", "Where am I from?", "Where's my home?", "Where did I say I come from?",
             "Do you remember where I live?"),
    "work": ("What do I do for a living?", "What's my job?", "What is my work?", "What did I say I do?"),
    "likes": ("What do I like?", "What do I love?", "What do I enjoy?", "Do you remember what I like?"),
    "dislikes": ("What do I hate?", "What don't I like?", "What can't I stand?", "What do I dislike?"),
    "gave": ("What did I give you?", "What did I bring you?", "What gift did I bring?"),
    "favourite": ("What's my favourite {thing}?", "Do you remember my favourite {thing}?"),
    "relation": ("What's my {thing} called?", "What is my {thing}'s name?", "Do you remember my {thing}'s name?",
                 "Who is my {thing}?", "What did I say my {thing} was called?"),
    "count": ("How many {thing} do I have?", "How many {thing} do I keep?", "Do you remember how many {thing} I have?",
              "How many {thing} did I say?"),
    "place": ("Where do I keep my {thing}?", "Where are my {thing}?", "Where did I say my {thing} were?",
              "Where do my {thing} live?"),
    "carer": ("Who is looking after my {thing}?", "Who's minding my {thing} while I'm away?",
              "Where is my {thing} staying?", "Who has my {thing} while I'm away?", "Where's my {thing} now?"),
}

#: Other words a player uses for a thing they told her of (``thing`` -> words): "Where do I keep my
#: bees?" asks of ``player_hives``. Questions are asked with each (:func:`questions_for`).
THING_WORDS: dict[str, tuple[str, ...]] = {
    "hives": ("bees", "hive", "beehives"), "bees": ("hives", "hive", "beehives"), "dog": ("puppy", "pup"),
    "puppy": ("dog",), "cat": ("kitten",), "kitten": ("cat",), "sheep": ("flock", "ewes"), "boat": ("dinghy",),
    "mum": ("mother", "mom"), "mother": ("mum", "mom"), "dad": ("father",), "father": ("dad",),
    "gran": ("grandmother", "granny"), "grandmother": ("gran", "granny", "grandma"),
}

#: Her answer by key when the card has no ``grounded`` template (``{value}``, ``{thing}``).
TEMPLATES: dict[str, str] = {
    "name": "{value}. You told me yourself.",
    "full_name": "{value}. You gave me the whole of it.",
    "age": "{value}, you said.",
    "home": "{value}. That's what you told me.",
    "work": "You said you're a {value}.",
    "likes": "{value}. You told me so.",
    "dislikes": "{value}. You said you couldn't abide it.",
    "gave": "{value}. I've kept it.",
    "favourite": "{value}, you said.",
    "relation": "{value}. Your {thing}, you told me.",
    "count": "{value} {thing}, you said.",
    "place": "{value}, you said.",
    "carer": "{value}, you said.",
}

#: A told fact said as the player said it (``{value}``, ``{thing}``), for :meth:`Grounding.hint`.
STATEMENTS: dict[str, str] = {
    "name": "My name is {value}.", "full_name": "My full name is {value}.", "age": "I am {value} years old.",
    "home": "I live in {value}.", "work": "I work as a {value}.", "likes": "I love {value}.",
    "dislikes": "I can't stand {value}.", "gave": "I gave you {value}.",
    "favourite": "My favourite {thing} is {value}.",
    "relation": "My {thing} is called {value}.", "count": "I have {value} {thing}.",
    "place": "I keep my {thing} {value}.", "carer": "My {thing} is staying {value}.",
}

#: Her beliefs as ``(entity, key, value, source)``.
Beliefs = Sequence[tuple[str, str, str, str]]

_ASK = re.compile(r"\?|^\s*(?:what|who|where|when|how|which|why|do|did|does|is|are|can|could|would|remind|tell|"
                  r"say|remember|recall|guess)\b|\bremind me\b|\btell me\b|\bdo you (?:remember|recall|know)\b", re.I)
_RECALL = re.compile(r"\b(?:did i (?:say|tell|mention|give|bring)|i (?:said|told|mentioned)|remember|recall|"
                     r"again|you know (?:who|what|where|how)|do you know my)\b", re.I)
_FIRST = frozenset("i me my mine myself i'm i've i'd we our us we've we're".split())
_SECOND = frozenset("you your yours yourself you're you've".split())


#: Frames round a question that name the asker or the one asked but not whose fact it is: "May I ask
#: how old you are?" asks her age; "Do you remember how old I am?" asks the player's.
_FRAME = re.compile(r"(?i)^\s*(?:(?:may|can|could|might) i (?:ask|know)(?: you)?|i(?:'d| would) like to know|"
                    r"i wonder(?:ed)?|let me ask(?: you)?|tell me|do you (?:remember|recall|know)|"
                    r"can you (?:remember|recall|tell me)|would you tell me)\b[\s,]*")


#: Polite asides anywhere in a question that name the asker, not whose fact it is ("What age are you,
#: if you don't mind me asking?", "Where did you grow up, if I may ask?").
_ASIDE = re.compile(r"(?i)\b(?:if you (?:don't|do not|don’t) mind(?: (?:me|my) asking)?|if i (?:may|might|can) "
                    r"(?:ask|say so)|if i may|if you'll forgive me asking|(?:i'm|i am) (?:just )?curious|"
                    r"i was wondering|i've always wondered)\b")


def _person(text: str) -> tuple[bool, bool]:
    """Whether ``text`` asks of the player (first person) and of her (second person), once a frame
    that names only the asker or the one asked (:data:`_FRAME`) and polite asides (:data:`_ASIDE`)
    are taken off."""
    toks = set(tokens(_ASIDE.sub(" ", _FRAME.sub("", text, count=1))))
    return bool(toks & _FIRST), bool(toks & _SECOND)


#: Things of the player's own that a question may name without a told relation ("my name", "my age").
_OWN = frozenset("name surname age home job work trade living birthday name's".split())
_MY_THING = re.compile(r"(?i)\bmy\s+(?:[a-z]+\s+)?([a-z]+)")
#: The first two words after "my" ("my dog for me": "dog", not only "for").
_MY_WORDS = re.compile(r"(?i)\bmy\s+([a-z]+)(?:\s+([a-z]+))?")


_WH_KIND = {"who": "who", "whom": "who", "whose": "who", "when": "when", "where": "where", "why": "why"}
_AMOUNT = frozenset("long many much old far often".split())


def asks_for(text: str) -> str:
    """The kind of answer the first question word of ``text`` asks for: ``who``, ``when``, ``where``,
    ``why``, ``amount`` ("how long / many / much / old / far / often"), ``how``; ``""`` for "what",
    "which" (they may ask for anything) or no question word."""
    toks = tokens(text)
    for i, t in enumerate(toks):
        if t in _WH_KIND:
            return _WH_KIND[t]
        if t == "how":
            return "amount" if toks[i + 1:i + 2] and toks[i + 1] in _AMOUNT else "how"
        if t in ("what", "which"):
            return ""
    return ""


@dataclass(frozen=True)
class Grounded:
    """A grounded answer: ``text`` to say, the fact's ``id`` (``told.<entity>.<key>`` or ``card.<id>``),
    its ``value``, the question it matched and the cosine ``score``."""

    id: str
    text: str
    value: str
    question: str
    score: float


@dataclass(frozen=True)
class Hint:
    """The told fact a question is probably about (:meth:`Grounding.hint`): the ``answer`` she
    would give, the fact said as the player said it (``statement``), and whether a reply
    must say it (``enforce``)."""

    answer: Grounded
    statement: str
    enforce: bool


def _key_group(entity: str, key: str) -> tuple[str, str]:
    """``(question group, thing)`` for a belief."""
    if entity == "player":
        if key.startswith("favourite "):
            return "favourite", key.removeprefix("favourite ")
        return key, ""
    thing = entity.removeprefix("player_").replace("_", " ")
    return (key if key in ("count", "place", "carer") else "relation"), thing


def told_by_player(source: str) -> bool:
    """Whether a belief of ``source`` is the player's: told by them, or a thing they gave her."""
    return "player said" in source or source == GIFT_SOURCE


def questions_for(entity: str, key: str, name: str = "") -> tuple[str, ...]:
    """The questions that ask for belief ``entity.key`` (:data:`QUESTIONS`), with the thing's other
    words (:data:`THING_WORDS`) and, for where a pet or person is, its ``name`` ("Who is looking
    after Biscuit?")."""
    group, thing = _key_group(entity, key)
    things = (thing, *THING_WORDS.get(thing, ())) if thing else ("",)
    out = [q.format(thing=t) for t in things for q in QUESTIONS.get(group, ())]
    if name and group == "carer":
        out += [q.replace("my {thing}", name).format(thing=thing) for q in QUESTIONS[group]]
        out += [f"Who is looking after {name}?", f"Where is {name}?"]
    return tuple(dict.fromkeys(out))


def statement(entity: str, key: str, value: str) -> str:
    """Told fact ``entity.key = value`` as the player would say it ("I love honey cake.")."""
    group, thing = _key_group(entity, key)
    return STATEMENTS.get(group, "My {thing} " + key + " is {value}.").format(value=_listed(value), thing=thing)


def fact_note(hint: Hint) -> str:
    """The line put last in the prompt for a hinted fact: what the player told her, to say back."""
    return (f"The player told you earlier, in their words: \"{hint.statement}\" If they are asking about it, "
            f"answer with exactly that ({hint.answer.value}), in one or two sentences, in your own voice.")


_STOP = frozenset("a an the of and or my your i you to in on is are was were it its near at by with outside "
                  "from close just".split())


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry its meaning (not articles, pronouns, prepositions)."""
    return [w for w in tokens(text) if w not in _STOP]


def says_value(text: str, value: str) -> bool:
    """Whether ``text`` says ``value``: a number as digits or words, else one of its content words
    (``"honey cake"`` is said by "the honey cake" and by "honey"); a list (``a; b``) by any item."""
    said = set(tokens(text))
    numbers = {q.value for q in quantities(text)}
    for item in (v for v in value.split("; ") if v.strip()):
        n = parse_number(item)
        if n is not None and n in numbers:
            return True
        words = content_words(item)
        if any(w in said or w + "s" in said or w.removesuffix("s") in said for w in words):
            return True
    return False


def _listed(value: str) -> str:
    items = [v for v in value.split("; ") if v]
    if len(items) <= 1:
        return value
    return ", ".join(items[:-1]) + " and " + items[-1]


def told_text(templates: Mapping[str, str], entity: str, key: str, value: str) -> str:
    """Told fact ``entity.key = value`` said in her voice: ``templates`` by key group (``name``,
    ``relation``, ``count``...; :data:`TEMPLATES` where it has none), ``{value}`` and ``{thing}`` filled
    in (a list value as "a, b and c"), the first letter capitalised."""
    group, thing = _key_group(entity, key)
    said = templates.get(group, TEMPLATES.get(group, "{value}.")).format(value=_listed(value), thing=thing)
    return opening(said)


def told_group(entity: str, key: str) -> str:
    """The key group of belief ``entity.key`` (``player_dog.name`` -> ``relation``; :data:`QUESTIONS`' keys)."""
    return _key_group(entity, key)[0]


#: Words by which a first-person question says which told fact it asks for (:func:`recall_groups`),
#: by :data:`QUESTIONS` group: what the player's own telling of it would use ("I mend clocks for a
#: living" -> "What's my trade?"; "I'm fond of cullen skink" -> "What's the soup I'm so fond of?").
RECALL_CUES: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in {
    "full_name": "surname surnames",
    "name": "name named",
    "age": "old age aged birthday",
    "home": "live lived living home hometown city town country village from",
    "work": "job work trade living profession occupation craft career",
    "likes": "like love fond enjoy adore treat beats liked loved enjoyed adored",
    "dislikes": "hate abide bear stand loathe detest dislike stomach hated loathed detested disliked",
    "gave": "gave brought carried present gift",
    "favourite": "favourite favorite best",
    "relation": "name named called",
    "carer": "looking minding feeding caring staying watching keeping sitting",
    "count": "many number",
    "place": "where keep kept",
}.items()}
#: The groups of the player's own facts (no thing of theirs): a line whose words ask for one of them
#: is not answered with another (:meth:`Grounding.match`).
OWN_GROUPS = frozenset({"name", "full_name", "age", "home", "work"})
#: Cue phrases that need more than one word ("full name", "did I bring"; "who am I").
_CUE_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(rx, re.I), group) for rx, group in (
    (r"\b(?:full|last|family|second|whole)\s+name\b", "full_name"),
    (r"\bwho am i\b|\bwhat am i called\b", "name"),
    (r"\bdid i\s+(?:\w+\s+)?(?:give|bring|carry|make|hand)\b", "gave"),
    # "what did I knit for you?", "what did I carve you?": a thing made or brought for her
    (r"\bdid (?:i|we)\s+(?!(?:tell|ask|say|show|promise|call|text|warn|remind|teach|owe|mean)\b)[a-z]+\s+"
     r"(?:for\s+)?you\b",
     "gave"),
    (r"\bwhat (?:do|did) i (?:say i )?do\b", "work"),
    (r"\blook(?:s|ing)? after\b|\bwho has\b|\bwho's got\b", "carer"),
))
#: "like" that compares, not likes ("Do I look like I can swim?").
_AS_LIKE = re.compile(r"(?i)\b(?:looks?|looked|sounds?|seems?|feels?|just|things|something|anything)\s+like\b")
#: A like said with a negation is a dislike asked for ("What don't I like?").
_NEGATED_LIKE = re.compile(r"(?:n't|n’t|\bnot|\bnever)\s+(?:\w+\s+)?(?:like|love|enjoy|stand|bear|abide)\b", re.I)
#: The telling round a recall question ("did I tell you", "do you remember"): the "you" in it is
#: the one told, not whom the question is about.
_TOLD_FRAME = re.compile(r"(?i)\b(?:(?:do|did|can|could|would|will) you\s+(?:still\s+)?(?:remember|recall|know|tell me|"
                         r"name|say)|you (?:remember|recall|know)|(?:tell|told|say to|said to|mention(?:ed)? to|"
                         r"give|gave|bring|brought|carry|carried|make|made|hand|handed|show|showed) you|"
                         r"remind me|tell me|(?<=\bdid i )(?!(?:tell|ask|say|show|promise|call|text|warn|remind|teach|"
                         r"owe|mean)\b)[a-z]+\s+(?:(?:up|out|together|over)\s+)?(?:for\s+)?you)\b")
_THIRD = frozenset("he she him her his hers they them".split())  # not "it": "what is it I said..."
#: A line that asks the name of someone else: "my friend's name", "what's my dog called", "her name".
_THEIR_NAME = re.compile(r"(?i)\bname\s+(?:my|our)\s+(?!self\b)[a-z]+|"
                         r"\bmy\s+(?:[a-z]+\s+)?(?!name\b)([a-z]+)(?:'s|’s)\s+names?\b|\bmy\s+(?:[a-z]+\s+)?"
                         r"(?!name\b|names\b)[a-z]+\s+(?:is\s+|are\s+|was\s+)?(?:called|named)\b|"
                         r"\b(?:his|her|their|its)\s+names?\b|\bcalled my\s+[a-z]+")


def asks_anothers_name(text: str) -> bool:
    """Whether ``text`` asks or speaks of the name of someone other than the player and her ("What's
    my daughter's name?", "what's my dog called", "her name")."""
    return bool(_THEIR_NAME.search(text))


#: A question word, or a request to be told (:meth:`Grounding.own_words` answers only these).
_WH = re.compile(r"(?i)\b(?:what|which|who|whom|where|when|how)\b|\bremind me\b|\btell me\b")
#: A question asking what to do, not what was said ("What should I do?", "Where can I sleep?").
_ADVICE = re.compile(r"(?i)\b(?:should|shall|could|can|may|might|must)\s+(?:i|we)\b(?!\s+(?:never|not|ever)\b)")
_FIRST_OWN = frozenset("i me my mine myself i'm i've i'd we our we've we're".split())


def recall_groups(text: str) -> set[str]:
    """The :data:`QUESTIONS` groups a question's words ask for (:data:`RECALL_CUES`, :data:`_CUE_PHRASES`):
    "What's my surname?" -> ``{"full_name"}``; "What is it I said I couldn't bear?" -> ``{"dislikes"}``."""
    words = {w.removesuffix("'s") for w in tokens(_AS_LIKE.sub(" ", text))}
    groups = {g for g, cues in RECALL_CUES.items() if words & cues}
    groups |= {g for rx, g in _CUE_PHRASES if rx.search(text)}
    if "full_name" in groups:
        groups.discard("name")
    if _NEGATED_LIKE.search(text):
        groups.discard("likes")
        groups.add("dislikes")
    return groups


def _names_untold(text: str, beliefs: Beliefs) -> bool:
    """Whether ``text`` names a relation or pet of the player's ("my cat") she was told nothing of."""
    told = {w for e, _, _, src in beliefs if e.startswith("player_") and told_by_player(src)
            for thing in [e.removeprefix("player_").replace("_", " ")]
            for t in tokens(thing) for w in (t, t.removesuffix("s"), *THING_WORDS.get(thing, ()))}
    return any(m.group(1).lower() not in _OWN and m.group(1).lower().removesuffix("s") not in told
               and m.group(1).lower() in RELATION_WORDS for m in _MY_THING.finditer(text)) or any(
        w not in _OWN and w.removesuffix("s") not in told and w in RELATION_WORDS
        for m in _MY_WORDS.finditer(text) for w in (m.group(1).lower(), (m.group(2) or "").lower()))


class Grounding:
    """Finds the fact a question asks for and says it (see the module doc).

    Args:
        card: her card (structured ``facts``, ``grounded`` templates).
        embedder: ``encode(list[str]) -> (N, D)`` unit vectors (MiniLM).
        threshold: cosine needed.
        said: ``said() ->`` the player's own words (:class:`~game.cast.ownwords.Said`) for
            :meth:`own_words` (``None``: none kept).
    """

    def __init__(self, card: CharacterCard, embedder: Any, threshold: float = GROUNDING_THRESHOLD,
                 said: Callable[[], Sequence[Said]] | None = None) -> None:
        self.card = card
        #: ``said() ->`` the player's own words she keeps (:attr:`game.cast.memory.Memory.said`)
        self.said = said
        self.embedder = embedder
        self.threshold = threshold
        self.templates: Mapping[str, str] = {**TEMPLATES, **card.grounded}
        self._vectors: dict[str, np.ndarray] = {}

    def _vecs(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            for t, v in zip(missing, np.asarray(self.embedder.encode(missing), np.float32), strict=True):
                self._vectors[t] = v
        return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)

    def _candidates(self, beliefs: Beliefs) -> list[tuple[str, str, str, Fact | None]]:
        """``(id, question, value, card fact or None)`` rows."""
        rows: list[tuple[str, str, str, Fact | None]] = []
        names = {e: v for e, k, v, src in beliefs if k == "name" and told_by_player(src)}
        for entity, key, value, source in beliefs:
            if not told_by_player(source) or not value:
                continue
            if not (entity == "player" or entity.startswith("player_")):
                continue
            for q in questions_for(entity, key, names.get(entity, "")):
                rows.append((f"told.{entity}.{key}", q, value, None))
        for fact in self.card.facts:
            for q in fact.questions:
                rows.append((f"card.{fact.id}", q, fact.value, fact))
        return rows

    def match(self, text: str, beliefs: Beliefs = (), threshold: float | None = None) -> Grounded | None:
        """The grounded answer to ``text``, or ``None`` when it asks for no fact she holds.

        Args:
            text: the player's line (sanitised).
            beliefs: her beliefs now, ``(entity, key, value, source)``
                (:attr:`game.cast.guard.PersonaFacts.beliefs`).
            threshold: cosine needed (default: :attr:`threshold`).
        """
        if not text.strip():
            return None
        name = next((v for e, k, v, src in beliefs if (e, k) == ("player", "name") and told_by_player(src) and v), "")
        if name and (asked := self.asks_name(text)):
            return Grounded("told.player.name", told_text(self.templates, "player", "name", name), name, "", asked)
        if not _ASK.search(text):
            return None
        rows = self._candidates(beliefs)
        if not rows:
            return self.own_words(text)
        view = _person(text)
        asks = asks_for(text)
        words = {t.removesuffix("'s") for t in tokens(text)}
        # the things the player told her of ("dog", "hives") that this line names, by a word for it
        # ("bees") or its name ("Biscuit"): then it asks about one of them
        pet_names = {e.removeprefix("player_").replace("_", " "): v.lower() for e, k, v, src in beliefs
                     if k == "name" and e.startswith("player_") and told_by_player(src)}
        named = {t for fid, _, _, fact in rows if fact is None
                 for thing in [_key_group(*fid.split(".")[1:3])[1]]
                 for t in tokens(thing)
                 if any(w in words or w + "s" in words or w.removesuffix("s") in words
                        for w in (t, *THING_WORDS.get(thing, ())))
                 or (thing in pet_names and set(tokens(pet_names[thing])) <= words)}
        unknown_thing = _names_untold(text, beliefs)
        own = recall_groups(text) & OWN_GROUPS  # "What's my surname?" is not "What's my name?"
        q = self._vecs([text])[0]
        sims = self._vecs([r[1] for r in rows]) @ q
        for i in np.argsort(-sims):
            fid, question, value, fact = rows[int(i)]
            score = float(sims[int(i)])
            if score < (self.threshold if threshold is None else threshold):
                return self.recall(text, beliefs) or self.own_words(text)
            if _person(question) != view:
                continue
            if asks and asks_for(question) and asks_for(question) != asks:
                continue  # "Who taught you to keep the light?" is not "How long have you kept the light?"
            if fact is None:
                entity, key = fid.split(".")[1:3]
                group, thing = _key_group(entity, key)
                if thing and not (set(tokens(thing)) & named):
                    continue
                if not thing and (named or unknown_thing):
                    continue  # "what my cat is called" with no cat told is not the player's name
                if not thing and own and group not in own:
                    continue  # the line's words ask for another of the player's own facts
                said = told_text(self.templates, entity, key, value)
            else:
                said = fact.say or f"{value}."
            said = opening(said)
            return Grounded(fid, said, value, question, score)
        return self.recall(text, beliefs) or self.own_words(text)

    def asks_name(self, text: str) -> float:
        """The MiniLM cosine by which ``text`` asks for the player's own name, else 0.0.

        Read by meaning: its best cosine to :data:`NAME_ASKS` must reach :data:`NAME_ASK_THRESHOLD`
        and beat its best to :data:`NOT_NAME_ASKS`; it need not be a question ("Bet you've forgotten
        my name."). Not a line that speaks of the player nowhere, tells a name ("I'm Tomas"), or asks
        the name of someone of theirs or a third person ("my friend's name", "what's her name")."""
        if not _person(text)[0] or told_name(text)[0] or asks_anothers_name(text):
            return 0.0
        others = [n for n in owned_nouns(text) if kind_of(n) != "thing" or n in RELATION_WORDS]
        if others and "call me" not in text.lower():
            return 0.0  # "Can you name my cat for me?" asks another's name
        q = self._vecs([text])[0]
        near = float(np.max(self._vecs(list(NAME_ASKS)) @ q))
        other = float(np.max(self._vecs(list(NOT_NAME_ASKS)) @ q))
        return near if near >= NAME_ASK_THRESHOLD and near > other else 0.0

    def own_words(self, text: str) -> Grounded | None:
        """The player's own words a question about them asks for, said back
        (:func:`game.cast.ownwords.answer`), or ``None``.

        Only for a question (:data:`_ASK`) with a question word or "remind me" / "tell me", about the
        player (after the telling round, :data:`_TOLD_FRAME`, is taken off: "I", "my") and not about
        her ("you", "your"), and not asking what to do ("should I", "can I"). Its id is
        ``said.<turn>``; ``question`` holds the sentence said back."""
        if self.said is None or not text.strip() or not _ASK.search(text) or not _WH.search(text) \
                or _ADVICE.search(text):
            return None
        bare = set(tokens(_ASIDE.sub(" ", _TOLD_FRAME.sub(" ", text))))
        if not bare & _FIRST_OWN or bare & _SECOND:
            return None
        found = said_answer(text, self.said(), self._vecs)
        if found is None:
            return None
        return Grounded(f"said.{found.said.turn}", found.text, found.value, found.said.text, found.score)

    def recall(self, text: str, beliefs: Beliefs = ()) -> Grounded | None:
        """The told fact a first-person question asks back by its words, or ``None``.

        For a question no fact's questions match well enough (:meth:`match` falls back to this):
        once the telling round it is taken off ("did I tell you", "do you remember", "remind me":
        :data:`_TOLD_FRAME`), the line must ask (:data:`_ASK`), speak of the player ("I", "my") and not
        of her ("you"). The facts it may ask for are those of the things it names (by a word for
        the thing or its name; a bare "her" or "him" is the pet or person she was told of last),
        else the player's own; of those, the ones whose group its words ask for
        (:func:`recall_groups`: "surname" asks for the full name, "minding" for who has a pet, "couldn't
        bear" for a dislike). Of several, the best by the score of :meth:`hint`.
        """
        if not text.strip() or not _ASK.search(text):
            return None
        bare = set(tokens(_ASIDE.sub(" ", _TOLD_FRAME.sub(" ", text))))
        if not bare & _FIRST_OWN or bare & _SECOND or _names_untold(text, beliefs):
            return None  # not the player's, hers, or a pet of theirs she was never told of
        facts = [(e, k, v) for e, k, v, src in beliefs if told_by_player(src) and v
                 and (e == "player" or e.startswith("player_"))]
        if not facts:
            return None
        words = {w.removesuffix("'s") for w in tokens(text)}
        names = {e: v for e, k, v in facts if k == "name" and e != "player"}

        def named(entity: str) -> bool:
            thing = entity.removeprefix("player_").replace("_", " ")
            said = (*tokens(thing), *THING_WORDS.get(thing, ()))
            return any(w in words or w + "s" in words or w.removesuffix("s") in words for w in said) or \
                bool(entity in names and set(tokens(names[entity])) <= words)

        things = [e for e in dict.fromkeys(e for e, _, _ in facts) if e != "player" and named(e)]
        if not things and words & _THIRD:
            # "who did I say was feeding her?": the pet or person she was told of last
            things = [e for e in dict.fromkeys(e for e, k, _ in facts if k == "name") if e != "player"][-1:]
        asked = recall_groups(text)
        if things:
            pool = [f for f in facts if f[0] in things]
        else:
            pool = [f for f in facts if f[0] == "player"
                    and (_key_group(f[0], f[1])[0] != "favourite" or named("player_" + f[1].split()[-1]))]
        if "favourite" in asked:
            asked = asked | {"likes"}  # "What are my favourite things?" asks what they said they love
        pool = [f for f in pool if _key_group(f[0], f[1])[0] in asked]
        if not pool:
            return None
        q = self._vecs([text])[0]
        best = max(pool, key=lambda f: float(np.max(self._vecs(list(questions_for(f[0], f[1]))) @ q))
                   + float(self._vecs([statement(*f)])[0] @ q))
        entity, key, value = best
        score = (float(np.max(self._vecs(list(questions_for(entity, key))) @ q))
                 + float(self._vecs([statement(entity, key, value)])[0] @ q)) / 2
        return Grounded(f"told.{entity}.{key}", told_text(self.templates, entity, key, value), value, "", score)

    def hint(self, text: str, beliefs: Beliefs = (), floor: float = HINT_FLOOR) -> Hint | None:
        """The told fact a first-person question is most likely about, or ``None`` (see the module doc).

        A fact's score is the mean of two MiniLM cosines of ``text``: to the closest of its
        questions (:func:`questions_for`) and to the fact said as a sentence (:func:`statement`);
        the best fact at or above ``floor`` is the hint. Only facts the player told, only lines
        that ask (:data:`_ASK`) and speak of the player ("I", "my"). ``enforce`` is set when the
        line also asks to be reminded ("did I say", "I told you", "remember", "again"), the
        score reaches :data:`HINT_ENFORCE` and leads the next fact's by :data:`HINT_MARGIN`.
        """
        if not text.strip() or not _ASK.search(text) or not _person(text)[0]:
            return None
        facts = [(e, k, v) for e, k, v, src in beliefs if told_by_player(src) and v
                 and (e == "player" or e.startswith("player_"))]
        if not facts:
            return None
        q = self._vecs([text])[0]
        scored = []
        for entity, key, value in facts:
            said = statement(entity, key, value)
            score = (float(np.max(self._vecs(list(questions_for(entity, key))) @ q))
                     + float(self._vecs([said])[0] @ q)) / 2
            scored.append((score, entity, key, value))
        scored.sort(key=lambda r: -r[0])
        score, entity, key, value = scored[0]
        if score < floor:
            return None
        second = scored[1][0] if len(scored) > 1 else -1.0
        enforce = bool(_RECALL.search(text)) and score >= HINT_ENFORCE and score - second >= HINT_MARGIN
        answer = told_text(self.templates, entity, key, value)
        return Hint(Grounded(f"told.{entity}.{key}", answer, value, "", score),
                    statement(entity, key, value), enforce)


__all__ = ["GROUNDING_THRESHOLD", "HINT_ENFORCE", "HINT_FLOOR", "HINT_MARGIN", "NAME_ASKS", "NAME_ASK_THRESHOLD",
           "NOT_NAME_ASKS", "OWN_GROUPS", "QUESTIONS", "RECALL_CUES",
           "STATEMENTS", "asks_anothers_name",
           "TEMPLATES",
           "THING_WORDS", "Grounded", "Grounding", "Hint",
           "asks_for", "content_words", "fact_note", "questions_for", "recall_groups", "says_value",
           "statement",
           "told_by_player", "told_group", "told_text"]

"""Free text to an intent with ids, by meaning, or an honest "I did not understand".

The order (DESIGN.md, the path of one turn):

1. **Negation and undo first** (:mod:`game.story.negation`): "undo", "never
   mind" -> :class:`NotUnderstood` with reason ``undo``; "don't offer the leaf"
   -> reason ``negated``, nothing is done; "not the leaf, the kite" -> only "the
   kite" goes on, and anything the negated clause named is excluded.
2. **Typos** are corrected against the story's lexicon and the candidates' words
   (:meth:`game.inputs.slots.Lexicon.correct`).
3. **Meaning**: MiniLM sentence embeddings (all-MiniLM-L6-v2, 384-d, unit
   vectors; Reimers & Gurevych 2019, loaded once by
   :func:`game.models.embedder.get_embedder`) rank the candidates: the scene's
   available authored choices (their text) and actions (their examples and
   keywords), a gift of something the player holds, a gift of a new thing
   ("give her a lantern", :func:`new_gift_noun`), and the world-edit
   vocabulary (:data:`game.inputs.edits.EDITS`). A candidate's similarity is
   the largest cosine between the line and any of its example sentences.
4. **Slots** (:mod:`game.inputs.slots`) fill the parameters and adjust the
   ranking, since embeddings cannot tell the kite from the leaf or a blue scarf
   from a red one: a candidate about the thing the line names gains
   :data:`THING_MATCH`; one about another thing loses :data:`THING_CONFLICT`; one
   about a thing a negated clause named loses :data:`EXCLUDED`; an edit whose
   parameters the line fills gains :data:`SLOTS_FULL`, one missing them loses
   :data:`SLOTS_MISSING`; an edit whose line has none of its cue words
   (:data:`game.inputs.edits.CUES`: "remove", "paint"...) loses :data:`NO_CUE`; a
   choice, action or gift whose words do not explain a colour, size or place the
   line names ("make the kite green" is not "offer the kite") loses
   :data:`UNEXPLAINED`, and so does a choice or action that does not say the new
   thing a gift line names, or dressing someone in it with no wear word; an
   action whose keyword is said gains :data:`KEYWORD`.
5. **Decision** (:class:`Thresholds`): the top candidate is accepted when its
   score is at least ``accept`` and its margin over the best candidate that
   would do something else is at least ``margin``. When the top two are both at
   least ``clarify`` and closer than ``margin`` the game asks back ("The kite or
   the leaf?", a :class:`Clarify` with the options); an edit whose kind is clear
   but whose value is not asks for the value ("Rain, snow, fog, or clear
   skies?"). Anything else is :class:`NotUnderstood`, and nothing changes.

The thresholds were set on ``tests/data/intents_eval.jsonl`` (``bench/intents.py``
prints the figures; ``docs/inputs.md`` records them). Without the embedder
(``embedder=None`` and the model package missing) a bag-of-character-trigrams
similarity stands in (:class:`LexicalEmbedder`), with the same thresholds; it is
a fallback, measured in the bench, not the design.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from game.inputs.edits import EDITS, VALUE_EDITS, VALUE_WORDS, cued, describe, find_value, params_for
from game.inputs.phrasebook import phrasebook
from game.inputs.slots import COLOURS, NOT_NOUNS, PRONOUNS, SIZES, VERBS, WEARABLES, Lexicon, Slots, parse
from game.locale import UI, ui
from game.state import Choose, GameState, Give, Instruct, Say
from game.story.negation import Polarity, analyse, normalise
from game.story.runtime import StoryRuntime
from game.story.schema import Action, Choice
from game.story.story import Story
from game.story.strings import language
from game.words import opening

#: Score adjustments from the slot parser (cosine units).
THING_MATCH = 0.12
THING_CONFLICT = 0.30
EXCLUDED = 1.0
SLOTS_FULL = 0.10
SLOTS_MISSING = 0.15
KEYWORD = 0.15
NO_CUE = 0.20
UNEXPLAINED = 0.25
#: Words that make a line a gift.
GIVE_VERBS = ("give", "hand", "offer", "pass", "present", "gift", "hold out", "feed", "toss", "throw", "show",
              r"let (?:it|him|her|them|the \w+) have", "take the", "take my", "take this", "have the", "have my")
#: Words that name no particular thing ("offer it something"): a gift of one asks which.
VAGUE = ("something", "anything", "one of my things", "a gift", "a present", "one of them", "stuff", "a thing")
_QUESTION = re.compile(r"^(why|what|who|whom|whose|when|where|how|which|is|are|am|was|were|does|did|do)\b")
_POLITE = re.compile(r"^(can|could|would|will|may|might|shall)\s+(you|we|i)\b")
_YES = frozenset({"yes", "yeah", "yep", "sure", "ok", "okay", "right", "correct", "that one", "do it", "please"})
_NO = frozenset({"no", "nope", "neither", "none", "nah", "cancel", "no thanks", "neither of them"})
_ORDINALS = {"1": 0, "one": 0, "first": 0, "former": 0, "2": 1, "two": 1, "second": 1, "latter": 1,
             "3": 2, "three": 2, "third": 2}
_WORD = re.compile(r"[a-z0-9']+")
#: Words that make a gift of a thing a ``look`` edit (dressing someone) rather than a gift.
_WEAR = re.compile(r"\b(?:wear|wears|wearing|dress|dressed|tie|put|around|round|on)\b")

#: What a line of free text can mean (a subset of :data:`game.state.AnyIntent`).
TextIntent = Choose | Give | Say | Instruct


def new_gift_noun(body: str, lex: Lexicon) -> str:
    """The thing a gift line asks for that the player does not hold ("give her *a lantern*"), or ``""``.

    The line must introduce it as something new: ``a`` / ``an`` / ``some``, then up to
    two words before its head noun ("a small brass lantern" -> ``lantern``); "a cup of
    tea" -> ``cup of tea``. "my toy" or "the pebble" name something the player should
    already hold, so they are not new gifts. The thing is not a story item, tag,
    character or object (those are gifts of what is held), an edit value, a colour or
    size, or a wearable (wearables are the ``look`` edit: "give her a scarf"); a head
    followed by a verb ("a friendly wave") is no thing at all. A place's name may be a
    gift ("a lantern" in a story with a Lantern Room).
    """
    for m in re.finditer(r"\b(?:a|an|some)\s+([a-z' -]+)", body):
        words = _WORD.findall(m.group(1))
        run = _noun_run(words)
        if not run:
            continue
        head = run[-1]
        if head in COLOURS or head in SIZES or head in WEARABLES or head in VALUE_WORDS:
            continue
        rest = words[len(run):]
        if rest[:1] == ["of"]:  # "a cup of tea", "a bunch of flowers"
            tail = _noun_run(rest[1:])
            if tail:
                run, head = run + ["of", *tail], f"{head} of {tail[-1]}"
        if lex.find(" ".join(run), ("item", "tag", "character", "object")):
            continue
        return head
    return ""


def _noun_run(words: Sequence[str]) -> list[str]:
    """The words of a noun phrase at the start of ``words`` (at most 3), ``[]`` if a verb ends it."""
    run: list[str] = []
    for w in words:
        if w in NOT_NOUNS or w in PRONOUNS:
            break
        if w in VERBS:
            return []
        run.append(w)
    return run[:3]


class Embedder(Protocol):
    """What the resolver needs from an embedder: unit vectors ``(N, D)`` float32 for N texts."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class LexicalEmbedder:
    """Fallback embedder: hashed character trigrams, L2-normalised, 512-d. No model, no meaning."""

    dim = 512

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 512)`` float32 unit vectors (zero vector for empty text)."""
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            t = f"  {normalise(text)}  "
            for j in range(len(t) - 2):
                h = int.from_bytes(hashlib.blake2b(t[j:j + 3].encode(), digest_size=4).digest(), "little")
                out[i, h % self.dim] += 1.0
            n = float(np.linalg.norm(out[i]))
            if n > 0:
                out[i] /= n
        return out


@dataclass(frozen=True)
class Thresholds:
    """When to accept, ask back, or give up (cosine units, after slot adjustments).

    Attributes:
        accept: the top score must reach this to be accepted.
        margin: ...and beat the best different candidate by this much.
        clarify: two candidates at least this good and closer than ``margin`` -> ask back.
    """

    accept: float = 0.55
    margin: float = 0.08
    clarify: float = 0.47


@dataclass(frozen=True)
class Candidate:
    """One thing the line might mean.

    Attributes:
        key: unique key (``choice:offer_kite``, ``action:sing``, ``give:kite:creature``, ``edit:weather``).
        kind: ``choice``, ``action``, ``give`` or ``edit``.
        ref: the choice id, action id, edit name, or ``item:character`` for gifts.
        label: how a question names it ("offer the kite").
        examples: sentences compared with the line.
        things: item / object ids it is about.
        keywords: words that mark it outright (actions).
    """

    key: str
    kind: Literal["choice", "action", "give", "edit"]
    ref: str
    label: str
    examples: tuple[str, ...]
    things: frozenset[str] = frozenset()
    keywords: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Option:
    """A way a :class:`Clarify` may be answered: its label, the intent, its score."""

    label: str
    intent: TextIntent | None
    key: str
    score: float
    things: tuple[str, ...] = ()


@dataclass(frozen=True)
class Understood:
    """The line was understood: ``intent`` carries ids only.

    Attributes:
        text: the line as typed.
        intent: the intent to submit.
        key: the winning candidate's key.
        label: a short phrase for it.
        score, margin: the winning score and its margin over the runner-up.
        ranked: the top candidates ``(key, score)``, best first (for benches and logs).
    """

    text: str
    intent: TextIntent
    key: str
    label: str
    score: float
    margin: float
    ranked: tuple[tuple[str, float], ...] = ()
    status: Literal["accepted"] = "accepted"


@dataclass(frozen=True)
class Clarify:
    """Two or more meanings are close: ask ``question`` and offer ``options``.

    The next line is matched against the options first (by number, by the words
    of a label, by yes/no for a single option); see :meth:`Resolver.understand`.
    """

    text: str
    question: str
    options: tuple[Option, ...]
    ranked: tuple[tuple[str, float], ...] = ()
    status: Literal["clarify"] = "clarify"


@dataclass(frozen=True)
class NotUnderstood:
    """Nothing is to be done.

    Attributes:
        text: the line as typed.
        reason: ``negated``, ``undo``, ``unknown``, ``question`` or ``empty``.
        reply: a player-facing line ("You decide not to.").
        ranked: the top candidates ``(key, score)``, best first.
    """

    text: str
    reason: Literal["negated", "undo", "unknown", "question", "empty"]
    reply: str
    ranked: tuple[tuple[str, float], ...] = ()
    status: Literal["not_understood"] = "not_understood"


Outcome = Understood | Clarify | NotUnderstood

def _reply(kind: str) -> str:
    """The player-facing line for an input that does nothing (``negated``, ``undo``, ``unknown``,
    ``question``, ``empty``), in the play language (``input.<kind>`` of :data:`game.locale.UI`)."""
    return ui(f"input.{kind}")


@dataclass(frozen=True)
class _Prepared:
    body: str
    lex: Lexicon
    slots: Slots
    excluded: frozenset[str]


@dataclass
class _Scored:
    cand: Candidate
    sim: float
    score: float
    intent: TextIntent | None
    complete: bool = True
    notes: list[str] = field(default_factory=list)


def _label(text: str) -> str:
    t = text.strip().rstrip(".!")
    return t[:1].lower() + t[1:] if t else t


class Resolver:
    """Understands free text in one story; keeps candidate vectors between calls.

    Args:
        story: the loaded story (its scenes, choices, actions, items, cast).
        embedder: anything with ``encode(texts) -> (N, D)`` unit vectors; ``None``
            loads MiniLM through :func:`game.models.embedder.get_embedder` (once per
            process), falling back to :class:`LexicalEmbedder` if it cannot load.
        thresholds: acceptance thresholds.
        new_gifts: whether "give her a lantern" (a thing the player does not hold) is a gift
            of a new thing (:func:`new_gift_noun`); ``False`` is the rule before it, kept for
            ``bench/intents.py``'s baseline.

    Raises:
        Nothing at construction; the embedder loads on first use.
    """

    def __init__(self, story: Story, embedder: Embedder | None = None,
                 thresholds: Thresholds | None = None, new_gifts: bool = True) -> None:
        self.story = story
        self.new_gifts = new_gifts
        self.runtime = StoryRuntime(story)
        self._embedder = embedder
        self.thresholds = thresholds or Thresholds()
        self._vectors: dict[str, np.ndarray] = {}

    # -- embedding -------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The embedder in use (MiniLM unless one was given or it cannot load)."""
        if self._embedder is None:
            try:
                from game.models.embedder import get_embedder

                self._embedder = get_embedder()
            except Exception:  # no torch / no model package: the lexical fallback
                self._embedder = LexicalEmbedder()
        return self._embedder

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` ``(N, D)``, memoised per text."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            for t, v in zip(missing, self.embedder.encode(missing), strict=True):
                self._vectors[t] = np.asarray(v, np.float32)
        if not texts:
            return np.zeros((0, 1), np.float32)
        return np.stack([self._vectors[t] for t in texts])

    # -- candidates --------------------------------------------------------------
    def _things_in(self, lex: Lexicon, texts: Sequence[str], effects: Sequence[str] = ()) -> frozenset[str]:
        found: set[str] = set()
        for t in texts:
            found.update(term.id for _, term in lex.find(t, ("item", "object")))
        for src in effects:
            m = re.match(r"\s*give\(\s*['\"](\w+)['\"]", src)
            if m:
                found.add(m.group(1))
        return frozenset(found)

    def candidates(self, state: GameState, lex: Lexicon) -> list[Candidate]:
        """The candidates in ``state``'s scene: available choices, actions, edits (gifts are added per line)."""
        scene = self.story.model.scenes.get(state.scene)
        out: list[Candidate] = []
        if scene is None:
            return out
        choices: list[Choice] = self.runtime.available_choices(state)
        for c in choices:
            text = self.runtime.interpolate(state, c.text)
            out.append(Candidate(f"choice:{c.id}", "choice", c.id, _label(text), (text,),
                                 self._things_in(lex, [text], c.do)))
        for a in scene.actions:
            if a.once and state.chosen.get(a.id, 0) > 0:
                continue
            out.append(self._action(a, lex))
        for spec in EDITS.values():
            out.append(Candidate(f"edit:{spec.name}", "edit", spec.name, spec.label, spec.examples))
        return out

    def _action(self, a: Action, lex: Lexicon) -> Candidate:
        examples = tuple(a.examples) + tuple(a.keywords)
        label = _label(a.examples[0]) if a.examples else a.id.replace("_", " ")
        return Candidate(f"action:{a.id}", "action", a.id, label, examples or (a.id.replace("_", " "),),
                         self._things_in(lex, a.examples, a.do), frozenset(k.lower() for k in a.keywords))

    def lexicon(self, state: GameState, extra: Sequence[str] = ()) -> Lexicon:
        """The lexicon of ``state``'s scene with the player's objects and ``extra`` words."""
        scene = self.story.model.scenes.get(state.scene)
        words = list(extra)
        if scene is not None:
            words += [c.text for c in scene.choices]
            words += [x for a in scene.actions for x in (*a.examples, *a.keywords)]
        words += [x for spec in EDITS.values() for x in spec.examples]
        words += [p for spec in EDITS.values() for ps in spec.values.values() for p in ps]
        words += list(GIVE_VERBS)
        return Lexicon.from_story(self.story.model, scene, state.objects, words)

    # -- understanding -----------------------------------------------------------
    def understand(self, text: str, state: GameState, pending: Clarify | None = None) -> Outcome:
        """Understand ``text`` in ``state``'s scene.

        Args:
            text: what the player typed or said.
            state: the current game state (scene, inventory, objects, choices taken).
            pending: the question asked last, whose options are tried first.

        Returns:
            :class:`Understood`, :class:`Clarify` or :class:`NotUnderstood`.
        """
        book = phrasebook(language())
        first = self._understand(text, state, pending)
        if book is None or isinstance(first, Understood) and first.score >= 1.0:
            return first
        english = book.rewrite(text, self._names())
        if english == " ".join(text.lower().split()):
            return first
        second = self._understand(english, state, pending)
        if _rank(second) <= _rank(first):
            return first
        # the player's own words stay theirs (what is said and shown); only the reading is the English one
        if isinstance(second, Understood):
            intent = second.intent
            if isinstance(intent, (Say, Instruct)):
                intent = intent.model_copy(update={"text": text})
            return Understood(text, intent, second.key, second.label, second.score, second.margin, second.ranked)
        if isinstance(second, Clarify):
            return Clarify(text, second.question, second.options, second.ranked)
        return second

    def _names(self) -> frozenset[str]:
        """The story's names in the play language, lower case (a phrase book never rewrites them)."""
        m = self.story.model
        return frozenset(n.lower() for table in (m.items, m.cast, m.locations) for n in
                         (v.name for v in table.values()) if n)

    def _understand(self, text: str, state: GameState, pending: Clarify | None) -> Outcome:
        raw = text
        if pending is not None and normalise(text).strip(" .!?"):
            answer = self._answer(text, pending, state)
            if answer is not None:
                return answer
        prep = self._prepare(text, state)
        if not isinstance(prep, _Prepared):
            return prep
        scored = self._score(prep.body, raw, prep.slots, prep.excluded, state, prep.lex)
        vague = self._vague_gift(raw, prep, scored, state)
        return vague if vague is not None else self._decide(raw, scored, prep.slots, prep.body, state)

    def prime(self, texts: Sequence[str], state: GameState) -> None:
        """Embed the lines ``texts`` and the scene's candidates in one batch (a bench or an
        evaluation calls this first; :meth:`understand` then finds every vector ready)."""
        lines: list[str] = []
        for t in texts:
            prep = self._prepare(t, state)
            if isinstance(prep, _Prepared):
                lines += [prep.body, prep.lex.delex(prep.body, prep.slots.nouns)]
        lex = self.lexicon(state)
        lines += [e for c in self.candidates(state, lex) for e in c.examples]
        self.vectors(lines)

    def _prepare(self, text: str, state: GameState) -> _Prepared | NotUnderstood:
        """Negation, typo correction, politeness stripped, slots read."""
        if not normalise(text).strip(" .!?"):
            return NotUnderstood(text, "empty", _reply("empty"))
        pol: Polarity = analyse(text)
        if pol.kind in ("undo", "negated"):
            return NotUnderstood(text, "undo" if pol.kind == "undo" else "negated", _reply(pol.kind))
        lex = self.lexicon(state)
        body = lex.correct(pol.text)
        if _QUESTION.match(body) and not _POLITE.match(body):
            return NotUnderstood(text, "question", _reply("question"))
        body = _POLITE.sub("", body).strip()
        body = re.sub(r"^(please|now|ok|okay|and|then|so|i want to|i'd like to|i would like to|let me|"
                      r"i will|i'll|i)\s+", "", body).strip() or body
        return _Prepared(body, lex, parse(body, lex), self._excluded(pol, lex))

    def _vague_gift(self, raw: str, prep: _Prepared, scored: list[_Scored], state: GameState) -> Clarify | None:
        """"offer it something": a gift of no particular thing asks which (the things the player holds)."""
        body = prep.body
        if prep.slots.things or not any(re.search(rf"\b{v}\b", body) for v in GIVE_VERBS) or \
                not any(re.search(rf"\b{v}\b", body) for v in VAGUE):
            return None
        people = [c for c in prep.slots.characters if c in prep.lex.present] or list(prep.lex.present[:1])
        if len(people) != 1:
            return None
        opts: list[Option] = []
        for item in state.inventory:
            choice = next((x for x in scored if x.cand.kind == "choice" and x.cand.things == {item}), None)
            if choice is not None:
                opts.append(self._option(choice, state))
            elif item in self.story.model.items:
                opts.append(Option(ui("input.option.give", name=self._name(item, state)),
                                   Give(item_id=item, character_id=people[0]),
                                   f"give:{item}:{people[0]}", 0.0, (item,)))
        if len(opts) < 2:
            return None
        opts = opts[:3]
        ranked = tuple((x.cand.key, round(x.score, 4)) for x in scored[:5])
        return Clarify(raw, self._question(tuple(opts), state), tuple(opts), ranked)

    def _excluded(self, pol: Polarity, lex: Lexicon) -> frozenset[str]:
        if not pol.excluded:
            return frozenset()
        words = " ".join(sorted(pol.excluded))
        return frozenset(term.id for _, term in lex.find(words, ("item", "object", "character")))

    def _give(self, body: str, slots: Slots, state: GameState, lex: Lexicon) -> Candidate | None:
        if not any(re.search(rf"\b{v}\b", body) for v in GIVE_VERBS):
            return None
        things = [t for t in slots.things if t in state.inventory or t in state.objects]
        people = [c for c in slots.characters if c in lex.present]
        if not people and len(lex.present) == 1:
            people = [lex.present[0]]
        if len(people) != 1:
            return None
        if not things:
            return self._new_gift(body, slots, people[0], lex) if self.new_gifts else None
        thing, who = things[0], people[0]
        m = self.story.model
        name = m.items[thing].name if thing in m.items else str(state.objects.get(thing, {}).get("name", thing))
        cname = self._cast_name(who)
        examples = (f"give the {name} to {cname}", f"hand {cname} the {name}", f"offer {cname} the {name}")
        return Candidate(f"give:{thing}:{who}", "give", f"{thing}:{who}", f"give the {name} to {cname}", examples,
                         frozenset({thing}))

    def _new_gift(self, body: str, slots: Slots, who: str, lex: Lexicon) -> Candidate | None:
        """"give her a lantern": a gift of a new thing (:func:`new_gift_noun`), made in the world and handed over."""
        noun = new_gift_noun(body, lex)
        if not noun:
            return None
        cname = self._cast_name(who)
        look = " ".join(x for x in (slots.sizes[-1] if slots.sizes else "",
                                    slots.colours[-1] if slots.colours else "", noun) if x)
        art = "an" if look[:1] in "aeiou" else "a"
        said = next((w for w in _WORD.findall(body) if w in PRONOUNS), "")
        examples = (f"give {cname} {art} {look}", f"hand {cname} {art} {look}", f"offer {cname} {art} {look}",
                    *((f"give {said} {art} {look}",) if said else ()))
        return Candidate(f"give:new:{noun}:{who}", "give", f"new:{noun}:{who}", f"give {cname} {art} {look}",
                         examples, frozenset({noun}))

    def _cast_name(self, who: str) -> str:
        """How the player's text names character ``who`` (its display name, never its id)."""
        cast = self.story.model.cast
        return cast[who].name if who in cast else who.replace("_", " ")

    def _score(self, body: str, raw: str, slots: Slots, excluded: frozenset[str], state: GameState,
               lex: Lexicon) -> list[_Scored]:
        cands = self.candidates(state, lex)
        give = self._give(body, slots, state, lex)
        if give is not None:
            cands.append(give)
        gift = give.ref.split(":")[1] if give is not None and give.ref.startswith("new:") else ""
        examples = [e for c in cands for e in c.examples]
        mat = self.vectors(examples)
        xs = self.vectors([body, lex.delex(body, slots.nouns)])
        plain = mat @ xs[0]
        generic = np.maximum(plain, mat @ xs[1])
        ws = set(_WORD.findall(body))
        out: list[_Scored] = []
        k = 0
        items = self.story.model.items
        named = set(slots.things) | {i for t in slots.tags for i in state.inventory
                                     if i in items and t in items[i].tags}
        for c in cands:
            sims = generic if c.kind == "edit" else plain
            sim = float(sims[k:k + len(c.examples)].max())
            k += len(c.examples)
            score = sim
            notes: list[str] = []
            if c.things & excluded:
                score -= EXCLUDED
                notes.append("excluded")
            if c.things and named:
                if c.things & named:
                    score += THING_MATCH
                else:
                    score -= THING_CONFLICT
                    notes.append("other thing")
            if c.keywords & ws:
                score += KEYWORD
            if c.kind != "edit" and self._unexplained(c, slots, lex):
                score -= UNEXPLAINED
                notes.append("unexplained")
            elif gift and c.kind in ("choice", "action") and not self._mentions(c, gift, lex):
                score -= UNEXPLAINED  # "give her a lantern" is not "tell her you came to see the light"
                notes.append("not the gift")
            if gift and c.ref == "look" and not _WEAR.search(body):
                score -= UNEXPLAINED  # "give her a lamp" hands a lamp over; it is not dressing her in one
                notes.append("not worn")
            if c.kind == "edit" and not cued(c.ref, body):
                score -= NO_CUE
                notes.append("no cue")
            intent: TextIntent | None = None
            complete = True
            if c.kind == "choice":
                intent = Choose(choice_id=c.ref)
            elif c.kind == "action":
                intent = Say(text=raw, action_id=c.ref)
            elif c.kind == "give" and c.ref.startswith("new:"):
                _, noun, who = c.ref.split(":")
                params = {"name": noun, "character": who}
                if slots.colours:
                    params["colour"] = slots.colours[-1]
                if slots.sizes:
                    params["size"] = slots.sizes[-1]
                intent = Instruct(edit="give_object", params=params, text=raw)
            elif c.kind == "give":
                thing, who = c.ref.split(":")
                if thing in self.story.model.items and thing not in state.objects:
                    intent = Give(item_id=thing, character_id=who)
                else:
                    intent = Instruct(edit="give_object", params={"object": thing, "character": who}, text=raw)
            else:
                params, complete = params_for(c.ref, slots, body)
                if c.ref in ("change_object", "remove_object") and params.get("target") in excluded:
                    score -= EXCLUDED
                score += SLOTS_FULL if complete else -SLOTS_MISSING
                pos = slots.position
                if c.ref == "add_object" and pos is not None and complete:
                    on_someone = pos.anchor_kind == "character" and pos.relation == "on"
                    score += -SLOTS_MISSING if on_someone else SLOTS_FULL / 2
                edit = c.ref
                if edit == "change_object" and params.get("target") in slots.characters:
                    edit = "look"
                    params = {"character": params["target"], **{k: v for k, v in params.items()
                                                                 if k in ("colour", "size")}}
                intent = Instruct(edit=edit, params=params, text=raw)
            out.append(_Scored(c, sim, score, intent, complete, notes))
        self._absorb(out)
        out.sort(key=lambda s: -s.score)
        return out

    @staticmethod
    def _mentions(c: Candidate, noun: str, lex: Lexicon) -> bool:
        """Whether candidate ``c``'s words (or the names of its things) say ``noun``."""
        words = " ".join(c.examples).lower()
        for term in lex.terms:
            if term.id in c.things:
                words += " " + " ".join(term.phrases)
        return noun in set(_WORD.findall(words))

    @staticmethod
    def _unexplained(c: Candidate, slots: Slots, lex: Lexicon) -> bool:
        """Whether the line names a colour, size or place that candidate ``c``'s words do not."""
        said = set(slots.colours) | set(slots.sizes)
        if not said and slots.position is None:
            return False
        words = " ".join(c.examples).lower()
        for term in lex.terms:
            if term.id in c.things:
                words += " " + " ".join(term.phrases)
        own = set(_WORD.findall(words))
        own |= {COLOURS[w] for w in own if w in COLOURS} | {SIZES[w] for w in own if w in SIZES}
        if said - own:
            return True
        return slots.position is not None and slots.position.relation not in ("near",) and \
            not any(w in own for w in ("left", "right", "on", "under", "above", "behind", "front"))

    @staticmethod
    def _absorb(scored: list[_Scored]) -> None:
        """A gift that an authored choice already offers is that choice (the author's version wins)."""
        gifts = [s for s in scored if s.cand.kind == "give"]
        for g in gifts:
            same = [s for s in scored if s.cand.kind == "choice" and s.cand.things == g.cand.things]
            if same:
                best = max(same, key=lambda s: s.score)
                best.score = max(best.score, g.score)
                scored.remove(g)

    def _decide(self, raw: str, scored: list[_Scored], slots: Slots, body: str, state: GameState) -> Outcome:
        th = self.thresholds
        ranked = tuple((s.cand.key, round(s.score, 4)) for s in scored[:5])
        if not scored or scored[0].score < th.clarify:
            return NotUnderstood(raw, "unknown", _reply("unknown"), ranked)
        top = scored[0]
        named = set(slots.things)
        if re.search(r"\bor\b", body) and len(named) >= 2 and top.cand.things & named:
            each = [next((s for s in scored if s.cand.things == {t} and s.score >= th.clarify), None)
                    for t in slots.things]
            seen: dict[str, _Scored] = {x.cand.key: x for x in each if x is not None}
            opts = tuple(self._option(s, state) for s in seen.values())
            if len(opts) >= 2:
                return Clarify(raw, self._question(opts, state), opts, ranked)
        same = top.intent.model_dump() if top.intent is not None else None
        second = next((s for s in scored[1:] if s.intent is None or s.intent.model_dump() != same), None)
        margin = top.score - (second.score if second else 0.0)
        if top.cand.kind == "edit" and not top.complete:
            if top.score >= th.accept and (margin >= th.margin or second is None or second.score < th.clarify):
                return self._ask_value(raw, top, ranked)
        if top.score >= th.accept and margin >= th.margin and top.intent is not None and top.complete:
            return Understood(raw, top.intent, top.cand.key, top.cand.label, round(top.score, 4),
                              round(margin, 4), ranked)
        close: list[_Scored] = []
        for s in scored:
            dump = s.intent.model_dump() if s.intent is not None else None
            if s.score >= th.clarify and top.score - s.score < th.margin and s.complete and \
                    all(dump != c.intent.model_dump() for c in close if c.intent is not None):
                close.append(s)
        if len(close) >= 2:
            opts = tuple(self._option(s, state) for s in close[:3])
            return Clarify(raw, self._question(opts, state), opts, ranked)
        return NotUnderstood(raw, "unknown", _reply("unknown"), ranked)

    def _option(self, s: _Scored, state: GameState) -> Option:
        label = s.cand.label
        if s.cand.kind == "edit" and isinstance(s.intent, Instruct):
            label = describe(s.intent.edit, s.intent.params, lambda ident: self._name(ident, state))
        return Option(label, s.intent, s.cand.key, round(s.score, 4), tuple(sorted(s.cand.things)))

    def _name(self, thing: str, state: GameState) -> str:
        """What the player sees for id ``thing``: an item's or character's name, an object's noun."""
        m = self.story.model
        if thing in m.items:
            return m.items[thing].name
        if thing in m.cast:
            return m.cast[thing].name
        obj = state.objects.get(thing)
        if obj is not None:
            return str(obj.get("name") or obj.get("noun") or thing.replace("_", " "))
        return thing.replace("_", " ")

    def _question(self, opts: tuple[Option, ...], state: GameState) -> str:
        if all(len(o.things) == 1 for o in opts) and len({o.things for o in opts}) == len(opts):
            names = [ui("input.the", name=self._name(o.things[0], state)) for o in opts]
        else:
            names = [o.label for o in opts]
        text = ui("input.or", names=", ".join(names[:-1]), last=names[-1])
        return opening(text)

    def _ask_value(self, raw: str, top: _Scored, ranked: tuple[tuple[str, float], ...]) -> Clarify:
        spec = EDITS[top.cand.ref]
        opts: list[Option] = []
        base = top.intent if isinstance(top.intent, Instruct) else Instruct(edit=spec.name)
        if spec.name in VALUE_EDITS:
            for value in spec.values:
                params = dict(base.params, value=value)
                label = ui(f"input.value.{spec.name}.{value}") if f"input.value.{spec.name}.{value}" in UI else value
                opts.append(Option(label, Instruct(edit=spec.name, params=params, text=base.text),
                                   f"edit:{spec.name}:{value}", top.score, (value,)))
        question = ui(f"input.ask.{spec.name}") if f"input.ask.{spec.name}" in UI else spec.question
        return Clarify(raw, question or f"{opening(spec.label)}: how?", tuple(opts),
                       ranked)

    def _answer(self, text: str, pending: Clarify, state: GameState) -> Outcome | None:
        """Match an answer to the pending question; ``None`` when it is not an answer."""
        t = normalise(text).strip(" .!?")
        ws = _WORD.findall(t)
        opts = pending.options
        if t in _NO or (ws and ws[0] in ("no", "neither", "nope") and len(ws) <= 3):
            return NotUnderstood(text, "negated", ui("input.all_right"))
        if len(opts) == 1 and (t in _YES or (ws and ws[0] in _YES)):
            return self._accept_option(text, opts[0])
        for w in ws:
            if w in _ORDINALS and _ORDINALS[w] < len(opts) and len(ws) <= 3:
                return self._accept_option(text, opts[_ORDINALS[w]])
        lex = self.lexicon(state)
        corrected = lex.correct(t)
        slots = parse(corrected, lex)
        named = set(slots.things) | {find_value(o.key.split(":")[1], corrected) for o in opts
                                     if o.key.startswith("edit:") and o.key.count(":") == 2}
        hits = [o for o in opts if set(o.things) & named]
        if len(hits) == 1:
            return self._accept_option(text, hits[0])
        cw = set(_WORD.findall(corrected)) - {"the", "a", "an", "it", "to", "one", "please"}
        hits = [o for o in opts if cw and cw <= set(_WORD.findall(o.label.lower()))]
        if len(hits) == 1:
            return self._accept_option(text, hits[0])
        return None

    @staticmethod
    def _accept_option(text: str, opt: Option) -> Outcome:
        if opt.intent is None:
            return NotUnderstood(text, "unknown", _reply("unknown"))
        return Understood(text, opt.intent, opt.key, opt.label, opt.score, 0.0)


def _rank(outcome: Outcome) -> tuple[int, float]:
    """How good a reading is: understood over a question asked back over nothing, then by score."""
    if isinstance(outcome, Understood):
        return 2, outcome.score
    return (1, 0.0) if isinstance(outcome, Clarify) else (0, 0.0)


def understand(text: str, story: Story, state: GameState, embedder: Embedder | None = None) -> Outcome:
    """One-off :meth:`Resolver.understand` (builds a :class:`Resolver`; keep one for repeated use)."""
    return Resolver(story, embedder).understand(text, state)

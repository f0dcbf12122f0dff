"""The coherence check: does a model reply answer what the player said, as her, and make sense?

The persona guard and the verifier (:mod:`game.cast.guard`, :mod:`game.cast.verifier`)
catch identity, code, leaks, assistant-speak and wrong names, numbers and places. A
small model's reply can pass all of them and still be nonsense a reader would never let a
player see ("I love honey cake." -> "The air is filled with all kinds of things: sea
glass, lemon juice and the remnants of a funeral."). :meth:`Coherence.check` judges one
sentence of a model reply (after those checks passed it) against the player's line this
turn, the open topic (the player's line before it) and the sentences of hers already
accepted in this reply. A failure is kind ``incoherent``; the reason names the signal:

1. **unrelated** (sentences of :data:`RELEVANCE_WORDS` words or more): MiniLM
   (all-MiniLM-L6-v2) cosine of the sentence to the player's line,
   to the open topic and (a later sentence) to her earlier sentences of the reply, all
   below :data:`MIN_RELEVANCE` (an opening sentence; a greeting, thanks or an apology of
   the player asks for no particular subject and is exempt) or :data:`MIN_LATER_RELEVANCE`
   (a later sentence). No embedder: not checked.
2. **a list for an answer**: a colon followed by three or more items ("...things: sea
   glass, lemon juice and the remnants of a funeral") whose cosine to the player's line is
   below :data:`LIST_RELEVANCE`.
3. **turned back**: she apologises for herself ("I'm sorry, I was a little bit cruel",
   "I'm sorry, I was just looking at the lemon") when the player apologised or thanked her (intents),
   or reproached her with nothing (no "you" in the line), or she takes the blame word the
   player used of themself or of her ("cruel", "rude") as hers ("I was ... cruel").
4. **repeated phrases**: a three-word phrase said twice in the reply ("The sea is the sea.
   The sea is the sea..."), or a five-word phrase of one of her recent model replies
   (:meth:`Coherence.remember`; "a very important part of my life") that her card does not
   use.
5. **spoken as the player**: she keeps the player's "<verb> me" with "you" as its subject
   ("Will you wake me at low water?" -> "You'll wake me at low water."), says the
   player's "you <verb>" of the player in a statement ("What do you see from up here?" ->
   "When you see me up here at night..."), or calls the player's "my <thing>" hers ("I
   miss my dog." -> "I miss my dog too.").
6. **a question for an answer**: the player asked a question and her opening sentence is a
   question of four words or more ("What will you write in the log tonight?" -> "What do
   you want to tell me tonight?").
7. **words put in the player's mouth**: "you said ..."/"I always hear you say ..." where
   what follows shares no content word with anything the player said (this line, the
   topic, her beliefs of what the player told her).
8. **the player described out of nowhere**: "you're a/an <two or more content words>" none of
   which the player said ("You're a half-member of the young ones who live on the board").
9. **her authored line for another intent**: a sentence of one of her card's ``replies`` lines
   (:func:`authored_lines`, :data:`COPIED_WORDS` words or more) said to a player's line of another
   intent ("Do you have any bees on the island?" -> "The sea's said worse to me.", her line for an
   apology).

10. **a bare fragment**: an opening of at most :data:`FRAGMENT_WORDS` words, no verb or pronoun,
    not an interjection ("Aye.", "Forgiven."), sharing no word with the player's line, the topic
    or what they told her, to a line that asks nothing ("I keep forty hives near Rotterdam." ->
    "Aulis."; "What do you grow?" -> "Tomatoes." and "Do you ever sleep?" -> "In pieces." answer).
11. **narration**: "she"/"her" when neither the player's line (but what they call her: "you're
    a stupid old woman"), the topic, her earlier sentences nor the sentence itself name anyone she
    could be (a woman, kin, a name not hers, a ship or the lamp): "She is talking to someone. She
    looks at you." ("I start Old Meg and sit up with her" names Old Meg.)
12. **a yes/no against her card**: a bare yes or no (the opening, nothing else said) to a
    yes/no question about what her card holds to (:attr:`Coherence.dear`: its tags and home),
    "no" where the question asks whether it is needed, liked or worth it ("Do you think ships
    still need lighthouses?" -> "No, I don't."), "yes" where it asks whether it is obsolete, to
    be left or automated.

14. **herself by name**: her own name as someone in the story ("...and Eve stayed in the lantern
    room all night", "Eve's kettle"), not said to introduce herself ("I'm Eve", "call me Eve", "Eve
    Solvang, keeper") or as a bare name ("Eve."): she narrates herself in the third person.
15. **a stock line for no answer**: the model says (five words in a row of) one of her lines for when
    she has no answer: her card's fallbacks, deflections and ``replies.question`` lines ("I'd rather
    listen to the kettle, and I'm not sure what's on the island." to "Do you have any music out
    here?"). The pipeline says such a line itself when the model fails; from the model it is a dodge
    copied from her earlier replies.
13. **another fact's number or name** (kind ``contradiction``): the player asks a question one fact
    of her card answers (:meth:`~game.cast.topics.TopicRouter.topic` at :data:`SPECIFICS_TOPIC` or
    more), her reply states numbers (or names), and not one of them is a number (or name) of that
    fact's answer, of the player's line or of what they told her (a later sentence: in the reply so far):
    "How old is the lens?" -> "Forty-one years old." (Hild's years; the lens is from 1871), "Does the
    foghorn have a name?" -> "Vesper, and she sings at dawn." (her lemon tree's). A reply that states no
    number or name is not judged here.

What the player's line does (apology, thanks, question...) is the
:class:`~game.cast.appraisal.Appraiser`'s intent, as for her mood and her replaced replies (one
source of truth; a greeting, which it has no intent for, is read by its opening words).

The thresholds were tuned on the dev part of ``bench/data/coherence_replies.yaml`` and
scored on its held-out part (``PYTHONPATH=. python3 bench/character.py --coherence``).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from game.cast.appraisal import INTENTS, Appraiser
from game.cast.factsheet import FactSheet, quantities, singular
from game.cast.guard import Verdict
from game.cast.similarity import normalise, tokens
from game.cast.topics import TOPIC_NEAR, TopicRouter
from game.models.llm import split_sentences

if TYPE_CHECKING:  # pragma: no cover
    from game.cast.card import CharacterCard

#: An opening sentence whose MiniLM cosine to the player's line and to the open topic are both
#: below this is unrelated. On the dev set good openings scored 0.06-0.87 (0.06: "It always is
#: on the Spine. Come in..." to a greeting, exempt as social; next 0.16), bad ones from 0.04; "Seven
#: winters now, near enough." to "Tell me about the lamp and you" scores 0.10.
MIN_RELEVANCE = 0.08
#: A later sentence below this to the line, the topic and each of her earlier sentences is a drift.
MIN_LATER_RELEVANCE = 0.1
#: Sentences of fewer words are not judged by relevance (a short "Aye." scores low against anything).
RELEVANCE_WORDS = 5
#: A listing sentence below this cosine to the player's line is a list for an answer (dev: the bad
#: lists 0.19 and 0.23; no good reply of the dev set lists).
LIST_RELEVANCE = 0.35
#: Sentences of her authored lines with fewer words are not matched as copied ("Forgiven." fits many lines).
COPIED_WORDS = 4
#: Topic score (:meth:`~game.cast.topics.TopicRouter.topic`) from which a question counts as asking
#: for that card fact's number or name (rule 13): :data:`~game.cast.topics.TOPIC_NEAR`, the score
#: from which the pipeline says that fact instead of a rejected reply.
SPECIFICS_TOPIC = TOPIC_NEAR
#: Her last this-many model replies are kept for the repeated-phrase check.
RECENT = 12
#: Words in a row that, said in two of her replies, are a repeated phrase.
PHRASE_WORDS = 5

_GREETING = re.compile(r"(?i)^\W*(?:good (?:evening|morning|afternoon|night)|hello|hi|hey|evening|morning|"
                       r"goodbye|bye|farewell|night)\b")
#: "I'm sorry, I...", "I'm sorry I...", "I'm sorry for ...", "Sorry, I ...": she apologises for herself
#: (not "I'm sorry to hear", "sorry for your loss": the verifier judges sympathy).
_SELF_SORRY = re.compile(r"(?i)^\W*(?:oh,?\s+)?(?:i'?m|i am|i’m)?\s*(?:so |very |truly )?sorry\b"
                         r"(?!\s+(?:to hear|for your|about your|you|that you))[,.!]?\s*"
                         r"(?:i\b|i'|i’|for\b|about\b|$)")
#: A list after a colon: "things: a, b and c" (three or more items).
_LIST = re.compile(r":\s*[^,:;.!?]{1,40}(?:,\s*[^,:;.!?]{1,40}){1,},?\s*(?:and|or)\s+[^,:;.!?]{1,60}")
#: "you said", "you say", "you told me", "I always hear you say": what follows is quoted from the player.
_YOU_SAID = re.compile(r"(?i)\b(?:hear you say|you (?:said|say|told me|tell me|always say))\b[:,]?\s*(?P<rest>.*)")
#: "You're a half-member of the young ones who live on the board": what she tells the player they are.
_YOU_ARE_A = re.compile(r"(?i)\byou(?:'re|’re| are)\s+(?:a|an)\s+(?P<np>[^.!?;:,]{3,80})")
#: "you <verb>" pairs whose verb is too common to mean she speaks as the player.
_COMMON_VERBS = frozenset("are were was is be been have had has do did does can could will would shall should may "
                          "might must like know think mean want mind say said ask asked need".split())
_PRONOUNS = frozenset("i me my mine myself you your yours yourself we us our".split())
_STOP = frozenset("a an the and or but of to in on at for with by from as is are was were be been it its it's "
                  "this that these those there here so very just not no do does did have has had will would can "
                  "could i me my you your he she his her they them their we us our what when where who how why "
                  "all some any one up out if then than too also about into over s".split()) | _PRONOUNS
_EXPAND = {"you'll": ("you", "will"), "you're": ("you", "are"), "you've": ("you", "have"), "you'd": ("you", "would"),
           "i'll": ("i", "will"), "i'm": ("i", "am"), "i've": ("i", "have"), "i'd": ("i", "would")}
#: A reply of at most this many words with no verb or pronoun is a fragment (rule 10).
FRAGMENT_WORDS = 3
_NOT_FRAGMENT = frozenset("i me you he him she her it we us they them is are was were am be been do does did have has "
                          "had will would can could shall should may might must come go sit drink eat look listen mind "
                          "wait see keep let tell say ask stay rest sleep hush hold take get give bring try put leave "
                          "watch mark".split())
_INTERJECTIONS = frozenset("aye yes yeah no nope mm mmm hm hmm well indeed welcome goodnight night morning evening "
                           "tea thanks thank sorry forgiven fine good right quite never always sometimes perhaps maybe "
                           "certainly gladly course not yet really often rarely enough true so oh ah then again now "
                           "later soon tonight tomorrow dear lord heavens careful easy gently slowly done agreed "
                           "exactly sure".split())
#: A wh-question, which a bare noun answers ("What do you grow?" -> "Tomatoes.").
_WH_ASKED = re.compile(r"(?i)(?:^|[.!?]\s+)\W*(?:what|who|whom|whose|where|when|which|how)\b[^.!?]*\?")
#: Words for someone she could call "she" (rule 11): women, kin, and what sailors call "she".
_SHE = frozenset("she her herself hers grandmother mother mum mom sister gran granny grandma aunt daughter wife girl "
                 "lady niece queen widow lass woman women bride ship ships boat boats lamp light lens steamer "
                 "vessel".split())
#: A yes/no question (rule 12) and a bare yes or no to it.
_POLAR_Q = re.compile(r"(?i)^\W*(?:do|does|did|is|are|was|were|can|could|will|would|should|have|has)\b[^?]*\?\s*$")
_BARE_POLAR = re.compile(r"(?i)^\W*(?:(?P<no>no|nope|nah|not really|not at all|not anymore|not any more)|"
                         r"(?P<yes>yes|yeah|aye|of course|certainly|sure))\b[\s,.!]*"
                         r"(?:(?:i|it|they|we|do|don't|does|doesn't|did|didn't|is|isn't|are|aren't|am|not|really|think|"
                         r"so|at|all|suppose|guess|would|wouldn't|will|won't|can|can't|anymore)\b[\s,.!']*)*$")
_FOR = frozenset("need needs needed matter matters worth like love enjoy miss important useful proud happy good value "
                 "care belong".split())
_AGAINST = frozenset("automate automated obsolete useless hate hated bored boring pointless dying dead leave leaving "
                     "quit sell close closed replace replaced outdated unnecessary abandon give".split())
#: Verbs after her own name that make it narration (rule 14), besides any word ending in "-ed".
_NARRATED = frozenset("is was has had does did goes went says said looks sees saw keeps kept sits sat stands stood "
                      "walks walked smiles smiled nods nodded laughs laughed turns turned takes took gives gave "
                      "knows knew thinks thought feels felt hears heard watches watched lives will would can "
                      "could might must should shall tends winds wound pours poured loves likes hates".split())
_A = {"apology": "an apology", "thanks": "thanks", "compliment": "a compliment", "insult": "an insult",
      "threat": "a threat", "gift": "a gift", "question": "a question", "other": "small talk"}
_NOT_THINGS = frozenset("name own way mind heart life word god dear goodness".split())


def _words(text: str) -> list[str]:
    out: list[str] = []
    for t in tokens(text):
        out.extend(_EXPAND.get(t, (t,)))
    return out


def _content(text: str) -> set[str]:
    return {w.removesuffix("'s") for w in _words(text) if w not in _STOP and len(w) > 2}


def _grams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def card_text(card: CharacterCard) -> str:
    """Her card's prose, facts, lore and example exchanges as one text (phrases she may say again)."""
    texts = [card.description, card.scenario, card.personality, *card.core_facts,
             *(e.content for e in card.lorebook.entries), *(f"{x.user} {x.char}" for x in card.examples),
             *(f.say or f.value for f in card.facts)]
    return "\n".join(t for t in texts if t)


def authored_lines(card: CharacterCard) -> dict[str, tuple[str, ...]]:
    """Her card's authored replies by the intent they answer (``replies.apology``...; no ``told``
    templates): what a model reply must not copy to a line of another intent."""
    replies = getattr(card, "replies", None)
    if replies is None:
        return {}
    return {k: tuple(getattr(replies, k)) for k in INTENTS if getattr(replies, k, ())}


@dataclass
class Coherence:
    """Judges whether a model sentence answers the player coherently (see the module doc).

    Args:
        embedder: ``encode(list[str]) -> (N, D)`` unit vectors (MiniLM); ``None`` or the
            :class:`~game.cast.retrieval.HashEmbedder` fallback (no meaning): the relevance
            signals are not checked, the others are.
        own_text: her card's text (phrases it uses are not counted as repeats).
        lines: her authored replies by intent (:func:`authored_lines`): a sentence of one, said to a
            line of another intent, is a line copied to the wrong moment.
        names: her own names (lower case): not someone else she could call "she".
        dear: what her card has her keep and hold to (its tags and home, lower case: "lighthouse",
            "island", "skerrow"), for the yes/no stance check.
        topics: finds the card fact a question asks for (:class:`~game.cast.topics.TopicRouter`;
            ``None``: rule 13 is not checked).
        stock: her lines for when she has no answer (fallbacks, deflections, ``replies.question``; rule 15).
        sheet: her card's fact sheet (:class:`~game.cast.factsheet.FactSheet`): which capitalised
            words are names, for rule 13 (``None``: only words not opening a sentence).
        appraiser: reads the player's line's intent (:class:`~game.cast.appraisal.Appraiser`; the one
            source of what a line does). ``None``: one on ``embedder``; no embedder either: the signals
            that need the intent (an apology turned back, the social exemption, copied lines) are not
            checked.
    """

    embedder: Any = None
    own_text: str = ""
    lines: dict[str, tuple[str, ...]] = field(default_factory=dict)
    appraiser: Any = None
    names: tuple[str, ...] = ()
    dear: frozenset[str] = frozenset()
    topics: Any = None
    sheet: FactSheet | None = None
    stock: tuple[str, ...] = ()
    _stock: set[tuple[str, ...]] = field(default_factory=set)
    _said: dict[str, str] = field(default_factory=dict)  # normalised sentence of an authored line -> its intent
    _intents: dict[str, str] = field(default_factory=dict)
    _recent: deque[tuple[str, ...]] = field(default_factory=lambda: deque(maxlen=RECENT))
    _own: set[tuple[str, ...]] = field(default_factory=set)
    _cache: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if str(getattr(self.embedder, "model_id", "")).startswith("hash-"):
            self.embedder = None  # a bag-of-words hash (no model extras) has no meaning to judge relevance by
        self._own = set(_grams(_words(self.own_text), PHRASE_WORDS))
        self._stock = {g for line in self.stock for g in _grams(_words(line), PHRASE_WORDS)
                       if not all(w in _STOP for w in g)}
        if self.appraiser is None and self.embedder is not None:
            self.appraiser = Appraiser(self.embedder)
        for intent, texts in self.lines.items():
            for text in texts:
                for sentence in split_sentences(text):
                    if len(tokens(sentence)) >= COPIED_WORDS:
                        self._said.setdefault(normalise(sentence), intent)

    @classmethod
    def from_card(cls, card: CharacterCard, embedder: Any = None, appraiser: Any = None) -> Coherence:
        """The check for ``card``: its text (:func:`card_text`) and authored lines (:func:`authored_lines`)."""
        names = tuple(w.lower() for n in (card.name, card.nickname) for w in re.findall(r"[\w'-]+", n or ""))
        dear = frozenset(singular(w.lower()) for t in (*getattr(card, "tags", ()), card.home or "")
                         for w in re.findall(r"[A-Za-z]+", t) if len(w) > 3)
        topics = TopicRouter(card, embedder, threshold=None) if embedder is not None else None
        replies = getattr(card, "replies", None)
        stock = (*card.fallbacks, *card.deflections, *(getattr(replies, "question", ()) if replies else ()))
        return cls(embedder, own_text=card_text(card), lines=authored_lines(card), appraiser=appraiser,
                   names=names, dear=dear, topics=topics, sheet=FactSheet.from_card(card), stock=stock)

    def intent(self, line: str) -> str:
        """What the player's ``line`` does (``apology``, ``thanks``... by the appraiser), ``""`` when unknown."""
        if self.appraiser is None or not line.strip():
            return ""
        if line not in self._intents:
            if len(self._intents) > 256:
                self._intents.clear()
            self._intents[line] = str(self.appraiser.appraise(line).intent)
        return self._intents[line]

    def remember(self, reply: str) -> None:
        """Note a model reply of hers that reached the player (for the repeated-phrase check)."""
        words = tuple(_words(reply))
        if words:
            self._recent.append(words)

    def _vec(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for t, v in zip(missing, np.asarray(self.embedder.encode(missing), np.float32), strict=True):
                self._cache[t] = v
            if len(self._cache) > 512:
                for old in list(self._cache)[:256]:
                    del self._cache[old]
        return np.stack([self._cache[t] for t in texts])

    def check(self, sentence: str, player_line: str, *, topic: str = "", earlier: Sequence[str] = (),
              told: Iterable[str] = ()) -> Verdict:
        """Judge one ``sentence`` of her reply (see the module doc).

        Args:
            sentence: the sentence (a whole reply works too: its sentences are not split).
            player_line: what the player said this turn.
            topic: the open topic (the player's line before this one; ``""``: none).
            earlier: her sentences of this reply already accepted (``()``: ``sentence`` opens it).
            told: values the player told her (her beliefs), for "you said ...".

        Returns:
            ``Verdict(True)``, or kind ``incoherent`` with the reason.
        """
        why = self._other_fact(sentence, player_line, list(told), list(earlier))
        if why:
            return Verdict(False, "contradiction", (why,), sentence)
        why = self._why(sentence, player_line, topic, list(earlier), list(told))
        return Verdict(False, "incoherent", (why,), sentence) if why else Verdict(True)

    def _names_in(self, text: str) -> set[str]:
        """The names ``text`` says (lower case): capitalised words that are names of her card, or
        words her card never writes in lower case ("Old Meg", "Tuesday" is not one: a calendar word)."""
        vocab = self.sheet.vocabulary if self.sheet is not None else frozenset()
        known = self.sheet.names if self.sheet is not None else frozenset()
        out = set()
        for m in re.finditer(r"\b[A-Z][\w'’-]+", text):
            w = m.group(0).lower().removesuffix("'s").removesuffix("’s")
            opens = not text[:m.start()].rstrip(" \"'“‘(*") or text[:m.start()].rstrip(" \"'“‘(*")[-1] in ".!?:…"
            if w in ("i", "i'm", "i'll", "i've", "i'd") or w in self.names:
                continue
            if w in known or (not opens and w not in vocab):
                out.add(w)
        return out

    def _other_fact(self, sentence: str, line: str, told: list[str], earlier: list[str]) -> str:
        """Rule 13 (see the module doc): why ``sentence`` answers the card fact the player's question
        ``line`` asks for with another number or name, or ``""``. A later sentence is judged with the
        ``earlier`` ones of the reply: once the fact's number or name is said, other numbers may follow
        ("Seven years this winter. Hild kept it forty-one before me.")."""
        if self.topics is None or "?" not in line:
            return ""
        said_n = {q.value for q in quantities(sentence)}
        said_names = self._names_in(sentence)
        if not said_n and not said_names:
            return ""
        so_far = " ".join([*earlier, sentence])
        said_n, said_names = {q.value for q in quantities(so_far)}, self._names_in(so_far)
        fact = self.topics.topic(line, threshold=SPECIFICS_TOPIC)
        if fact is None or not fact.id.startswith(("card.", "answer.")):
            return ""
        answer = fact.value if fact.id.startswith("card.") else fact.text
        want_n = {q.value for q in quantities(answer)}
        want_names = {w.lower() for w in re.findall(r"[A-Z][\w'’-]+", answer)} - {"i"}
        context = " ".join([line, *told])
        free_n = {q.value for q in quantities(context)}
        free_names = {w.lower() for w in re.findall(r"[\w'’-]+", context)}
        if want_n and said_n and not said_n & (want_n | free_n):
            return (f"answers {fact.question!r} (a question her card answers) with "
                    f"{', '.join(str(n) for n in sorted(said_n))}; her card says {answer}")
        if want_names and not want_n and said_names and not said_names & (want_names | free_names):
            return (f"answers {fact.question!r} (a question her card answers) with "
                    f"{', '.join(sorted(said_names))}; her card says {answer}")
        return ""

    def _self_named(self, sentence: str) -> list[str]:
        """Her own name (:attr:`names`, capitalised) in ``sentence`` followed by a verb or "'s" (the
        words "Eve stayed", "Eve's kettle"), not after "I'm", "I am", "call me", "name is", "it's",
        "this is", "as", "Mrs"... (see rule 14)."""
        out: list[str] = []
        for name in self.names:
            if len(name) < 3:
                continue
            for m in re.finditer(rf"\b{re.escape(name.capitalize())}(?P<s>['’]s)?\s+(?P<next>[a-z][\w'’-]*)", sentence):
                before = sentence[:m.start()].lower().rstrip(" ,\"'“‘")
                if re.search(r"(?:\bi'm|\bi’m|\bi am|\bme|\bname is|\bname's|\bnamed|\bcalled|\bit's|\bit’s|\bit is|"
                             r"\bthis is|\bas|\bmrs|\bmiss|\bms|\bkeeper|\bdear|\bwas|\bjust|\bonly|\bplain)$", before):
                    continue
                nxt = m.group("next").lower()
                if m.group("s") or nxt in _NARRATED or nxt.endswith("ed"):
                    out.append(m.group(0))
        return out

    def _stance(self, sentence: str, line: str) -> str:
        """Why a bare yes/no ``sentence`` to the player's yes/no question ``line`` says against what her
        card holds to (:attr:`dear`): "no" to whether her things are needed, liked, worth it ("Do you
        think ships still need lighthouses?" -> "No, I don't."), "yes" to whether they are obsolete,
        to be left, automated. ``""``: not such a pair (a negated question is not judged)."""
        if not self.dear or not _POLAR_Q.match(line) or re.search(r"(?i)n't\b|\bnot\b|\bnever\b", line):
            return ""
        m = _BARE_POLAR.match(sentence)
        if m is None:
            return ""
        asked = [singular(w) for w in _words(line.split("?")[0])]
        hers = [w for w in asked if w in self.dear or any(len(w) >= 4 and (d.startswith(w) or w.startswith(d))
                                                          for d in self.dear)]
        if not hers:
            return ""
        against = bool(set(asked) & _AGAINST)
        if (m.group("no") and not against and set(asked) & _FOR) or (m.group("yes") and against):
            return (f"says {'no' if m.group('no') else 'yes'} to {line.strip()!r}, against what her card holds to "
                    f"({hers[0]})")
        return ""

    def _why(self, sentence: str, line: str, topic: str, earlier: list[str], told: list[str]) -> str:
        words = _words(sentence)
        said = _words(line)
        opening = not earlier
        intent = self.intent(line)
        # 9. her authored line for another intent ("The sea's said worse to me." to a question about bees)
        copied = self._said.get(normalise(sentence))
        if copied and intent and copied != intent:
            return f"says her line for {_A[copied]} to {_A.get(intent, 'a line')} (a line copied to the wrong moment)"
        # 10. a bare fragment that answers nothing the player said ("Aulis." to "I keep forty hives near Rotterdam.")
        bare = tokens(sentence)
        if opening and 0 < len(bare) <= FRAGMENT_WORDS and "?" not in sentence + line \
                and not set(bare) & _NOT_FRAGMENT and not set(bare) <= _INTERJECTIONS \
                and not any("'" in w for w in bare):  # "It's only water." has its verb
            bits = _content(sentence) - _INTERJECTIONS
            if bits and not bits & (_content(line) | _content(topic) | _content(" ".join(told))) \
                    and not any(normalise(sentence) == normalise(x) for x in split_sentences(self.own_text)):
                return f"a bare fragment ({sentence.strip()!r}) that answers nothing the player said"
        # 11. narration: "she"/"her" with nobody she could be ("She is talking to someone. She looks at you.")
        if set(words) & {"she", "her", "herself"}:
            said_to = re.sub(r"(?i)\byou(?:'re|’re| are)\b[^.!?;]*", " ", line)  # "you're an old woman" is her
            near = _words(" ".join([said_to, topic, *earlier]))
            named = re.findall(r"(?<=\w)\s+([A-Z][a-z'-]+)", sentence)  # "I start Old Meg and sit up with her"
            others = {w.lower() for t in (said_to, topic, *earlier) for w in re.findall(r"\b[A-Z][a-z'-]+", t)
                      if w.lower() not in set(self.names) | _STOP} | {w.lower() for w in named
                                                                      if w.lower() not in self.names}
            if not (set(near) & _SHE) and not others:
                return "speaks of 'she' when nobody she could be was named (narrates herself in the third person)"
        # 15. a stock line for no answer, from the model ("I'd rather listen to the kettle, and ...")
        stock = next((g for g in _grams(words, PHRASE_WORDS) if g in self._stock), None)
        if stock:
            return f"says her stock line for no answer ({' '.join(stock)!r}...) instead of answering"
        # 14. herself by name, in the third person ("and Eve stayed in the lantern room all night")
        for m in self._self_named(sentence):
            return f"speaks of herself by name ({m!r}: narrates herself in the third person)"
        # 12. a bare yes or no that goes against what her card holds to
        stance = self._stance(sentence, line) if opening else ""
        if stance:
            return stance
        # 3. turned back: an apology of her own where none is owed, or the player's blame word taken as hers
        if opening and _SELF_SORRY.match(sentence):
            if intent == "apology":
                return "apologises back to the player's apology (turns it on herself)"
            if intent == "thanks":
                return "apologises to the player's thanks"
            if "you" not in said and "your" not in said:
                return "apologises for something nobody reproached her for"
        blame = _content(line) - _content(" ".join(told))
        if intent == "apology" or re.search(r"(?i)\byou(?:'re| are)\b", line):
            mine = [w for w in words if w in blame]
            if mine and re.search(r"(?i)\bi(?:'m| am| was)\b[^.!?]*\b" + re.escape(mine[0]) + r"\b", sentence):
                return f"takes the player's word {mine[0]!r} as hers"
        # 5. spoken as the player
        for a, b in _grams(said, 2):
            if b in ("me", "my") and a not in _STOP and "you" in words:
                k = [i for i, (x, y) in enumerate(_grams(words, 2)) if (x, y) == (a, b)]
                if k and "you" in words[:k[0]]:
                    return f"keeps the player's {a!r} {b!r} with 'you' doing it (speaks as the player)"
            if a == "you" and b not in _COMMON_VERBS and b not in _STOP and not sentence.rstrip().endswith("?") \
                    and (a, b) in _grams(words, 2) and "?" in line:
                return f"says the player's 'you {b}' of the player (speaks as the player)"
            if a == "my" and b not in _NOT_THINGS and b not in _STOP and (a, b) in _grams(words, 2):
                return f"calls the player's 'my {b}' hers"
        # 6. a question for an answer
        if opening and line.rstrip().endswith("?") and sentence.rstrip().endswith("?") and len(words) >= 4:
            return "answers the player's question with a question"
        # 7. words put in the player's mouth
        quoted = _YOU_SAID.search(sentence)
        if quoted:
            rest = _content(quoted.group("rest"))
            if len(rest) >= 2 and not rest & (_content(line) | _content(topic) | _content(" ".join(told))):
                return "quotes the player saying what they never said"
        # 8. what the player is, told to them out of nowhere
        for called in _YOU_ARE_A.finditer(sentence):
            said_of = _content(called.group("np"))
            if len(said_of) >= 2 and not said_of & (_content(line) | _content(topic) | _content(" ".join(told))):
                return f"tells the player they are {called.group('np').strip()!r}, which nothing they said suggests"
        # 4. repeated phrases
        three = _grams(words, 3)
        earlier_three = {g for e in earlier for g in _grams(_words(e), 3)}
        for i, g in enumerate(three):
            if any(w not in _STOP for w in g) and (g in three[i + 1:] or g in earlier_three):
                return f"repeats the phrase {' '.join(g)!r}"
        for g in _grams(words, PHRASE_WORDS):
            if g in self._own or all(w in _STOP for w in g):
                continue
            if any(g in set(_grams(r, PHRASE_WORDS)) for r in self._recent):
                return f"says again a phrase of an earlier reply: {' '.join(g)!r}"
        # 1-2. relevance (MiniLM)
        if self.embedder is None or not line.strip() or len(words) < RELEVANCE_WORDS:
            return ""  # "Aye." or "I will." relates to anything
        listing = bool(_LIST.search(sentence))
        refs = [line, *([topic] if topic.strip() else []), *earlier]
        sims = self._vec([sentence, *refs])
        cos = sims[1:] @ sims[0]
        if listing and float(cos[0]) < LIST_RELEVANCE:
            return f"answers with a list unrelated to the player's line (cosine {float(cos[0]):.2f})"
        best = float(cos.max())
        if opening:
            social = bool(_GREETING.match(line)) or intent in ("thanks", "apology")
            if best < MIN_RELEVANCE and not social:
                return f"unrelated to the player's line and the topic (cosine {best:.2f})"
        elif best < MIN_LATER_RELEVANCE:
            return f"drifts from the player's line and her own reply (cosine {best:.2f})"
        return ""


__all__ = ["COPIED_WORDS", "FRAGMENT_WORDS", "LIST_RELEVANCE", "MIN_LATER_RELEVANCE", "MIN_RELEVANCE", "PHRASE_WORDS",
           "RECENT", "RELEVANCE_WORDS", "SPECIFICS_TOPIC", "Coherence", "authored_lines", "card_text"]

"""The verifier: every name, number, date and place in a model reply, checked against what she knows.

:meth:`Verifier.check` judges one sentence (or a whole reply) of the model, after the
persona guard (:mod:`game.cast.guard`) passed it, against her
:class:`~game.cast.factsheet.FactSheet` (the card), her beliefs (what the player told
her, from :class:`~game.cast.guard.PersonaFacts` ``beliefs``) and the player's line
this turn. What it knows is **allowed**; anything else fails:

1. **the player's facts said back wrong** (checked first): see 3 below.
2. **numbers and dates** (:func:`game.cast.factsheet.quantities`): ``(value, unit)``
   allowed when the sheet, a belief or the player's line states it. A unit the sheet
   states with *other* values is a ``contradiction`` ("ten years" where her card says
   seven); a number nothing states is ``unverified`` ("1872"). A number whose unit
   nothing counts but whose value is stated is allowed ("seven every morning").
2. **names and places**: every capitalised word that does not open a sentence, and
   any two capitalised words in a row ("New York"), must be a name of the sheet, of a
   belief, of the player's line, of the story (``extra_names``) or a calendar word
   (:data:`~game.cast.factsheet.COMMON_CAPITALS`); else ``unverified``.
3. **the player's facts said back wrong**: "you live in X", "you're from X" against
   the home she believes; "you're N (years old)" against the age, and the age in words ("in
   your mid-thirties", "forty-something", "a young man like you" from :data:`YOUNG_BELOW`, "you're
   old" below :data:`OLD_FROM`) against it; "your <relation> (is called) X" against the name she
   believes (``contradiction``). The age is her belief, or the age the player's line tells
   (:func:`~game.cast.told.facts_told`: "I'm fifty-two").
4. **who she is**: "I'm a/an <occupation>" (or "I was", "I used to be", "I've been",
   "I became") where the occupation is not a word of her card ("I'm a guitarist", "I am a
   pirate captain", "where I was a pirate captain") is an ``identity`` break; so is
   taking on what the player just called her ("You are a stupid, boring old woman" ->
   "I'm a stupid, boring old woman"): an "I'm/I am ..." that repeats two or more content
   words (not words of her card) of the player's "you are/you're ..." this turn.

5. **what she says someone on her card is**: "<Name> is/was/'s a(n)/the/my ... <noun>", "<Name> was
   <noun> of ..." or "my
   <kin> was a ... <noun>" (Hild, Admiral, Jonas Brekke, my grandmother) where the noun (the
   last word before "who", "of", a comma...) is in no text of her card about them
   (:attr:`~game.cast.factsheet.FactSheet.about`) and is not a plain word for a person or a
   place (:data:`PLAIN_NOUNS`): "Hild was a beautiful and powerful sorceress" (her card: her
   grandmother, the keeper before her), "Admiral is a retired sea captain" (a one-eyed gull),
   "Vesper is my husband" (her lemon tree) are ``contradiction``; "Hild was a hard woman" is not. A place
   of her card is judged by its kind instead (:meth:`Verifier._place_kind`: "Skerrow's a hard isle").
6. **thanks nobody gave**: "You're welcome" when the player's line thanks her for nothing
   (the customer-service close), kind ``ooc``; so is **sympathy for nothing**: "I'm sorry
   for your loss", "sorry to hear that" when the player's line tells of no trouble
   (:data:`TROUBLE_WORDS`).
7. **the player's line said back as hers**: a sentence of four words or more whose words
   are (nine in ten or more) the player's line this turn ("I love honey cake." to "I love
   honey cake."; "Biscuit is staying with my sister."), kind ``repeat``; not a statement that answers
   a yes/no question in which neither of them is named ("Is the tide turning yet?" -> "The tide is
   turning.").

8. **her own age**: "I'm 31", "I am twenty-five years old", "I turned forty" where her card's age
   (a fact whose unit says "old": Eve's "thirty-six years old") is another (``contradiction``), even
   when the number is the player's own age, told this turn.
9. **the player's facts taken as hers**: a told name, home or the name of a told pet or person
   said in a frame that makes it hers: "I'm Ingrid" / "my name is Ingrid", "I come from Aberdeen"
   / "I grew up in Aberdeen" / "my home is Aberdeen", "my cat Pepper" / "Pepper, my cat"
   (``contradiction``; "I'd like to see Aberdeen one day" is not such a frame).

Returns a :class:`~game.cast.guard.Verdict` (``ok`` or kind ``contradiction`` /
``unverified`` / ``identity`` / ``ooc``) and the counts of what was checked (:class:`Checked`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from wordfreq import zipf_frequency

from game.cast.factsheet import (
    COMMON_CAPITALS,
    KIN,
    FactSheet,
    capitalised_names,
    place_kinds,
    quantities,
    singular,
)
from game.cast.grounding import asks_for
from game.cast.guard import PersonaFacts, Verdict
from game.cast.similarity import tokens
from game.cast.told import NUMBER_WORD, facts_told, parse_number

_YOU_HOME = re.compile(r"(?i:\byou(?:'re| are) from|\byou live in|\byou come from|\byour home is(?: in)?|"
                       r"\byou grew up in)\s+(?:the\s+)?([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)")
_YOU_AGE = re.compile(rf"(?i:\byou(?:'re| are)\s+)({NUMBER_WORD})(?=\s*(?:years?|yrs?)?\s*(?:old)?\b)")
_DECADES = {w: 10 * (i + 2) for i, w in enumerate("twenties thirties forties fifties sixties seventies eighties "
                                                    "nineties".split())}
#: "you're in your mid-thirties", "in your fifties", "you're forty-something", "a fortyish man like you": an age
#: said in words, as a range (early: the decade's first four years, mid: 3-6, late: 6-9).
_AGE_SPAN = re.compile(r"(?i)\b(?:in\s+(?:your|his|her)\s+)?(?P<part>early|mid|late)?[\s-]*"
                       r"(?P<decade>" + "|".join(_DECADES) + r")\b|"
                       r"\b(?P<tens>twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|[2-9]0)"
                       r"[\s-]*(?:something|odd|ish)\b")
#: The player called young or old: "you're young", "a young man like you", "Welcome, young man.".
_YOUNG = re.compile(r"(?i)\byou(?:'re|’re| are)\s+(?:still\s+|so\s+|very\s+|too\s+|quite\s+)?(?:a\s+)?"
                    r"(?:young|youngster|kid|child|boy|girl|lad|lass)\b|"
                    r"\b(?:a|such a)\s+young\s+(?:man|woman|lad|lass|fellow|thing|one|person)\s+like\s+you\b|"
                    r"\bat\s+your\s+young\s+age\b")
#: "Welcome, young man.", "Young lady, sit down": the player addressed as young.
_YOUNG_VOCATIVE = re.compile(r"(?i)(?:^|,)\s*young\s+(?:man|woman|lady|lad|fellow|one)\s*(?:,|$)")
_OLD = re.compile(r"(?i)\byou(?:'re|’re| are)\s+(?:so\s+|very\s+|too\s+|quite\s+)?(?:an?\s+)?"
                  r"(?:old|elderly|aged|ancient|grey-haired|old\s+(?:man|woman))\b")
#: Ages from which "young", and below which "old", is said of someone against what they told her.
YOUNG_BELOW, OLD_FROM = 40, 30
_YOUR_REL = re.compile(r"(?i:\byour\s+([a-z]+)(?:'s name is|\s+is called|\s+is named|\s+called|\s+named|,)?\s+)"
                       r"([A-Z][\w'-]+)")


_YOU_ARE = re.compile(r"(?i:\byou(?:'re|’re| are)\s+)([^.!?;]{1,120})")
_I_AM = re.compile(r"(?i:\bi(?:'m|’m| am| was|'ve been|’ve been| have been|'ll be|’ll be| will be)\s+)"
                   r"([^.!?;]{1,120})")
#: "<Name> is/was a ... <noun>" and "my <kin> was a ... <noun>": who, and the noun phrase said of them.
#: The name may carry its "'s" ("Hild's the queen"); "<Name> was queen of ..." needs no article.
_CLAIM = re.compile(r"(?:\b(?P<name>[A-Z][\w-]+(?:['’](?!s\b)[\w-]+)?(?:\s+[A-Z][\w-]+(?:['’](?!s\b)[\w-]+)?)?)|"
                    r"\b(?i:my|her|our)\s+(?P<kin>[a-z]+))"
                    r"(?:\s+(?P<verb>is|was|has been|had been|used to be|became)|(?P<s>['’]s))\s+"
                    r"(?:(?:a|an|the|my|her|our|his)\s+(?P<np>[^.!?;:,()\n]{1,80})|(?P<title>[a-z]+)(?=\s+of\b))")
#: Where a noun phrase ends: its head is the word before.
_NP_END = re.compile(r"\s+(?:who|whom|whose|which|that|where|when|with|from|of|in|on|at|for|to|by|than|as|"
                     r"like|since|until|before|after|because|if|but|here|there|now|then|once|too|again|today|tonight|ever|"
                     r"all|every|each|already|yet|back|alone|still|nowhere|somewhere|himself|herself|(?:and|or)\s+(?:a|an|the|my|his|her|she|he|"
                     r"i|they|it|never|always|not|still))\b.*$", re.I)
#: Plain nouns for a person or a place: no card needs to name them ("Hild was a hard woman").
PLAIN_NOUNS = frozenset("woman women man men person people lady gentleman soul one thing friend fellow sort kind type "
                        "creature girl boy child lass lad bit lot part place spot home sight story word fool dear "
                        "darling beauty marvel wonder treasure saint devil menace nuisance pest mess wreck state bore "
                        "coward liar cynic optimist pessimist realist believer sceptic skeptic softie".split())
#: "I'm a/an ...", "I was a ...", "As a ..., I": the noun phrase she gives herself (see :meth:`Verifier._role`).
_ROLE = re.compile(r"(?i:\bi(?:'m|’m| am| was| used to be|'ve been|’ve been| have been| became| work as| worked as)"
                   r"(?: now| really| actually| just| once| only| still| merely| simply)? (?:a|an|the)\s+|"
                   r"^\W*(?:as|being) (?:a|an)\s+)(?P<np>[^.!?;:()\n]{1,80})")
#: Words that make "a ... <noun>" a habit or a quality, not a calling ("a poor sleeper", "a fair cook").
QUALITY = frozenset("good bad poor fair terrible awful great fine decent lousy hopeless keen careful slow quick fast "
                    "early late light heavy sound restless born natural better worse best worst proper real "
                    "dreadful rotten passable middling".split())
#: Words after "a"/"the" that begin no noun phrase of a calling ("a little tired", "the same", "the first").
_NOT_A_CALLING = frozenset("little bit lot touch tad trifle deal same first last only other next one reason "
                           "kind sort type".split())
_THANKED = re.compile(r"(?i)\b(?:thank|thanks|thx|ta|cheers|grateful|appreciate|obliged)\b")
_WELCOME = re.compile(r"(?i)\byou(?:'re|’re| are)\s+(?:very\s+|most\s+|so\s+)?welcome\b(?!\s+(?:to|in|here|back|"
                      r"aboard|at|on|for|any))")
_SYMPATHY = re.compile(r"(?i)\bsorry (?:for your loss|to hear (?:that|this|about|of)|about your (?:loss|troubles?))\b|"
                       r"\bmy (?:deepest )?condolences\b|\bmy heart goes out\b")
#: Words of a player's line that tell of a trouble sympathy may answer.
TROUBLE_WORDS = frozenset(
    "died dead death dying lost lose losing loss passed funeral grave buried sick ill illness unwell hurt hurts "
    "injured injury pain ache aches aching sad sadness unhappy miserable bad hard terrible awful horrible broke "
    "broken cancer divorce divorced trouble troubles worried worry worries tired exhausted cold freezing wet "
    "soaked lonely alone afraid scared frightened fear miss missed fired sacked accident drowned drowning storm "
    "wreck wrecked crying cried tears grief grieving mourning widow widowed orphan poor debt homeless".split())
_LIGHT = frozenset("a an the just so very really such and but or of to in on at for with not no quite too bit".split())


#: A wh-question ("What time...?", "Who...?"), as the player's last question of the line.
_WH = re.compile(r"(?i)^\W*(?:(?:so|and|but|then|well|now|eve|tell me|say|remind me),?\s+)*"
                 r"(?P<wh>what|who|whom|whose|where|when|which|why|how)\b(?P<rest>[^?]*)\?")
#: A bare yes or no ("Yes, it is.", "No."), and a bare "I'm not (at all)." / "It is.": a polar answer.
_POLAR = re.compile(r"(?i)^\W*(?:(?:yes|yeah|yep|yup|no|nope|nah|aye|sure|certainly|indeed|of course)\b"
                    r"(?!\s+(?:one|idea|body|thing|where|more|less|longer|later|sooner|matter|doubt|earlier))|"
                    r"(?:i|it|that|he|she|they|we|you)(?:'m|’m|'s|’s|'re|’re| am| is| are| do| does| did| was| were|"
                    r" have| has| can| will| would)(?:n't|n’t| not)?(?: at all| really| quite| indeed| so| too)?\W*$)")
_TIME_WORDS = re.compile(
    r"(?i)\b(?:now|soon|later|tonight|tomorrow|today|yesterday|morning|evening|night|afternoon|dawn|dusk|noon|"
    r"midnight|sunrise|sunset|daybreak|hours?|minutes?|weeks?|months?|years?|days?|spring|summer|autumn|winter|"
    r"never|always|once|ago|since|until|till|before|after|tide|water|o'clock|o’clock|past|half|quarter|moment|"
    r"while|next|first light|january|february|march|april|may|june|july|august|september|october|november|"
    r"december|mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?)\b")
_CLOCK_WORDS = re.compile(r"(?i)\b(?:noon|midday|midnight|dawn|dusk|daybreak|sunrise|sunset|first light|o'clock|"
                          r"o’clock|past|half|quarter|low water|high water|low tide|high tide)\b")
_AMOUNT_WORDS = re.compile(
    r"(?i)\b(?:few|several|many|much|lots?|dozens?|hundreds?|thousands?|half|none|no|all|every|once|twice|never|"
    r"always|long|longer|forever|ages|while|years?|months?|weeks?|days?|hours?|minutes?|more|less|enough|plenty|"
    r"little|handful|couple|some|most|older|younger|since|lifetime|far|miles?|near|nearly|about|only|just)\b")
_PLACE_WORDS = re.compile(
    r"(?i)\b(?:in|on|at|by|near|under|over|behind|beside|above|below|across|inside|outside|up|down|here|there|"
    r"home|away|out|off|upstairs|downstairs|everywhere|nowhere|somewhere|past|through|along|between|beyond|round|"
    r"around|from|mainland|island|village|shore|sea)\b")
_WHO_WORDS = re.compile(
    r"(?i)\b(?:i|me|myself|my|mine|you|yourself|your|he|him|his|she|her|they|them|nobody|no one|someone|"
    r"anyone|everyone|somebody|none|only|just|that's|that is|it's|it is|it was|this is|keeper|walker)\b")
#: A person from her past by what they did for her ("taught me", "kept the light before me", "raised me").
_PAST_ROLE = re.compile(r"(?i)\b(?:taught|teach|trained|train|raised|brought (?:me|you|her) up|"
                        r"showed (?:me|you|her) how|"
                        r"kept (?:the|this|it)(?: light)?|keep the light|before (?:me|you|her)|"
                        r"(?:my|your|her) (?:grand)?(?:mother|father|mum|dad|gran|granny|grandma|grandpa))\b")
#: What her card says of such a person (:attr:`FactSheet.about` words).
_PAST_WORDS = frozenset("raised taught trained kept keeper".split()) | KIN
#: "I'm 31", "I am twenty-five (years old)", "I turned forty": an age she gives herself (group 1).
_SELF_AGE = re.compile(rf"(?i:\bi(?:'m|’m| am)\s+(?:only\s+|just\s+|nearly\s+|almost\s+)?|\bi turned\s+)"
                       rf"({NUMBER_WORD})(?=\s+years?\s+old\b|\s*(?:[.,;!?]|$|\s+(?:now|this|last|in|too|myself|and|as|come|next|on)\b))")
#: Frames that make a value hers ({v}: the value, escaped): her name, her home, her pet or person.
_HERS = {
    "name": (r"\bi(?:'m|’m| am)\s+{v}\b", r"\bmy name(?:'s|’s| is)\s+{v}\b", r"\bcall me\s+{v}\b"),
    "home": (r"\b(?:i|we)\s+(?:(?:have\s+)?(?:always\s+)?(?:live|lived|grew up|was born|were born|come|came|am|'m|’m)"
             r"(?:\s+\w+)?)\s+(?:in|from|at|near)\s+(?:the\s+)?{v}\b", r"\bmy (?:home|hometown|town|city|village)"
             r"(?:'s|’s| is| was)?\s+(?:in\s+)?{v}\b", r"\bi(?:'m|’m| am) from\s+{v}\b"),
    "kin": (r"\bmy\s+(?:\w+\s+){{0,2}}{v}\b", r"\b{v},?\s+my\s+(?:own\s+|old\s+|dear\s+)?\w+"),
}
_NAME_Q = re.compile(r"(?i)\bname\b|\bcalled\b|\bcall (?:it|him|her|them|the)\b")


def unanswered(reply: str, player_line: str, names: Iterable[str] = ()) -> str:
    """Why the opening sentence ``reply`` does not answer the player's wh-question (``""``: it
    answers, or the line asks none). Each kind of question asks for a kind of answer:

    - any wh-question: not a bare yes or no ("Yes, it is." to "What do you call the lamp?");
    - "what time": a clock time (a number, "noon", "half past", "low water"); "when": a time;
    - "how many / much / long / old / far / often...": an amount (a number, "a few", "years");
    - "who", or a question about a name: a name (a capitalised word, or one of ``names``) or a
      person ("my grandmother", "nobody");
    - "where": a place (a name, or "in", "on", "by the stove", "here").

    "How about", "what about", "what if" and "why" ask for no particular kind (only the first rule)."""
    questions = [q.strip() for q in re.findall(r"[^.!?]*\?", player_line)]
    m = _WH.match(questions[-1]) if questions else None
    if m is None:
        return ""
    wh, rest = m.group("wh").lower(), m.group("rest").lower().strip()
    if (wh in ("how", "what") and rest.split()[:1] in (["about"], ["if"])) or not reply.strip():
        return ""
    if _POLAR.match(reply):
        return f"answers the question {questions[-1]!r} with a bare yes or no"
    known = {n.lower() for n in names}
    words = re.findall(r"[A-Za-z][\w'’-]*", reply)
    named = any(w[0].isupper() and (i > 0 or w.lower().removesuffix("'s") in known) for i, w in enumerate(words)) \
        or bool(set(w.lower().removesuffix("'s") for w in words) & (known | KIN))
    numbered = bool(quantities(reply)) or bool(re.search(r"\d", reply))
    first = rest.split()[0] if rest.split() else ""
    if wh == "what" and first == "time":
        ok, want = numbered or bool(_CLOCK_WORDS.search(reply)), "a time"
    elif wh == "when":
        ok, want = numbered or bool(_TIME_WORDS.search(reply)), "when"
    elif wh == "how" and first in ("many", "much", "long", "old", "far", "often", "deep", "tall", "big", "high",
                                   "wide", "heavy", "soon", "fast", "late", "early"):
        ok, want = numbered or bool(_AMOUNT_WORDS.search(reply)) or bool(_TIME_WORDS.search(reply)), "how " + first
    elif wh in ("who", "whom", "whose") or (wh in ("what", "which") and _NAME_Q.search(rest)):
        ok, want = named or bool(_WHO_WORDS.search(reply)), "who or what name"
    elif wh == "where":
        ok, want = named or bool(_PLACE_WORDS.search(reply)), "where"
    else:
        return ""
    return "" if ok else f"does not answer {questions[-1]!r}: says no {want}"


def _told_age(beliefs: Iterable[tuple[str, str, str, str]], player_line: str) -> str:
    """The player's age as digits: her belief, else what the player's line tells ("I'm fifty-two"), else ``""``."""
    for entity, key, value, _ in beliefs:
        if (entity, key) == ("player", "age"):
            return value
    return next((t.value for t in facts_told(player_line) if (t.entity, t.key) == ("player", "age")), "")


def _age_words(text: str, age: int) -> str:
    """Why ``text`` says of the player an age in words that their told ``age`` is not ("you're in your
    mid-thirties" to 52, "a young man like you" to 52), or ``""``. Only clauses that speak of the player
    ("you", "your") count: "in her fifties" of someone else does not."""
    for clause in re.split(r"[.!?;]|,\s+(?:and|but)\b", text):
        vocative = _YOUNG_VOCATIVE.search(clause) if age >= YOUNG_BELOW else None
        if vocative:
            return f"calls the player young ({vocative.group(0).strip(' ,.!?')!r})"
        if not re.search(r"(?i)\byou(?:r|'re|’re)?\b", clause):
            continue
        for m in _AGE_SPAN.finditer(clause):
            if m.group("decade"):
                low = _DECADES[m.group("decade").lower()]
                part = (m.group("part") or "").lower()
                lo, hi = {"early": (low, low + 3), "mid": (low + 3, low + 6), "late": (low + 6, low + 9)}.get(
                    part, (low, low + 9))
            else:
                lo = parse_number(m.group("tens")) or 0
                hi = lo + 9
            if not lo <= age <= hi:
                return f"says the player's age is {m.group(0).strip()!r}"
        young = _YOUNG.search(clause) if age >= YOUNG_BELOW else None
        if young:
            return f"calls the player young ({young.group(0).strip(' ,.!?')!r})"
        old = _OLD.search(clause) if age < OLD_FROM else None
        if old:
            return f"calls the player old ({old.group(0).strip()!r})"
    return ""


#: Words of the first and second person (a line with none speaks of neither of them).
_PERSONAL = frozenset("i i'm i've i'll i'd me my mine myself you you're you've you'll you'd your yours yourself "
                      "we we're our us".split())


def _parroted(text: str, player_line: str) -> str:
    """The sentence of ``text`` (four words or more) made of the player's words, or ``""``."""
    said = set(tokens(player_line))
    if not said:
        return ""
    # a yes/no question about neither of them, said back as a statement, is its answer ("Is the tide
    # turning yet?" -> "The tide is turning.")
    asked = player_line.rstrip().endswith("?") and not said & _PERSONAL
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        words = tokens(sentence)
        if asked and not sentence.rstrip().endswith("?") and not set(words) & _PERSONAL:
            continue
        if len(words) >= 4 and sum(w in said for w in words) >= 0.9 * len(words):
            return sentence.strip()
    return ""


def _echoed(text: str, player_line: str, own: Iterable[str] = ()) -> str:
    """The "I'm ..." of ``text`` that repeats the player's "you are ..." (two or more content
    words that are not words of her card, ``own``), or ``""``."""
    skip = _LIGHT | set(own)
    called = [set(_words([m.group(1)])) - skip for m in _YOU_ARE.finditer(player_line)]
    if not called:
        return ""
    for m in _I_AM.finditer(text):
        mine = set(_words([m.group(1)])) - skip
        if any(len(mine & c) >= 2 for c in called):
            return m.group(0).strip()
    return ""


@dataclass(frozen=True)
class Checked:
    """What a check looked at: the ``names`` and ``numbers`` it found in the text."""

    names: tuple[str, ...] = ()
    numbers: tuple[str, ...] = ()


def _words(texts: Iterable[str]) -> set[str]:
    return {w.lower().removesuffix("'s") for t in texts for w in re.findall(r"[\w'\u00c0-\u024f-]+", t)}



#: A capitalised word that opens a sentence is read as a name when English uses it less often than this
#: Zipf frequency (log10 of uses per billion words, :func:`wordfreq.zipf_frequency`; 3.5 is about once in
#: 300,000 words: "Sirens" 3.41, "Harrowby" 1.51 fall below; "Honestly" 4.69, "Fog" 3.90 do not).
#: Chosen on the good replies of ``bench/data/coherence_replies.yaml`` and her card's own lines (none of
#: them is stopped by it); common first names ("Sarah" 4.48) stay above it and are not checked.
OPENING_NAME_ZIPF = 3.5
_OPENING_WORD = re.compile(r"(?:^|[.!?:\u2026\n])[\s\"'\u201c\u2018(*]*([A-Z][\w'\u2019-]*)")


def opening_names(text: str, vocabulary: Iterable[str] = ()) -> list[str]:
    """The capitalised words that open a sentence of ``text`` and read as names (lower-cased, without "'s"):
    rarer in English than :data:`OPENING_NAME_ZIPF` and not a word of ``vocabulary`` (her card's lower-case
    words, in the singular too: "Tomatoes" is a word of a card that speaks of tomatoes). "Sirens, the
    one who brings the mail." -> ``["sirens"]``; "Fog again." -> ``[]``."""
    known = set(vocabulary)
    out: list[str] = []
    for m in _OPENING_WORD.finditer(text):
        word = m.group(1).lower().removesuffix("'s").removesuffix("\u2019s")
        if word in known or singular(word) in known or word in COMMON_CAPITALS or len(word) < 2:
            continue
        if zipf_frequency(word, "en") < OPENING_NAME_ZIPF:
            out.append(word)
    return out


class Verifier:
    """Checks model replies against her fact sheet and beliefs (see the module doc).

    Args:
        sheet: her card's facts.
        extra_names: other names the story uses (places, items, characters).
    """

    def __init__(self, sheet: FactSheet, extra_names: Iterable[str] = ()) -> None:
        self.sheet = sheet
        self.extra = _words(extra_names)

    def check(self, text: str, facts: PersonaFacts | None = None, player_line: str = "",
              opening: bool = True) -> tuple[Verdict, Checked]:
        """Judge ``text`` (a sentence or a reply); ``facts`` carries her beliefs and names this turn;
        ``opening``: ``text`` opens her reply (where the answer to a question must be)."""
        facts = facts or PersonaFacts(name="")
        beliefs = facts.beliefs
        said = [v for _, _, v, _ in beliefs]
        pairs = set(self.sheet.quantities)
        for entity, key, value, _ in beliefs:
            n = parse_number(value)
            if key == "count" and n is not None:
                pairs.add((n, singular(entity.removeprefix("player_").split("_")[-1])))
            if key == "age" and n is not None:
                pairs.update({(n, "year"), (n, "")})
            pairs.update((q.value, q.unit) for q in quantities(value))
        line_q = quantities(player_line)
        pairs.update((q.value, q.unit) for q in line_q)
        age = _told_age(beliefs, player_line)
        for m in _AGE_SPAN.finditer(text):  # "fifty-something" to a told 52 states the decade, not a number
            tens = parse_number(m.group("tens") or "")
            if tens is not None and age.isdigit() and tens <= int(age) <= tens + 9:
                pairs.add((tens, ""))
        values = {v for v, _ in pairs}
        units: dict[str, set[int]] = {}
        for v, u in pairs:
            if u:
                units.setdefault(u, set()).add(v)
        found = quantities(text)
        names_found = self._names(text)
        checked = Checked(tuple(names_found), tuple(q.said for q in found))
        why = self._player_facts(text, beliefs, player_line)
        if why:
            return Verdict(False, "contradiction", (why,), text), checked
        why = self._player_past(text, facts, player_line)
        if why:
            return Verdict(False, "contradiction", (why,), facts.player_name), checked
        why = self._own_age(text) or self._taken(text, facts, player_line)
        if why:
            return Verdict(False, "contradiction", (why,), text), checked
        for q in found:
            if (q.value, q.unit) in pairs:
                continue
            if q.unit and q.unit in units and q.value not in units[q.unit] and q.unit not in ("time", "day", "way"):
                stated = ", ".join(str(v) for v in sorted(units[q.unit]))
                return Verdict(False, "contradiction", (f"says {q.said} {q.unit}(s); what she knows says {stated}",),
                               q.said), checked
            if q.value in values:
                continue
            return Verdict(False, "unverified", (f"says {q.said!r}{' ' + q.unit if q.unit else ''}, which nothing "
                                                 "she knows states",), q.said), checked
        allowed = (set(self.sheet.names) | self.extra | _words([facts.name, *facts.aliases, facts.home,
                                                               facts.player_name, *facts.known_names, *said,
                                                               player_line]) | COMMON_CAPITALS)
        for name in names_found:
            if name not in allowed:
                return Verdict(False, "unverified", (f"names {name!r}, which neither her card nor what she was "
                                                     "told mentions",), name), checked
        why = self._claim(text)
        if why:
            return Verdict(False, "contradiction", (why,), text), checked
        if _WELCOME.search(text) and not _THANKED.search(player_line):
            return Verdict(False, "ooc", ("says \"you're welcome\" to thanks nobody gave (a customer-service close)",),
                           "you're welcome"), checked
        pity = _SYMPATHY.search(text)
        if pity and not set(tokens(player_line)) & TROUBLE_WORDS:
            return Verdict(False, "ooc", ("offers sympathy for a trouble the player never told of",),
                           pity.group(0)), checked
        parrot = _parroted(text, player_line)
        if parrot:
            return Verdict(False, "repeat", (f"says the player's line back as her own: {parrot!r}",), parrot), checked
        echo = _echoed(text, player_line, self.sheet.vocabulary)
        if echo:
            return Verdict(False, "identity", (f"takes on what the player called her: {echo!r}",), echo), checked
        role = self._role(text)
        if role:
            return Verdict(False, "identity", (f"says she is {'an' if role[0] in 'aeiou' else 'a'} {role}, which "
                                               "her card never calls her",), role), checked
        place = self._place_kind(text)
        if place:
            return Verdict(False, "contradiction", (place,), text), checked
        if opening:
            missing = unanswered(text, player_line, self.sheet.names | set(_words([*said, facts.player_name])))
            if missing:
                return Verdict(False, "unanswered", (missing,), text), checked
        return Verdict(True), checked

    def _role(self, text: str) -> str:
        """The calling ``text`` gives her ("I am a dragon", "As a vampire, I...") that is no word of
        her card and no plain or quality word (:data:`PLAIN_NOUNS`, :data:`QUALITY`), or ``""``.
        The head of the noun phrase is its last word before "who", "from", "and I"... (a list of
        adjectives before a comma counts with the noun after it: "a stubborn, proud woman")."""
        vocab = self.sheet.vocabulary
        for m in _ROLE.finditer(text):
            np = re.sub(r"^(?:little |tiny )?bit of (?:a|an) ", "", m.group("np").strip(), flags=re.I)
            np = _NP_END.sub("", np).strip(" ,")
            pieces = [p.strip() for p in np.split(",") if p.strip()]
            if not pieces:
                continue
            words = re.findall(r"[A-Za-z][\w'’-]*", pieces[0])
            if not words or words[0].lower() in _NOT_A_CALLING:
                continue
            heads = [words[-1]]
            if len(words) == 1 and len(pieces) > 1 and not re.search(
                    r"(?i)^(?:a|an|the|my|and|but|or)\b|\b(?:i|you|he|she|we|they|it)\b", pieces[1]):
                more = re.findall(r"[A-Za-z][\w'’-]*", pieces[1])
                heads += more[-1:]
            low = [w.lower() for w in words]
            if any(h[0].isupper() for h in heads) or (len(words) > 1 and set(low[:-1]) & QUALITY):
                continue  # a name (checked with the names) or a quality ("a poor sleeper")
            ok = [bool({h.lower(), singular(h)} & (vocab | PLAIN_NOUNS | KIN)) or h.lower().endswith(("'s", "’s"))
                  for h in heads]
            if not any(ok):
                return " ".join(low)
        return ""

    def _place_kind(self, text: str) -> str:
        """Why ``text`` calls a place of her card a place of another kind ("the great city of Skerrow"
        where her card says an island), or ``""``."""
        places = self.sheet.places or {}
        for name, kind in place_kinds(text):
            known = places.get(name)
            if known and kind not in known:
                said = " or ".join(sorted(known))
                return (f"calls {name.capitalize()} {'an' if kind[0] in 'aeiou' else 'a'} {kind}; her card says "
                        f"{'an' if said[0] in 'aeiou' else 'a'} {said}")
        return ""

    def _claim(self, text: str) -> str:
        """Why a "<Name> was a <noun>" of ``text`` is not what her card says of them (``""``: nothing)."""
        about = self.sheet.about or {}
        for m in _CLAIM.finditer(text):
            if m.group("name"):
                who = [w.lower().removesuffix("'s") for w in m.group("name").split()]
                who = [w for w in who if w in self.sheet.names and w in about and w not in (self.sheet.places or {})]
            else:
                who = [m.group("kin").lower()] if m.group("kin").lower() in KIN & about.keys() else []
            if not who:
                continue
            np = _NP_END.sub("", m.group("np") or m.group("title")).strip()
            words = re.findall(r"[A-Za-z][\w'-]*", np)
            if not words:
                continue
            head = words[-1].lower()
            known = set().union(*(about[w] for w in who))
            if head in known or singular(head) in known or head in PLAIN_NOUNS or singular(head) in PLAIN_NOUNS:
                continue
            verb = "is" if m.group("s") else m.group("verb")
            return (f"says {m.group('name') or 'her ' + m.group('kin')} {verb} "
                    f"{'an' if head[0] in 'aeiou' else 'a'} {head}, which her card never says of them")
        return ""

    def _names(self, text: str) -> list[str]:
        out = capitalised_names(text) + opening_names(text, self.sheet.vocabulary)
        common = self.sheet.vocabulary
        for m in re.finditer(r"\b([A-Z][\w'-]+)\s+([A-Z][\w'-]+)", text):
            out += [w for w in (m.group(1).lower(), m.group(2).lower()) if w not in common]
        return list(dict.fromkeys(w.removesuffix("'s").removesuffix("’s") for w in out if w not in ("i",)))

    def _own_age(self, text: str) -> str:
        """Why ``text`` gives her an age her card does not ("I'm 31" where it says thirty-six), or ``""``."""
        found = {parse_number(f.value) or next((q.value for q in quantities(f.value)), None)
                 for f in self.sheet.facts if "old" in f.unit.lower().split()}
        ages = {a for a in found if a is not None}
        if not ages:
            return ""
        for m in _SELF_AGE.finditer(text):
            n = parse_number(m.group(1))
            if n is not None and n not in ages:
                return f"says she is {m.group(1)}; her card says {', '.join(str(a) for a in sorted(ages))}"
        return ""

    @staticmethod
    def _taken(text: str, facts: PersonaFacts, player_line: str) -> str:
        """Why ``text`` takes a fact of the player's as hers (see the module doc, 9), or ``""``: the
        player's name, home, or a told pet's or person's name in a frame of hers ("my cat Pepper")."""
        told: list[tuple[str, str]] = []  # (frame kind, value)
        for entity, key, value, _ in facts.beliefs:
            if not value.strip():
                continue
            if (entity, key) == ("player", "name"):
                told.append(("name", value))
            elif (entity, key) == ("player", "home"):
                told.append(("home", value))
            elif entity.startswith("player_") and key == "name":
                told.append(("kin", value))
        for t in facts_told(player_line):
            if (t.entity, t.key) in (("player", "name"), ("player", "home")):
                told.append((t.key, t.value))
            elif t.entity.startswith("player_") and t.key == "name":
                told.append(("kin", t.value))
        if facts.player_name:
            told.append(("name", facts.player_name))
        own = {w.lower() for w in re.findall(r"[\w'-]+", " ".join([facts.name, *facts.aliases, facts.home]))}
        for kind, value in dict.fromkeys(told):
            words = [w for w in re.findall(r"[\w'’-]+", value) if w[:1].isupper() or kind == "home"]
            if not words or {w.lower() for w in words} <= own:
                continue
            v = r"\s+".join(re.escape(w) for w in words)
            for frame in _HERS[kind]:
                m = re.search(frame.format(v=v + r"(?!['’\w])"), text, re.I)
                if m:
                    what = {"name": "name", "home": "home", "kin": "pet's or person's name"}[kind]
                    return f"takes the player's {what} ({value}) as hers: {m.group(0)!r}"
        return ""

    def _player_past(self, text: str, facts: PersonaFacts, player_line: str) -> str:
        """Why ``text`` names the player as a person from her past (who taught or raised her) where her
        card names another (Hild), or ``""``: the player's name in a sentence of such a role, or as the
        answer to the player's who-question about one ("Who taught you to keep the light?" -> "It's
        Tomas."), and the card's person not named."""
        player = facts.player_name.strip()
        if not player or not re.search(rf"\b{re.escape(player)}\b", text):
            return ""
        own = set(_words([facts.name, *facts.aliases, player]))
        about = self.sheet.about or {}
        places = self.sheet.places or {}
        people = sorted(((len(about[n] & _PAST_WORDS), n) for n in self.sheet.names
                         if n in about and n not in own and n not in places
                         and about[n] & (KIN | {"taught", "raised"})),
                        reverse=True)
        if not people or people[0][1] in set(tokens(text)):
            return ""
        asked = asks_for(player_line) == "who" and bool(_PAST_ROLE.search(player_line)) \
            and bool(set(tokens(player_line)) & {"you", "your"})
        in_role = any(re.search(rf"\b{re.escape(player)}\b", s) and _PAST_ROLE.search(s)
                      for s in re.split(r"(?<=[.!?;])\s+", text))
        if not (asked or in_role):
            return ""
        return (f"names the player ({player}) as the one from her past; her card names "
                f"{people[0][1].capitalize()}")

    @staticmethod
    def _player_facts(text: str, beliefs: tuple[tuple[str, str, str, str], ...], player_line: str = "") -> str:
        mine = {(e, k): v for e, k, v, _ in beliefs}
        home = mine.get(("player", "home"), "")
        if home:
            for m in _YOU_HOME.finditer(text):
                if set(_words([m.group(1)])).isdisjoint(_words([home])):
                    return f"says the player is from {m.group(1)!r}; they said {home}"
        age = _told_age(beliefs, player_line)
        if age:
            for m in _YOU_AGE.finditer(text):
                n = parse_number(m.group(1))
                if re.match(r"[\s-]*(?:something|odd|ish)\b", text[m.end():], re.I):
                    continue  # "forty-something": a range, judged below
                if n is not None and str(n) != age:
                    return f"says the player is {m.group(1)}; they said {age}"
            why = _age_words(text, int(age)) if age.isdigit() else ""
            if why:
                return f"{why}; they said {age}"
        for m in _YOUR_REL.finditer(text):
            told = mine.get((f"player_{m.group(1).lower()}", "name"), "")
            if told and m.group(2).lower() != told.lower():
                return f"calls the player's {m.group(1)} {m.group(2)!r}; they said {told}"
        return ""


__all__ = ["Checked", "Verifier"]

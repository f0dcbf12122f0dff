"""Character cards: a character's definition, as frozen data.

A card lives in ``characters/<id>.yaml`` (SillyTavern Character Card V2/V3 files,
JSON or PNG, import through :mod:`game.cast.card_io`). It extends the minimal card
of the Zero Mark slice (``id``, ``name``, ``look`` with its reference images) with
everything a living character needs: description, personality and traits, speaking
style, greetings, example exchanges, a lorebook, relationship axes, a voice, the
lines she never says.

A card is data: it is read with YAML's core types only (no tags, no objects), and
its text is never executed as a template. ``{{char}}``/``{{user}}`` (and the old
``<BOT>``/``<USER>``), the card-field macros and the harmless SillyTavern macros
(``{{newline}}``, ``{{random:...}}``...) are replaced by plain string substitution in
:func:`substitute` (:mod:`game.cast.macros`); every other macro is removed, never
interpreted.

Errors name the file, line and field, e.g.
``characters/eve.yaml:41:9: lorebook.entries[2].keys: must be a list of text``
(:class:`game.errors.CardError`).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import regex
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from game.cast.macros import expand
from game.errors import CardError, StoryError, near_hint
from game.story.schema import ID_RE, Id, keys_at
from game.story.yamlio import Marked, compose_marked, read_text

#: A card id is a story id (the cast member it plays): the same pattern, the same length.
CardId = Id

#: Largest card file read, bytes.
MAX_CARD_BYTES = 16 * 1024 * 1024


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Look(_Model):
    """What the character looks like: the identity anchor sent to the video backend.

    Attributes:
        description: appearance prompt text (kept verbatim in the sink).
        images: reference image paths, relative to the card file (or absolute); the
            first is the main reference.
    """

    description: str = ""
    images: tuple[str, ...] = ()


class Voice(_Model):
    """Text-to-speech settings.

    Attributes:
        tts: engine name (``pyttsx3``: espeak-ng on Linux, the system voice elsewhere).
        voice: engine voice id (espeak-ng: ``en-us+f3``, ``en-gb+f4``...).
        rate: speaking rate, words per minute (espeak-ng's default is 175).
        pitch: espeak-ng pitch, 0-99 (50 is the voice's default).
        volume: 0.0-1.0.
    """

    tts: str = "pyttsx3"
    voice: str = "en-us+f3"
    rate: int = Field(default=170, ge=60, le=500)
    pitch: int = Field(default=50, ge=0, le=99)
    volume: float = Field(default=1.0, ge=0.0, le=1.0)


class Axis(_Model):
    """A relationship axis (``trust``, ``affinity``, ``curiosity``...).

    Attributes:
        start: value at the start of a story (a story's ``cast.<id>.relationship`` wins).
        baseline: value it decays toward, every turn.
        min, max: clamp range.
        decay: fraction of the distance to ``baseline`` removed per turn, in [0, 1):
            ``v <- baseline + (v - baseline) * (1 - decay)``; half-life in turns is
            ``ln 2 / -ln(1 - decay)`` (0.01 -> 69 turns, 0.02 -> 34 turns).
        tone: change per unit of VADER compound score (-1..1) of what the player says
            to her (0 = tone does not move this axis).
        question: change when the player asks her a question (a ``?`` in the line).
    """

    start: float = 0.0
    baseline: float = 0.0
    min: float = -10.0
    max: float = 10.0
    decay: float = Field(default=0.02, ge=0.0, lt=1.0)
    tone: float = 1.0
    question: float = 0.0

    @model_validator(mode="after")
    def _in_range(self) -> Axis:
        if self.min >= self.max:
            raise ValueError(f"min ({self.min}) must be below max ({self.max})")
        for name in ("start", "baseline"):
            v = getattr(self, name)
            if not self.min <= v <= self.max:
                raise ValueError(f"{name} {v} is outside [{self.min}, {self.max}]")
        return self


class ExpressionRule(_Model):
    """Maps relationship values to an expression name and a voice style.

    The first rule whose bounds all hold wins (see
    :func:`game.cast.relationships.expression_for`).

    Attributes:
        name: expression name (``warm``, ``guarded``...): a V3 ``emotion`` asset name
            and the reaction sent to the world.
        at_least: axis -> lowest value (inclusive).
        below: axis -> value it must stay under.
        rate: words-per-minute offset added to the voice's rate.
        pitch: offset added to the voice's pitch (0-99 scale).
    """

    name: str = Field(min_length=1)
    at_least: dict[str, float] = Field(default_factory=dict)
    below: dict[str, float] = Field(default_factory=dict)
    rate: int = 0
    pitch: int = 0


class Exchange(_Model):
    """An example exchange: what the player says and how she answers."""

    user: str = ""
    char: str


class Answer(_Model):
    """An authored answer: what she says (source ``authored``) when the player's line means
    one of ``questions`` (MiniLM cosine, see :class:`game.cast.dialogue.AuthoredKnowledge`).

    Attributes:
        id: stable id, recorded with the reply (``answer.<id>``).
        questions: ways the player may ask it (more paraphrases raise recall).
        answer: her answer; ``{{user}}`` becomes the player's name when she knows it.
        unknown: said instead when the answer names the player and she does not know the
            name yet (``""``: the answer is skipped then and the model answers).
    """

    id: CardId
    questions: tuple[str, ...] = Field(min_length=1)
    answer: str = Field(min_length=1)
    unknown: str = ""


class Fact(_Model):
    """One structured fact of hers (the card's fact sheet; :mod:`game.cast.factsheet`).

    Attributes:
        id: stable id (recorded with a grounded reply).
        value: the fact's value as she would say it (``seven years``, ``1871``, ``Admiral``).
        questions: ways the player may ask for it (MiniLM match, as :class:`Answer`).
        say: her answer in her voice (must contain the value's words or number).
        unit: what a number counts (``years``, ``people``), so a reply's "ten years" is
            checked against it; ``""`` when the value is not a number.
    """

    id: str = Field(min_length=1)
    value: str = Field(min_length=1)
    questions: tuple[str, ...] = ()
    say: str = ""
    unit: str = ""


#: The player's intents an authored reply may answer (:data:`game.cast.appraisal.INTENTS`).
REPLY_INTENTS = ("apology", "thanks", "compliment", "insult", "threat", "gift", "farewell", "greeting", "question",
                 "other")
#: Kinds of told fact a ``replies.told`` acknowledgement may take up (the groups of
#: :data:`game.cast.grounding.QUESTIONS`: ``relation`` is a person's or pet's name, ``count`` how many).
TOLD_GROUPS = ("name", "full_name", "age", "home", "work", "likes", "dislikes", "gave", "favourite", "relation",
               "count", "place", "carer")
#: The only slots an acknowledgement may use: ``{value}`` (the player's words) and ``{thing}`` (the
#: relation or counted noun).
REPLY_SLOTS = frozenset({"value", "thing"})


def _slots(line: str) -> list[str]:
    """The ``{name}`` slots of ``line`` (``ValueError`` for a brace that is not a plain slot)."""
    out = []
    for _, name, spec, conv in string.Formatter().parse(line):
        if name is None:
            continue
        if spec or conv or name not in REPLY_SLOTS:
            raise ValueError(f"{line!r}: only the slots {{value}} and {{thing}} may be used (found {{{name}}})")
        out.append(name)
    return out


class Replies(_Model):
    """Her authored replies by what the player's line does, said instead of a model reply that
    was replaced (incoherent, or no model): see :mod:`game.cast.replies`.

    Attributes:
        apology, thanks, compliment, insult, threat, gift, farewell, greeting, question, other: lines for a line of
            that intent (:class:`game.cast.appraisal.Appraiser`); no slots.
        told: acknowledgement by kind of fact the player told in that very line
            (:data:`TOLD_GROUPS`), e.g. ``relation: "{value}. I'll remember the name."``;
            ``{value}`` is the player's words (trimmed, or the line is not used), ``{thing}``
            the relation or counted noun.
    """

    apology: tuple[str, ...] = ()
    thanks: tuple[str, ...] = ()
    compliment: tuple[str, ...] = ()
    insult: tuple[str, ...] = ()
    threat: tuple[str, ...] = ()
    gift: tuple[str, ...] = ()
    farewell: tuple[str, ...] = ()
    greeting: tuple[str, ...] = ()
    question: tuple[str, ...] = ()
    other: tuple[str, ...] = ()
    told: dict[str, str] = Field(default_factory=dict)

    @field_validator(*REPLY_INTENTS)
    @classmethod
    def _plain(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for line in v:
            if not line.strip():
                raise ValueError("a reply line must not be empty")
            if _slots(line):
                raise ValueError(f"{line!r}: an intent's lines have no slots (use replies.told for {{value}})")
        return v

    @field_validator("told")
    @classmethod
    def _told(cls, v: dict[str, str]) -> dict[str, str]:
        for key, line in v.items():
            if key not in TOLD_GROUPS:
                raise ValueError(f"told.{key}: unknown kind of told fact (known: {', '.join(TOLD_GROUPS)})")
            if not line.strip():
                raise ValueError(f"told.{key}: must not be empty")
            _slots(line)
        return v

    def lines(self, intent: str) -> tuple[str, ...]:
        """The lines for ``intent`` (``()`` for an intent it has none for)."""
        return tuple(getattr(self, intent, ())) if intent in REPLY_INTENTS else ()

    def authored(self) -> bool:
        """Whether any line is authored (a card without: her ``fallbacks`` as before)."""
        return bool(self.told) or any(self.lines(i) for i in REPLY_INTENTS)


class LoreEntry(_Model):
    """A lorebook (World Info) entry: knowledge inserted when its keys are mentioned.

    Field names follow the Character Card V2 ``character_book`` entry (V3 adds
    ``use_regex``).

    Attributes:
        keys: words or phrases that activate it (whole-word, case-insensitive unless
            ``case_sensitive``; regular expressions when ``use_regex``, run by the ``regex``
            package with a :data:`REGEX_KEY_TIMEOUT_S` time limit per search, so a
            catastrophic pattern cannot freeze a turn).
        content: the text inserted into the prompt.
        priority: higher is kept first when over budget (V2: "lowest dropped first");
            also raises the importance of memories that mention the keys.
        insertion_order: lower is inserted higher (V2).
        enabled: disabled entries are ignored.
        constant: always inserted (budget allowing). An enabled entry with no keys that
            is neither ``constant`` nor ``meaning`` never activates (imported cards may
            have such entries; our YAML cards are refused with the line).
        selective: also needs one of ``secondary_keys``.
        meaning: also activate by meaning (cosine similarity of the player's line to
            the content over ``Lorebook.meaning_threshold``); ours, kept under
            ``extensions.worldloom`` in Tavern files.
        extensions: unknown keys kept for round trips.
    """

    keys: tuple[str, ...] = ()
    content: str = ""
    priority: int = 10
    insertion_order: int = 100
    enabled: bool = True
    constant: bool = False
    selective: bool = False
    secondary_keys: tuple[str, ...] = ()
    case_sensitive: bool = False
    use_regex: bool = False
    meaning: bool = False
    name: str = ""
    id: int | str | None = None
    comment: str = ""
    position: Literal["", "before_char", "after_char"] = ""
    extensions: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _regexes_compile(self) -> LoreEntry:
        if self.use_regex:
            for k in (*self.keys, *self.secondary_keys):
                try:
                    regex.compile(k)
                except regex.error as exc:
                    raise ValueError(f"key {k!r} is not a valid regular expression: {exc}") from exc
        return self

    def matches(self, text: str) -> bool:
        """Whether ``text`` activates this entry by keyword (constant entries always do)."""
        if not self.enabled:
            return False
        if self.constant:
            return True
        if not any(_key_search(k, self.case_sensitive, self.use_regex, text) for k in self.keys):
            return False
        if self.selective and self.secondary_keys:
            return any(_key_search(k, self.case_sensitive, self.use_regex, text) for k in self.secondary_keys)
        return True


#: Longest a regular-expression lorebook key may search one text, seconds: a key such as ``(a+)+$``
#: backtracks for seconds to minutes on a long line; past this it counts as not matching.
REGEX_KEY_TIMEOUT_S = 0.05


@lru_cache(maxsize=4096)
def _key_regex(key: str, case_sensitive: bool, use_regex: bool) -> Any:
    if use_regex:  # the ``regex`` package: its searches take a timeout
        return regex.compile(key, 0 if case_sensitive else regex.IGNORECASE)
    return re.compile(r"(?<!\w)" + re.escape(key.strip()) + r"(?!\w)", 0 if case_sensitive else re.IGNORECASE)


def _key_search(key: str, case_sensitive: bool, use_regex: bool, text: str) -> bool:
    """Whether ``key`` is found in ``text``; a regex key that runs past :data:`REGEX_KEY_TIMEOUT_S` is not."""
    rx = _key_regex(key, case_sensitive, use_regex)
    if not use_regex:
        return bool(rx.search(text))
    try:
        return bool(rx.search(text, timeout=REGEX_KEY_TIMEOUT_S))
    except TimeoutError:
        return False


class Lorebook(_Model):
    """A character book (V2 ``character_book``) and our matching settings.

    Attributes:
        entries: the entries.
        scan_depth: how many recent history messages are scanned for keys (ST default 2).
        token_budget: most tokens lore may take in a prompt (``None``: 25% of the
            prompt budget, SillyTavern's default).
        meaning_threshold: cosine similarity (MiniLM) above which a ``meaning`` entry
            activates.
    """

    name: str = ""
    description: str = ""
    scan_depth: int = Field(default=2, ge=0, le=100)
    token_budget: int | None = Field(default=None, ge=0)
    recursive_scanning: bool = False
    meaning_threshold: float = Field(default=0.45, ge=-1.0, le=1.0)
    extensions: dict[str, Any] = Field(default_factory=dict)
    entries: tuple[LoreEntry, ...] = ()


class DepthPrompt(_Model):
    """SillyTavern's character note (V2 ``extensions.depth_prompt``): a line put into the chat
    ``depth`` messages from its end (0: after the player's last line; SillyTavern's default 4),
    as a message of ``role``, every turn (:meth:`game.cast.prompt.PromptParts.to_messages`)."""

    prompt: str = ""
    depth: int = Field(default=4, ge=0, le=1000)
    role: Literal["system", "user", "assistant"] = "system"


class Asset(_Model):
    """A V3 asset: ``type`` (icon, background, user_icon, emotion...), ``uri``, ``name``, ``ext``."""

    type: str
    uri: str
    name: str = ""
    ext: str = ""


class CharacterCard(_Model):
    """A character's definition (frozen).

    The minimal card's fields (``id``, ``name``, ``look``) keep their names; the rest
    follows Character Card V2/V3 where a V2 field exists (``description``,
    ``personality``, ``scenario``, ``system_prompt``...) and adds ours (``traits``,
    ``speaking_style``, ``core_facts``, ``axes``, ``voice``, ``never_say``, ``gifts``,
    ``expressions``), which travel under ``extensions.worldloom`` in Tavern files.

    Attributes:
        id: stable id (``eve``), the key in ``GameState.relationships``.
        name: display name; replaces ``{{char}}``.
        nickname: V3 nickname (replaces ``{{char}}`` when set).
        look: appearance and reference images (the visual anchor).
        description: who she is (sink).
        personality: a short summary (sink).
        traits: personality traits (sink).
        speaking_style: how she talks (sink).
        scenario: the situation the player meets her in.
        core_facts: facts she always knows (sink; never evicted).
        greetings: opening lines; the first is V2 ``first_mes``, the rest ``alternate_greetings``.
        group_greetings: V3 ``group_only_greetings``.
        examples: example exchanges (V2 ``mes_example``).
        lorebook: knowledge entries.
        axes: relationship axes by name (at least ``trust`` and ``affinity`` for a
            story's conditions to read).
        gifts: item id, item tag or ``default`` -> axis -> change, her own taste in
            gifts (added to what the story's ``on_give`` effects do).
        expressions: rules from relationship values to an expression and a voice style.
        voice: text-to-speech settings.
        never_say: lines (or phrases) she never says; the persona guard checks replies.
        answers: authored answers, said before the model is asked (see :class:`Answer`).
        facts: structured facts (:class:`Fact`): answered from when asked, checked in
            every model reply (:mod:`game.cast.verifier`).
        grounded: her answer, by kind of told fact (``age``, ``home``, ``relation``, ``count``...), when
            the player asks for what they told her (:mod:`game.cast.grounding`; ``{value}``, ``{thing}``).
        deflections: lines in her voice said instead of a reply that broke character or
            to a line that tries to take her out of the story (default: ``fallbacks``).
        fallbacks: lines in her voice said when no reply may be (the model failed, or
            every attempt was rejected by the persona guard).
        replies: her authored replies by the player's intent and the fact they just told
            (:class:`Replies`), said instead of a replaced reply; none: ``fallbacks`` as before.
        home: where she lives, for the persona guard's home check (``""``: any place her
            card names).
        system_prompt, post_history_instructions: V2 fields; empty means our defaults.
        depth_prompt: the character note put into the chat at its depth (:class:`DepthPrompt`;
            V2 ``extensions.depth_prompt``).
        creator_notes: V2; never put into a prompt.
        tags, creator, character_version: V2 metadata.
        assets, source, creator_notes_multilingual, creation_date, modification_date: V3.
        extensions: other applications' extension keys, kept for round trips.
        where: the file the card was read from (not exported).
    """

    id: CardId
    name: str = Field(min_length=1)
    nickname: str = ""
    look: Look = Field(default_factory=Look)
    description: str = ""
    personality: str = ""
    traits: tuple[str, ...] = ()
    speaking_style: str = ""
    scenario: str = ""
    core_facts: tuple[str, ...] = ()
    greetings: tuple[str, ...] = ()
    group_greetings: tuple[str, ...] = ()
    examples: tuple[Exchange, ...] = ()
    lorebook: Lorebook = Field(default_factory=Lorebook)
    axes: dict[str, Axis] = Field(default_factory=dict)
    gifts: dict[str, dict[str, float]] = Field(default_factory=dict)
    expressions: tuple[ExpressionRule, ...] = ()
    voice: Voice = Field(default_factory=Voice)
    never_say: tuple[str, ...] = ()
    answers: tuple[Answer, ...] = ()
    facts: tuple[Fact, ...] = ()
    grounded: dict[str, str] = Field(default_factory=dict)
    deflections: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] = ()
    replies: Replies = Field(default_factory=Replies)
    home: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""
    depth_prompt: DepthPrompt | None = None
    creator_notes: str = ""
    tags: tuple[str, ...] = ()
    creator: str = ""
    character_version: str = ""
    assets: tuple[Asset, ...] = ()
    source: tuple[str, ...] = ()
    creator_notes_multilingual: dict[str, str] = Field(default_factory=dict)
    creation_date: int | None = None
    modification_date: int | None = None
    extensions: dict[str, Any] = Field(default_factory=dict)
    where: str = Field(default="", exclude=True, repr=False)

    @field_validator("lorebook", mode="before")
    @classmethod
    def _entries_shorthand(cls, v: Any) -> Any:
        return {"entries": v} if isinstance(v, list) else v

    @field_validator("examples", mode="before")
    @classmethod
    def _example_pairs(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"char": x} if isinstance(x, str) else x for x in v]
        return v

    @model_validator(mode="after")
    def _axes_known(self) -> CharacterCard:
        known = set(self.axes)
        for key, deltas in self.gifts.items():
            for axis in deltas:
                if known and axis not in known:
                    raise ValueError(f"gifts.{key}: unknown axis {axis!r} (axes: {sorted(known)})")
        return self

    @property
    def reference_image(self) -> str:
        """The main reference image path as written in the card (``""`` when none)."""
        return self.look.images[0] if self.look.images else ""

    @property
    def display_name(self) -> str:
        """The name used for ``{{char}}``: the nickname when set, else the name."""
        return self.nickname or self.name

    def image_paths(self) -> list[Path]:
        """``look.images`` resolved against the card file's folder."""
        base = Path(self.where).parent if self.where else Path(".")
        return [p if (p := Path(s)).is_absolute() else base / p for s in self.look.images]


def substitute(text: str, char: str, user: str = "the player", fields: Mapping[str, str] | None = None,
               seed: int = 0) -> str:
    """Every SillyTavern macro in ``text`` replaced or removed (:func:`game.cast.macros.expand`):
    ``{{char}}``/``<BOT>`` by ``char``, ``{{user}}``/``<USER>`` by ``user``, card fields from
    ``fields``, unknown macros removed. One pass; the replacement text is never re-scanned:
    a card is data, not a template program.
    """
    return expand(text, char, user, fields, seed)


def card_fields(card: CharacterCard) -> dict[str, str]:
    """The card fields macros may name (``{{description}}``...; :data:`game.cast.macros.FIELD_MACROS`)."""
    return {"description": card.description, "personality": card.personality, "scenario": card.scenario,
            "system_prompt": card.system_prompt, "post_history_instructions": card.post_history_instructions}


# -- reading ------------------------------------------------------------------

_TYPE_WORDS = {
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "string_type": "must be text",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "missing": "is required",
    "extra_forbidden": "is not a card field",
}


def field_path(loc: tuple[str | int, ...]) -> str:
    """``("lorebook", "entries", 2, "keys")`` -> ``lorebook.entries[2].keys``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


#: Pydantic's bound errors -> plain words; each fills its bound from the error's ``ctx``.
_BOUND_WORDS = {
    "greater_than_equal": "must be at least {ge}",
    "less_than_equal": "must be at most {le}",
    "greater_than": "must be more than {gt}",
    "less_than": "must be less than {lt}",
    "string_too_short": "must be at least {min_length} characters",
    "too_short": "must have at least {min_length} items",
}


def explain(err: dict[str, Any]) -> str:
    """One pydantic error as ``field: why`` in plain words (``voice.rate: must be at most 500``,
    ``name: must not be empty``)."""
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    why = _TYPE_WORDS.get(err["type"], err["msg"])
    ctx = err.get("ctx") or {}
    if err["type"] in ("string_too_short", "too_short") and ctx.get("min_length") == 1:
        why = "must not be empty"
    elif err["type"] in _BOUND_WORDS:
        try:
            why = _BOUND_WORDS[err["type"]].format(**ctx)
        except (KeyError, IndexError):  # no bound in ctx: pydantic's own words
            pass
    if err["type"] == "value_error":
        why = str(err["msg"]).removeprefix("Value error, ")
    # "keys[0]: must be text" reads better as "keys: must be a list of text"
    if loc and isinstance(loc[-1], int) and err["type"] == "string_type":
        return f"{field_path(loc[:-1])}: must be a list of text (item {loc[-1]} is not)"
    return f"{field_path(loc)}: {why}" if loc else why


def card_from_dict(data: Any, where: str = "", marked: Marked | None = None, prefix: str = "",
                   prefixes: dict[str, str] | None = None) -> CharacterCard:
    """Validate a plain dict into a card.

    Args:
        data: the card as plain values.
        where: file name, for messages and ``card.where``.
        marked: line marks, when read from YAML (messages then carry ``file:line:col``).
        prefix: field path prefix for messages (``data`` for imports).
        prefixes: top-level field -> path shown instead (``lorebook`` ->
            ``data.character_book``; our fields -> ``data.extensions.worldloom.<field>``).

    Raises:
        CardError: naming the file (and line) and the field.
    """
    if not isinstance(data, dict):
        raise CardError(f"{prefix or 'card'}: must be a mapping of card fields", where=where)
    try:
        card = CharacterCard.model_validate(data)
    except ValidationError as exc:
        found: list[tuple[str, str]] = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            at = _yaml_where(marked, loc) if marked else where
            text = explain(dict(err))
            if err["type"] == "extra_forbidden":
                text += _unknown_field_hint(loc)
            head = str(loc[0]) if loc else ""
            if prefixes and head in prefixes:
                text = prefixes[head] + text[len(head):]
            elif prefix:
                text = f"{prefix}.{text}"
            found.append((at or where, text))
        # every problem at once, each with its own file:line (fixing them one run at a time was slow)
        rest = "".join(f"\n  {w}: {t}" if w else f"\n  {t}" for w, t in found[1:])
        raise CardError(found[0][1] + rest, where=found[0][0]) from exc
    return card.model_copy(update={"where": where}) if where else card


#: Most fields a "not a card field" message lists when none is near the one written.
_LISTED_FIELDS = 12


def _unknown_field_hint(loc: tuple[Any, ...]) -> str:
    """``": did you mean 'personality'?"`` for a field at ``loc`` (pydantic's error ``loc``) the card
    has no such field near (:func:`game.errors.near_hint` over :func:`game.story.schema.keys_at` of
    :class:`CharacterCard`); else the fields the mapping takes, when it takes at most
    :data:`_LISTED_FIELDS`; else ``""``."""
    path = tuple(p for p in loc if not (isinstance(p, str) and p.startswith("function-")))
    keys = keys_at(path[:-1], CharacterCard)
    near = near_hint(path[-1], keys).strip() if path else ""
    if near:
        return f": {near}"
    return f" (the fields it takes: {', '.join(keys)})" if 0 < len(keys) <= _LISTED_FIELDS else ""


def _yaml_where(marked: Marked, loc: tuple[Any, ...]) -> str:
    path = tuple(p for p in loc if isinstance(p, str | int))
    # ``lorebook: [...]`` is shorthand for ``lorebook: {entries: [...]}``
    if path[:2] == ("lorebook", "entries") and ("lorebook", "entries") not in marked.marks:
        path = ("lorebook", *path[2:])
    return marked.where(path)


def load_yaml_card(path: str | Path) -> CharacterCard:
    """Read ``characters/<id>.yaml``.

    Raises:
        CardError: missing, not YAML, not UTF-8, too large, or a bad field (file:line: field: why).
    """
    p = Path(path)
    try:
        if p.is_file() and p.stat().st_size > MAX_CARD_BYTES:
            raise CardError(f"card is over {MAX_CARD_BYTES} bytes", where=str(p))
        text = read_text(p)
        marked = compose_marked(text, str(p))
    except StoryError as exc:
        raise CardError(exc.why.replace("story data", "a card"), where=exc.where, hint=exc.hint) from exc
    card = card_from_dict(marked.value, str(p), marked)
    for i, entry in enumerate(card.lorebook.entries):
        if entry.enabled and not entry.keys and not entry.constant and not entry.meaning:
            loc: tuple[str | int, ...] = ("lorebook", "entries", i, "keys")
            raise CardError(f"{field_path(loc)}: an enabled entry needs keys, or constant: true, or meaning: true",
                            where=_yaml_where(marked, loc) or str(p))
    if card.id != p.stem:
        raise CardError(f"id: {card.id!r} does not match the file name {p.name!r}",
                        where=marked.where(("id",)) or str(p), hint=f"name the file {card.id}.yaml")
    return card


def find_card(card_id: str, root: str | Path = "characters") -> Path:
    """Path of the card for ``card_id`` under ``root`` (``.yaml``, ``.yml``, ``.json`` or ``.png``).

    Raises:
        CardError: none found or the id is not a valid id.
    """
    if not ID_RE.match(card_id):
        raise CardError(f"{card_id!r} is not a valid card id")
    for ext in (".yaml", ".yml", ".json", ".png"):
        p = Path(root) / f"{card_id}{ext}"
        if p.is_file():
            return p
    raise CardError(f"no card for {card_id!r}", where=str(root), hint=f"add {root}/{card_id}.yaml")


__all__ = [
    "Answer",
    "Asset",
    "Axis",
    "CardError",
    "CharacterCard",
    "Exchange",
    "ExpressionRule",
    "Look",
    "LoreEntry",
    "Lorebook",
    "REPLY_INTENTS",
    "REPLY_SLOTS",
    "Replies",
    "TOLD_GROUPS",
    "Voice",
    "card_from_dict",
    "find_card",
    "load_yaml_card",
    "DepthPrompt",
    "card_fields",
    "substitute",
]

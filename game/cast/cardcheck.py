"""What a card costs in a prompt, and what a player would lose: the checks of ``worldloom card validate``.

:func:`check_card` measures a card against a context (:class:`~game.cast.memory.MemoryConfig`:
the model's context minus the reply, the pinned facts and the least room the
conversation needs) with a token counter (the model's own tokenizer when given,
else :func:`~game.cast.memory.approx_tokens`) and returns :class:`CardProblem` rows,
each naming the field:

- ``error`` **sink over budget**: the card's fixed part (system prompt, description,
  personality, speaking style, scenario, core facts, look, post-history
  instructions) does not fit: the card cannot load (what :class:`~game.cast.memory.Memory`
  refuses), with the biggest field's size;
- ``warning`` **examples dropped**: the example exchanges take more than half of the
  room the sink leaves, so :class:`~game.cast.memory.Memory` leaves them out of every
  prompt (the tokens that would be lost);
- ``warning`` **lore over budget**: the constant lorebook entries alone exceed the
  lore share of the prompt (25%, or the book's ``token_budget``), so the lowest-ranked
  ones never reach the model (which, and their tokens);
- ``warning`` **card + lore over the context**: the sink, the examples and every
  enabled lore entry together exceed the context (entries will be chosen per turn;
  the overflow in tokens and as a multiple of the budget);
- ``warning`` **macros removed**: ``{{...}}`` macros that :mod:`game.cast.macros` does
  not know (they are removed before the prompt);
- ``warning`` **no greeting**: neither ``first_mes`` nor an alternate greeting;
- ``error`` **bad voice**: an unknown speech engine, or a voice id espeak-ng cannot
  parse (rate, pitch and volume are bounded by the card's schema already);
- ``warning`` **few replies**: an intent of ``replies`` whose lines and the card's fallbacks
  together number at most :data:`~game.cast.replies.RECENT_LINES`, so a run of such lines
  must repeat one of her last replies (slots and intents are checked by the card's schema).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from game.cast.card import REPLY_INTENTS, CharacterCard
from game.cast.macros import unknown_macros
from game.cast.memory import DEFAULT_POST_HISTORY, MemoryConfig, TokenCounter, approx_tokens, examples_text, sink_parts
from game.cast.prompt import MESSAGE_OVERHEAD, Shares
from game.cast.replies import RECENT_LINES
from game.errors import StoryError
from game.story.yamlio import compose_marked, read_text
from game.words import counted

#: The fields of the size findings (shown when a game opens: a player would lose that text).
BUDGET_FIELDS = frozenset({"examples", "lorebook", "card+lorebook"})

#: The kinds of finding, in the order of the module doc (``worldloom lint`` gives each its code,
#: :data:`game.story.diagnostics.CARD_CODES`).
KINDS = ("sink_over_budget", "examples_dropped", "lore_over_budget", "over_context", "unknown_macros",
         "no_greeting", "bad_tts", "bad_voice", "few_replies")

#: Speech engines a card's ``voice.tts`` may name (:mod:`game.audio.tts`).
TTS_ENGINES = ("auto", "pyttsx3", "espeak-ng")
#: An espeak-ng voice id: ``en``, ``en-us``, ``en-gb-scotland+f3`` (a ``--voices`` name, a variant after ``+``).
VOICE_ID = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]+)*(?:\+[a-z0-9]+)?$", re.I)


@dataclass(frozen=True)
class CardProblem:
    """One finding: its ``kind`` (one of :data:`KINDS`), ``severity``, the ``field`` it is
    about, what is wrong (``why``) and the ``tokens`` at stake (0 when not about size)."""

    kind: str
    severity: Literal["error", "warning"]
    field: str
    why: str
    tokens: int = 0

    def __str__(self) -> str:
        return f"{self.severity}: {self.field}: {self.why}"


def check_card(card: CharacterCard, config: MemoryConfig | None = None,
               count_tokens: TokenCounter | None = None) -> list[CardProblem]:
    """Every problem of ``card`` for a prompt of ``config.context_tokens`` (see the module doc)."""
    cfg = config or MemoryConfig()
    count = count_tokens or approx_tokens
    out: list[CardProblem] = []
    parts = sink_parts(card)
    own = card.post_history_instructions.strip()
    post = DEFAULT_POST_HISTORY + ("\n" + own if own else "")
    sizes = [(count(text), name) for name, text in parts] + [(count(post), "post_history_instructions")]
    sink = sum(n for n, _ in sizes)
    limit = cfg.context_tokens - cfg.reply_tokens - cfg.pinned_tokens - cfg.min_room_tokens
    if sink > limit:
        biggest, name = max(sizes)
        out.append(CardProblem("sink_over_budget", "error", name,
                               f"the card's fixed part needs {sink} tokens but only {limit} fit in a "
                               f"{cfg.context_tokens}-token context; {name} alone is {biggest} tokens: "
                               "the card cannot load", sink - limit))
    room = limit - sink
    examples = examples_text(card)
    ex_tokens = count(examples) if examples else 0
    if examples and ex_tokens > max(0, room) // 2:
        out.append(CardProblem("examples_dropped", "warning", "examples",
                               f"the example exchanges take {ex_tokens} tokens, over half of "
                               f"the {max(0, room)} the fixed part leaves: they are left out "
                               f"of every prompt ({ex_tokens} tokens lost)", ex_tokens))
    book = card.lorebook
    prompt_room = max(0, room + cfg.min_room_tokens - (ex_tokens if ex_tokens <= max(0, room) // 2 else 0))
    lore_cap = int(prompt_room * Shares().lore)
    if book.token_budget is not None:
        lore_cap = min(lore_cap, book.token_budget)
    entries = [(i, e) for i, e in enumerate(book.entries) if e.enabled]
    constant = sorted((e for _, e in entries if e.constant), key=lambda e: (-e.priority, e.insertion_order))
    spent, lost = 0, []
    for e in constant:
        n = count(e.content) + 1
        if spent + n <= lore_cap:
            spent += n
        else:
            lost.append((e.name or e.comment or (e.keys[0] if e.keys else "constant entry"), n))
    if lost:
        names = ", ".join(f"{name!r} ({n})" for name, n in lost[:5]) + (" ..." if len(lost) > 5 else "")
        out.append(CardProblem("lore_over_budget", "warning", "lorebook",
                               f"constant entries need {spent + sum(n for _, n in lost)} "
                               f"tokens, over the lore budget of {lore_cap}: never sent: "
                               f"{names}", sum(n for _, n in lost)))
    lore_all = sum(count(e.content) + 1 for _, e in entries)
    budget = cfg.context_tokens - cfg.reply_tokens
    total = sink + ex_tokens + lore_all + MESSAGE_OVERHEAD * 2
    if total > budget:
        out.append(CardProblem("over_context", "warning", "card+lorebook",
                               f"the card and its lorebook need {total} tokens, "
                               f"{total / budget:.1f}x the {budget}-token prompt budget: "
                               f"{total - budget} tokens of it can never be in one "
                               "prompt", total - budget))
    texts = {"description": card.description, "personality": card.personality, "scenario": card.scenario,
             "system_prompt": card.system_prompt, "post_history_instructions": card.post_history_instructions,
             **{f"greetings[{i}]": g for i, g in enumerate(card.greetings)},
             **{f"lorebook.entries[{i}].content": e.content for i, e in enumerate(book.entries)}}
    if card.depth_prompt is not None:
        texts["depth_prompt.prompt"] = card.depth_prompt.prompt
    for name, text in texts.items():
        bad = unknown_macros(text)
        if bad:
            shown = ", ".join(dict.fromkeys(bad))
            out.append(CardProblem("unknown_macros", "warning", name,
                                   f"macros {shown} are not known and are removed before the prompt"))
    if not card.greetings:
        out.append(CardProblem("no_greeting", "warning", "greetings",
                               "no first_mes or alternate greeting: she says nothing first"))
    voice = card.voice
    if voice.tts not in TTS_ENGINES:
        out.append(CardProblem("bad_tts", "error", "voice.tts",
                               f"unknown speech engine {voice.tts!r} (known: {', '.join(TTS_ENGINES)})"))
    if not VOICE_ID.match(voice.voice):
        out.append(CardProblem("bad_voice", "error", "voice.voice",
                               f"{voice.voice!r} is not an espeak-ng voice id (language[-variant][+voice], "
                               "e.g. en-gb+f3)"))
    for intent in REPLY_INTENTS:
        lines = card.replies.lines(intent)
        if lines and len(lines) + len(card.fallbacks) <= RECENT_LINES:
            out.append(CardProblem("few_replies", "warning", f"replies.{intent}",
                                   f"{counted(len(lines), 'line')} and {counted(len(card.fallbacks), 'fallback')}: "
                                   f"a run of "
                                   f"{intent} lines repeats one of her last {RECENT_LINES} replies (add lines)"))
    return out


def field_places(path: str | Path, problems: Sequence[CardProblem]) -> dict[str, str]:
    """``field -> file:line:col`` of each problem's field in the YAML card at ``path`` (the deepest key
    the file has: ``lorebook.entries[2].content``, else ``lorebook``; the top of the file for a field it
    does not write, such as ``card+lorebook``); none for a JSON or PNG card, or a YAML file that no longer reads."""
    path = Path(path)
    if not problems or path.suffix.lower() not in (".yaml", ".yml"):
        return {}
    try:
        marked = compose_marked(read_text(path), str(path))
    except StoryError:  # it loaded a moment ago; a file changed meanwhile points at the file
        return {}
    places = {}
    for p in problems:
        keys: list[str | int] = []
        for part in p.field.replace("]", "").replace("[", ".").split("."):
            keys.append(int(part) if part.isdigit() else part)
        places[p.field] = marked.where(tuple(keys)) or str(path)
    return places


__all__ = ["BUDGET_FIELDS", "KINDS", "TTS_ENGINES", "VOICE_ID", "CardProblem", "check_card", "field_places"]

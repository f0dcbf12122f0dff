"""Lint codes as data: code, default severity, message template, hint, failing example.

One table, read by :mod:`game.story.lint`, :mod:`game.lint` (the card codes
``WL060``-``WL068``: a story's cards, checked by :mod:`game.cast.cardcheck`), the docs
and the tests (every code has a failing example that the test suite lints). This
module is data only: it imports neither room (only the state's :data:`~game.state.gamestate.REACTIONS`). A story's ``worldloom.toml`` can
raise or lower a code's severity::

    [lint.severity]
    WL008 = "error"
    WL015 = "off"

After Yarn Spinner's diagnostics-as-data (``YarnSpinner.Diagnostics/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from game.state.gamestate import REACTIONS

Severity = Literal["error", "warning", "info", "off"]
SEVERITY_ORDER = {"off": 0, "info": 1, "warning": 2, "error": 3}


@dataclass(frozen=True)
class Code:
    """One diagnostic kind. ``example`` is a ``story.yaml`` that triggers it (with ``files`` beside it)."""

    code: str
    severity: Severity
    message: str
    hint: str
    example: str
    #: Other files of the example (name relative to the story folder -> text), e.g. a catalogue.
    files: tuple[tuple[str, str], ...] = ()
    #: Whether a story with this finding stops with an error when played there: an effect, condition or
    #: goto raises, or the story or a card does not load (a hot reload refuses it, as it would lose the
    #: player's game). A finding that leaves play going on wrongly (a dead end, a gate that never
    #: opens, an agent that never acts, a missing image drawn as a placeholder) does not.
    breaks_play: bool = False


_BASE = """id: t
title: T
start: a
locations: {here: {name: Here}}
"""

#: The head of a PO catalogue, for the examples of the catalogue codes.
_PO = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'


def _entry(ctxt: str, source: str, translation: str) -> str:
    return f'msgctxt "{ctxt}"\nmsgid "{source}"\nmsgstr "{translation}"\n\n'


def _cast(card: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A one-scene story whose cast member ``fox`` has the card ``card`` (``fox.yaml`` beside it)."""
    return _BASE + "cast: {fox: {name: Fox, card: fox.yaml}}\nscenes:\n  a: {location: here, ending: e}\n", \
        (("fox.yaml", card),)


CODES: dict[str, Code] = {c.code: c for c in [
    Code("WL001", "error", "undefined scene {name!r}", "check the goto / exit / start target",
         _BASE + "scenes:\n  a: {location: here, choices: [{id: c, text: go, goto: kite_flght}]}\n"
         "  kite_flight: {location: here, ending: e}\n", breaks_play=True),
    Code("WL002", "error", "undefined item {name!r}", "declare it under items:",
         _BASE + "scenes:\n  a: {location: here, ending: e, on_enter: [\"take('ghost')\"]}\n", breaks_play=True),
    Code("WL003", "error", "undefined character {name!r}", "declare it under cast:",
         _BASE + "scenes:\n  a: {location: here, ending: e, present: [nobody]}\n"),
    Code("WL004", "error", "the expression reads undefined variable {name!r}", "declare it under variables:",
         _BASE + "scenes:\n  a: {location: here, choices: [{id: c, text: go, if: 'mood > 1', goto: a}]}\n", breaks_play=True),
    Code("WL005", "warning", "scene {name!r} is unreachable from the start", "add a goto or exit to it",
         _BASE + "scenes:\n  a: {location: here, ending: e}\n  b: {location: here, ending: f}\n"),
    Code("WL006", "error", "scene {name!r} is a dead end: no choice, exit or action leads on",
         "add a choice or mark it ending:",
         _BASE + "scenes:\n  a: {location: here, lines: [stuck]}\n"),
    Code("WL007", "error", "bad expression: {name}", "see docs/story-format.md, expressions",
         _BASE + "scenes:\n  a: {location: here, choices: [{id: c, text: go, if: 'has(', goto: a}]}\n", breaks_play=True),
    Code("WL008", "warning", "line is {name} characters, too long for the text panel", "split it; the panel shows 160",
         _BASE + "scenes:\n  a: {location: here, ending: e, lines: ['" + "x" * 170 + "']}\n"),
    Code("WL009", "error", "missing or unreadable asset {name!r}", "check the path (relative to the story folder)",
         _BASE + "world: {anchors: [missing.png]}\nscenes:\n  a: {location: here, ending: e}\n"),
    Code("WL010", "error", "duplicate id {name!r}", "ids must be unique in a story; saves use them",
         _BASE + "scenes:\n  a: {location: here, choices: [{id: c, text: x, goto: a}, {id: c, text: y, goto: a}]}\n"),
    Code("WL011", "warning", "item {name!r} is used but never obtainable", "put it in inventory: or take() it somewhere",
         "items: {key: {name: key}}\n" + _BASE + "scenes:\n  a: {location: here, choices: [{id: c, text: open, if: \"has('key')\", goto: a}, {id: d, text: leave, goto: a}]}\n"),
    Code("WL012", "warning", "the condition of choice {name!r} can never hold", "the condition is always false",
         _BASE + "scenes:\n  a: {location: here, choices: [{id: c, text: x, if: '1 > 2', goto: a}, {id: d, text: y, goto: a}]}\n"),
    Code("WL013", "warning", "scene {name!r} loops on once-only choices and its menu can empty",
         "make one choice sticky (once: false) or add an exit",
         _BASE + "scenes:\n  a: {location: here, choices: [{id: c, text: x, once: true, goto: a}]}\n"),
    Code("WL014", "error", "effect assigns undeclared variable {name!r}", "declare it under variables:",
         _BASE + "scenes:\n  a: {location: here, ending: e, on_enter: ['mood = 3']}\n", breaks_play=True),
    Code("WL015", "info", "scene {name!r} is never the target of a goto or exit", "nothing leads here",
         _BASE + "scenes:\n  a: {location: here, ending: e}\n  b: {location: here, ending: f}\n"),
    Code("WL016", "error", "undefined location {name!r}", "declare it under locations:",
         _BASE + "scenes:\n  a: {location: elsewhere, ending: e}\n"),
    Code("WL017", "warning", "actions {name} share the keyword(s) of another action", "make each action's keywords distinct",
         _BASE + "scenes:\n  a: {location: here, ending: e, actions: [{id: x, keywords: [sing]}, {id: y, keywords: [sing]}]}\n"),
    Code("WL028", "warning", "unknown reaction {name!r}: the world draws it as idle",
         "the reactions are " + ", ".join(REACTIONS),
         _BASE + "cast: {cat: {name: Cat}}\nscenes:\n  a: {location: here, ending: e, "
         "choices: [{id: c, text: pet, react: {cat: purr}, goto: a}]}\n"),
    Code("WL018", "error", "story does not load: {name}", "fix the file at the location shown",
         "id: t\ntitle: T\nstart: a\nscenes:\n  a: {location: here, bogus_key: 1}\n", breaks_play=True),
    # -- game mechanics (roles, bounds, timers, quests, outcomes, recipes, agents) --
    Code("WL040", "error", "undefined timer {name!r}", "declare it under timers:",
         _BASE + "scenes:\n  a: {location: here, ending: e, on_enter: [\"start('candle')\"]}\n", breaks_play=True),
    Code("WL041", "error", "undefined quest {name!r}", "declare it under quests:",
         _BASE + "scenes:\n  a: {location: here, choices: [{id: c, text: go, if: \"done('lamp')\", goto: a}, {id: d, text: stay, goto: a}]}\n", breaks_play=True),
    Code("WL042", "error", "undefined role {name!r}", "declare it under roles:",
         _BASE + "roles: {warden: {name: Warden}}\nscenes:\n  a: {location: here, on_enter: [\"become('warden')\"], choices: [{id: c, text: go, roles: [thief], goto: a}, {id: d, text: stay, goto: a}]}\n", breaks_play=True),
    Code("WL043", "error", "{name!r} is not an agent (declare it under agents:, and in cast:)", "agents are cast members who act",
         _BASE + "agents: {ghost: {at: here}}\nscenes:\n  a: {location: here, ending: e}\n"),
    Code("WL044", "error", "agent action {name}", "an agent's actions name locations, items and characters the story declares",
         _BASE + "cast: {mara: {name: Mara}}\nagents: {mara: {at: here, actions: {go: {kind: move, to: nowhere}}}}\nscenes:\n  a: {location: here, ending: e}\n"),
    Code("WL045", "error", "rule acts with undeclared action {name!r}", "declare it under the agent's actions:",
         _BASE + "cast: {mara: {name: Mara}}\nagents: {mara: {at: here, rules: [{act: fly}]}}\nscenes:\n  a: {location: here, ending: e}\n"),
    Code("WL046", "error", "variable {name!r}: its default lies outside min:/max: (or min > max)", "fix the bounds or the default",
         "variables: {oil: {type: int, default: 12, min: 0, max: 10}}\n" + _BASE + "scenes:\n  a: {location: here, ending: e}\n"),
    Code("WL047", "error", "outcome goes to {name!r}, which is not an ending", "an outcome's goto is an ending scene",
         _BASE + "outcomes: {lost: {kind: lose, if: 'turn() > 3', goto: a}}\nscenes:\n  a: {location: here, choices: [{id: c, text: go, goto: a}]}\n"),
    Code("WL048", "warning", "timer {name!r} never runs: not start: true and never start()ed", "set start: true or start('id') it somewhere",
         _BASE + "timers: {candle: {turns: 10}}\nscenes:\n  a: {location: here, ending: e}\n"),
    Code("WL049", "error", "{name}: no such need or goal", "declare it under the agent's needs: or goals:",
         _BASE + "cast: {mara: {name: Mara}}\nagents: {mara: {at: here}}\nscenes:\n  a: {location: here, choices: [{id: c, text: go, if: \"need('mara', 'cold') > 1\", goto: a}, {id: d, text: stay, goto: a}]}\n", breaks_play=True),
    Code("WL050", "warning", "roles {name} are declared but no effect calls become()", "let the player pick one: a start-scene choice with do: become('id')",
         _BASE + "roles: {warden: {name: Warden}}\nscenes:\n  a: {location: here, ending: e}\n"),
    Code("WL019", "warning", "{name} in the text is not a variable or world key: the player sees it as typed",
         "fix the name, or declare it under variables:",
         "variables: {name: {type: str, default: Ann}}\n" + _BASE
         + "scenes:\n  a: {location: here, ending: e, lines: ['Hello, {nmae}.']}\n"),
    Code("WL020", "error", "every way on from scene {name} is gated on a condition that can never hold",
         "nothing assigns the variables it reads, and their defaults make it false: assign one, or add a way on",
         "variables: {door_open: {type: bool, default: false}}\n" + _BASE
         + "scenes:\n  a: {location: here, choices: [{id: c, text: go, if: door_open, goto: b}]}\n"
         "  b: {location: here, ending: e}\n"),
    Code("WL024", "error", "this expression fails every time it runs: {name}",
         "a part of it reads no variable and is refused whatever the state; see docs/story-format.md, limits",
         "variables: {n: {type: int, default: 1}}\n" + _BASE
         + "scenes:\n  a: {location: here, choices: [{id: c, text: go, if: \"'%0999999999d' % n == ''\", goto: a}, "
         "{id: d, text: stay, goto: a}]}\n", breaks_play=True),
    Code("WL030", "warning", "author art cannot be used as given: {name}",
         "plates are 16:9 PNGs of at least 480x270, layers the plate's size with transparency, "
         "sheet cells inside the sheet and named for an expression or pose; see docs/story-format.md",
         _BASE.replace("locations: {here: {name: Here}}\n", "locations: {here: {name: Here}}\n"
                       "cast: {fox: {name: Fox, sheet: {image: fox.png, frame: [0, 96], cells: {smile: [0, 0]}}}}\n")
         + "scenes:\n  a: {location: here, ending: e, present: [fox]}\n"),
    Code("WL031", "warning", "{name}",
         "a thing the text says is gone is not drawn there: take it out of the scene's items:/present: "
         "(or make the line conditional on it being gone)",
         _BASE.replace("locations: {here: {name: Here}}\n", "locations: {here: {name: Here}}\n"
                       "items: {kite: {name: red kite}}\n")
         + "scenes:\n  a: {location: here, ending: e, items: {kite: 0.5}, lines: ['The kite is gone, over the trees.']}\n"),
    # -- the cast's cards (``cast.<id>.card``), linted by game.lint with game.cast.cardcheck --
    Code("WL060", "error", "the card of {name}", "fix the card at the place shown (worldloom card validate CARD)",
         *_cast("id: fox\nname: Fox\ngreetings: [Hello.]\nlorebook:\n  entries:\n"
               "    - {keys: ['(den'], use_regex: true, content: The den is under the oak.}\n"), breaks_play=True),
    Code("WL061", "error", "{name}", "shorten the field named: a 4096-token context is the most a game gives a card",
         *_cast("id: fox\nname: Fox\ngreetings: [Hello.]\ndescription: '" + "The fox keeps the wood. " * 700 + "'\n"), breaks_play=True),
    Code("WL062", "warning", "{name}", "shorten or drop example exchanges: the model never sees them",
         *_cast("id: fox\nname: Fox\ngreetings: [Hello.]\nexamples:\n" + "".join(
             f"  - {{user: 'Question {i}?', char: '" + "An answer that goes on. " * 30 + "'}\n" for i in range(10)))),
    Code("WL063", "warning", "{name}", "make some constant entries keyed (keys:), shorter, or raise token_budget",
         *_cast("id: fox\nname: Fox\ngreetings: [Hello.]\nlorebook:\n  entries:\n" + "".join(
             f"    - {{name: e{i}, constant: true, content: '" + "Lore of the wood. " * 40 + "'}\n"
             for i in range(8)))),
    Code("WL064", "info", "{name}", "fine when entries are keyed: only those a turn names are sent",
         *_cast("id: fox\nname: Fox\ngreetings: [Hello.]\nlorebook:\n  entries:\n" + "".join(
             f"    - {{name: e{i}, keys: [k{i}], content: '" + "Lore of the wood. " * 60 + "'}\n"
             for i in range(20)))),
    Code("WL065", "warning", "{name}", "use a macro of game.cast.macros ({{char}}, {{user}}, {{random:a,b}}...)",
         *_cast("id: fox\nname: Fox\ngreetings: [Hello.]\ndescription: 'It is {{time}} in the wood.'\n")),
    Code("WL066", "warning", "{name}", "give the card a first_mes / greetings:",
         *_cast("id: fox\nname: Fox\n")),
    Code("WL067", "error", "{name}", "voice.tts is auto, pyttsx3 or espeak-ng; voice.voice an espeak-ng id like en-gb+f3",
         *_cast("id: fox\nname: Fox\ngreetings: [Hello.]\nvoice: {tts: festival, voice: 'not a voice'}\n")),
    Code("WL068", "warning", "{name}", "give that intent more lines (with the fallbacks, more than her last 6 replies)",
         *_cast("id: fox\nname: Fox\ngreetings: [Hello.]\nreplies: {thanks: [Aye.]}\n")),
    Code("WL021", "info", "no translation of string {name}", "translate it in the catalogue (worldloom strings extract)",
         _BASE + "scenes:\n  a: {location: here, ending: e, lines: [Hello.]}\n", (("locale/fr.po", _PO),)),
    Code("WL022", "warning", "the translation of string {name} is stale: its source text changed",
         "check the translation against the new text, then clear its fuzzy mark",
         _BASE + "scenes:\n  a: {location: here, ending: e, lines: [Hello there.]}\n",
         (("locale/fr.po", _PO + _entry("a.l0", "Hello.", "Bonjour.")),)),
    Code("WL023", "info", "catalogue entry {name} is not a string of this story", "remove it, or rerun strings extract",
         _BASE + "scenes:\n  a: {location: here, ending: e}\n",
         (("locale/fr.po", _PO + _entry("gone.l0", "Gone.", "Parti.")),)),
    Code("WL025", "error", "catalogue syntax: {name}",
         "each entry is msgctxt/msgid/msgstr lines with one quoted string each (a quote inside is \\\")",
         _BASE + "scenes:\n  a: {location: here, ending: e, lines: [Hello.]}\n",
         (("locale/fr.po", _PO + 'msgctxt "a.l0"\nmsgid "Hello.\nmsgstr "Bonjour."\n'),)),
    Code("WL026", "warning", "the translation of string {name}",
         "write each {name} of the source into the translation, and no other",
         _BASE + "variables: {who: {type: str, default: Ann}}\n"
         "scenes:\n  a: {location: here, ending: e, lines: ['Hello, {who}.']}\n",
         (("locale/fr.po", _PO + _entry("a.l0", "Hello, {who}.", "Bonjour, {qui}.")),)),
    Code("WL027", "error", "{name!r} reads as an undeclared variable: the values are spelt True, False and None",
         "a capital letter makes it the value",
         "variables: {lit: {type: bool, default: false}}\n" + _BASE
         + "scenes:\n  a: {location: here, ending: e, on_enter: ['lit = true']}\n", breaks_play=True),
]}

#: ``CardProblem.kind`` (:data:`game.cast.cardcheck.KINDS`) -> its lint code; ``WL060``: the card does not load.
CARD_CODES: dict[str, str] = {
    "sink_over_budget": "WL061", "examples_dropped": "WL062", "lore_over_budget": "WL063",
    "over_context": "WL064", "unknown_macros": "WL065", "no_greeting": "WL066",
    "bad_tts": "WL067", "bad_voice": "WL067", "few_replies": "WL068",
}

"""SillyTavern macros in card text, expanded (or removed) before anything reaches a prompt.

A card is data, not a template program: :func:`expand` makes one pass over the text,
replaces each ``{{macro}}`` it knows by plain text and removes every other one, and
never scans a replacement again (a ``{{user}}`` inside the player's name stays text).
The macros, as SillyTavern documents them (docs.sillytavern.app, "Macros"):

=================================================  ==========================================
``{{char}}``, ``<BOT>``, ``{{charIfNotGroup}}``    her display name
``{{user}}``, ``<USER>``                           the player's name (default "the player")
``{{description}}``, ``{{personality}}``,          those card fields (their own ``{{char}}``
``{{scenario}}``, ``{{charPrompt}}``,              and ``{{user}}`` replaced, nothing more);
``{{charJailbreak}}``/``{{charInstruction}}``,     ``""`` when not given
``{{mesExamples}}``, ``{{persona}}``
``{{newline}}``                                    a line break
``{{random:a,b,c}}``, ``{{random::a::b}}``,        one of the options, chosen by ``seed`` and
``{{pick::a::b}}``                                 the macro's place (the same on every run)
``{{roll:d6}}``, ``{{roll:20}}``                   a number 1..N, chosen the same way
``{{trim}}``, ``{{noop}}``, ``{{// comment}}``     removed
anything else (``{{time}}``, ``{{date}}``,         removed: wall-clock values would make a
``{{getvar::x}}``, ``{{lastMessage}}``...)         session differ from its replay, and
                                                   variables are a program, not data
=================================================  ==========================================

:func:`unknown_macros` lists what :func:`expand` would remove (``worldloom card validate``
reports them).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping

#: One macro: ``{{...}}`` (no nesting, at most 400 characters inside) or the old ``<BOT>``/``<USER>``.
MACRO = re.compile(r"\{\{([^{}]{0,400}?)\}\}|<(BOT|USER)>", re.IGNORECASE)

#: Macros naming a card field -> the field's key in ``fields``.
FIELD_MACROS: dict[str, str] = {
    "description": "description", "personality": "personality", "scenario": "scenario",
    "charprompt": "system_prompt", "charjailbreak": "post_history_instructions",
    "charinstruction": "post_history_instructions", "mesexamples": "mes_example",
    "mesexamplesraw": "mes_example", "persona": "persona",
}
#: Macros that become nothing.
EMPTY_MACROS = frozenset({"trim", "noop"})
_CHAR = frozenset({"char", "bot", "charifnotgroup", "group", "name"})
_USER = frozenset({"user"})


def _key(inner: str) -> str:
    return inner.strip().lower()


def _choice(seed: int, where: int, n: int) -> int:
    return zlib.crc32(f"{seed}:{where}".encode()) % n


def _options(arg: str) -> list[str]:
    """Options of a random/pick macro: after ``random:`` either ``a,b,c`` (``\\,`` keeps a
    comma) or, written ``random::a::b``, ``:a::b``."""
    if arg.startswith(":"):
        return arg[1:].split("::")
    return [p.replace("\\,", ",").strip() for p in re.split(r"(?<!\\),", arg)]


def known(inner: str) -> bool:
    """Whether ``{{inner}}`` is a macro :func:`expand` replaces (rather than removes)."""
    k = _key(inner)
    head = re.split(r"[:\s]", k, maxsplit=1)[0]
    return (k in _CHAR or k in _USER or k in FIELD_MACROS or k in EMPTY_MACROS or k == "newline"
            or k.startswith("//") or head in ("random", "pick", "roll"))


def unknown_macros(text: str) -> list[str]:
    """The ``{{...}}`` macros in ``text`` that :func:`expand` removes without a value."""
    return [m.group(0) for m in MACRO.finditer(text) if m.group(1) is not None and not known(m.group(1))]


def expand(text: str, char: str, user: str = "the player", fields: Mapping[str, str] | None = None,
           seed: int = 0) -> str:
    """``text`` with every macro replaced or removed (see the module doc); one pass, no re-scan.

    Args:
        text: card text.
        char: her display name. user: the player's name.
        fields: card fields for ``{{description}}`` and the like (missing: ``""``).
        seed: chooses ``{{random}}``, ``{{pick}}`` and ``{{roll}}`` (with each macro's offset).
    """
    fields = fields or {}

    def plain(value: str) -> str:  # a field's own {{char}}/{{user}}; its other macros removed
        return MACRO.sub(lambda m: char if _key(m.group(1) or m.group(2)) in _CHAR
                         else user if _key(m.group(1) or m.group(2)) in _USER else "", value)

    def sub(m: re.Match[str]) -> str:
        if m.group(2) is not None:
            return char if m.group(2).lower() == "bot" else user
        inner = m.group(1)
        k = _key(inner)
        if k in _CHAR:
            return char
        if k in _USER:
            return user
        if k in FIELD_MACROS:
            return plain(fields.get(FIELD_MACROS[k], ""))
        if k == "newline":
            return "\n"
        head, _, arg = inner.strip().partition(":")
        head = head.strip().lower()
        if head in ("random", "pick"):
            options = _options(arg)
            return plain(options[_choice(seed, m.start(), len(options))]) if options else ""
        if head == "roll":
            sides = re.fullmatch(r"\s*(?:1?d)?(\d{1,6})\s*", arg, re.I)
            if sides and int(sides.group(1)) > 0:
                return str(1 + _choice(seed, m.start(), int(sides.group(1))))
        return ""

    return MACRO.sub(sub, text)


__all__ = ["EMPTY_MACROS", "FIELD_MACROS", "MACRO", "expand", "known", "unknown_macros"]

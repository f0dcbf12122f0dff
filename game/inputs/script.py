"""Playthrough scripts: one input a line, for headless runs and tests.

Grammar (``#`` starts a comment; blank lines are skipped)::

    choose <choice id | its number | its text>
    move <w|a|s|d> [seconds]
    wait <seconds>
    give <item> <character>
    say <text>                # free text, understood by meaning (game.inputs.meaning)
    ask <character> <text>    # say <text> to a character with a card: she answers (game.cast)
    image <path> [character]  # a dropped PNG/JPEG: placed in view, or given to the character
    voice <path.wav>          # a voice clip: recognised, then understood like ``say``
    save <slot>
    load <slot> [previous]   # "previous": the copy kept before the last save
    rollback [n]
    rollforward [n]           # step forward again along what a rollback undid (game.state.forward)

A line that does not parse is an :class:`~game.errors.InputError` naming ``file:line`` before
anything is played. A line that parses but cannot apply in the game as it is (no such
choice, nothing to roll back...) is named the same way while playing, and the script goes on
(:meth:`game.headless.HeadlessRunner.run`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from game.errors import InputError
from game.limits import MAX_ROLLBACK, MAX_SCRIPT_BYTES, MAX_SECONDS, check_size

COMMANDS = {"choose": (1, None), "move": (1, 2), "wait": (1, 1), "give": (2, 2), "say": (1, None), "ask": (2, 2),
            "save": (1, 1), "load": (1, 2), "rollback": (0, 1), "rollforward": (0, 1), "image": (1, 2), "voice": (1, 1)}


@dataclass(frozen=True)
class Command:
    """One script line: ``verb``, ``args``, and where it came from (``file:line``)."""

    verb: str
    args: tuple[str, ...]
    where: str


def parse_line(text: str, where: str) -> Command | None:
    """Parse one line; ``None`` for blank or comment lines.

    Raises:
        game.errors.InputError: unknown command, wrong argument count, or an argument out of
            range (seconds 0..``MAX_SECONDS``, ``rollback`` / ``rollforward`` 1..``MAX_ROLLBACK``).
    """
    line = text.lstrip("\ufeff").strip()  # a byte-order mark (Notepad writes one) opens no command
    if not line or line.startswith("#"):
        return None
    verb, _, rest = line.partition(" ")
    verb = verb.lower()
    if verb not in COMMANDS:
        raise InputError(f"unknown command {verb!r}", where=where,
                         hint="commands: " + ", ".join(COMMANDS))
    if verb in ("choose", "say"):
        args: tuple[str, ...] = (rest.strip(),) if rest.strip() else ()
    elif verb == "ask":
        who, _, said = rest.strip().partition(" ")
        args = tuple(a for a in (who, said.strip()) if a)
    else:
        try:
            args = tuple(shlex.split(rest))
        except ValueError as exc:
            raise InputError(f"cannot split arguments: {exc}", where=where) from exc
    lo, hi = COMMANDS[verb]
    if len(args) < lo or (hi is not None and len(args) > hi):
        want = str(lo) if hi == lo else f"{lo}..{hi if hi is not None else 'n'}"
        raise InputError(f"{verb} takes {want} {'argument' if want == '1' else 'arguments'}", where=where)
    if verb == "load" and len(args) == 2 and args[1] != "previous":
        raise InputError(f"load takes a slot and optionally 'previous', not {args[1]!r}", where=where)
    if verb in ("rollback", "rollforward") and args and not (args[0].isascii() and args[0].isdigit()
                                                             and 1 <= int(args[0]) <= MAX_ROLLBACK):
        raise InputError(f"{verb} takes a number of turns, 1..{MAX_ROLLBACK}, not {args[0][:40]!r}", where=where)
    if verb == "move" and args[0] not in ("w", "a", "s", "d"):
        raise InputError(f"move direction must be w, a, s or d, not {args[0]!r}", where=where)
    for a in args[1:] if verb == "move" else (args if verb == "wait" else ()):
        try:
            value = float(a)
        except ValueError as exc:
            raise InputError(f"{a!r} is not a number of seconds", where=where) from exc
        if not 0 < value <= MAX_SECONDS:
            raise InputError(f"{a[:40]} seconds is outside 0..{MAX_SECONDS:g}", where=where)
    return Command(verb, args, where)


def parse_script(text: str, name: str = "<script>") -> list[Command]:
    """Parse a whole script; errors name ``name:line``.

    Lines end at ``"\n"`` (a ``"\r"`` before it is whitespace), as in an editor and as
    ``--inputs -`` reads them: a form feed or U+2028 inside a ``say`` line is part of it, and
    the line numbers are the editor's.
    """
    out = []
    for i, line in enumerate(text.split("\n"), 1):
        cmd = parse_line(line, f"{name}:{i}")
        if cmd is not None:
            out.append(cmd)
    return out


def read_script(path: str | Path) -> list[Command]:
    """Read and parse a script file.

    Raises:
        game.errors.InputError: missing, over ``game.limits.MAX_SCRIPT_BYTES``, a byte that is not UTF-8
            (named at its ``file:line``), or a bad line.
    """
    p = Path(path)
    try:
        check_size(p.stat().st_size, MAX_SCRIPT_BYTES, str(p), InputError, "script")
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read script: {exc.strerror or exc}", where=str(p)) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(f"byte {raw[exc.start]:#04x} at column {col} is not UTF-8 text", where=f"{p}:{line}",
                         hint="save the script as UTF-8") from exc
    return parse_script(text, str(p))

"""``worldloom card import | export | validate``: character cards from and to SillyTavern.

    worldloom card validate CARD [--lore WORLD.json ...] [--context N]
    worldloom card import CARD.png|.json [--lore WORLD.json ...] [-o characters/ID.yaml] [--force]
    worldloom card export CARD -o OUT.png|OUT.json [--spec 2|3]

``validate`` reads a card (YAML, JSON or PNG; :func:`game.cast.card_io.load_card`),
adds World Info files (:func:`game.cast.worldinfo.read_world_info`) and prints every
problem of :func:`game.cast.cardcheck.check_card` with the field it is about; it exits
1 when one is an error. ``import`` writes the card as our YAML (macros kept as written,
its image beside it named relative to the YAML) after the same checks (warnings shown,
errors refuse); ``export`` writes a V2/V3 JSON or a PNG with both chunks. A bad card
ends in one line naming the file and field (``CardError``, exit 2, from ``game.cli``).

Wiring (in ``game/cli.py``): ``add_parser(sub)`` in ``build_parser``; the handler is
``args.func``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from game.cast.card import CharacterCard
from game.cast.card_io import load_card, write_card_json, write_card_png
from game.cast.cardcheck import CardProblem, check_card, field_places
from game.cast.memory import MemoryConfig
from game.cast.worldinfo import read_world_info, with_lorebook
from game.errors import CardError
from game.words import counted

console = Console(highlight=False, soft_wrap=True)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``card`` and its three commands to ``worldloom``'s subparsers."""
    p: argparse.ArgumentParser = subparsers.add_parser("card", help="character cards: import, export, validate")
    sub = p.add_subparsers(dest="card_command", required=True)
    val = sub.add_parser("validate", help="check a card (and World Info) against a context budget")
    val.add_argument("card", help="a card: characters/<id>.yaml, or SillyTavern PNG/JSON")
    val.add_argument("--lore", action="append", default=[], help="a World Info JSON file to add (repeatable)")
    val.add_argument("--context", type=int, default=4096, help="the model's context, tokens (default 4096)")
    imp = sub.add_parser("import", help="a SillyTavern card (PNG/JSON) as characters/<id>.yaml")
    imp.add_argument("card", help="the SillyTavern card, PNG or JSON")
    imp.add_argument("--lore", action="append", default=[], help="a World Info JSON file to add (repeatable)")
    imp.add_argument("-o", "--out", help="the YAML to write (default characters/<id>.yaml)")
    imp.add_argument("--force", action="store_true", help="overwrite an existing file")
    imp.add_argument("--context", type=int, default=4096, help="the model's context, tokens (default 4096)")
    exp = sub.add_parser("export", help="a card as SillyTavern V2/V3 JSON or PNG")
    exp.add_argument("card", help="the card to export (characters/<id>.yaml)")
    exp.add_argument("-o", "--out", required=True, help="OUT.json or OUT.png")
    exp.add_argument("--spec", type=int, choices=(2, 3), default=2, help="JSON: V2 (default) or V3")
    p.set_defaults(func=run)
    return p


def _read(path: str, lore: list[str]) -> CharacterCard:
    card = load_card(path)
    for w in lore:
        card = with_lorebook(card, read_world_info(w))
    return card


def _show(problems: list[CardProblem], path: str) -> None:
    """Each problem as ``severity: file[:line:col]: field: why`` (the field's line in a YAML card)."""
    places = field_places(path, problems)
    for prob in problems:
        colour = "red" if prob.severity == "error" else "yellow"
        console.print(f"[{colour}]{prob.severity}[/{colour}]: {places.get(prob.field, path)}: {prob.field}: {prob.why}")


def card_yaml(card: CharacterCard, out: Path) -> str:
    """The card as our YAML (defaults left out; image paths relative to ``out``'s folder)."""
    data = card.model_dump(mode="json", exclude_defaults=True)
    images = card.image_paths()
    if images:
        data.setdefault("look", {})["images"] = [os.path.relpath(p.resolve(), out.resolve().parent) for p in images]
    head: dict[str, Any] = {k: data.pop(k) for k in ("id", "name") if k in data}
    return str(yaml.safe_dump({**head, **data}, sort_keys=False, allow_unicode=True, width=100))


def run(args: argparse.Namespace) -> int:
    """The ``card`` command; returns the exit code.

    Raises:
        CardError: a card or World Info file that cannot be read (names file and field), or an
            import onto an existing file without ``--force``.
    """
    if args.card_command == "export":
        card = load_card(args.card)
        out = Path(args.out)
        if out.suffix.lower() == ".png":
            write_card_png(card, out)
        elif out.suffix.lower() == ".json":
            write_card_json(card, out, version=args.spec)
        else:
            raise CardError(f"unknown export format {out.suffix!r}", where=str(out), hint="use .json or .png")
        console.print(f"{out}: {card.name} ({'V2+V3 PNG' if out.suffix.lower() == '.png' else f'V{args.spec} JSON'})")
        return 0
    card = _read(args.card, args.lore)
    problems = check_card(card, MemoryConfig(context_tokens=args.context))
    _show(problems, args.card)
    errors = [p for p in problems if p.severity == "error"]
    if args.card_command == "validate":
        console.print(f"{args.card}: {card.name}: {counted(len(errors), 'error')}, "
                      f"{counted(len(problems) - len(errors), 'warning')} for a {args.context}-token context; "
                      f"{counted(len(card.greetings), 'greeting')}, "
                      f"{counted(len(card.lorebook.entries), 'lore entry')}")
        return 1 if errors else 0
    if errors:
        console.print(f"{args.card}: not imported ({counted(len(errors), 'error')})")
        return 1
    out = Path(args.out) if args.out else Path("characters") / f"{card.id}.yaml"
    if out.exists() and not args.force:
        raise CardError("the file exists", where=str(out), hint="pass --force to overwrite it")
    text = card_yaml(card, out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as exc:  # a file where its folder should be, no permission, a full disk
        why = "a file is in the way of its folder" if isinstance(exc, FileExistsError | NotADirectoryError) \
            else exc.strerror or str(exc)
        raise CardError(f"cannot write the card: {why}", where=str(out)) from exc
    load_card(out)  # what was written reads back
    console.print(f"{out}: {card.name}, {counted(len(card.greetings), 'greeting')}, "
                  f"{counted(len(card.lorebook.entries), 'lore entry')}")
    return 0


__all__ = ["add_parser", "card_yaml", "run"]

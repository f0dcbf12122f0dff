"""``worldloom lint``: a story's findings and its cards' findings, in one list.

The story room lints the story (:func:`game.story.lint.lint_story`); the cast room knows
what a card costs and what is wrong with one (:func:`game.cast.cardcheck.check_card`, the
checks of ``worldloom card validate``). ``story/`` must not import ``cast/``, so the two
meet here, above both rooms. Every card finding has a code of the one table,
:data:`game.story.diagnostics.CODES` (``WL060``-``WL068``; :data:`~game.story.diagnostics.CARD_CODES`
maps a finding's kind to its code), so ``[lint.severity]`` in ``worldloom.toml`` raises,
lowers or silences them like any other code.

Each cast member with a ``card:`` is read as play reads it
(:func:`game.cast.castroom.member_card`): a card that does not load (a lorebook key that
is not a valid regular expression, a bad field, a wrong id, a missing file) is one
``WL060`` error at the place the card reader names. A card that loads is measured
against a :data:`~game.cast.castroom.MAX_CONTEXT`-token context (4,096: the most a game
gives a card; ``card validate --context N`` tries others) with the approximate token
count of :func:`game.cast.memory.approx_tokens`; each finding names the field and, for
size findings, the tokens a player would lose. A YAML card's findings point at the
field's line; a JSON or PNG card's at the file.
"""

from __future__ import annotations

from pathlib import Path

from game.errors import CardError, StoryError
from game.story.diagnostics import CARD_CODES, CODES, Severity
from game.story.ink import is_ink_path
from game.story.lint import Diagnostic, lint_story
from game.story.story import Story
from game.story.yamlio import compose_marked, read_text


def lint(path: str | Path) -> list[Diagnostic]:
    """Every finding of the story at ``path`` and of the cards its cast names.

    The card findings are kept with the story's in lint's memo (:func:`game.story.lint.lint_story`
    with :data:`CARDS`): an unchanged story whose cards are unchanged lints again without
    loading either. A story that does not load has only its ``WL018`` (its cards are not read).

    A character card given instead of a story (:func:`is_card_file`) is linted as a card:
    :func:`card_file_diagnostics` (a card is not a story, and ``WL018`` for each of its fields
    helped no one).

    Raises:
        game.errors.StoryError: ``worldloom.toml`` itself is malformed.
    """
    if is_card_file(path):
        return card_file_diagnostics(path)
    return lint_story(path, extra=CARDS)


def is_card_file(path: str | Path) -> bool:
    """Whether ``path`` is a character card file rather than a story: a ``.png``, a ``.json`` that is
    not a compiled Ink story, or a YAML file other than ``story.yaml`` whose top level has ``name:``
    and no ``scenes:`` (a card needs a name; a story has no such key). A YAML file that does not
    read is not a card here (lint then reports it as the story it was given as)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if not p.is_file() or p.name == "story.yaml" or suffix not in (".png", ".json", ".yaml", ".yml"):
        return False
    if suffix == ".png":
        return True
    if suffix == ".json":
        return not is_ink_path(p)
    try:
        top = compose_marked(read_text(p), str(p)).value
    except StoryError:
        return False
    return isinstance(top, dict) and "name" in top and "scenes" not in top


class CardCheck:
    """The cards' check as lint runs it with the story's (:class:`game.story.lint.ExtraCheck`)."""

    name: str = "cards"
    #: whose source decides the card findings (an edit of any re-lints).
    modules: tuple[str, ...] = ("game.lint", "game.cast.cardcheck", "game.cast.card", "game.cast.card_io",
                                "game.cast.macros", "game.cast.memory", "game.cast.prompt", "game.cast.castroom")

    def files(self, story: Story) -> list[str]:
        """The card files the cast names, absolute (lint's memo keeps each file's stat; a path
        relative to the working directory would be read from the story folder, never found,
        and a card edit would never lint again)."""
        named = [cid for cid, member in story.model.cast.items() if member.card]
        if not named:
            return []
        from game.cast.castroom import card_path  # the cast room, only for a story that names cards

        return [str(card_path(story, cid).resolve()) for cid in named]

    def __call__(self, story: Story, overrides: dict[str, Severity]) -> list[Diagnostic]:
        return card_diagnostics(story, overrides)


#: The one card check ``worldloom lint`` runs.
CARDS = CardCheck()


def card_diagnostics(story: Story, overrides: dict[str, Severity] | None = None) -> list[Diagnostic]:
    """The findings of every card ``story``'s cast names (``WL060``-``WL068``), in cast order.

    The cast room is imported here, for a story that names cards, when lint runs (never for an
    unchanged story, whose findings come from lint's memo): lint starts without it (about 1 s of CPU).
    """
    if not any(member.card for member in story.model.cast.values()):
        return []
    from game.cast.cardcheck import check_card, field_places
    from game.cast.castroom import MAX_CONTEXT, card_path, member_card
    from game.cast.memory import MemoryConfig

    overrides = overrides or {}
    out: list[Diagnostic] = []
    config = MemoryConfig(context_tokens=MAX_CONTEXT)
    for cid, member in story.model.cast.items():
        if not member.card:
            continue
        try:
            card = member_card(story, cid)
        except CardError as exc:
            out += _finding("WL060", exc.where or story.where(("cast", cid, "card")),
                            f"{cid!r} does not load: {_why(exc)}", overrides)
            continue
        path = card_path(story, cid)
        problems = check_card(card, config)
        where = field_places(path, problems)
        for p in problems:
            out += _finding(CARD_CODES[p.kind], where.get(p.field, str(path)), f"card {cid!r}: {p.field}: {p.why}",
                            overrides)
    return out


def card_file_diagnostics(path: str | Path) -> list[Diagnostic]:
    """The findings of the card file at ``path`` on its own (``worldloom lint CARD``): ``WL060`` when it
    does not load, at the place the card reader names; else each finding of
    :func:`game.cast.cardcheck.check_card` for a :data:`~game.cast.castroom.MAX_CONTEXT`-token context,
    at its field's line in a YAML card (codes and default severities as for a story's cards)."""
    from game.cast.card_io import load_card
    from game.cast.cardcheck import check_card, field_places
    from game.cast.castroom import MAX_CONTEXT
    from game.cast.memory import MemoryConfig

    try:
        card = load_card(path)
    except CardError as exc:
        return _finding("WL060", exc.where or str(path), f"{Path(path).name!r} does not load: {_why(exc)}", {})
    problems = check_card(card, MemoryConfig(context_tokens=MAX_CONTEXT))
    where = field_places(path, problems)
    return [d for p in problems for d in _finding(CARD_CODES[p.kind], where.get(p.field, str(path)),
                                                  f"card {card.id!r}: {p.field}: {p.why}", {})]


def _finding(code: str, where: str, name: str, overrides: dict[str, Severity]) -> list[Diagnostic]:
    """The finding ``code`` at ``where`` (``name`` fills its message) at its severity after
    ``overrides``: one :class:`Diagnostic`, or none when the code is ``off``."""
    c = CODES[code]
    severity = overrides.get(code, c.severity)
    return [] if severity == "off" else [Diagnostic(where, code, severity, c.message.format(name=name), c.hint)]


def _why(exc: CardError) -> str:
    """The card reader's reason with its own hint (``close the bracket or quote``, ``name the file
    eve.yaml``): lint's hint for ``WL060`` is only where to look."""
    return f"{exc.why} ({exc.hint})" if exc.hint else exc.why


__all__ = ["CARDS", "CardCheck", "card_diagnostics", "card_file_diagnostics", "is_card_file", "lint"]

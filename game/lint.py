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

from game.errors import CardError
from game.story.diagnostics import CARD_CODES, CODES, Severity
from game.story.lint import Diagnostic, lint_story
from game.story.story import Story


def lint(path: str | Path) -> list[Diagnostic]:
    """Every finding of the story at ``path`` and of the cards its cast names.

    The card findings are kept with the story's in lint's memo (:func:`game.story.lint.lint_story`
    with :data:`CARDS`): an unchanged story whose cards are unchanged lints again without
    loading either. A story that does not load has only its ``WL018`` (its cards are not read).

    Raises:
        game.errors.StoryError: ``worldloom.toml`` itself is malformed.
    """
    return lint_story(path, extra=CARDS)


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

    def add(code: str, where: str, name: str) -> None:
        c = CODES[code]
        severity = overrides.get(code, c.severity)
        if severity != "off":
            out.append(Diagnostic(where, code, severity, c.message.format(name=name), c.hint))

    config = MemoryConfig(context_tokens=MAX_CONTEXT)
    for cid, member in story.model.cast.items():
        if not member.card:
            continue
        try:
            card = member_card(story, cid)
        except CardError as exc:
            add("WL060", exc.where or story.where(("cast", cid, "card")), f"{cid!r} does not load: {exc.why}")
            continue
        path = card_path(story, cid)
        problems = check_card(card, config)
        where = field_places(path, problems)
        for p in problems:
            add(CARD_CODES[p.kind], where.get(p.field, str(path)), f"card {cid!r}: {p.field}: {p.why}")
    return out


__all__ = ["CARDS", "CardCheck", "card_diagnostics", "lint"]

"""Story events as the player reads them: speakers by name, scene titles, the choice or exit taken,
the ending by its name, and the choices on offer.

``worldloom play --headless`` prints these as it plays (:class:`game.headless.HeadlessRunner`'s
``on_text``) and ``worldloom replay`` prints them for each row it matched, so both read as the
window does: ``Creature: Chrr-rrip!``, not ``creature: Chrr-rrip!``; ``AN ENDING: Marked``, not
``marked``. The words are the play language's (the story's catalogue, :func:`game.locale.ui`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from game.locale import ui
from game.story.story import Story
from game.story.strings import ending_name

#: Event kinds a player reads (the others, ``effect``, ``reaction``, ``give``..., change the game
#: without a line of their own).
SHOWN = ("scene", "line", "say", "reply", "choice", "exit", "ending", "warning")


class Numbered(Protocol):
    """A choice on offer: its 1-based ``number`` and ``text`` (:class:`game.session.ChoiceView`)."""

    @property
    def number(self) -> int: ...
    @property
    def text(self) -> str: ...


class Reader:
    """Turns events (or transcript rows) into the lines a player reads.

    Args:
        story: the story played (its catalogue's ending names, when it has one).
        name: speaker id -> the name shown (``""`` for narration), as the window names them
            (:meth:`game.session.Session.speaker_name`: the cast's names, ``You`` for the player).
    """

    def __init__(self, story: Story, name: Callable[[str], str]) -> None:
        self.story = story
        self.name = name

    def line(self, kind: str, speaker: str, text: str, scene: str = "") -> str | None:
        """The line for one event of kind ``kind`` (``None``: the player reads nothing for it).

        ``scene`` -> ``== Title ==``; ``choice`` / ``exit`` -> ``> text`` (what the player took);
        ``ending`` (``text`` is its id) -> ``AN ENDING: Name``; a line -> ``Name: text`` (the name's
        first letter upper-cased), or the text alone for narration.
        """
        if kind not in SHOWN or not text:
            return None
        if kind == "scene":
            return f"== {text} =="
        if kind in ("choice", "exit"):
            return f"> {text}"
        if kind == "ending":
            return f"{ui('ui.ending')}: {ending_name(self.story, scene, text)}"
        who = self.name(speaker)  # a name opening the line takes a capital: "The creature: ..."
        return f"{who[:1].upper()}{who[1:]}: {text}" if who else text

    @staticmethod
    def menu(choices: Sequence[Numbered]) -> list[str]:
        """The choices on offer, one a line: ``  1. Hold out the kite``."""
        return [f"  {c.number}. {c.text}" for c in choices]

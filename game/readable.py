"""Story events as the player reads them: speakers by name, scene titles, the choice or exit taken,
the ending by its name, and the choices on offer.

``worldloom play --headless`` prints these as it plays (:class:`game.headless.HeadlessRunner`'s
``on_text``) and ``worldloom replay`` prints them for each row it matched, so both read as the
window does: ``Creature: Chrr-rrip!``, not ``creature: Chrr-rrip!``; ``AN ENDING: Marked``, not
``marked``. The words are the play language's: the story's from its catalogue, the game's own
(``Give … to …``, ``(you now carry: …)``, ``Quest: …``, ``AN ENDING``) the ``read.*`` and ``ui.*``
strings of :data:`game.locale.UI` (``worldloom play --lang fr``: ``UNE FIN : Marqué``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from game.locale import ui
from game.story.story import Story
from game.story.strings import ending_name
from game.words import opening

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
            return ui("read.labelled", label=ui("ui.ending"), text=ending_name(self.story, scene, text))
        who = self.name(speaker)  # a name opening the line takes a capital: "The creature: ..."
        return ui("read.labelled", label=opening(who), text=text) if who else text

    def event(self, kind: str, speaker: str, text: str, scene: str = "",
              ids: Mapping[str, Any] | None = None, data: Mapping[str, Any] | None = None) -> str | None:
        """As :meth:`line`, and also what the player sees happen: a character acting in view
        (``agent`` with ``data.seen``: ``Ysolde takes the oil flask.``, ``Brann goes to the
        causeway.``, ``Ysolde gives you the tower key.``; her words come as their own ``line``
        events) and a quest's new stage (``Quest: Get the oil and a wick up to the lamp room.``,
        ``Quest done: ...``)."""
        ids, data = ids or {}, data or {}
        if kind == "quest" and text:
            return ui("read.quest.done" if data.get("what") == "done" else "read.quest", text=text)
        if kind == "agent" and data.get("seen"):
            return self._acted(speaker, data)
        return self.line(kind, speaker, text, scene)

    def _acted(self, agent: str, data: Mapping[str, Any]) -> str | None:
        who = opening(self.name(agent) or agent)
        act, item, to = data.get("kind"), self.item(str(data.get("item", ""))), str(data.get("to", ""))
        if act == "move":
            return ui("read.act.move", who=who, place=self.place(to))
        if act in ("take", "drop"):
            return ui(f"read.act.{act}", who=who, item=item)
        if act == "give":
            if to == "player":
                return ui("read.act.give_you", who=who, item=item)
            return ui("read.act.give", who=who, item=item, name=self.name(to))
        return None  # waiting, or talking (her lines are events of their own)

    def item(self, item_id: str) -> str:
        """An item's display name (its id when the story has no such item)."""
        found = self.story.model.items.get(item_id)
        return found.name if found is not None else item_id

    def place(self, location_id: str) -> str:
        """A location's display name (its id when the story has no such location)."""
        found = self.story.model.locations.get(location_id)
        return found.name if found is not None else location_id

    def give(self, item_id: str, to: str) -> str:
        """The player's ``give`` as taken: ``> Give the smooth stone to the creature``, or with an
        item ``to``, ``> Use the oil flask on the spare wick``."""
        if to in self.story.model.items:
            return "> " + ui("read.use", item=self.item(item_id), target=self.item(to))
        return "> " + ui("read.give", item=self.item(item_id), name=self.name(to) or to)

    @staticmethod
    def saved(slot: str) -> str:
        """``(saved as 'one')``: a script's ``save one`` was written."""
        return ui("read.saved", slot=slot)

    @staticmethod
    def loaded(slot: str, previous: bool = False) -> str:
        """``(loaded 'one')`` (``previous``: the save before it, ``load one previous``)."""
        return ui("read.loaded.previous" if previous else "read.loaded", slot=slot)

    @staticmethod
    def rolled(verb: str, n: int) -> str:
        """``(rolled back one choice)`` / ``(rolled forward 2 choices)``: ``verb`` is ``rollback`` or
        ``rollforward``, ``n`` the choices undone or redone (>= 1)."""
        return ui(f"read.{verb}.one") if n == 1 else ui(f"read.{verb}", n=n)

    def carry(self, items: Sequence[str]) -> str:
        """What the player holds after it changed: ``(you now carry: tower key, oil flask)``."""
        names = ", ".join(self.item(i) for i in items)
        return ui("read.carry", items=names) if names else ui("read.carry.nothing")

    @staticmethod
    def menu(choices: Sequence[Numbered]) -> list[str]:
        """The choices on offer, one a line: ``  1. Hold out the kite``."""
        return [f"  {c.number}. {c.text}" for c in choices]

"""Free text to an intent, by keyword: the model-free matcher for tools.

The game itself understands free text by meaning (:mod:`game.inputs.meaning`,
through :class:`game.inputs.channels.Channels`: negation and undo, MiniLM
ranking, slots, asking back, world edits). This keyword matcher stays for tools
that must not load a model (the story explorer) and as the simplest reference. It uses
the same negation and undo vocabulary as the game (:mod:`game.story.negation`).

Order: negation and undo first, then the scene's authored actions by keyword,
then the choices by their words, then ``give/offer <item> [to <character>]``.
Anything else is not understood, honestly: the caller shows a line and nothing
changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from game.state import Choose, Give, Say
from game.story.negation import analyse
from game.story.schema import Scene, StoryModel

_WORD = re.compile(r"[a-z0-9']+")
_STOP = {"the", "a", "an", "to", "it", "her", "him", "them", "my", "your", "some", "this", "that", "please"}


def words(text: str) -> list[str]:
    """Lower-case words of ``text`` (apostrophes kept)."""
    return _WORD.findall(text.lower().replace("’", "'"))


@dataclass(frozen=True)
class Resolution:
    """The outcome: an intent, or ``None`` with a ``reason`` (``negated``, ``undo``, ``unknown``)."""

    intent: Choose | Give | Say | None
    reason: str = ""
    score: float = 0.0


def negated(text: str) -> bool:
    """Whether any clause of ``text`` is negated (:func:`game.story.negation.analyse`; the
    keyword matcher is conservative: a partly negated line does nothing)."""
    return analyse(text).kind in ("negated", "partial")


def is_undo(text: str) -> bool:
    """Whether ``text`` takes something back ("undo", "never mind", "take it back")."""
    return analyse(text).kind == "undo"


def resolve(text: str, story: StoryModel, scene: Scene, inventory: list[str]) -> Resolution:
    """Resolve free ``text`` in ``scene``.

    Returns:
        A :class:`Resolution`; ``intent`` is ``None`` when the text is negated,
        an undo, or not understood.
    """
    if is_undo(text):
        return Resolution(None, "undo")
    if negated(text):
        return Resolution(None, "negated")
    ws = set(words(text)) - _STOP
    if not ws:
        return Resolution(None, "unknown")
    for action in scene.actions:
        keys = {k.lower() for k in action.keywords}
        if keys & ws:
            return Resolution(Say(text=text, action_id=action.id), "action", 1.0)
    best: tuple[float, str] = (0.0, "")
    for choice in scene.choices:
        cw = set(words(choice.text)) - _STOP
        if cw:
            score = len(cw & ws) / len(cw | ws)
            if score > best[0]:
                best = (score, choice.id)
    if best[0] >= 0.5:
        return Resolution(Choose(choice_id=best[1]), "choice", best[0])
    if ws & {"give", "offer", "hand"}:
        items = [i for i in inventory if i in story.items and
                 (i in ws or set(words(story.items[i].name)) & ws)]
        people = [c for c in scene.present
                  if c in ws or (c in story.cast and (set(words(story.cast[c].name)) - _STOP) & ws)]
        if len(people) != 1 and len(scene.present) == 1:
            people = list(scene.present)
        if len(items) == 1 and len(people) == 1:
            return Resolution(Give(item_id=items[0], character_id=people[0]), "give", 1.0)
    return Resolution(None, "unknown")

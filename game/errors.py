"""Named errors a user can cause. Each says *where* and *why*.

Every error a player or author can trigger (a broken story file, a bad card, a
corrupt save, a bad image, a backend that is down) raises a subclass of
:class:`WorldloomError`; the CLI and the window print ``str(error)`` instead of a
traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def near(name: object, known: Iterable[str]) -> str | None:
    """The known name nearest ``name`` (``difflib``'s ratio of at least 0.6, its default cut-off),
    else ``None`` (also when ``name`` is not a string)."""
    if not isinstance(name, str):
        return None
    found = difflib.get_close_matches(name, list(known), n=1)
    return found[0] if found else None


def near_hint(name: object, known: Iterable[str]) -> str:
    """``"did you mean 'x'? "`` for the known name :func:`near` ``name``, else ``""``."""
    found = near(name, known)
    return f"did you mean {found!r}? " if found is not None else ""


class WorldloomError(Exception):
    """Base of every user-facing error.

    Args:
        why: what is wrong, in one sentence.
        where: a location such as ``stories/x/story.yaml:12:5`` or a save path.
        hint: optional advice on how to fix it.
    """

    def __init__(self, why: str, where: str = "", hint: str = "") -> None:
        self.why = why
        self.where = where
        self.hint = hint
        text = f"{where}: {why}" if where else why
        if hint:
            text += f" ({hint})"
        super().__init__(text)


class StoryError(WorldloomError):
    """A story file cannot be read or validated.

    Args:
        why, where, hint: the first problem (see :class:`WorldloomError`).
        problems: every problem found, ``(where, why)`` each, the first one included; the message
            names each further one on its own line.
    """

    def __init__(self, why: str, where: str = "", hint: str = "",
                 problems: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(why, where, hint)
        self.problems: tuple[tuple[str, str], ...] = problems or ((where, why),)
        rest = "".join(f"\n  {w}: {y}" if w else f"\n  {y}" for w, y in self.problems[1:])
        if rest:
            self.args = (str(self.args[0]) + rest,)

    def __str__(self) -> str:
        return str(self.args[0])


class ExpressionError(StoryError):
    """A condition or effect is not valid in the story expression language."""


class StoryRuntimeError(WorldloomError):
    """The story reached a state its author did not allow (bad goto, bad effect)."""


class SaveError(WorldloomError):
    """A save cannot be written, or a save file is corrupt or incompatible."""


class CardError(WorldloomError):
    """A character card is malformed."""


class InputError(WorldloomError):
    """A playthrough script line, a dropped file or a typed command is not usable."""


class BackendError(WorldloomError):
    """A world backend failed, timed out or returned something unusable."""


class AssetError(WorldloomError):
    """An image or sound a story names is missing or unreadable."""

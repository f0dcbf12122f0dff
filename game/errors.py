"""Named errors a user can cause. Each says *where* and *why*.

Every error a player or author can trigger (a broken story file, a bad card, a
corrupt save, a bad image, a backend that is down) raises a subclass of
:class:`WorldloomError`; the CLI and the window print ``str(error)`` instead of a
traceback.
"""

from __future__ import annotations


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
    """A story file cannot be read or validated."""


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

"""The story room: format, loader, safe expressions, runtime, lint.

``from game.story import Story, load_story, story_from_dict`` works as ever, but the names are
bound on first use (PEP 562 ``__getattr__``, :func:`game.lazy.lazy_names`): importing one module
of the room (:mod:`game.story.diagnostics`, :mod:`game.story.yamlio`, ...) no longer runs the
loader's imports (the schema, pydantic) for a caller that never loads a story.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from game.lazy import lazy_names

if TYPE_CHECKING:
    from game.story.loader import load_story, story_from_dict
    from game.story.story import Story

#: The package's names -> the module each comes from (imported when the name is first read).
_HOMES = {"Story": "game.story.story", "load_story": "game.story.loader", "story_from_dict": "game.story.loader"}

__getattr__, __dir__ = lazy_names(__name__, _HOMES)

__all__ = ["Story", "load_story", "story_from_dict"]

"""Reference images the player drops (``image <path>`` in scripts) become intents.

The file is checked by :func:`game.images.validate_image` (sides, pixels,
decompression bombs) before an intent is made.
"""

from __future__ import annotations

from pathlib import Path

from game.images import validate_image
from game.state import AddReference


def reference_intent(path: str | Path, dropped_on: str = "", x: float | None = None) -> AddReference:
    """The intent for a dropped image, after :func:`validate_image`.

    Args:
        path: the image file.
        dropped_on: the character id it was dropped on (it becomes a gift), or ``""``.
        x: where in the view it was dropped, 0 (left edge) to 1 (right edge), or ``None``.

    Raises:
        game.errors.InputError: see :func:`validate_image`.
    """
    info = validate_image(path)
    return AddReference(path=info.path, entity_id=dropped_on, x=x)

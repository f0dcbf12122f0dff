"""Scenery a backend did not draw, told to the author once per scene and phrase.

The procedural painter (:meth:`game.world.backends.scenery.Vocabulary.read`) reports a phrase of a
scene's setting that names nothing it can paint only in each chunk's ``ignored`` list; headless
play and the window turn those notes into one warning line each (:class:`UndrawnScenery`). No
numpy and no vocabulary here: a headless start imports this module and nothing heavier.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

#: How a backend's note (in :attr:`game.world.protocol.FrameChunk.ignored`) starts when a phrase
#: of the scene's setting was not drawn (see :meth:`game.world.backends.scenery.Vocabulary.read`).
UNDRAWN = "scenery: "


class UndrawnScenery:
    """Tells an author, once per scene and phrase, the words of a setting the backend did not draw.

    The painter reports them only in each chunk's ``ignored`` list (the transcript's), where
    nobody playing looks. :meth:`tell` turns the new ones into warning lines naming the scene:
    ``scene 'net_shed': 'a workbench' is not drawn (nearest is desk at 0.44): name something
    the painter draws, or give the scene art``.

    Args:
        say: where :meth:`said` sends its lines (a warning printer), or ``None``.
    """

    def __init__(self, say: Callable[[str], None] | None = None) -> None:
        self.say = say
        self._told: set[tuple[str, str]] = set()

    def said(self, lines: Sequence[str]) -> None:
        """Send ``lines`` (from :meth:`tell`) to :attr:`say`, if any."""
        say = self.say
        if say is not None:
            for line in lines:
                say(line)

    def tell(self, scene: str, ignored: Sequence[str]) -> list[str]:
        """Warning lines for the :data:`UNDRAWN` notes of ``ignored`` not told before for ``scene``."""
        out = []
        for note in ignored:
            if not note.startswith(UNDRAWN) or (scene, note) in self._told:
                continue
            self._told.add((scene, note))
            what = note[len(UNDRAWN):].removeprefix("nothing in the vocabulary is near ").removesuffix("; not drawn")
            phrase, _, why = what.partition(" (")
            out.append(f"scene {scene!r}: {phrase} is not drawn" + (f" ({why}" if why else "")
                       + ": name something the painter draws (game/world/backends/scenery.py), or give the scene art")
        return out

"""The painter's layout record: what was drawn where in a frame, and whether it shows.

Every landmark, prop and character the procedural painter draws is recorded with
its bounding box in frame pixels ``(x0, y0, x1, y1)`` (``x1``/``y1`` exclusive) and
whether it is *visible*: at least :data:`MIN_INSIDE` of its box inside the frame
and at most :data:`MAX_COVERED` of it covered by boxes drawn after it. Static
parts (painted once into a stage's layers) carry a :class:`Mark` in layer
coordinates that :func:`mark_box` moves with the camera.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

#: Share of a thing's box that must lie inside the frame for it to count as visible.
MIN_INSIDE = 0.5
#: Largest share of a thing's box that later-drawn boxes may cover while it still counts as visible.
MAX_COVERED = 0.6

Box = tuple[int, int, int, int]
PartKind = Literal["interior", "landmark", "prop", "character", "item", "object", "art"]


@dataclass(frozen=True)
class Mark:
    """A static part of a stage, in its layer's own pixels.

    Attributes:
        name: vocabulary name (``oak``) or entity id.
        kind: ``interior``, ``landmark``, ``prop`` or ``art``.
        box: ``(x0, y0, x1, y1)`` in layer pixels: columns of the (periodic) layer image,
            rows of the frame before the vertical look shift.
        rate: parallax rate of its layer (columns move ``rate * width`` per world unit).
        period: the layer's period in columns (0 = not periodic; columns clamp instead).
    """

    name: str
    kind: PartKind
    box: Box
    rate: float = 1.0
    period: int = 0


@dataclass(frozen=True)
class Placed:
    """One drawn thing in one frame: name, kind, box in frame pixels, and whether it shows."""

    name: str
    kind: PartKind
    box: Box
    visible: bool


@dataclass
class Layout:
    """The layout record of one frame, in drawing order (later entries are in front); ``poses``:
    the body pose each character was drawn in (``stand``, ``sit``, ``leap``, ``lie``...)."""

    width: int
    height: int
    parts: list[Placed] = field(default_factory=list)
    poses: dict[str, str] = field(default_factory=dict)
    _boxes: list[tuple[str, PartKind, Box]] = field(default_factory=list)

    def add(self, name: str, kind: PartKind, box: Box) -> None:
        """Record a drawn thing (visibility is settled by :meth:`finish`)."""
        self._boxes.append((name, kind, box))

    def drawn(self) -> list[tuple[str, PartKind, Box]]:
        """``(name, kind, box)`` of everything recorded, in drawing order (before :meth:`finish`)."""
        return list(self._boxes)

    def finish(self) -> Layout:
        """Settle visibility: inside the frame and not covered by what was drawn after."""
        self.parts = []
        for k, (name, kind, box) in enumerate(self._boxes):
            area = _area(box)
            inside = _area(_clip(box, (0, 0, self.width, self.height)))
            covered = sum(_area(_clip(box, b)) for _, kd, b in self._boxes[k + 1 :]
                          if kd in ("character", "item", "object"))
            ok = area > 0 and inside >= MIN_INSIDE * area and covered <= MAX_COVERED * area
            self.parts.append(Placed(name, kind, box, ok))
        return self

    def get(self, name: str) -> Placed | None:
        """The (frontmost) entry called ``name``, or ``None``."""
        return next((p for p in reversed(self.parts) if p.name == name), None)

    def visible(self) -> set[str]:
        """Names of the things that show."""
        return {p.name for p in self.parts if p.visible}


def _area(b: Box) -> int:
    return max(0, b[2] - b[0]) * max(0, b[3] - b[1])


def _clip(b: Box, c: Box) -> Box:
    return (max(b[0], c[0]), max(b[1], c[1]), min(b[2], c[2]), min(b[3], c[3]))


def mark_box(mark: Mark, camera_x: float, width: int, dy: int, pan: int = 0) -> Box:
    """Where ``mark`` is in the frame for ``camera_x`` (world units), shifted down ``dy`` rows.

    A periodic layer shows the copy nearest the frame's centre; a plate (``period`` 0)
    is seen from column ``pan``.
    """
    x0, y0, x1, y1 = mark.box
    if mark.period:
        off = camera_x * width * mark.rate
        cx = (x0 + x1) / 2.0 - off
        shift = round((width / 2.0 - cx) / mark.period) * mark.period
        fx0 = int(round(x0 - off + shift))
    else:
        fx0 = x0 - pan
    return (fx0, y0 + dy, fx0 + (x1 - x0), y1 + dy)

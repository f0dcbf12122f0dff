"""Author art: background plates, parallax layers and sprite sheets, read and checked.

A location may give a ``plate`` (its background, 16:9, at least :data:`MIN_PLATE`)
and ``layers`` (transparent PNGs of the plate's size, drawn in front of it); a
character may give a ``sheet`` (see :class:`game.story.schema.SheetDef`), inline or
as a YAML/JSON file. :func:`load_sheet` reads a sheet; :func:`art_problems` lists
what lint reports: missing or unreadable files (``WL009``) and art that cannot be
used as given (``WL030``: a plate too small or not 16:9, a layer of another size or
without transparency, cells outside the sheet or named for no expression or pose).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from PIL import Image
from pydantic import ValidationError

from game.story.schema import SheetDef, StoryModel

#: Smallest background plate, pixels (width, height).
MIN_PLATE = (480, 270)
#: Largest relative difference from 16:9 a plate may have.
ASPECT_SLACK = 0.1
#: The faces a character's art (or the drawn figure) can show, by name.
EXPRESSIONS = ("neutral", "smile", "frown", "surprised", "sad", "sleeping")
#: The body poses a figure can take.
POSES = ("stand", "sit", "walk", "hold", "give", "leap", "lie")
#: Names a sheet cell may have (``pose.expression`` too).
CELL_NAMES = frozenset(EXPRESSIONS) | frozenset(POSES)

Where = tuple[Any, ...]


class ArtError(ValueError):
    """A sheet index that cannot be read (raised by :func:`load_sheet`)."""


def load_sheet(folder: Path, sheet: SheetDef | str) -> SheetDef:
    """The sheet itself: ``sheet`` if given inline, else the YAML/JSON file it names (relative to ``folder``).

    Raises:
        ArtError: the file cannot be read or is not a sheet.
    """
    if isinstance(sheet, SheetDef):
        return sheet
    path = folder / sheet
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        return SheetDef.model_validate(data)
    except (OSError, ValueError, yaml.YAMLError, ValidationError) as exc:
        raise ArtError(f"{sheet}: {str(exc).splitlines()[0]}") from exc


def sheet_image_path(folder: Path, sheet: SheetDef | str) -> Path:
    """Where the sheet's PNG is (relative to the index file's folder when the sheet is a file)."""
    base = folder / Path(sheet).parent if isinstance(sheet, str) else folder
    return base / load_sheet(folder, sheet).image


def _size(path: Path) -> tuple[int, int, bool] | None:
    """``(width, height, has transparency)`` of a picture, or ``None`` when unreadable."""
    try:
        with Image.open(path) as im:
            im.load()
            return im.width, im.height, im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info
    except (OSError, ValueError, Image.DecompressionBombError):
        return None


def art_problems(folder: Path, m: StoryModel) -> Iterator[tuple[str, Where, str]]:
    """``(code, where, name)`` for every art problem of the story in ``folder`` (see the module doc)."""
    for lid, loc in m.locations.items():
        plate = None
        if loc.plate:
            plate = _size(folder / loc.plate)
            if plate is None:
                yield "WL009", ("locations", lid, "plate"), loc.plate
            else:
                w, h, _ = plate
                if w < MIN_PLATE[0] or h < MIN_PLATE[1] or abs(w / h / (16 / 9) - 1) > ASPECT_SLACK:
                    yield ("WL030", ("locations", lid, "plate"),
                           f"plate {loc.plate} is {w}x{h}, not 16:9 of at least 480x270")
        for k, rel in enumerate(loc.layers):
            size = _size(folder / rel)
            if size is None:
                yield "WL009", ("locations", lid, "layers", k), rel
            elif plate is not None and size[:2] != plate[:2]:
                yield ("WL030", ("locations", lid, "layers", k),
                       f"layer {rel} is {size[0]}x{size[1]}, the plate {plate[0]}x{plate[1]}")
            elif not size[2]:
                yield "WL030", ("locations", lid, "layers", k), f"layer {rel} has no transparency"
    for cid, c in m.cast.items():
        if c.sheet is None:
            continue
        where = ("cast", cid, "sheet")
        try:
            sheet = load_sheet(folder, c.sheet)
        except ArtError:
            yield "WL009", where, str(c.sheet)
            continue
        fw, fh = sheet.frame
        if fw <= 0 or fh <= 0:
            yield "WL030", (*where, "frame"), f"sheet cells of {fw}x{fh} pixels"
            continue
        for name in sheet.cells:
            parts = name.split(".")
            if not parts or any(p not in CELL_NAMES for p in parts) or len(parts) > 2:
                yield "WL030", (*where, "cells", name), f"cell {name!r} names no expression or pose"
        size = _size(sheet_image_path(folder, c.sheet))
        if size is None:
            yield "WL009", (*where, "image"), sheet.image
            continue
        for name, (col, row) in sheet.cells.items():
            if col < 0 or row < 0 or (col + 1) * fw > size[0] or (row + 1) * fh > size[1]:
                yield ("WL030", (*where, "cells", name),
                       f"cell {name!r} at [{col}, {row}] is outside the {size[0]}x{size[1]} sheet")

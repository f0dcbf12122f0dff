"""Export the error bank as a dataset (``worldloom errorbank export``).

Two layouts:

* ``pairs`` (default): one row per case whose correction worked and that is not
  labelled a false alarm, with ``prompt`` / ``chosen`` / ``rejected`` (the layout
  preference-training libraries such as TRL's ``DPOTrainer`` take): for dialogue,
  the corrected and the bad reply; for frames, the corrected and the bad thumbnail
  as ``data:image/png;base64,...`` strings, or as paths of PNG files written beside
  the dataset (``images="files"``);
* ``cases``: every case, flat, without images.

Every row has the same keys and every value is a string, a number or a bool
(metrics and the request are JSON strings), so ``datasets.load_dataset("json",
data_files=...)`` and Parquet readers see one schema. The schema is in
``docs/error-bank.md``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from game.errorbank.errors import ErrorBankError
from game.errorbank.store import Case, ErrorStore

Format = Literal["jsonl", "parquet"]
Layout = Literal["pairs", "cases"]
Images = Literal["base64", "files"]

PAIR_FIELDS = ("id", "kind", "modality", "session", "story", "scene", "character", "frame", "frame_time",
               "prompt", "chosen", "rejected", "correction", "metrics", "request")
CASE_FIELDS = ("id", "kind", "severity", "session", "story", "scene", "character", "frame", "frame_time",
               "wall_time", "prompt", "bad_reply", "fixed_reply", "correction", "worked", "label", "note",
               "metrics", "request")


def prompt_of(case: Case) -> str:
    """The text prompt of a case: the request's ``prompt``, or the dialogue prompt as JSON."""
    p = case.request.get("prompt")
    if isinstance(p, str):
        return p
    return json.dumps(p if p is not None else dict(case.request), sort_keys=True, default=str)


def _image(png: bytes, case_id: int, role: str, images: Images, folder: Path | None, base: Path) -> str:
    if images == "files" and folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{case_id}_{role}.png"
        path.write_bytes(png)
        return str(path.relative_to(base)) if path.is_relative_to(base) else str(path)
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def pair_rows(store: ErrorStore, images: Images = "base64", folder: Path | None = None,
              base: Path = Path(".")) -> Iterator[dict[str, Any]]:
    """Rows of the ``pairs`` layout (see the module doc)."""
    for c in store.iter_cases():
        if c.worked is not True or c.label == "good":
            continue
        if c.bad_reply and c.fixed_reply:
            modality, chosen, rejected = "text", c.fixed_reply, c.bad_reply
        elif c.bad_png and c.fixed_png:
            modality = "image"
            chosen = _image(c.fixed_png, c.id, "chosen", images, folder, base)
            rejected = _image(c.bad_png, c.id, "rejected", images, folder, base)
        else:
            continue
        yield {"id": c.id, "kind": c.kind, "modality": modality, "session": c.session, "story": c.story,
               "scene": c.scene, "character": c.character, "frame": c.frame, "frame_time": float(c.frame_time),
               "prompt": prompt_of(c), "chosen": chosen, "rejected": rejected, "correction": c.correction,
               "metrics": json.dumps(dict(c.metrics), sort_keys=True, default=str),
               "request": json.dumps(dict(c.request), sort_keys=True, default=str)}


def case_rows(store: ErrorStore) -> Iterator[dict[str, Any]]:
    """Rows of the ``cases`` layout (no images)."""
    for c in store.iter_cases():
        yield {"id": c.id, "kind": c.kind, "severity": c.severity, "session": c.session, "story": c.story,
               "scene": c.scene, "character": c.character, "frame": c.frame, "frame_time": float(c.frame_time),
               "wall_time": float(c.wall_time), "prompt": prompt_of(c), "bad_reply": c.bad_reply,
               "fixed_reply": c.fixed_reply, "correction": c.correction,
               "worked": "" if c.worked is None else ("true" if c.worked else "false"), "label": c.label,
               "note": c.note, "metrics": json.dumps(dict(c.metrics), sort_keys=True, default=str),
               "request": json.dumps(dict(c.request), sort_keys=True, default=str)}


def export(store: ErrorStore, out: str | Path, fmt: Format = "jsonl", layout: Layout = "pairs",
           images: Images = "base64") -> tuple[Path, int]:
    """Write the dataset to ``out``; returns ``(path, rows)``.

    Args:
        store: the error bank.
        out: output file (``.jsonl`` or ``.parquet``).
        fmt: ``jsonl`` or ``parquet`` (needs ``pyarrow``).
        layout: ``pairs`` or ``cases``.
        images: ``base64`` (inline) or ``files`` (PNGs in ``<out stem>_images/`` beside it).

    Raises:
        ErrorBankError: ``parquet`` without pyarrow, or the file cannot be written.
    """
    path = Path(out)
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise ErrorBankError("parquet export needs the pyarrow package", where=str(path),
                                 hint="pip install pyarrow, or use --format jsonl") from exc
    folder = path.parent / f"{path.stem}_images" if images == "files" else None
    rows = list(pair_rows(store, images, folder, path.parent) if layout == "pairs" else case_rows(store))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "parquet":
            names = PAIR_FIELDS if layout == "pairs" else CASE_FIELDS
            table = pa.table({n: [r[n] for r in rows] for n in names})
            pq.write_table(table, path)
        else:
            with path.open("w", encoding="utf-8") as fh:
                for r in rows:
                    fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise ErrorBankError(f"cannot write the export: {exc}", where=str(path)) from exc
    return path, len(rows)

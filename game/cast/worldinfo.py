"""Standalone World Info (lorebook) files: SillyTavern's World Info JSON and a bare V2 ``character_book``.

Two shapes are read (:func:`read_world_info`):

- **SillyTavern World Info** (``worlds/<name>.json``, as its "Export" writes it):
  ``{"name"?, "entries": {"0": {"uid", "key": [...], "keysecondary": [...], "comment",
  "content", "constant", "selective", "order", "position", "disable", "caseSensitive",
  ...}, ...}}``. ``key`` and ``keysecondary`` map to ``keys`` and ``secondary_keys``,
  ``order`` to ``insertion_order``, ``disable`` to ``not enabled``, ``comment`` to the
  entry's ``name``; a key written ``/pattern/flags`` is a regular expression (the entry
  then runs its keys with the ``regex`` package and its time limit, plain keys escaped);
  fields a lorebook has no use for (``probability``, ``group``, ``depth``...) are kept
  under the entry's ``extensions``.
- **A V2 character book** (``{"entries": [...]}``, a card's ``character_book`` saved
  alone): read as a card's (:func:`game.cast.card_io.book_from_tavern`).

Everything is checked field by field; a bad file raises :class:`game.errors.CardError`
naming the field (``entries["3"].key: must be a list of strings``). Nothing is executed.
:func:`with_lorebook` gives a card the entries of a book after its own.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import regex

from game.cast.card import CharacterCard, Lorebook
from game.cast.card_io import book_from_tavern, read_json_document
from game.errors import CardError

#: A key written as a regular expression: ``/pattern/flags``.
REGEX_KEY = re.compile(r"^/(.+)/([gimsuy]*)$", re.S)
#: World Info entry fields with a lorebook meaning (the rest are kept under ``extensions``).
_MAPPED = frozenset({"uid", "key", "keysecondary", "comment", "content", "constant", "selective", "order",
                     "disable", "caseSensitive", "position", "extensions"})


def _fail(where: str, path: str, why: str) -> CardError:
    return CardError(f"{path}: {why}", where=where)


def _texts(where: str, e: dict[str, Any], key: str, path: str) -> list[str]:
    v = e.get(key, [])
    if v is None:
        return []
    if isinstance(v, str):
        return [k.strip() for k in v.split(",") if k.strip()]  # old exports: one comma-separated string
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _fail(where, f"{path}.{key}", "must be a list of strings")
    return list(v)


def _flag(where: str, e: dict[str, Any], key: str, path: str, default: bool) -> bool:
    v = e.get(key, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise _fail(where, f"{path}.{key}", "must be true or false")
    return v


def _keys(where: str, keys: list[str], path: str) -> tuple[list[str], bool, bool]:
    """``(keys, use_regex, case_sensitive_hint)``: ``/re/i`` keys become patterns, plain ones escaped."""
    if not any(REGEX_KEY.match(k) for k in keys):
        return keys, False, False
    out: list[str] = []
    sensitive = True
    for k in keys:
        m = REGEX_KEY.match(k)
        if m:
            if "i" in m.group(2):
                sensitive = False
            try:
                regex.compile(m.group(1))
            except regex.error as exc:
                raise _fail(where, path, f"key {k!r} is not a valid regular expression: {exc}") from exc
            out.append(m.group(1))
        else:
            out.append(r"(?<!\w)" + regex.escape(k.strip()) + r"(?!\w)")
    return out, True, sensitive


def _wi_entry(where: str, raw: Any, path: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _fail(where, path, "must be an object")
    keys, use_regex, sensitive = _keys(where, _texts(where, raw, "key", path), f"{path}.key")
    secondary, sec_regex, _ = _keys(where, _texts(where, raw, "keysecondary", path), f"{path}.keysecondary")
    content = raw.get("content", "")
    if not isinstance(content, str):
        raise _fail(where, f"{path}.content", "must be a string")
    comment = raw.get("comment", "")
    if not isinstance(comment, str):
        raise _fail(where, f"{path}.comment", "must be a string")
    order = raw.get("order", 100)
    if isinstance(order, bool) or not isinstance(order, int | float):
        raise _fail(where, f"{path}.order", "must be a number")
    case = raw.get("caseSensitive")
    if case is not None and not isinstance(case, bool):
        raise _fail(where, f"{path}.caseSensitive", "must be true, false or null")
    uid = raw.get("uid")
    if uid is not None and (isinstance(uid, bool) or not isinstance(uid, int | str)):
        raise _fail(where, f"{path}.uid", "must be a number or a string")
    ext = raw.get("extensions") or {}
    if not isinstance(ext, dict):
        raise _fail(where, f"{path}.extensions", "must be an object")
    kept = {k: v for k, v in raw.items() if k not in _MAPPED}
    if use_regex != sec_regex and secondary:  # one flag per entry: escape the plain side
        if use_regex:
            secondary = [r"(?<!\w)" + regex.escape(k) + r"(?!\w)" for k in secondary]
        else:
            keys = [r"(?<!\w)" + regex.escape(k) + r"(?!\w)" for k in keys]
            use_regex = True
    return {
        "keys": keys, "content": content, "name": comment, "comment": comment,
        "insertion_order": int(order), "enabled": not _flag(where, raw, "disable", path, False),
        "constant": _flag(where, raw, "constant", path, False),
        "selective": _flag(where, raw, "selective", path, False),
        "secondary_keys": secondary, "case_sensitive": bool(case) if case is not None else (use_regex and sensitive),
        "use_regex": use_regex, "id": uid, "extensions": {**ext, "world_info": kept} if kept else dict(ext),
    }


def world_info_from_dict(doc: Any, where: str = "") -> Lorebook:
    """A :class:`Lorebook` from a parsed World Info document (either shape; see the module doc).

    Raises:
        CardError: naming the field.
    """
    if not isinstance(doc, dict):
        raise _fail(where, "world info", "must be an object with entries")
    entries = doc.get("entries")
    if isinstance(entries, list):  # a V2 character book saved alone
        return book_from_tavern(doc, where)
    if not isinstance(entries, dict):
        raise _fail(where, "entries", "must be an object of entries by uid (World Info) or a list (a card's book)")
    name = doc.get("name", "")
    if not isinstance(name, str):
        raise _fail(where, "name", "must be a string")
    rows = [_wi_entry(where, raw, f"entries[{key!r}]".replace("'", '"')) for key, raw in entries.items()]
    try:
        return Lorebook.model_validate({"name": name, "entries": rows})
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise CardError(f"entries: {exc}", where=where) from exc


def read_world_info(path: str | Path) -> Lorebook:
    """Read a World Info JSON file (size and nesting checked before parsing).

    Raises:
        CardError: missing, too large, not JSON, or a bad field (named).
    """
    p = Path(path)
    return world_info_from_dict(read_json_document(p, "world info"), str(p))


def with_lorebook(card: CharacterCard, book: Lorebook) -> CharacterCard:
    """``card`` with ``book``'s entries after its own (its book's settings kept; the name taken if it had none)."""
    mine = card.lorebook
    merged = mine.model_copy(update={"entries": (*mine.entries, *book.entries), "name": mine.name or book.name})
    return card.model_copy(update={"lorebook": merged})


def entry_count(book: Lorebook) -> int:
    """How many entries ``book`` has that can activate (enabled, with keys or constant)."""
    return sum(1 for e in book.entries if e.enabled and (e.keys or e.constant or e.meaning))


__all__ = ["REGEX_KEY", "entry_count", "read_world_info", "with_lorebook", "world_info_from_dict"]

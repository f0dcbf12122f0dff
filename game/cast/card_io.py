"""SillyTavern character cards in and out: V1, V2 (``chara_card_v2``), V3 (``chara_card_v3``).

Formats (malfoyslastname/character-card-spec-v2 ``spec_v2.md``; kwaroran/
character-card-spec-v3 ``SPEC_V3.md``; summarised in
``shared/reference/character-engines.md`` section (c)):

- JSON: ``{"spec": "chara_card_v2", "spec_version": "2.0", "data": {...}}`` (V3:
  ``chara_card_v3``, ``"3.0"``); a V1 card is the flat ``{name, description,
  personality, scenario, first_mes, mes_example}``.
- PNG: a ``tEXt`` chunk ``chara`` holding base64 of the UTF-8 JSON of a V2 card, and/or
  ``ccv3`` holding a V3 card the same way. When both exist ``ccv3`` wins. Keywords are
  compared case-insensitively and unrelated text chunks are ignored (an old
  SillyTavern parser decoded the first chunk blindly).

Our own fields (traits, speaking style, core facts, axes, gifts, expressions, voice,
never_say, look, and the V3-only fields when writing V2) travel under
``data.extensions.worldloom``, so a round trip keeps them; other applications'
extension keys are kept as they are (V2: "unknown keys MUST be kept"). On reading,
a field of the spec wins over the same field in our extension, so an edit made in
another application is not undone.

Everything read is checked field by field; a malformed card raises
:class:`game.errors.CardError` naming the field, e.g.
``data.character_book.entries[2].keys: must be a list of strings``. Nothing in a card
is executed; macros are substituted only by :func:`game.cast.card.substitute`.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from game.cast.card import MAX_CARD_BYTES, CharacterCard, Exchange, Lorebook, card_from_dict, explain, load_yaml_card
from game.errors import CardError, InputError
from game.images import validate_image
from game.limits import check_unicode

SPEC_V2 = "chara_card_v2"
SPEC_V3 = "chara_card_v3"
#: Namespace of our keys inside ``extensions``.
EXT = "worldloom"
#: Version of the ``extensions.worldloom`` layout.
EXT_FORMAT = 1
#: Largest PNG read, bytes.
MAX_PNG_BYTES = 64 * 1024 * 1024

#: Card fields that only V3 has; written under our extension in V2 files.
_V3_ONLY = ("nickname", "group_greetings", "assets", "source", "creator_notes_multilingual",
            "creation_date", "modification_date")
#: Our fields that no Tavern spec has.
_OURS = ("id", "look", "traits", "speaking_style", "core_facts", "axes", "gifts", "expressions", "voice",
         "never_say", "answers", "facts", "grounded", "deflections", "fallbacks", "replies", "home")


# -- writing -------------------------------------------------------------------

def _entry_out(entry: Any, v3: bool) -> dict[str, Any]:
    ext = dict(entry.extensions)
    if entry.meaning:
        ext[EXT] = {"meaning": True}
    out: dict[str, Any] = {
        "keys": list(entry.keys),
        "content": entry.content,
        "extensions": ext,
        "enabled": entry.enabled,
        "insertion_order": entry.insertion_order,
        "case_sensitive": entry.case_sensitive,
        "name": entry.name,
        "priority": entry.priority,
        "comment": entry.comment,
        "selective": entry.selective,
        "secondary_keys": list(entry.secondary_keys),
        "constant": entry.constant,
    }
    if entry.id is not None:
        out["id"] = entry.id
    if entry.position:
        out["position"] = entry.position
    if v3:
        out["use_regex"] = entry.use_regex
    elif entry.use_regex:
        out["extensions"] = {**ext, EXT: {**ext.get(EXT, {}), "use_regex": True}}
    return out


def _book_out(card: CharacterCard, v3: bool) -> dict[str, Any] | None:
    book = card.lorebook
    if not book.entries and not book.name and not book.description:
        return None
    ext = dict(book.extensions)
    ext[EXT] = {"meaning_threshold": book.meaning_threshold}
    out: dict[str, Any] = {
        "name": book.name,
        "description": book.description,
        "scan_depth": book.scan_depth,
        "recursive_scanning": book.recursive_scanning,
        "extensions": ext,
        "entries": [_entry_out(e, v3) for e in book.entries],
    }
    if book.token_budget is not None:
        out["token_budget"] = book.token_budget
    return out


def examples_to_text(examples: tuple[Exchange, ...]) -> str:
    """Example exchanges as V2 ``mes_example``: ``<START>`` blocks of ``{{user}}:``/``{{char}}:`` lines."""
    blocks = []
    for ex in examples:
        lines = ["<START>"]
        if ex.user:
            lines.append("{{user}}: " + ex.user)
        lines.append("{{char}}: " + ex.char)
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


_SPEAKER = re.compile(r"^\s*(\{\{\s*user\s*\}\}|<USER>|\{\{\s*char\s*\}\}|<BOT>)\s*:\s?", re.IGNORECASE)


def examples_from_text(text: str) -> tuple[Exchange, ...]:
    """Parse V2 ``mes_example`` into exchanges (best effort; lines without a speaker
    continue the previous line; a ``{{char}}`` line with no ``{{user}}`` line before it
    becomes an exchange with an empty ``user``)."""
    out: list[Exchange] = []
    for block in re.split(r"<START>", text, flags=re.IGNORECASE):
        turns: list[list[str]] = []  # [role, text]
        for line in block.splitlines():
            m = _SPEAKER.match(line)
            if m:
                role = "user" if "user" in m.group(1).lower() else "char"
                turns.append([role, line[m.end():]])
            elif turns:
                turns[-1][1] += "\n" + line
            elif line.strip():
                turns.append(["char", line])
        pending = ""
        for role, said in turns:
            said = said.strip()
            if role == "user":
                if pending:
                    out.append(Exchange(user=pending, char=""))
                pending = said
            else:
                out.append(Exchange(user=pending, char=said))
                pending = ""
        if pending:
            out.append(Exchange(user=pending, char=""))
    return tuple(out)


def _ours(card: CharacterCard, v3: bool) -> dict[str, Any]:
    dumped = card.model_dump(mode="json")
    ours: dict[str, Any] = {"format": EXT_FORMAT}
    for key in _OURS:
        ours[key] = dumped[key]
    if not v3:
        for key in _V3_ONLY:
            if dumped[key] not in ("", [], {}, None):
                ours[key] = dumped[key]
    return ours


def _data(card: CharacterCard, v3: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": card.name,
        "description": card.description,
        "personality": card.personality,
        "scenario": card.scenario,
        "first_mes": card.greetings[0] if card.greetings else "",
        "mes_example": examples_to_text(card.examples),
        "creator_notes": card.creator_notes,
        "system_prompt": card.system_prompt,
        "post_history_instructions": card.post_history_instructions,
        "alternate_greetings": list(card.greetings[1:]),
        "tags": list(card.tags),
        "creator": card.creator,
        "character_version": card.character_version,
        "extensions": {**card.extensions, EXT: _ours(card, v3)},
    }
    if card.depth_prompt is not None:
        data["extensions"]["depth_prompt"] = card.depth_prompt.model_dump(mode="json")
    book = _book_out(card, v3)
    if book is not None:
        data["character_book"] = book
    if v3:
        data["group_only_greetings"] = list(card.group_greetings)
        if card.nickname:
            data["nickname"] = card.nickname
        if card.assets:
            data["assets"] = [a.model_dump(mode="json") for a in card.assets]
        if card.source:
            data["source"] = list(card.source)
        if card.creator_notes_multilingual:
            data["creator_notes_multilingual"] = dict(card.creator_notes_multilingual)
        if card.creation_date is not None:
            data["creation_date"] = card.creation_date
        if card.modification_date is not None:
            data["modification_date"] = card.modification_date
    return data


def card_to_v2(card: CharacterCard) -> dict[str, Any]:
    """The card as a Character Card V2 dict (JSON-able)."""
    return {"spec": SPEC_V2, "spec_version": "2.0", "data": _data(card, v3=False)}


def card_to_v3(card: CharacterCard) -> dict[str, Any]:
    """The card as a Character Card V3 dict (JSON-able)."""
    return {"spec": SPEC_V3, "spec_version": "3.0", "data": _data(card, v3=True)}


def _dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=2)


def write_card_json(card: CharacterCard, path: str | Path, version: int = 2) -> Path:
    """Write the card as V2 (``version=2``) or V3 JSON (UTF-8).

    Raises:
        CardError: ``version`` is not 2 or 3, or the file cannot be written.
    """
    if version not in (2, 3):
        raise CardError(f"version: {version} is not 2 or 3")
    doc = card_to_v2(card) if version == 2 else card_to_v3(card)
    p = Path(path)
    try:
        p.write_text(_dumps(doc), encoding="utf-8")
    except OSError as exc:
        raise CardError(f"cannot write card: {exc.strerror or exc}", where=str(p)) from exc
    return p


def _b64(doc: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(doc, ensure_ascii=False).encode("utf-8")).decode("ascii")


def write_card_png(card: CharacterCard, path: str | Path, image: Any = None,
                   versions: tuple[int, ...] = (2, 3)) -> Path:
    """Write a PNG holding the card: ``chara`` (V2) and/or ``ccv3`` (V3) tEXt chunks.

    SillyTavern writes both; so do we by default.

    Args:
        card: the card.
        path: output ``.png``.
        image: a ``PIL.Image.Image``, an image path, or ``None`` for the card's first
            reference image (a plain placeholder when it has none or it is missing).
        versions: which chunks to write (2: ``chara``, 3: ``ccv3``).

    Raises:
        CardError: the image cannot be read or the file cannot be written.
    """
    from PIL import Image, PngImagePlugin, UnidentifiedImageError

    if image is None:
        refs = [p for p in card.image_paths() if p.is_file()]
        image = refs[0] if refs else Image.new("RGB", (400, 600), (40, 52, 70))
    try:
        im = image if isinstance(image, Image.Image) else Image.open(image)
        im.load()
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise CardError(f"cannot read the card image: {exc}", where=str(image)) from exc
    if im.mode not in ("RGB", "RGBA", "L", "LA", "P"):
        im = im.convert("RGBA")
    info = PngImagePlugin.PngInfo()
    if 2 in versions:
        info.add_text("chara", _b64(card_to_v2(card)))
    if 3 in versions:
        info.add_text("ccv3", _b64(card_to_v3(card)))
    p = Path(path)
    try:
        im.save(p, format="PNG", pnginfo=info)
    except OSError as exc:
        raise CardError(f"cannot write card: {exc.strerror or exc}", where=str(p)) from exc
    return p


# -- reading -------------------------------------------------------------------

class _Reader:
    """Checks a Tavern card's values one field at a time; errors name the field path."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, path: str, why: str) -> CardError:
        return CardError(f"{path}: {why}", where=self.where)

    def mapping(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, "must be an object")
        return value

    def text(self, d: dict[str, Any], key: str, path: str, required: bool = False) -> str:
        value = d.get(key)
        if value is None:
            if required:
                raise self.fail(f"{path}.{key}" if path else key, "is required")
            return ""
        if not isinstance(value, str):
            raise self.fail(f"{path}.{key}" if path else key, "must be a string")
        return value

    def texts(self, d: dict[str, Any], key: str, path: str) -> list[str]:
        value = d.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise self.fail(f"{path}.{key}", "must be a list of strings")
        return value

    def number(self, d: dict[str, Any], key: str, path: str) -> int | float | None:
        value = d.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(f"{path}.{key}", "must be a number")
        if isinstance(value, float) and not math.isfinite(value):  # JSON's 1e999 reads as infinity
            raise self.fail(f"{path}.{key}", f"must be a finite number, not {value}")
        return value

    def flag(self, d: dict[str, Any], key: str, path: str, default: bool) -> bool:
        value = d.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(f"{path}.{key}", "must be true or false")
        return value


def _slug(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]+", "_", name.strip().lower()).strip("_")[:64]
    if not s:
        return "character"
    return s if not s[0].isdigit() else ("c_" + s)[:64]


def _entry_in(r: _Reader, raw: Any, path: str) -> dict[str, Any]:
    e = r.mapping(raw, path)
    ext = dict(r.mapping(e.get("extensions") or {}, f"{path}.extensions"))
    ours = r.mapping(ext.pop(EXT, {}) or {}, f"{path}.extensions.{EXT}")
    if "keys" not in e and "key" not in e:
        raise r.fail(f"{path}.keys", "is required")
    keys = r.texts(e, "keys" if "keys" in e else "key", path)
    content = r.text(e, "content", path)
    priority = r.number(e, "priority", path)
    order = r.number(e, "insertion_order", path)
    raw_id = e.get("id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, int | str)):
        raise r.fail(f"{path}.id", "must be a number or a string")
    position = e.get("position")
    out: dict[str, Any] = {
        "keys": keys,
        "content": content,
        "priority": int(priority) if priority is not None else 10,
        "insertion_order": int(order) if order is not None else 100,
        "enabled": r.flag(e, "enabled", path, True),
        "constant": r.flag(e, "constant", path, False),
        "selective": r.flag(e, "selective", path, False),
        "secondary_keys": r.texts(e, "secondary_keys", path),
        "case_sensitive": r.flag(e, "case_sensitive", path, False),
        "use_regex": r.flag(e, "use_regex", path, bool(ours.get("use_regex", False))),
        "meaning": bool(ours.get("meaning", False)),
        "name": r.text(e, "name", path),
        "id": raw_id,
        "comment": r.text(e, "comment", path),
        "position": position if position in ("before_char", "after_char") else "",
        "extensions": ext,
    }
    return out


def _book_in(r: _Reader, raw: Any, path: str) -> dict[str, Any]:
    b = r.mapping(raw, path)
    ext = dict(r.mapping(b.get("extensions") or {}, f"{path}.extensions"))
    ours = r.mapping(ext.pop(EXT, {}) or {}, f"{path}.extensions.{EXT}")
    entries = b.get("entries")
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise r.fail(f"{path}.entries", "must be a list")
    depth = r.number(b, "scan_depth", path)
    budget = r.number(b, "token_budget", path)
    out: dict[str, Any] = {
        "name": r.text(b, "name", path),
        "description": r.text(b, "description", path),
        "scan_depth": int(depth) if depth is not None else 2,
        "token_budget": int(budget) if budget is not None else None,
        "recursive_scanning": r.flag(b, "recursive_scanning", path, False),
        "extensions": ext,
        "entries": [_entry_in(r, e, f"{path}.entries[{i}]") for i, e in enumerate(entries)],
    }
    if "meaning_threshold" in ours:
        out["meaning_threshold"] = ours["meaning_threshold"]
    return out


def card_from_tavern(doc: Any, where: str = "", image: str = "") -> CharacterCard:
    """Build a card from a Tavern V1/V2/V3 dict.

    Args:
        doc: the parsed JSON.
        where: the file (and chunk) it came from, for messages.
        image: a reference image to use when the card names none (the PNG itself).

    Raises:
        CardError: naming the field (``data.character_book.entries[2].keys: must be a
            list of strings``).
    """
    r = _Reader(where)
    top = r.mapping(doc, "card")
    spec = top.get("spec")
    if spec is None:
        data, prefix, v3 = top, "", False  # V1: flat fields
    elif spec in (SPEC_V2, SPEC_V3):
        version = top.get("spec_version")
        if version is not None and not isinstance(version, str | int | float):
            raise r.fail("spec_version", "must be a string")
        data, prefix, v3 = r.mapping(top.get("data"), "data"), "data", spec == SPEC_V3
    else:
        raise r.fail("spec", f"unknown card spec {spec!r} (expected {SPEC_V2!r} or {SPEC_V3!r})")

    def at(key: str) -> str:
        return f"{prefix}.{key}" if prefix else key

    ext = dict(r.mapping(data.get("extensions") or {}, at("extensions")))
    ours = dict(r.mapping(ext.pop(EXT, {}) or {}, at(f"extensions.{EXT}")))
    ours.pop("format", None)
    depth = ext.pop("depth_prompt", None)
    if depth is not None:
        depth = r.mapping(depth, at("extensions.depth_prompt"))
    name = r.text(data, "name", prefix, required=True)
    if not name.strip():
        raise r.fail(at("name"), "must not be empty")
    first = r.text(data, "first_mes", prefix)
    card: dict[str, Any] = {
        **ours,
        "id": ours.get("id") or _slug(name),
        "name": name,
        "description": r.text(data, "description", prefix),
        "personality": r.text(data, "personality", prefix),
        "scenario": r.text(data, "scenario", prefix),
        "greetings": ([first] if first else []) + r.texts(data, "alternate_greetings", prefix),
        "examples": [e.model_dump() for e in examples_from_text(r.text(data, "mes_example", prefix))],
        "creator_notes": r.text(data, "creator_notes", prefix),
        "system_prompt": r.text(data, "system_prompt", prefix),
        "post_history_instructions": r.text(data, "post_history_instructions", prefix),
        "tags": r.texts(data, "tags", prefix),
        "creator": r.text(data, "creator", prefix),
        "character_version": r.text(data, "character_version", prefix),
        "extensions": ext,
    }
    if data.get("character_book") is not None:
        card["lorebook"] = _book_in(r, data["character_book"], at("character_book"))
    if depth is not None and str(depth.get("prompt") or "").strip():
        card["depth_prompt"] = depth
    if v3:
        if "nickname" in data:
            card["nickname"] = r.text(data, "nickname", prefix)
        if "group_only_greetings" in data:
            card["group_greetings"] = r.texts(data, "group_only_greetings", prefix)
        if "source" in data:
            card["source"] = r.texts(data, "source", prefix)
        if "assets" in data:
            assets = data["assets"]
            if not isinstance(assets, list):
                raise r.fail(at("assets"), "must be a list")
            card["assets"] = []
            for i, a in enumerate(assets):
                am = r.mapping(a, at(f"assets[{i}]"))
                card["assets"].append({"type": r.text(am, "type", at(f"assets[{i}]"), required=True),
                                       "uri": r.text(am, "uri", at(f"assets[{i}]"), required=True),
                                       "name": r.text(am, "name", at(f"assets[{i}]")),
                                       "ext": r.text(am, "ext", at(f"assets[{i}]"))})
        if "creator_notes_multilingual" in data:
            notes = r.mapping(data["creator_notes_multilingual"] or {}, at("creator_notes_multilingual"))
            if not all(isinstance(v, str) for v in notes.values()):
                raise r.fail(at("creator_notes_multilingual"), "must map language codes to strings")
            card["creator_notes_multilingual"] = notes
        for key in ("creation_date", "modification_date"):
            value = r.number(data, key, prefix)
            if value is not None:
                card[key] = int(value)
    if image and not (ours.get("look") or {}).get("images"):
        look = dict(ours.get("look") or {})
        look["images"] = [image]
        card["look"] = look
    shown = {k: at(f"extensions.{EXT}.{k}") for k in ours}
    shown.update({"lorebook": at("character_book"), "greetings": at("alternate_greetings"),
                  "examples": at("mes_example"), "group_greetings": at("group_only_greetings"),
                  "depth_prompt": at("extensions.depth_prompt")})
    return card_from_dict(card, where, prefix=prefix, prefixes=shown)


def _parse_json(raw: bytes, where: str, what: str) -> Any:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CardError(f"{what}: not UTF-8 text (byte {exc.start})", where=where) from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CardError(f"{what}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
                        where=where) from exc
    except RecursionError as exc:
        raise CardError(f"{what}: JSON nested too deeply", where=where) from exc
    if "\\u" in text:  # an escaped lone surrogate loads, then can never be written back as UTF-8
        check_unicode(doc, where, CardError, what)
    return doc


def _check_size(p: Path, limit: int, what: str) -> None:
    """Refuse a missing file or one over ``limit`` bytes before reading it.

    Raises:
        CardError: naming the file.
    """
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise CardError(f"{what} file not found", where=str(p)) from exc
    if size > limit:
        raise CardError(f"{what} is {size} bytes, over the {limit} byte limit", where=str(p))


def read_json_document(path: str | Path, what: str = "card") -> Any:
    """A JSON file of at most :data:`MAX_CARD_BYTES` parsed (UTF-8, nesting and unicode checked).

    Raises:
        CardError: missing, too large, not UTF-8 JSON.
    """
    p = Path(path)
    _check_size(p, MAX_CARD_BYTES, what)
    return _parse_json(p.read_bytes(), str(p), what)


def book_from_tavern(doc: Any, where: str = "", path: str = "character_book") -> Lorebook:
    """A V2 ``character_book`` dict as a :class:`~game.cast.card.Lorebook`, checked field by field.

    Raises:
        CardError: naming the field (``character_book.entries[2].keys: must be a list of strings``).
    """
    r = _Reader(where)
    raw = _book_in(r, doc, path)
    try:
        return Lorebook.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise CardError(f"{path}.{explain(dict(err))}", where=where) from exc


def read_card_json(path: str | Path) -> CharacterCard:
    """Read a V1/V2/V3 JSON card.

    Raises:
        CardError: missing, too large, not UTF-8 JSON, or a bad field.
    """
    p = Path(path)
    _check_size(p, MAX_CARD_BYTES, "card")
    return card_from_tavern(_parse_json(p.read_bytes(), str(p), "card"), str(p))


def png_card_chunks(path: str | Path) -> dict[str, str]:
    """The card chunks of a PNG: ``{"chara": ..., "ccv3": ...}`` (keywords lower-cased; others ignored).

    A file that is a PNG goes through the same gate as a dropped image first
    (:func:`game.images.validate_image`: sides, pixels, decompression bombs).

    Raises:
        CardError: not a readable PNG, too large, or refused by that gate.
    """
    from PIL import Image, UnidentifiedImageError

    p = Path(path)
    _check_size(p, MAX_PNG_BYTES, "PNG")
    is_png = False
    with contextlib.suppress(OSError), p.open("rb") as f:
        is_png = f.read(8) == b"\x89PNG\r\n\x1a\n"
    if is_png:
        try:
            validate_image(p)
        except InputError as exc:
            raise CardError(f"card image refused: {exc.why}", where=str(p), hint=exc.hint) from exc
    try:
        with Image.open(p) as im:
            if im.format != "PNG":
                raise CardError(f"not a PNG image ({im.format})", where=str(p))
            texts = dict(getattr(im, "text", {}) or {})
    except CardError:
        raise
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError, EOFError) as exc:
        if not is_png:  # Pillow's "cannot identify image file '<path>'" says neither what nor why
            raise CardError("not a PNG image: the file does not start with the PNG signature", where=str(p),
                            hint="a card PNG is the picture with the card in its 'chara' or 'ccv3' text chunk") from exc
        raise CardError(f"not a readable PNG: {exc}", where=str(p)) from exc
    out: dict[str, str] = {}
    for key, value in texts.items():
        k = str(key).lower()
        if k in ("chara", "ccv3") and k not in out:
            out[k] = str(value)
    return out


def read_card_png(path: str | Path) -> CharacterCard:
    """Read a card from a PNG's ``ccv3`` (preferred) or ``chara`` text chunk.

    The PNG becomes the card's reference image when the card names none.

    Raises:
        CardError: not a PNG, an image refused as a dropped image would be (a decompression
            bomb...; :func:`png_card_chunks`), no card chunk, a chunk that is not base64 UTF-8 JSON,
            or a bad field.
    """
    p = Path(path)
    chunks = png_card_chunks(p)
    key = "ccv3" if "ccv3" in chunks else "chara" if "chara" in chunks else ""
    if not key:
        raise CardError("no character card in this PNG (no 'chara' or 'ccv3' text chunk)", where=str(p))
    where = f"{p} [{key}]"
    try:
        raw = base64.b64decode("".join(chunks[key].split()).encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise CardError(f"chunk {key!r}: not base64", where=str(p)) from exc
    card = card_from_tavern(_parse_json(raw, where, f"chunk {key!r}"), where, image=p.name)
    return card.model_copy(update={"where": str(p)})


def load_card(path: str | Path) -> CharacterCard:
    """Load a card from YAML (ours), or a Tavern V1/V2/V3 card as JSON or PNG.

    Raises:
        CardError: see :func:`load_yaml_card` and :func:`read_card_json`, :func:`read_card_png`.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return load_yaml_card(p)
    if suffix == ".json":
        return read_card_json(p)
    if suffix == ".png":
        return read_card_png(p)
    raise CardError(f"unknown card format {suffix!r}", where=str(p), hint="use .yaml, .json or .png")


__all__ = [
    "load_card",
    "EXT",
    "SPEC_V2",
    "SPEC_V3",
    "book_from_tavern",
    "card_from_tavern",
    "card_to_v2",
    "card_to_v3",
    "examples_from_text",
    "examples_to_text",
    "png_card_chunks",
    "read_card_json",
    "read_card_png",
    "read_json_document",
    "write_card_json",
    "write_card_png",
]

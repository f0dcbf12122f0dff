"""Limits on what worldloom reads and computes, as policy in one place.

Every input a user or a peer controls (story files and their includes, expressions,
cards, playthrough scripts, transcripts, wire messages) is bounded here, and each
bound is checked *before* the work it guards: YAML depth and alias expansion while
the event stream is read (before anything is composed), JSON depth on the text
(before ``json.loads`` recurses), sizes before multiplying. A refusal is a named
error from :mod:`game.errors` (the caller says which: ``StoryError`` for a story,
``WireError`` for a message...) that says where and why.

The numbers, and why they are what they are:

===========================  ==================  =================================================
limit                        value               why
===========================  ==================  =================================================
``MAX_DEPTH``                64 levels           the demo story nests 7; libyaml's composer and
                                                 Python's recursion fail in the hundreds
``MAX_FILE_BYTES``           64 MiB              a 5,000-scene story is ~3 MiB
``MAX_YAML_VALUES``          2,000,000           a 5,000-scene story has ~200,000 values
``MAX_YAML_ALIAS_VALUES``    100,000             values that aliases add (each alias counted at its
                                                 expanded size): an alias bomb is refused by it
                                                 before anything is expanded
``MAX_INCLUDES``             256 files           include loops and include bombs
``MAX_EXPR_CHARS``           500 characters      an expression is one line of logic
``MAX_TEXT_CHARS``           100,000 characters  simpleeval's own ``MAX_STRING_LENGTH``
``MAX_INT``                  2**63 - 1           SQLite's INTEGER; keeps every save JSON-able
``MAX_LIST_ITEMS``           100,000             list lengths in transcripts and wire messages
``MAX_SCRIPT_BYTES``         16 MiB              playthrough scripts and transcripts read whole
``MAX_TRANSCRIPT_BYTES``     256 MiB             a 10,000-turn transcript is ~20 MiB
``MIN_FPS`` / ``MAX_FPS``    1 / 240 fps         the frame clock of a replay
``MAX_BLOCK_FRAMES``         4,096 frames        one block of a chunk
``MAX_SECONDS``              600 s               one ``move`` or ``wait`` in a script
``MAX_ROLLBACK``             1,000 turns         one ``rollback n``
``MAX_MESSAGE_BYTES``        1 MiB               one inbound wire message
``MAX_WIRE_SIDE``            8,192 px            a frame side a wire decoder accepts
``MAX_SESSION_SIDE``         2,048 px            a frame side a client may ask the server for
``MAX_SESSION_PIXELS``       1280 * 720          frame area a client may ask for (a 12-frame raw
                                                 block is then at most 33 MB)
``MAX_REQUEST_FRAMES``       2,400 frames        one request (the story format's longest chunk)
``MIN_TOKEN_BYTES``          32 bytes            the server's shared secret (``--insecure-token``
                                                 lowers it)
===========================  ==================  =================================================
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from typing import Any

from game.errors import WorldloomError

MAX_DEPTH = 64
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_YAML_VALUES = 2_000_000
MAX_YAML_ALIAS_VALUES = 100_000
MAX_INCLUDES = 256
MAX_EXPR_CHARS = 500
MAX_TEXT_CHARS = 100_000
MAX_INT = 2**63 - 1
MAX_LIST_ITEMS = 100_000
MAX_SCRIPT_BYTES = 16 * 1024 * 1024
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024
MIN_FPS = 1.0
MAX_FPS = 240.0
MAX_BLOCK_FRAMES = 4096
MAX_SECONDS = 600.0
MAX_ROLLBACK = 1000
MAX_MESSAGE_BYTES = 1 << 20
MAX_WIRE_SIDE = 8192
MAX_SESSION_SIDE = 2048
MAX_SESSION_PIXELS = 1280 * 720
MAX_REQUEST_FRAMES = 2400
MIN_TOKEN_BYTES = 32

_Error = type[WorldloomError]
#: A JSON string, or an unterminated one up to the end: it always matches, so dropping strings is linear.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


@cache
def _numpy_deltas() -> tuple[Any, Any]:
    """numpy, and each byte's change of the nesting depth (``[``/``{`` +1, ``]``/``}`` -1) as its table.

    numpy is imported here, on the first deep check, not with this module: lint and the story
    loader read these limits and never need it (~0.07 s of CPU of a lint; start-up cost only).
    """
    import numpy as np

    delta = np.zeros(256, np.int8)
    delta[[ord("["), ord("{")]] = 1
    delta[[ord("]"), ord("}")]] = -1
    return np, delta


def json_depth(text: str | bytes) -> int:
    """Deepest nesting of arrays and objects in JSON ``text``, without parsing it.

    Brackets inside strings do not count. Linear in the length (a regex drops the
    strings, numpy sums the brackets), so it is safe on any input; on malformed
    JSON the figure is an estimate that :func:`json.loads` then refuses anyway.
    """
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if b"[" not in raw and b"{" not in raw:
        return 0
    bare = _STRING.sub(b"", raw) if b'"' in raw else raw
    np, delta = _numpy_deltas()
    steps = delta[np.frombuffer(bare, np.uint8)]
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def parse_json(text: str | bytes, where: str, error: _Error, max_bytes: int = MAX_MESSAGE_BYTES,
               max_depth: int = MAX_DEPTH, what: str = "text") -> Any:
    """``json.loads`` with its size, depth and text checked first.

    Args:
        text: the JSON text (``bytes`` must be UTF-8).
        where: where it came from (a file, ``file:line``, a peer).
        error: the :class:`~game.errors.WorldloomError` subclass to raise.
        max_bytes: longest text accepted, bytes.
        max_depth: deepest nesting accepted.
        what: what the text is, for the message (``"card"``, ``"message"``).

    Raises:
        error: over ``max_bytes``, nested deeper than ``max_depth``, not JSON,
            ``NaN``/``Infinity``, or a string with a lone UTF-16 surrogate (it loads but
            can never be written back as UTF-8).
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise error(f"{what} is not UTF-8 text (byte {exc.start})", where=where) from exc
    if len(text) * 4 > max_bytes:  # a character is at most 4 bytes in UTF-8
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise error(f"{what} is {size:,} bytes, over the {max_bytes:,}-byte limit", where=where)
    if text.count("[") + text.count("{") > max_depth:  # fewer brackets than that cannot nest deeper
        depth = json_depth(text)
        if depth > max_depth:
            raise error(f"{what} nests {depth} levels deep, over the limit of {max_depth}", where=where)
    try:
        value = _DECODER.decode(text)
    except ValueError as exc:
        msg = getattr(exc, "msg", str(exc))
        pos = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise error(f"{what} is not valid JSON ({msg}{pos})", where=where) from exc
    except RecursionError as exc:  # pragma: no cover - the depth check comes first
        raise error(f"{what} nests too deeply", where=where) from exc
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        check_unicode(value, where, error, what)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


#: One decoder for every call (``json.loads`` with an option builds a new decoder and scanner each time).
_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def check_unicode(value: Any, where: str, error: _Error, what: str = "text") -> None:
    """Refuse a value (nested lists/dicts of strings) holding a lone UTF-16 surrogate.

    Raises:
        error: some string cannot be encoded as UTF-8.
    """
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(f"{what} holds a lone UTF-16 surrogate ({exc.object[exc.start:exc.end]!r}), "
                    "which is not text", where=where) from exc


def check_number(value: Any, where: str, error: _Error, what: str = "number") -> Any:
    """``value`` itself if it is a number a save can hold: an int within ``MAX_INT``, a finite float.

    Anything else (text, ``None``) passes through unchanged.

    Raises:
        error: an integer past ``MAX_INT`` or a float that overflowed (``inf``, ``nan``).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value > MAX_INT or value < -MAX_INT:
            raise error(f"{what} is past {MAX_INT:,} (the largest whole number a save holds)", where=where)
    elif isinstance(value, float) and not math.isfinite(value):
        raise error(f"{what} overflowed to {value}", where=where)
    return value


def check_text(value: str, where: str, error: _Error, what: str = "text") -> str:
    """``value`` if it is at most ``MAX_TEXT_CHARS`` long.

    Raises:
        error: longer.
    """
    if len(value) > MAX_TEXT_CHARS:
        raise error(f"{what} would be {len(value):,} characters, over the {MAX_TEXT_CHARS:,} limit", where=where)
    return value


def check_repeat(length: int, times: int, where: str, error: _Error) -> None:
    """Refuse ``text * times`` before it is built, when the result would pass ``MAX_TEXT_CHARS``.

    Raises:
        error: ``length * times`` is over the limit.
    """
    if times > 0 and length * times > MAX_TEXT_CHARS:
        raise error(f"text of {length:,} {'character' if length == 1 else 'characters'} repeated {times:,} "
                    f"{'time' if times == 1 else 'times'} is over the "
                    f"{MAX_TEXT_CHARS:,}-character limit", where=where)


def check_size(size: int, limit: int, where: str, error: _Error, what: str = "file") -> None:
    """Refuse ``size`` bytes over ``limit`` (before reading them).

    Raises:
        error: over the limit.
    """
    if size > limit:
        raise error(f"{what} is {size:,} bytes, over the {limit:,}-byte limit", where=where)

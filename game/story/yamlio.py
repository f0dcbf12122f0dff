"""Read YAML with line marks kept, fast.

Uses libyaml's ``compose`` through PyYAML (``CSafeLoader``) when available, the
pure-Python composer otherwise, and builds plain Python values together with a
map from each value's path (``("scenes", "arrival", "choices", 0, "goto")``) to
its ``(line, column)`` (1-based), so validation errors point at the file and line.
Only the YAML core types are constructed: no tags, no Python objects (a story is
data, never code).
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from game import limits
from game.errors import StoryError

try:
    _Base: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Base = yaml.SafeLoader

_INT = re.compile(r"^[-+]?(0|[1-9][0-9_]*)$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$"
                    r"|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$")
_T = "tag:yaml.org,2002:"
_STR = _T + "str"


class _Loader(_Base):  # type: ignore[misc]
    """libyaml's composer with a YAML 1.2 core-schema resolver written for speed.

    Plain scalars resolve to null (``~``, ``null``, empty), bool (``true``/``false``
    only: ``yes``/``no``/``on``/``off`` stay text), int, float, else str; quoted
    scalars are always str. PyYAML's generic resolver was most of the load time.
    """

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode:
            if not implicit[0]:
                return _T + "str"
            if value in ("true", "false", "True", "False", "TRUE", "FALSE"):
                return _T + "bool"
            if value in ("", "~", "null", "Null", "NULL"):
                return _T + "null"
            if value[0] in "0123456789+-.":
                if _INT.match(value):
                    return _T + "int"
                if _FLOAT.match(value):
                    return _T + "float"
            return _T + "str"
        return _T + ("seq" if kind is yaml.SequenceNode else "map")

Path_ = tuple[str | int, ...]

#: Largest story file we read, bytes (see :mod:`game.limits`).
MAX_FILE_BYTES = limits.MAX_FILE_BYTES
#: Most values (mapping keys, list items, scalars) one file may expand to, aliases counted
#: as often as they are used: an alias bomb is refused by this count before it is built.
MAX_VALUES = limits.MAX_YAML_VALUES
#: Most values aliases may add to one file (each use counted at its expanded size).
MAX_ALIAS_VALUES = limits.MAX_YAML_ALIAS_VALUES
#: Deepest nesting of mappings and lists in one file.
MAX_DEPTH = limits.MAX_DEPTH


@dataclass
class Marked:
    """A YAML document as plain values plus path -> (file, line, col) marks."""

    value: Any
    marks: dict[Path_, tuple[str, int, int]] = field(default_factory=dict)

    def where(self, path: Path_) -> str:
        """``file:line:col`` of the deepest known prefix of ``path``."""
        p = tuple(path)
        while p:
            if p in self.marks:
                f, line, col = self.marks[p]
                return f"{f}:{line}:{col}"
            p = p[:-1]
        if () in self.marks:
            f, line, col = self.marks[()]
            return f"{f}:{line}:{col}"
        return ""


_SCALARS = yaml.constructor.SafeConstructor()
#: First characters of a plain scalar that may resolve to something other than text (a number,
#: ``true``/``false``, ``null``/``~``): any other plain scalar is text as it stands.
_SPECIAL = frozenset("0123456789+-.tTfFnN~")
_COLLECTION_TAGS = {_T + "map", _T + "seq"}
_NO_KEY = object()
#: Marks copied for aliases, at most, per file: past it an aliased value's errors point at the
#: alias itself (so a wide alias tree costs its events, not its expansion).
_MAX_COPIED_MARKS = 20_000


@dataclass
class _Open:
    """A mapping or list being filled: its path, and for a mapping the key waiting for its value."""

    value: dict[Any, Any] | list[Any]
    path: Path_
    pos: tuple[str, int, int]
    start: int  # the value count before it
    logged: int  # the length of the mark log before it
    anchor: str | None
    key: Any = _NO_KEY
    key_path: Path_ = ()  # the path of ``key``'s value (built once, for its mark and its value)


@dataclass(frozen=True)
class _Anchor:
    """An anchored value: reused by every alias, its expanded size, and its marks relative to it."""

    value: Any
    size: int
    pos: tuple[str, int, int]
    marks: tuple[tuple[Path_, tuple[str, int, int]], ...] = ()


def _at(pos: tuple[str, int, int]) -> str:
    """``file:line:col`` of a mark (built only for an error: most values never need it)."""
    return f"{pos[0]}:{pos[1]}:{pos[2]}"


def _scalar(loader: Any, ev: Any, pos: tuple[str, int, int]) -> Any:
    tag = ev.tag
    if tag is None or tag == "!":
        tag = loader.resolve(yaml.ScalarNode, ev.value, ev.implicit)
    value: str = ev.value
    if tag == _STR:
        return value
    where = _at(pos)
    if tag == _T + "int":
        try:
            number = int(value.replace("_", ""))
        except ValueError as exc:  # more digits than Python converts
            raise StoryError(f"number {value[:20]}... has too many digits", where=where) from exc
        return limits.check_number(number, where, StoryError, f"number {value[:24]}")
    if tag == _T + "float":
        number = _SCALARS.construct_yaml_float(yaml.ScalarNode(tag, value))
        return limits.check_number(number, where, StoryError, f"number {value[:24]}")
    if tag == _T + "bool":
        return value.lower() == "true"
    if tag == _T + "null":
        return None
    raise StoryError(f"YAML tag {tag!r} is not allowed in story data", where=where)


def _compose(loader: Any, fname: str) -> Marked:
    """Build plain values and marks from libyaml's event stream, iteratively.

    Depth, value count (aliases counted at their expanded size) and tags are checked
    as each event arrives, so a deep or exponential document is refused after the few
    events that show it, before anything is composed; an alias reuses the value it
    names instead of copying it (its marks are copied, up to ``_MAX_COPIED_MARKS``, so
    errors inside still point at the anchored lines).
    """
    marks: dict[Path_, tuple[str, int, int]] = {}
    log: list[tuple[Path_, tuple[str, int, int]]] = []  # marks in order, to copy an anchor's own
    anchors: dict[str, _Anchor] = {}
    stack: list[_Open] = []
    count = 0
    aliased = 0
    copied = 0
    docs = 0
    root: Any = None
    # event classes by identity (``type(ev) is``): this loop runs once per value of the file
    scalar_ev, alias_ev = yaml.ScalarEvent, yaml.AliasEvent
    map_ev, seq_ev = yaml.MappingStartEvent, yaml.SequenceStartEvent
    values = (scalar_ev, alias_ev, map_ev, seq_ev)
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    get_event = loader.get_event
    anchoring = 0  # anchored collections open: the mark log is kept only inside one
    top: _Open | None
    while True:
        ev = get_event()
        kind = type(ev)
        if kind is scalar_ev and stack:
            # The common case, a scalar in a mapping or a list, without the general path's work: a
            # plain text (quoted, or a first character no number, bool or null starts) is its own
            # value, and a mapping's value needs no mark (its key's mark points at it).
            top = stack[-1]
            text = ev.value
            same = ev.tag is None and (not ev.implicit[0] or (text != "" and text[0] not in _SPECIAL))
            into = top.value
            if type(into) is dict:
                if top.key is _NO_KEY:  # a mapping key
                    mark = ev.start_mark
                    pos = (fname, mark.line + 1, mark.column + 1)
                    if same:
                        key = text
                    else:
                        key = _scalar(loader, ev, pos)
                        if isinstance(key, bool | float) or key is None:
                            key = str(text)
                    if key == "<<":
                        raise StoryError("YAML merge keys ('<<') are not supported in stories",
                                         where=f"{fname}:{pos[1]}")
                    if key in into:
                        raise StoryError(f"duplicate key {key!r}", where=_at(pos))
                    top.key = key
                    top.key_path = key_path = (*top.path, key)
                    marks[key_path] = pos
                    if anchoring:
                        log.append((key_path, pos))
                    count += 1
                    continue
                if same:
                    value = text
                else:
                    mark = ev.start_mark
                    value = _scalar(loader, ev, (fname, mark.line + 1, mark.column + 1))
                count += 1
                if count > MAX_VALUES:
                    raise StoryError(f"more than {MAX_VALUES:,} values in one file", where=fname,
                                     hint="YAML aliases that expand exponentially (an alias bomb) are refused")
                into[top.key] = value
                top.key = _NO_KEY
                if ev.anchor is not None:
                    mark = ev.start_mark
                    anchors[ev.anchor] = _Anchor(value, 1, (fname, mark.line + 1, mark.column + 1))
                continue
            mark = ev.start_mark
            pos = (fname, mark.line + 1, mark.column + 1)
            value = text if same else _scalar(loader, ev, pos)
            count += 1
            if count > MAX_VALUES:
                raise StoryError(f"more than {MAX_VALUES:,} values in one file", where=fname,
                                 hint="YAML aliases that expand exponentially (an alias bomb) are refused")
            item: Path_ = (*top.path, len(into))
            into.append(value)  # type: ignore[union-attr]  # a list: not a dict
            marks[item] = pos
            if anchoring:
                log.append((item, pos))
            if ev.anchor is not None:
                anchors[ev.anchor] = _Anchor(value, 1, pos)
            continue
        if kind in ends:
            done = stack.pop()
            if done.anchor is not None:
                anchoring -= 1
                cut = len(done.path)
                anchors[done.anchor] = _Anchor(done.value, count - done.start, done.pos,
                                               tuple((p[cut:], m) for p, m in log[done.logged:]))
            continue
        mark = ev.start_mark
        pos = (fname, mark.line + 1, mark.column + 1) if mark is not None else (fname, 1, 1)
        if kind not in values:
            where = _at(pos)
            if isinstance(ev, yaml.DocumentStartEvent):
                docs += 1
                if docs > 1:
                    raise StoryError("expected a single YAML document, found another", where=where)
            elif isinstance(ev, yaml.StreamEndEvent):
                break
            continue
        top = stack[-1] if stack else None
        if top is not None and top.key is _NO_KEY and type(top.value) is dict:  # a mapping key
            if kind is not scalar_ev:
                raise StoryError("mapping keys must be plain values", where=f"{fname}:{pos[1]}")
            key = _scalar(loader, ev, pos)
            if isinstance(key, bool | float) or key is None:
                key = str(ev.value)
            if key == "<<":
                raise StoryError("YAML merge keys ('<<') are not supported in stories", where=f"{fname}:{pos[1]}")
            if key in top.value:
                raise StoryError(f"duplicate key {key!r}", where=_at(pos))
            top.key = key
            top.key_path = key_path = (*top.path, key)
            marks[key_path] = pos
            if anchoring:
                log.append((key_path, pos))
            count += 1
            continue
        anchored = None
        if kind is scalar_ev:
            value, size = _scalar(loader, ev, pos), 1
        elif kind is alias_ev:
            anchored = anchors.get(ev.anchor)
            if anchored is None:
                raise StoryError(f"found undefined alias {ev.anchor!r}", where=_at(pos))
            value, size, alias_pos = anchored.value, anchored.size, anchored.pos
            aliased += size
            if aliased > MAX_ALIAS_VALUES:
                raise StoryError(f"aliases expand to more than {MAX_ALIAS_VALUES:,} values", where=_at(pos),
                                 hint="YAML aliases that expand exponentially (an alias bomb) are refused")
            pos = alias_pos
        else:
            tag = ev.tag
            if tag is not None and tag != "!" and tag not in _COLLECTION_TAGS:
                raise StoryError(f"YAML tag {tag!r} is not allowed in story data", where=f"{fname}:{pos[1]}")
            if len(stack) >= MAX_DEPTH:
                raise StoryError(f"nested more than {MAX_DEPTH} levels deep", where=_at(pos),
                                 hint="a story nests a handful of levels; flatten it")
            value, size = ({} if kind is map_ev else []), 1
        count += size
        if count > MAX_VALUES:
            raise StoryError(f"more than {MAX_VALUES:,} values in one file", where=fname,
                             hint="YAML aliases that expand exponentially (an alias bomb) are refused")
        if top is None:
            path: Path_ = ()
            root = value
            marks[()] = pos
        elif isinstance(top.value, dict):
            path = top.key_path
            top.value[top.key] = value
            top.key = _NO_KEY
        else:
            path = (*top.path, len(top.value))
            top.value.append(value)
            marks[path] = pos
            if anchoring:
                log.append((path, pos))
        if anchored is not None and copied + len(anchored.marks) <= _MAX_COPIED_MARKS:
            copied += len(anchored.marks)
            for rel, m in anchored.marks:
                marks[(*path, *rel)] = m
                if anchoring:
                    log.append(((*path, *rel), m))
        elif kind is map_ev or kind is seq_ev:
            if ev.anchor is not None:
                anchoring += 1
            stack.append(_Open(value, path, pos, count - 1, len(log), ev.anchor))
        elif ev.anchor is not None:
            anchors[ev.anchor] = _Anchor(value, 1, pos)
    if docs == 0:
        return Marked({}, {(): (fname, 1, 1)})
    return Marked(root, marks)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (restored after it, even on error).

    For work that makes many long-lived objects and no reference cycles (composing a
    story, validating it, linting it): each collection would rescan every object made
    so far, so a large story costs quadratically more. Reference counting still frees
    everything the block drops.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def read_text(path: Path) -> str:
    """Read a UTF-8 text file with a size limit and a clear error for binary files.

    Raises:
        StoryError: missing, a folder, unreadable, over ``MAX_FILE_BYTES``, or not UTF-8 text.
    """
    try:
        if path.is_dir():
            raise StoryError("is a folder, not a file", where=str(path), hint="name a .yaml file")
        limits.check_size(path.stat().st_size, MAX_FILE_BYTES, str(path), StoryError)
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise StoryError("file not found", where=str(path)) from exc
    except OSError as exc:
        raise StoryError(f"cannot read: {exc.strerror or exc}", where=str(path)) from exc
    if b"\x00" in data[:8192]:
        raise StoryError("file is binary, not YAML text", where=str(path))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise StoryError(f"file is not UTF-8 text (byte {exc.start})", where=str(path)) from exc


#: Contexts of a YAML error whose start is where the author must look: a bracket or quote opened
#: there and never closed (the parser only notices at the end of the file or lines later).
OPENED_CONTEXTS = ("while parsing a flow", "while scanning a quoted scalar")


def runaway_quote(text: str, line: int) -> Any | None:
    """The start mark of a quoted string that runs over lines and ends on ``line`` (0-based),
    where a parser stopped: the quote it closes there was meant to open the next string, so
    the one that opened lines before is the one never closed. ``None`` when there is none.

    PyYAML's own scanner (``yaml.scan``), run up to the error, finds it (the error's
    ``context_mark`` then names only the enclosing mapping)."""
    found = None
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if token.start_mark.line > line:
                break
            if (isinstance(token, yaml.ScalarToken) and token.style in ('"', "'")
                    and token.start_mark.line < token.end_mark.line == line):
                found = token.start_mark
    except yaml.YAMLError:
        pass
    return found


def yaml_syntax_error(exc: yaml.MarkedYAMLError, fname: str, text: str = "") -> StoryError:
    """The :class:`StoryError` of a YAML syntax error: at the opening bracket or quote when an
    unclosed one is the cause (PyYAML's ``context_mark``, or with ``text``, the file's text, a
    quoted string running on to the line of the error: :func:`runaway_quote`), else where the
    parser noticed it (``problem_mark``); the message names both places."""
    def at(mark: Any) -> str:
        return f"{fname}:{mark.line + 1}:{mark.column + 1}" if mark is not None else fname

    problem, context = exc.problem_mark, exc.context_mark
    if context is not None and exc.context and exc.context.startswith(OPENED_CONTEXTS):
        opened = exc.context.removeprefix("while parsing ").removeprefix("while scanning ")
        return StoryError(f"YAML syntax error: {opened} opened here is never closed "
                          f"({exc.problem} at line {problem.line + 1 if problem else '?'})", where=at(context),
                          hint="close the bracket or quote")
    quote = runaway_quote(text, problem.line) if text and problem is not None else None
    if quote is not None:
        return StoryError(f"YAML syntax error: a quoted string opened here runs on to line {problem.line + 1}, "
                          f"where the parser stopped ({exc.problem} at line {problem.line + 1})", where=at(quote),
                          hint="close the quote on the line it opens")
    return StoryError(f"YAML syntax error: {exc.problem}", where=at(problem))


def compose_marked(text: str, fname: str) -> Marked:
    """Parse one YAML document into plain values with marks.

    Raises:
        StoryError: a YAML syntax error, a tag outside the core schema, a duplicate or
            merge key, nesting past ``MAX_DEPTH``, more than ``MAX_VALUES`` values (aliases
            counted expanded), more than ``MAX_ALIAS_VALUES`` added by aliases, or a number
            past :data:`game.limits.MAX_INT` or not finite; each with its line and column.
    """
    loader = _Loader(text)
    try:
        with gc_paused():
            return _compose(loader, fname)
    except yaml.MarkedYAMLError as exc:
        raise yaml_syntax_error(exc, fname, text) from exc
    except yaml.YAMLError as exc:
        raise StoryError(f"YAML error: {exc}", where=fname) from exc
    finally:
        loader.dispose()

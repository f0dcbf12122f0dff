"""Read YAML with line marks kept, fast.

Uses libyaml's ``compose`` through PyYAML (``CSafeLoader``) when available, the
pure-Python composer otherwise, and builds plain Python values together with a
map from each value's path (``("scenes", "arrival", "choices", 0, "goto")``) to
its ``(line, column)`` (1-based), so validation errors point at the file and line.
Only the YAML core types are constructed: no tags, no Python objects (a story is
data, never code).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from game.errors import StoryError

try:
    _Base: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Base = yaml.SafeLoader

_INT = re.compile(r"^[-+]?(0|[1-9][0-9_]*)$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$"
                    r"|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$")
_T = "tag:yaml.org,2002:"


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

#: Largest story file we read, bytes (a guard against a huge or binary file).
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Most values (mapping keys, list items, scalars) one file may expand to: a 5,000-scene
#: story has about 200,000; this stops YAML alias bombs before they eat the memory.
MAX_VALUES = 2_000_000


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


def _build(node: yaml.Node, path: Path_, fname: str, marks: dict[Path_, tuple[str, int, int]]) -> Any:
    if len(marks) > MAX_VALUES:
        raise StoryError(f"more than {MAX_VALUES:,} values in one file", where=fname,
                         hint="YAML aliases that expand exponentially (an alias bomb) are refused")
    marks[path] = (fname, node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and node.tag not in _COLLECTION_TAGS:
        raise StoryError(f"YAML tag {node.tag!r} is not allowed in story data",
                         where=f"{fname}:{node.start_mark.line + 1}")
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):
                raise StoryError("mapping keys must be plain values",
                                 where=f"{fname}:{knode.start_mark.line + 1}")
            key = _SCALARS.construct_object(knode)
            if isinstance(key, bool | float) or key is None:
                key = str(knode.value)
            if key == "<<":
                raise StoryError("YAML merge keys ('<<') are not supported in stories",
                                 where=f"{fname}:{knode.start_mark.line + 1}")
            if key in out:
                raise StoryError(f"duplicate key {key!r}",
                                 where=f"{fname}:{knode.start_mark.line + 1}:{knode.start_mark.column + 1}")
            out[key] = _build(vnode, (*path, key), fname, marks)
            marks[(*path, key)] = (fname, knode.start_mark.line + 1, knode.start_mark.column + 1)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(n, (*path, i), fname, marks) for i, n in enumerate(node.value)]
    if node.tag not in _CORE_TAGS:
        raise StoryError(f"YAML tag {node.tag!r} is not allowed in story data",
                         where=f"{fname}:{node.start_mark.line + 1}")
    return _SCALARS.construct_object(node)


_COLLECTION_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}
_CORE_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}


def read_text(path: Path) -> str:
    """Read a UTF-8 text file with a size limit and a clear error for binary files.

    Raises:
        StoryError: missing, too large, or not UTF-8 text.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError as exc:
        raise StoryError("file not found", where=str(path)) from exc
    if size > MAX_FILE_BYTES:
        raise StoryError(f"file is {size} bytes, over the {MAX_FILE_BYTES} byte limit",
                         where=str(path))
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise StoryError("file is binary, not YAML text", where=str(path))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise StoryError(f"file is not UTF-8 text (byte {exc.start})", where=str(path)) from exc


def compose_marked(text: str, fname: str) -> Marked:
    """Parse one YAML document into plain values with marks.

    Raises:
        StoryError: a YAML syntax error, with its line and column.
    """
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{fname}:{mark.line + 1}:{mark.column + 1}" if mark else fname
        raise StoryError(f"YAML syntax error: {exc.problem}", where=where) from exc
    except yaml.YAMLError as exc:
        raise StoryError(f"YAML error: {exc}", where=fname) from exc
    marks: dict[Path_, tuple[str, int, int]] = {}
    if node is None:
        return Marked({}, {(): (fname, 1, 1)})
    return Marked(_build(node, (), fname, marks), marks)

"""Load a story folder into an immutable, validated :class:`Story`.

``stories/<id>/story.yaml`` (or a path to the YAML file itself), with
``include:`` lists of chapter files merged in (each may hold ``scenes``,
``items``, ``cast``, ``locations``, ``variables``, ``on_give``). Errors name the
file, line and column. The validated story is cached as JSON under the user's
cache folder keyed by the SHA-256 of every source file, so a large story loads
fast the second time; the cache holds only validated data and is ignored if it
cannot be read.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from game import limits
from game.errors import StoryError, near_hint
from game.story.ink import is_ink_path, load_ink
from game.story.schema import StoryModel, keys_at
from game.story.story import Story
from game.story.yamlio import Marked, compose_marked, gc_paused, read_text
from game.words import counted

MERGEABLE = ("scenes", "items", "cast", "locations", "variables", "on_give")
#: Most include files one story may pull in (a guard against include loops; see :mod:`game.limits`).
MAX_INCLUDES = limits.MAX_INCLUDES


def story_file(path: str | Path) -> Path:
    """Resolve a story folder or file path to its ``story.yaml``.

    Raises:
        StoryError: nothing there.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "story.yaml"
    if not p.is_file():
        raise StoryError("no story here", where=str(path),
                         hint="pass a folder holding story.yaml, or the .yaml file")
    return p


def cache_dir() -> Path:
    """Where validated stories are cached (``$WORLDLOOM_CACHE`` or ``~/.cache/worldloom``)."""
    env = os.environ.get("WORLDLOOM_CACHE")
    base = Path(env) if env else Path.home() / ".cache" / "worldloom"
    return base / "stories"


def read_sources(root: Path) -> tuple[dict[str, str], list[str], dict[str, Marked]]:
    """Read the main file and every include: ``({name: text}, order, {name: parsed})``.

    Raises:
        StoryError: a missing, binary, escaping or unusable include, or one naming a folder.
    """
    texts: dict[str, str] = {}
    order: list[str] = []
    parsed: dict[str, Marked] = {}
    folder = root.parent

    # Depth first, each file before its includes and those in their order (an explicit stack, not a
    # recursive closure: that was a reference cycle keeping every file's parsed values and marks alive
    # until a collection scanned them, ~0.2 s of CPU of a cold lint of 5,000 scenes).
    stack: list[tuple[str, str]] = [(root.name, str(root))]
    while stack:
        rel, where = stack.pop()
        if rel in texts:
            continue
        if len(order) >= MAX_INCLUDES:
            raise StoryError(f"more than {MAX_INCLUDES} included files", where=where)
        try:
            path = (folder / rel).resolve()
        except (OSError, ValueError) as exc:  # a NUL byte, a name too long for the system
            raise StoryError(f"include {rel[:80]!r} is not a usable file name: {exc}", where=where) from exc
        if folder.resolve() not in path.parents and path != root.resolve():
            raise StoryError(f"include {rel!r} is outside the story folder", where=where)
        try:
            text = read_text(path)
        except StoryError as exc:
            if rel == root.name and not texts:
                raise
            # An include that cannot be read is the include: line's error (the author edits that line,
            # or adds the file), naming the file it looked for.
            raise StoryError(f"include {rel!r}: {exc.why} ({path})", where=where,
                             hint=exc.hint or "check the file name, relative to the story folder") from exc
        texts[rel] = text
        order.append(rel)
        marked = parsed[rel] = compose_marked(text, str(folder / rel))
        inc = marked.value.get("include", []) if isinstance(marked.value, dict) else []
        if isinstance(inc, str):
            inc = [inc]
        if not isinstance(inc, list):
            raise StoryError("include: must be a list of file names", where=marked.where(("include",)))
        for i, name in enumerate(inc):
            if not isinstance(name, str):
                raise StoryError("include: entries must be file names", where=marked.where(("include", i)))
        stack.extend((name, marked.where(("include", i))) for i, name in reversed(list(enumerate(inc))))
    return texts, order, parsed


def merge(docs: list[Marked]) -> Marked:
    """Merge the main document and its includes; duplicate ids are errors naming both places."""
    main = docs[0]
    if not isinstance(main.value, dict):
        raise StoryError("a story file must be a mapping at the top", where=main.where(()))
    value: dict[str, Any] = {k: v for k, v in main.value.items() if k != "include"}
    marks = dict(main.marks)
    for doc in docs[1:]:
        if not isinstance(doc.value, dict):
            raise StoryError("an included file must be a mapping at the top", where=doc.where(()))
        for key, section in doc.value.items():
            if key == "include":
                continue
            if key not in MERGEABLE:
                raise StoryError(f"{key!r} cannot appear in an included file", where=doc.where((key,)),
                                 hint="included files hold: " + ", ".join(MERGEABLE))
            if not isinstance(section, dict):
                raise StoryError(f"{key}: must be a mapping", where=doc.where((key,)))
            target = value.setdefault(key, {})
            for k, v in section.items():
                if k in target:
                    raise StoryError(f"duplicate id {k!r} in {key}", where=doc.where((key, k)),
                                     hint=f"first defined at {main_where(docs, key, k)}")
                target[k] = v
        for path, mark in doc.marks.items():
            if path and path[0] in MERGEABLE:
                marks.setdefault(path, mark)
    return Marked(value, marks)


def main_where(docs: list[Marked], key: str, k: str) -> str:
    for d in docs:
        if isinstance(d.value, dict) and k in (d.value.get(key) or {}):
            return d.where((key, k))
    return ""


def validate(marked: Marked, folder: Path, digest: str, compile_now: bool = True) -> Story:
    """Validate merged YAML into a :class:`Story`, mapping errors to file:line.

    Raises:
        StoryError: the first problem, with where; every problem, each with its file:line, in
            ``problems`` (and in the message, one a line).
    """
    try:
        model = StoryModel.model_validate(marked.value)
    except ValidationError as exc:
        problems = []
        errors = [(err["type"], tuple(p for p in err["loc"] if not _union_tag(p)), err["msg"]) for err in exc.errors()]
        colons = {loc[:-1]: why for kind, loc, _ in errors if kind == "extra_forbidden" and loc
                  for why in [_colon_in_line(marked.value, loc[:-1])] if why}
        for place, why in colons.items():
            problems.append((marked.where(place), why))
        for kind, loc, msg in errors:
            if any(loc[:len(place)] == place for place in colons):
                continue  # the line's own problem says it all
            where = marked.where(loc)
            problems.append((where, _why(kind, loc, msg)))
        merged: dict[str, list[str]] = {}  # a union's branches fail at one place: one problem there
        for where, why in problems:
            if why not in merged.setdefault(where, []):
                merged[where].append(why)
        problems = sorted(((w, "; or ".join(ys)) for w, ys in merged.items()), key=lambda p: _position(p[0]))
        where, why = problems[0]
        more = f"{counted(len(problems) - 1, 'more problem')}, each on its own line below" if len(problems) > 1 else ""
        raise StoryError(why, where=where, hint=more, problems=tuple(problems)) from exc
    return Story(model, folder, digest, marked, compile_now)


def _why(kind: str, loc: tuple[Any, ...], msg: str) -> str:
    """One validation problem as the author reads it: ``scenes.a: unknown key 'choises': did you mean
    'choices'?`` for a key the schema does not have (the nearest of :func:`~game.story.schema.keys_at`,
    or every key the place takes when none is near), else ``field: pydantic's message``."""
    if kind != "extra_forbidden" or not loc:
        return f"{'.'.join(str(p) for p in loc)}: {msg}"
    keys = keys_at(loc[:-1])
    place = ".".join(str(p) for p in loc[:-1]) or "the top level"
    near = near_hint(str(loc[-1]), keys).strip()
    if near or not keys:
        return f"{place}: unknown key {loc[-1]!r}" + (f": {near}" if near else "")
    return f"{place}: unknown key {loc[-1]!r} (the keys it takes: {', '.join(keys)})"


def _colon_in_line(value: Any, place: tuple[Any, ...]) -> str:
    """The problem of a line written ``- The cat follows you: out.``: YAML reads an unquoted ``': '``
    as a mapping, so the line is a one-key mapping whose key is prose (a space, or a capital: no field
    of a line is either). ``""`` when the item at ``place`` is no such line (or ``place`` takes no line)."""
    if "text" not in keys_at(place):
        return ""
    for part in place:
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            return ""
    if not isinstance(value, dict) or len(value) != 1:
        return ""
    key, rest = next(iter(value.items()))
    if not isinstance(key, str) or (key.isidentifier() and not key[:1].isupper()):
        return ""
    line = f"{key}: {rest}" if isinstance(rest, str | int | float) else f"{key}:"
    return (f"{'.'.join(str(p) for p in place)}: a ': ' inside a line starts a mapping in YAML: "
            f"put the line in quotes ({json.dumps(line, ensure_ascii=False)})")


def _union_tag(part: object) -> bool:
    """Whether a pydantic error location part names a branch of a union or a validator
    (``int``, ``function-after``, ``literal['a','b']``, ``constrained-int``), not a key of the file."""
    return isinstance(part, str) and (part in {"function-after", "function-before", "int", "str", "float", "bool"}
                                      or part.startswith(("literal[", "constrained-", "function-")))


def _position(where: str) -> tuple[str, int, int]:
    """``file:line:col`` as a sort key (file, line, column); a bare file sorts first in it."""
    parts = where.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1]), int(parts[2])
    return where, 0, 0


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _digest(texts: dict[str, str], order: list[str]) -> str:
    h = hashlib.sha256()
    for name in order:
        h.update(name.encode() + b"\0" + texts[name].encode() + b"\0")
    return h.hexdigest()


def cached_digest(root: Path, main_text: str | None = None) -> str | None:
    """The digest of the story at ``root`` (its ``story.yaml``) when the cache holds it unchanged, else ``None``.

    Reads and hashes the source files only (no YAML parse): what lint's own cache keys on.
    """
    try:
        text = read_text(root) if main_text is None else main_text
        meta = json.loads((cache_dir() / _sha(text)).with_suffix(".meta.json").read_text())
        texts = {root.name: text}
        for name in meta["order"][1:]:
            texts[name] = read_text(root.parent / name)
        if any(_sha(texts[n]) != meta["files"][n] for n in meta["order"]):
            return None
        return _digest(texts, meta["order"])
    except (OSError, KeyError, TypeError, ValueError, StoryError):
        return None


def _marks(root: Path) -> Marked:
    """The merged line marks of the story at ``root`` (parses every source file)."""
    _, order, parsed = read_sources(root)
    return merge([parsed[name] for name in order])


def _from_cache(root: Path, main_text: str) -> Story | None:
    """The cached story if every source file still has the hash it was cached with.

    Its line marks are read on the first ``Story.where`` (a parse only when a message needs a line).
    """
    key = cache_dir() / _sha(main_text)
    digest = cached_digest(root, main_text)
    if digest is None:
        return None
    try:
        data = key.with_suffix(".model.json").read_bytes()
        with gc_paused():  # as for a parse: many long-lived objects, no cycles (a third of this load's CPU)
            model = StoryModel.model_validate_json(data)
    except (OSError, ValueError):
        return None  # a damaged entry: rebuild it
    return Story(model, root.parent, digest, None, marks=lambda: _marks(root))


def _to_cache(root: Path, texts: dict[str, str], order: list[str], story: Story) -> None:
    key = cache_dir() / _sha(texts[root.name])
    try:
        key.parent.mkdir(parents=True, exist_ok=True)
        # defaults left out: they come back as defaults, and the JSON to read and validate is half the size
        model = story.model.model_dump_json(by_alias=True, exclude_defaults=True)
        for suffix, data in ((".model.json", model),
                             (".meta.json", json.dumps({"order": order, "files": {n: _sha(texts[n]) for n in order}}))):
            tmp = key.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(data)
            os.replace(tmp, key.with_suffix(suffix))
    except OSError:
        pass  # the cache is an optimisation only


def load_story(path: str | Path, use_cache: bool = True, compile_now: bool = True) -> Story:
    """Load, merge, validate and compile a story.

    The validated story is cached under :func:`cache_dir`, keyed by the main file's
    SHA-256 and checked against every included file's hash, so a second load skips
    parsing and validation. Play and lint share this cache: either one's first load
    fills it for the other.

    Args:
        path: the story folder or its ``story.yaml``.
        use_cache: read/write the validated-story cache.
        compile_now: compile every expression now (lint turns this off to report
            each bad expression itself). A story from the cache was compiled when it
            was cached; its expressions compile again on first use.

    A compiled Ink story (``*.ink.json``) loads as a :class:`game.story.ink.InkStory`
    (see ``docs/ink.md``).

    Raises:
        StoryError: with ``file:line:col`` of the problem.
    """
    if is_ink_path(path) or str(path).endswith(".ink"):
        return load_ink(path)
    root = story_file(path)
    if use_cache:
        cached = _from_cache(root, read_text(root))
        if cached is not None:
            return cached
    with gc_paused():  # a large story is many long-lived objects and no cycles
        texts, order, parsed = read_sources(root)
        docs = [parsed[name] for name in order]
        story = validate(merge(docs), root.parent, _digest(texts, order), compile_now)
        if use_cache:
            try:
                if not compile_now:
                    story.compile_all()  # the cache holds only stories whose expressions compile
            except StoryError:
                return story
            _to_cache(root, texts, order, story)
    return story


def story_from_dict(data: dict[str, Any], folder: str | Path = ".") -> Story:
    """Validate a story given as a dict (tests, generated stories). No cache."""
    text = json.dumps(data)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return validate(Marked(data, {(): ("<dict>", 1, 1)}), Path(folder), digest)

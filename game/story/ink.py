"""Ink stories: a compiled ``.ink.json`` (Inky, inklecate, inkjs) as a worldloom story.

The compiled JSON is read once, scanned and lightly instrumented, and handed to
the ``bink`` runtime (a ctypes wrapper over blade-ink) by
:class:`game.story.ink_runtime.InkRuntime`. This module is the static half:

* :class:`InkStory` is a :class:`~game.story.story.Story` whose ``model`` is a
  synthetic :class:`~game.story.schema.StoryModel` built from the JSON, so the
  director, the window, saves, lint and the map see the usual shapes: one scene
  per knot (plus :data:`ROOT_SCENE` for the text before the first knot), a
  location per distinct ``# scene:`` tag, a cast member per ``# show:`` /
  ``# speaker:`` tag and per ``Name: text`` speaker, an item per literal passed to
  ``give``/``take``, one variable per ``VAR``, and one synthetic choice per divert
  between knots (so ``worldloom lint`` and ``worldloom map`` see the knot graph;
  play never uses them, the Ink runtime decides what the player can choose).
* Instrumentation: every divert that enters a knot (``-> forest``,
  ``-> forest.stitch`` from another knot, ``->t->``, ``-> var`` targets) is routed
  through a tiny generated knot that calls the external function :data:`HOOK`
  with the target and then diverts on. That is how the runtime knows which knot a
  line came from without positional paths; nothing else in the story moves, so
  positional paths inside the story (and Ink's own save states) are unaffected.
  A tunnel call (``->t-> knot``) goes through a wrapper that is itself a tunnel: it
  enters the knot with ``->t->``, and when that returns (``->->``) calls
  :data:`RETURN_HOOK` with the caller's scene and returns too, so the runtime puts
  the scene back. A thread (``<- knot``) is not wrapped: its choices join the
  current knot's, which stays the scene.

See ``docs/ink.md`` for the author's view: tags, external functions, saves.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from game.errors import StoryError
from game.story.ink_vm import Container, InkScopeError, compile_story
from game.story.schema import ID_RE, StoryModel
from game.story.story import Story
from game.story.yamlio import Path_
from game.words import opening

#: The scene id of the text before the first knot (the story's start scene).
ROOT_SCENE = "_root"
#: External function the instrumentation calls on entering a knot: ``__wl_scene(target)``.
HOOK = "__wl_scene"
#: External function a tunnel's wrapper calls when the tunnel returns: ``__wl_return(caller scene)``.
RETURN_HOOK = "__wl_return"
#: Prefix of the target :data:`HOOK` gets from a tunnel wrapper (``"t:knot"``).
TUNNEL_MARK = "t:"
#: Prefix of the generated knots that call :data:`HOOK`.
WRAP_PREFIX = "__wl_enter__"
#: Ink's opcodes that read a divert target's counts at once (``TURNS_SINCE(-> knot)``, ``READ_COUNT(-> knot)``):
#: the target before them keeps naming the knot, not its hook knot (which has no counts of its own).
COUNT_READS = ("turns", "readc")
#: Tags read as world directives (``# key: value``); others are kept on the line event.
DIRECTIVES = frozenset({"scene", "show", "hide", "chunk", "music", "sound", "speaker", "ending", "title"})
#: Words of a ``# scene:`` tag that name the time of day.
TIMES = ("dawn", "sunrise", "morning", "day", "noon", "afternoon", "evening", "sunset", "dusk", "twilight",
         "night", "midnight")
#: ``Name: text`` at the start of a line names the speaker (one to three capitalised words).
SPEAKER_RE = re.compile(r"^\s*([A-Z][\w'\-]*(?: [A-Z][\w'\-]*){0,2}):\s+(\S.*)$", re.S)
#: External functions whose first literal argument is an item id.
ITEM_FUNCTIONS = frozenset({"give", "take", "drop", "has"})
#: External functions whose literal argument (first, or second for ``give``) is a character id.
CAST_FUNCTIONS = frozenset({"trust", "affinity", "react", "rel", "relate"})
_CHUNK_NAMES = frozenset({"step", "short", "medium", "long", "cut"})
_NAME_RE = re.compile(r"^[^\d.$^][^.]*$")


@functools.lru_cache(maxsize=65536)
def slug(text: str, limit: int = 64) -> str:
    """A valid worldloom id for ``text`` (lowercase, ``_`` for other characters).

    Too long or empty results get a short hash so different texts stay different.
    """
    s = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if s and s[0].isdigit():
        s = "_" + s
    if not s or len(s) > limit:
        digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]
        s = (s[: limit - 9] + "_" + digest) if s else "x_" + digest
    return s


def split_tag(tag: str) -> tuple[str, str]:
    """``"scene: forest at dusk"`` -> ``("scene", "forest at dusk")``; no colon -> ``(tag, "")``."""
    key, sep, value = tag.partition(":")
    if not sep:
        return tag.strip().lower(), ""
    return key.strip().lower(), value.strip()


def chunk_hint(value: str) -> str | int | None:
    """A ``# chunk:`` value as a chunk hint (a name or a frame count), or ``None`` if neither."""
    v = value.strip().lower()
    if v in _CHUNK_NAMES:
        return v
    if v.isdigit() and 1 <= int(v) <= 2400:
        return int(v)
    return None


def location_of(value: str) -> tuple[str, dict[str, str]]:
    """See :func:`_location_of` (memoised: the runtime asks on every ``# scene:`` tag); a fresh dict each call."""
    lid, fields = _location_of(value)
    return lid, dict(fields)


@functools.lru_cache(maxsize=4096)
def _location_of(value: str) -> tuple[str, dict[str, str]]:
    """A ``# scene:`` tag value as ``(location id, LocationDef fields)``.

    ``"forest at dusk"`` -> ``("forest_at_dusk", {name: "Forest", prompt: "forest",
    time_of_day: "dusk", palette: "forest"})``: a time word is lifted out of the
    prompt (the director adds ``at <time>`` itself); the palette is the last word
    (``"a quiet creek"`` draws the ``creek`` palette; unknown names get a hashed one).
    """
    text = value.strip()
    words = [w.strip(",.;:!") for w in text.lower().split()]
    time = next((w for w in reversed(words) if w in TIMES), "")
    prompt = text
    if time:
        prompt = re.sub(rf"(?:,?\s+(?:at|in the|in)\s+)?\b{time}\b", "", text, count=1, flags=re.I).strip(" ,")
    prompt = re.sub(r"\s+", " ", prompt).strip() or text
    fields = {"name": opening(prompt), "prompt": prompt,
              "palette": slug(prompt.split()[-1]) if prompt.split() else "dusk"}
    if time:
        fields["time_of_day"] = time
    return slug(text), fields


@dataclass
class KnotInfo:
    """What the scan found in one knot (or :data:`ROOT_SCENE`).

    Attributes:
        name: the knot's name in the Ink source.
        scene: its scene id in the synthetic model.
        tags: every tag in the knot, in order.
        location: location id of its own first ``# scene:`` tag, or ``""``.
        present: cast ids of its ``# show:`` tags; ``hidden``: of its ``# hide:`` tags.
        chunk: its ``# chunk:`` hint, if any.
        ending: its ``# ending:`` name, or the knot name when it can only end the story
            (``-> END`` / ``-> DONE`` and no divert into another knot).
        targets: knots its diverts enter (a tunnel call ``->t->`` and a thread ``<-`` included).
        title: its ``# title:`` tag, or the knot name made readable.
        returns: knots the flow goes back to from here: the callers of a tunnel (``->->``)
            and of a thread (``<- knot``, whose ``-> DONE`` ends only the thread).
        tunnel: the knot returns with ``->->``; ``threaded``: some knot threads it in with ``<-``.
        shape: a hash of the knot's compiled structure without its text: it changes when a
            choice, gather or divert is added or removed (Ink's saved positions move), not
            when only wording changes. Saves record it (see ``InkRuntime.sync``).
    """

    name: str
    scene: str
    tags: list[str] = field(default_factory=list)
    location: str = ""
    present: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    chunk: str | int | None = None
    ending: str = ""
    targets: list[str] = field(default_factory=list)
    title: str = ""
    has_choices: bool = False
    ends: bool = False
    returns: list[str] = field(default_factory=list)
    tunnel: bool = False
    threaded: bool = False
    shape: str = ""


def _containers(node: Any) -> Iterator[list[Any]]:
    """Every container (list) under ``node``, depth first in document order, ``node`` first."""
    if isinstance(node, list):
        yield node
        for x in node:
            if isinstance(x, list):
                yield from _containers(x)
            elif isinstance(x, dict):
                for v in x.values():
                    if isinstance(v, list):
                        yield from _containers(v)


def _tags(container: list[Any]) -> Iterator[str]:
    """Tag texts in one container (``#`` ... ``/#`` blocks and the old ``{"#": text}`` form)."""
    inside = False
    parts: list[str] = []
    for x in container:
        if x == "#":
            inside, parts = True, []
        elif x == "/#":
            if inside:
                yield "".join(parts).strip()
            inside = False
        elif inside and isinstance(x, str) and x.startswith("^"):
            parts.append(x[1:])
        elif isinstance(x, dict) and isinstance(x.get("#"), str):
            yield str(x["#"]).strip()


def _calls(container: list[Any]) -> Iterator[tuple[str, list[str | None]]]:
    """External calls with their literal arguments: ``("give", ["kite", "creature"])``.

    An argument that is not a string literal (a variable, an expression) reads as ``None``.
    """
    pushed: list[str | None] = []
    in_str = False
    for x in container:
        if x == "str":
            in_str = True
            pushed.append("")
        elif x == "/str":
            in_str = False
        elif in_str and isinstance(x, str) and x.startswith("^") and pushed:
            pushed[-1] = (pushed[-1] or "") + x[1:]
        elif x == "ev":
            pushed = []
        elif isinstance(x, bool | int | float) or (isinstance(x, dict) and ({"VAR?", "temp?", "CNT?", "^->"} & set(x))):
            pushed.append(None)
        elif isinstance(x, dict) and isinstance(x.get("x()"), str):
            n = int(x.get("exArgs", 0) or 0)
            yield str(x["x()"]), pushed[-n:] if n else []
            pushed = []


def _is_function(container: list[Any]) -> bool:
    """Whether a knot's body returns with ``~ret`` (an Ink ``function`` with a ``return``)."""
    return any("~ret" in c for c in _containers(container))


def _called(root: Any) -> set[str]:
    """Knots called as functions anywhere (``{"f()": name}``): Ink ``=== function``s without a ``return``."""
    return {str(x["f()"]).split(".")[0] for c in _containers(root) for x in c
            if isinstance(x, dict) and isinstance(x.get("f()"), str)}


def _shape(container: Any) -> str:
    """Hash of ``container``'s structure with every text run (``"^..."``) blanked (see :class:`KnotInfo`)."""
    def blank(x: Any) -> Any:
        if isinstance(x, str):
            return "^" if x.startswith("^") else x
        if isinstance(x, list):
            return [blank(y) for y in x]
        if isinstance(x, dict):
            return {k: blank(v) for k, v in x.items()}
        return x

    text = json.dumps(blank(container), separators=(",", ":"), sort_keys=True)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


class _Scan:
    """Scans and instruments the compiled JSON (see the module docstring)."""

    def __init__(self, doc: dict[str, Any], where: str) -> None:
        self.doc = doc
        self.where = where
        root = doc.get("root")
        if not isinstance(root, list) or not root:
            raise StoryError("not a compiled Ink story (no root container)", where=where)
        named = root[-1] if isinstance(root[-1], dict) else {}
        self.named: dict[str, Any] = named
        called = _called(root)
        self.functions = {k for k, v in named.items() if isinstance(v, list) and (k in called or _is_function(v))}
        self.knots = [k for k, v in named.items()
                      if isinstance(v, list) and k != "global decl" and not k.startswith("#")
                      and k not in self.functions]
        self.scene_of: dict[str, str] = {ROOT_SCENE: ROOT_SCENE}
        used = {ROOT_SCENE}
        for k in self.knots:
            sid = k if ID_RE.match(k) and len(k) <= 64 else slug(k)
            while sid in used:
                sid = slug(sid + "_")
            used.add(sid)
            self.scene_of[k] = sid
        self.wrappers: dict[str, str] = {}  # wrapper knot -> divert target
        self.tunnel_wrappers: dict[str, str] = {}  # tunnel wrapper knot -> the caller's scene
        self.inner: set[str] = set()  # knots with a divert inside themselves (to a gather, a label, the top)
        self.tunnel_callers: dict[str, list[str]] = {}  # tunnel knot -> scenes that call it with ->t->
        self.thread_callers: dict[str, list[str]] = {}  # threaded knot -> scenes that thread it in with <-

    # -- instrumentation -------------------------------------------------------
    def _wrap(self, target: str) -> str:
        """The hook knot that enters ``target`` (made once per target)."""
        name = WRAP_PREFIX + target.replace(".", "__")
        if name not in self.wrappers:
            self.wrappers[name] = target
        return name

    def _wrap_tunnel(self, target: str, source: str) -> str:
        """The tunnel wrapper that enters ``target`` from ``source`` and puts the scene back on return."""
        name = WRAP_PREFIX + "t__" + self.scene_of[source] + "__" + target.replace(".", "__")
        if name not in self.wrappers:
            self.wrappers[name] = target
            self.tunnel_wrappers[name] = self.scene_of[source]
        return name

    def _enters(self, target: str, source: str) -> str | None:
        """The knot ``target`` enters from ``source``, or ``None`` for a divert inside the knot."""
        if not target or target.startswith("."):
            return None
        parts = target.split(".")
        head = parts[0]
        if head not in self.scene_of or head == ROOT_SCENE:
            return None
        if len(parts) == 1:
            return head
        if head == source or not all(_NAME_RE.match(p) and not re.match(r"^[cg]-\d+$", p) for p in parts):
            return None
        return head

    def instrument(self, container: list[Any], source: str, info: KnotInfo) -> None:
        """Route the diverts in ``container`` (knot ``source``) that enter a knot through a hook knot.

        A thread (``<- knot``: ``"thread"`` then a divert) is not routed: the threaded
        knot's choices join the current knot's, which stays the scene.
        """
        for c in _containers(container):
            prev: Any = None
            for i, x in enumerate(c):
                thread, prev = prev == "thread", x
                if not isinstance(x, dict):
                    continue
                for key in ("->", "->t->", "^->"):
                    target = x.get(key)
                    if not isinstance(target, str) or x.get("var"):
                        continue
                    if key == "^->" and i + 1 < len(c) and c[i + 1] in COUNT_READS:
                        continue  # TURNS_SINCE(-> knot) / READ_COUNT(-> knot): the knot's own counts
                    knot = self._enters(target, source)
                    if knot is None:
                        if key == "->" and target.startswith("."):
                            self.inner.add(source)
                        continue
                    sid = self.scene_of[knot]
                    callers = (self.thread_callers if thread else
                               self.tunnel_callers if key == "->t->" else None)
                    if callers is not None and self.scene_of[source] not in callers.setdefault(knot, []):
                        callers[knot].append(self.scene_of[source])
                    if key == "->t->" and not thread:
                        x[key] = self._wrap_tunnel(target, source)
                    elif not thread:
                        x[key] = self._wrap(target)
                    if sid not in info.targets:
                        info.targets.append(sid)

    # -- scanning ----------------------------------------------------------------
    def knot_info(self, name: str, container: list[Any], targets: list[str]) -> KnotInfo:
        """Tags, place, cast, chunk, ending and title of one knot whose diverts enter ``targets``.

        A tunnel or threaded knot goes back to its callers (``returns``); its
        ``-> DONE`` ends a thread, not the story, so only ``-> END`` makes it an ending.
        """
        info = KnotInfo(name, self.scene_of[name], targets=targets)
        info.threaded = name in self.thread_callers
        info.returns = [s for s in self.tunnel_callers.get(name, []) + self.thread_callers.get(name, [])]
        info.returns = list(dict.fromkeys(info.returns))
        for c in _containers(container):
            info.tags.extend(_tags(c))
            if any(isinstance(x, dict) and "*" in x for x in c):
                info.has_choices = True
            if "end" in c or ("done" in c and not info.threaded):
                info.ends = True
            if "->->" in c:
                info.tunnel = True
        if not info.tunnel:
            info.returns = [s for s in info.returns if s in self.thread_callers.get(name, [])]
        info.shape = _shape(container)
        for tag in info.tags:
            key, value = split_tag(tag)
            if key == "scene" and value and not info.location:
                info.location = location_of(value)[0]
            elif key in ("show", "hide") and value:
                bucket = info.present if key == "show" else info.hidden
                for who in value.split(","):
                    if who.strip() and slug(who) not in bucket:
                        bucket.append(slug(who))
            elif key == "chunk" and info.chunk is None:
                info.chunk = chunk_hint(value)
            elif key == "ending" and value and not info.ending:
                info.ending = value
            elif key == "title" and value and name != ROOT_SCENE and not info.title:
                info.title = value
        if not info.ends and not info.targets and not info.returns and name in self.inner and info.has_choices:
            info.targets.append(info.scene)  # it loops inside itself (``+ [again] -> knot``): not a dead end
        if not info.ending and info.ends and not info.targets and not info.returns and name != ROOT_SCENE:
            info.ending = name
        info.title = info.title or name.replace("_", " ").strip().capitalize()
        return info

    def global_tags(self) -> list[str]:
        """The tags at the very top of the story, before any content (Ink's global tags)."""
        root: list[Any] = self.doc["root"]
        first: Any = root[0] if root else None
        while isinstance(first, list) and first and isinstance(first[0], list):
            first = first[0]
        if not isinstance(first, list):
            return []
        lead: list[Any] = []
        i = 0
        while i < len(first) and first[i] == "#":
            j = first.index("/#", i) if "/#" in first[i:] else len(first)
            lead += first[i:j + 1]
            i = j + 1
        return list(_tags(lead))

    def run(self) -> dict[str, KnotInfo]:
        """Instrument the document in place; returns the knot infos by scene id."""
        root: list[Any] = self.doc["root"]
        root_info = KnotInfo(ROOT_SCENE, ROOT_SCENE)
        top = root[:-1] if isinstance(root[-1], dict) else root
        for part in top:
            if isinstance(part, list):
                self.instrument(part, ROOT_SCENE, root_info)
        found = {ROOT_SCENE: root_info}
        for k in self.knots:
            found[k] = KnotInfo(k, self.scene_of[k])
            self.instrument(self.named[k], k, found[k])
        infos = {ROOT_SCENE: self.knot_info(ROOT_SCENE, [p for p in top if isinstance(p, list)], root_info.targets)}
        for k in self.knots:
            infos[self.scene_of[k]] = self.knot_info(k, self.named[k], found[k].targets)
        for name, target in self.wrappers.items():
            caller = self.tunnel_wrappers.get(name)
            mark = "" if caller is None else TUNNEL_MARK
            enter = ["ev", "str", "^" + mark + target, "/str", {"x()": HOOK, "exArgs": 1}, "pop", "/ev"]
            if caller is None:
                self.named[name] = [*enter, {"->": target}, None]
            else:
                self.named[name] = [*enter, {"->t->": target}, "ev", "str", "^" + caller, "/str",
                                    {"x()": RETURN_HOOK, "exArgs": 1}, "pop", "void", "/ev", "->->", None]
        return infos


def _variables(named: dict[str, Any]) -> dict[str, tuple[str, bool | int | float | str]]:
    """``VAR`` declarations of ``global decl``: name -> (type, default)."""
    out: dict[str, tuple[str, bool | int | float | str]] = {}
    decl = named.get("global decl")
    if not isinstance(decl, list):
        return out
    last: bool | int | float | str | None = None
    in_str = False
    for x in decl:
        if x == "str":
            in_str, last = True, ""
        elif x == "/str":
            in_str = False
        elif in_str and isinstance(x, str) and x.startswith("^"):
            last = str(last or "") + x[1:]
        elif isinstance(x, bool | int | float):
            last = x
        elif isinstance(x, dict) and isinstance(x.get("VAR="), str):
            name = str(x["VAR="])
            if isinstance(last, bool):
                out[name] = ("bool", last)
            elif isinstance(last, int):
                out[name] = ("int", last)
            elif isinstance(last, float):
                out[name] = ("float", last)
            else:  # text; lists and divert targets read as text too
                out[name] = ("str", last if isinstance(last, str) else "")
            last = None
        elif isinstance(x, dict):  # a list value or a divert target
            last = None
    return out


def _speakers(doc: Any) -> Iterator[str]:
    """Names written as ``Name: text`` at the start of a line of text in the JSON."""
    for c in _containers(doc):
        for i, x in enumerate(c):
            if isinstance(x, str) and x.startswith("^") and (i == 0 or c[i - 1] in ("\n", "/#")):
                m = SPEAKER_RE.match(x[1:])
                if m:
                    yield m.group(1)


class InkStory(Story):
    """A compiled Ink story, with the synthetic model the rest of worldloom reads.

    Attributes:
        path: the ``.ink.json`` file.
        json_text: the instrumented compiled JSON handed to bink.
        knots: scan results by scene id (:class:`KnotInfo`).
        knot_scene: Ink knot name -> scene id (the same unless the name is not a valid id).
        wrappers: generated knot name -> the divert target it enters.
        global_tags: the story's global tags (``# title: ...`` at the top).
        functions: names of the Ink functions (``=== function f ===``).
        externals: names of the external functions the story calls (``EXTERNAL f()``).
        ink_version: the compiled format version (``inkVersion``).
    """

    def __init__(self, model: StoryModel, path: Path, digest: str, json_text: str, knots: dict[str, KnotInfo],
                 wrappers: dict[str, str], global_tags: list[str], functions: set[str], ink_version: int,
                 externals: set[str] | None = None) -> None:
        super().__init__(model, path.parent, digest, None)
        self.path = path
        self.json_text = json_text
        self.knots = knots
        self.knot_scene = {k.name: sid for sid, k in knots.items()}
        self.wrappers = wrappers
        self.global_tags = global_tags
        self.functions = functions
        self.ink_version = ink_version
        self.externals = externals or set()
        #: A bink story built while loading (to check the file); the first runtime takes it.
        self.spare_bink: Any = None
        #: Why worldloom's interpreter does not play this story (the feature and where), or ``""``.
        self.vm_refusal = ""
        self._vm_doc: dict[str, Any] | None = None
        self._vm_root: Container | None = None
        #: Some tag in a knot is ``# id: ...`` (the runtime then reads choice tags for pinned ids).
        self.pinned_ids = any(split_tag(t)[0] == "id" for k in knots.values() for t in k.tags)

    @property
    def vm_root(self) -> Container | None:
        """The story decoded for worldloom's own interpreter (:mod:`game.story.ink_vm`), shared by its
        runtimes, or None when it uses what the interpreter does not play (:attr:`vm_refusal` says
        what and where). Decoded on first use (lint and map never need it).

        When the process has moved the loaded story out of the cyclic collector's generations
        (``gc.freeze``: ``worldloom play`` does after loading), the decoded story (one object per
        container and instruction, alive as long as the story) is moved out too, so the
        collections that every step's garbage triggers do not rescan it (~8% of a choice's CPU
        time on a 5,000-knot story, ``bench/explore.py``).
        """
        if self._vm_root is None and self._vm_doc is not None and not self.vm_refusal:
            doc, self._vm_doc = self._vm_doc, None
            try:
                self._vm_root = compile_story(doc, str(self.path))
            except InkScopeError as exc:
                self.vm_refusal = str(exc)
            if gc.get_freeze_count():
                gc.freeze()
        return self._vm_root

    def where(self, path: Path_) -> str:
        """``story.ink.json`` plus ``#knot`` for paths under a scene (compiled Ink has no line numbers)."""
        if len(path) >= 2 and path[0] == "scenes" and str(path[1]) in self.knots:
            return f"{self.path}#{self.knots[str(path[1])].name}"
        return str(self.path)

    def scene_for_target(self, target: str) -> str:
        """Scene id of the knot a divert target (``knot`` or ``knot.stitch``) is in."""
        return self.knot_scene.get(target.split(".")[0], ROOT_SCENE)


def is_ink_path(path: str | Path) -> bool:
    """Whether ``path`` names a compiled Ink story (``*.ink.json``, or ``*.json`` holding ``inkVersion``)."""
    p = Path(path)
    if p.name.endswith(".ink.json"):
        return True
    if p.suffix.lower() != ".json" or not p.is_file():
        return False
    try:
        with p.open("rb") as fh:
            head = fh.read(512)
    except OSError:
        return False
    return b'"inkVersion"' in head


def read_ink_json(path: Path) -> tuple[dict[str, Any], str]:
    """Parse a compiled Ink file (a UTF-8 BOM, as inkjs writes, is allowed): ``(doc, sha256 of the bytes)``.

    Raises:
        StoryError: missing, not UTF-8, not JSON, or not a compiled Ink story.
    """
    where = str(path)
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except FileNotFoundError as exc:
        raise StoryError("no such Ink story", where=where) from exc
    except OSError as exc:
        raise StoryError(f"cannot read: {exc.strerror or exc}", where=where) from exc
    except UnicodeDecodeError as exc:
        raise StoryError("not UTF-8 text", where=where) from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoryError(f"not valid JSON ({exc.msg})", where=f"{where}:{exc.lineno}:{exc.colno}",
                         hint="recompile the .ink file (Inky: File > Export to JSON)") from exc
    if not isinstance(doc, dict) or "inkVersion" not in doc or "root" not in doc:
        raise StoryError("not a compiled Ink story (no inkVersion/root)", where=where,
                         hint="compile the .ink source with Inky, inklecate or inkjs first")
    return doc, hashlib.sha256(raw).hexdigest()


def _bink() -> Any:
    """The ``bink.story`` module (imported on first use).

    Raises:
        StoryError: bink is not installed or its native library does not load.
    """
    try:
        import bink.story as bink_story
    except (ImportError, RuntimeError, OSError) as exc:
        raise StoryError(f"Ink stories need the bink runtime ({exc})", hint="pip install bink") from exc
    return bink_story


def new_bink_story(json_text: str, where: str = "") -> Any:
    """A bink ``Story`` for compiled Ink JSON.

    Raises:
        StoryError: bink rejects the JSON (with its reason).
    """
    module = _bink()
    try:
        return module.Story(json_text)
    except RuntimeError as exc:
        raise StoryError(f"bink cannot load this Ink story: {exc}", where=where,
                         hint="recompile it with a current Inky, inklecate or inkjs") from exc


def load_ink(path: str | Path) -> InkStory:
    """Load a compiled Ink story (``.ink.json``) as an :class:`InkStory`.

    The JSON is decoded for worldloom's Ink interpreter (:mod:`game.story.ink_vm`), which
    checks every path in it; a story outside the interpreter's scope (Ink lists) is checked
    by constructing a bink story once instead (bink plays it). Either way a file that cannot
    be played fails here (with where) rather than in the middle of a session.

    Raises:
        StoryError: the file is missing, not compiled Ink, or rejected by bink; a
            ``.ink`` source file (compile it first).
    """
    p = Path(path)
    if p.suffix == ".ink":
        raise StoryError("this is Ink source; worldloom plays compiled Ink", where=str(p),
                         hint="compile it to .ink.json with Inky (Export to JSON), inklecate or inkjs-compiler")
    doc, digest = read_ink_json(p)
    scan = _Scan(doc, str(p))
    global_tags = scan.global_tags()
    knots = scan.run()
    knots[ROOT_SCENE].tags = knots[ROOT_SCENE].tags[len(global_tags):]
    json_text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    model = _model(p, doc, knots, global_tags, scan.named)
    externals = {fn for c in _containers(doc["root"]) for fn, _ in _calls(c)} - {HOOK, RETURN_HOOK}
    story = InkStory(model, p, digest, json_text, knots, dict(scan.wrappers), global_tags,
                     set(scan.functions), int(doc.get("inkVersion", 0)), externals)
    defs = doc.get("listDefs")
    if isinstance(defs, dict) and defs:  # the interpreter's scope, checked cheaply (decoding waits for play)
        story.vm_refusal = (f"this Ink story uses Ink lists (LIST {', '.join(sorted(defs))}), which worldloom's "
                            f"Ink interpreter does not play (at listDefs)")
        # a bink story built once (kept for the first runtime), so a bad file fails at load time
        story.spare_bink = new_bink_story(story.json_text, str(story.path))
    else:
        story._vm_doc = doc
    return story


def _flow(knots: dict[str, KnotInfo]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Each knot's place and who is there, carried along the diverts from the start.

    A knot with its own ``# scene:`` tag is a new place where only its ``# show:``
    characters are; a knot without one continues the place of the knots that divert
    into it (the first found, breadth first from the start) and keeps everyone
    shown there, plus its own ``# show:`` and minus its ``# hide:`` characters.
    Knots never diverted into continue the knot before them in the file. At play
    time the place still changes only on a ``# scene:`` tag.
    """
    preds: dict[str, list[str]] = {sid: [] for sid in knots}
    for sid, info in knots.items():
        for t in info.targets:
            if t in preds and sid not in preds[t]:
                preds[t].append(sid)
    order: list[str] = []
    seen = {ROOT_SCENE}
    queue = [ROOT_SCENE]
    while queue:
        sid = queue.pop(0)
        order.append(sid)
        for t in knots[sid].targets:
            if t in knots and t not in seen:
                seen.add(t)
                queue.append(t)
    order += [sid for sid in knots if sid not in seen]
    place = {sid: info.location for sid, info in knots.items()}
    present: dict[str, list[str]] = {sid: [] for sid in knots}
    for _ in range(len(knots) + 1):
        changed = False
        for sid in order:
            info = knots[sid]
            if not info.location:
                inherited = next((place[p] for p in preds[sid] if place[p]), "")
                if inherited and not place[sid]:
                    place[sid], changed = inherited, True
            base: list[str] = []
            if not info.location:
                for p in preds[sid]:
                    base += [c for c in present[p] if c not in base]
            new = [c for c in base + [c for c in info.present if c not in base] if c not in info.hidden]
            if new != present[sid]:
                present[sid], changed = new, True
        if not changed:
            break
    last = ""
    for sid in knots:  # not reached from the start: the place of the knot before it in the file
        last = place[sid] = place[sid] or last
    first = next((p for p in place.values() if p), "")
    return {sid: p or first for sid, p in place.items()}, present


def _model(path: Path, doc: dict[str, Any], knots: dict[str, KnotInfo], global_tags: list[str],
           named: dict[str, Any]) -> StoryModel:
    """The synthetic :class:`StoryModel` (see the module docstring)."""
    meta: dict[str, list[str]] = {}
    for t in global_tags:
        key, value = split_tag(t)
        meta.setdefault(key, []).append(value)
    stem = path.name.removesuffix(".json").removesuffix(".ink")
    story_id = slug(meta.get("id", [stem])[0] or stem)
    title = meta.get("title", [""])[0] or stem.replace("_", " ").replace("-", " ").title()
    locations: dict[str, dict[str, str]] = {}
    cast: dict[str, dict[str, Any]] = {}
    items: dict[str, dict[str, Any]] = {}

    def add_cast(name: str, look: str = "") -> str:
        cid = slug(name)
        entry = cast.setdefault(cid, {"name": name.strip()})
        if look:
            entry["look"] = look
        return cid

    for value in meta.get("cast", []):
        who, _, look = value.partition("=") if "=" in value else value.partition(":")
        if who.strip():
            add_cast(who.strip(), look.strip())
    for value in meta.get("item", []) + [v for vs in meta.get("inventory", []) for v in vs.split(",")]:
        name = value.strip()
        if name:
            items.setdefault(slug(name), {"name": name})
    for info in knots.values():
        for tag in info.tags:
            key, value = split_tag(tag)
            if key == "scene" and value:
                lid, fields = location_of(value)
                locations.setdefault(lid, fields)
            elif key == "show" and value:
                for who in value.split(","):
                    if who.strip() and slug(who) not in cast:
                        add_cast(who.strip())
            elif key == "speaker" and value and slug(value) not in cast:
                add_cast(value)
    for name in _speakers(doc["root"]):
        if slug(name) not in cast:
            add_cast(name)
    for c in _containers(doc["root"]):
        for fn, args in _calls(c):
            if fn in ITEM_FUNCTIONS and args and args[0]:
                items.setdefault(slug(args[0]), {"name": args[0]})
            person = args[1] if fn == "give" and len(args) > 1 else (args[0] if fn in CAST_FUNCTIONS and args else None)
            if person and slug(person) not in cast:
                add_cast(person)
    place, present = _flow(knots)
    scenes: dict[str, Any] = {}
    for sid, info in knots.items():
        def call(t: str, sid: str = sid) -> str:  # how sid goes to t: a divert, a tunnel call or a thread
            if sid in knots[t].returns:
                return "->t->" if knots[t].tunnel else "<-"
            return "->"

        choices = [{"id": slug(f"{sid}__{t}"), "text": f"{call(t)} {knots[t].name}", "goto": t}
                   for t in info.targets if t in knots]
        back = "->->" if info.tunnel else "DONE ->"
        choices += [{"id": slug(f"{sid}__back__{t}"), "text": f"{back} {knots[t].name}", "goto": t}
                    for t in info.returns if t in knots]
        scene: dict[str, Any] = {"title": title if sid == ROOT_SCENE else info.title, "location": place[sid],
                                 "present": present[sid], "choices": choices}
        if info.chunk is not None:
            scene["chunk"] = info.chunk
        if info.ending:
            scene["ending"] = info.ending
        scenes[sid] = scene
    for scene in scenes.values():
        if not scene["location"]:  # no # scene: tag anywhere
            scene["location"] = "ink"
            locations.setdefault("ink", {"name": title, "prompt": ""})
    inventory = [slug(v.strip()) for vs in meta.get("inventory", []) for v in vs.split(",") if v.strip()]
    variables = {name: {"type": kind, "default": default} for name, (kind, default) in _variables(named).items()
                 if ID_RE.match(name)}
    data = {"id": story_id, "title": title, "start": ROOT_SCENE, "variables": variables, "items": items,
            "inventory": inventory, "cast": cast, "locations": locations, "scenes": scenes,
            "world": {"style": meta.get("style", [""])[0]}}
    try:
        return StoryModel.model_validate(data)
    except ValidationError as exc:
        first_error = exc.errors()[0]
        field_name = ".".join(str(x) for x in first_error["loc"])
        raise StoryError(f"cannot map this Ink story: {field_name}: {first_error['msg']}", where=str(path)) from exc


__all__ = ["DIRECTIVES", "HOOK", "RETURN_HOOK", "TUNNEL_MARK", "InkStory", "KnotInfo", "ROOT_SCENE", "chunk_hint",
           "is_ink_path", "load_ink", "location_of", "new_bink_story", "read_ink_json", "slug", "split_tag"]

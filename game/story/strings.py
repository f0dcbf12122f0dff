"""The story's string table: a stable id for every player-visible string, gettext catalogues, lookup.

Ids (``msgctxt`` in the catalogue; the source text is the ``msgid``):

* scene lines ``<scene>.l<n>`` or their own ``id``; reaction lines ``<base>.say<n>`` (the
  runtime's line ids: ``<choice id>.say0``, ``give.<who>.<key>.say0``, a scene's own gift
  answer ``<scene>.give.<who>.<key>.say0``...: :func:`reaction_base`), a quest stage's lines
  ``quest.<id>.<stage>.say<n>``;
* ``choice.<id>`` choice texts, ``exit.<scene>.<dir>`` exit labels, ``scene.<id>.title``
  scene titles, ``story.title``, ``item.<id>``, ``cast.<id>``, ``location.<id>``, ``role.<id>``
  and ``quest.<id>`` names, ``role.<id>.text`` and ``quest.<id>.<stage>`` texts;
* ``builtin.*``: the runtime's own refusals and its default gift line.

:func:`write_catalogue` writes (or updates) a PO file with ``polib``: translations of
unchanged strings are kept; a string whose source changed keeps its old translation
marked ``fuzzy`` with the old source as ``previous msgid`` (stale); entries the story no
longer has become obsolete (``#~``). :class:`Translation` reads one back for play:
:meth:`Translation.get` by id, :meth:`Translation.text` by source text; an untranslated,
fuzzy or missing string falls back to the source. :func:`localised` gives the story the
names and titles of its catalogue (what the window and the events show). Catalogues live in
``<story folder>/locale/<lang>.po``; :func:`language` is the language play uses
(``$WORLDLOOM_LANG``, which ``worldloom play --lang`` sets).
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import polib

from game.errors import InputError, StoryError
from game.story.ink import ROOT_SCENE, InkStory
from game.story.story import Story
from game.words import opening


class _Named(Protocol):
    """A model with a display ``name`` (an item, a cast member, a location)."""

    name: str

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any: ...


#: Environment variable naming the language to play (``fr``); ``worldloom play --lang`` sets it.
LANG_ENV = "WORLDLOOM_LANG"
#: The runtime's own player-visible strings, by id.
BUILTINS = {
    "builtin.already": "You have already done that.",
    "builtin.nothing": "Nothing happens.",
    "builtin.give": "{character} looks at the {item}, unsure what to make of it.",
    "builtin.you": "You",  # the speaker name of the player's own lines (Session.speaker_name)
}


def string_table(story: Story) -> dict[str, str]:
    """Every player-visible string of ``story``: id -> source text, in story order.

    An Ink story gives its text literals instead (:func:`ink_strings`).
    """
    if isinstance(story, InkStory):
        return {**ink_strings(story), **BUILTINS}
    m = story.model
    out: dict[str, str] = {"story.title": m.title}
    for sid, sc in m.scenes.items():
        if sc.title:
            out[f"scene.{sid}.title"] = sc.title
        if sc.ending:
            out[f"scene.{sid}.ending"] = ending_title(sc.ending)
        for i, line in enumerate(sc.lines):
            out[story.line_id(sid, i, line)] = line.text
        for c in sc.choices:
            out[f"choice.{c.id}"] = c.text
        for d, x in sc.exits.items():
            if x.label:
                out[f"exit.{sid}.{d}"] = x.label
    for path, r in story.reactions():
        base = reaction_base(path, getattr(r, "id", ""))
        for i, line in enumerate(r.say):
            out[line.id or f"{base}.say{i}"] = line.text
    for iid, item in m.items.items():
        out[f"item.{iid}"] = item.name
    for cid, who in m.cast.items():
        out[f"cast.{cid}"] = who.name
    for lid, loc in m.locations.items():
        out[f"location.{lid}"] = loc.name
    for rid, role in m.roles.items():
        out[f"role.{rid}"] = role.name
        out[f"role.{rid}.text"] = role.text
    for qid, quest in m.quests.items():
        out[f"quest.{qid}"] = quest.name
        for stage_id, stage in quest.stages.items():
            out[f"quest.{qid}.{stage_id}"] = stage.text
            for i, line in enumerate(stage.say):
                out[line.id or f"quest.{qid}.{stage_id}.say{i}"] = line.text
    out.update(BUILTINS)
    return {k: v for k, v in out.items() if v}


def ink_strings(story: InkStory) -> dict[str, str]:
    """The lines and choice texts of a compiled Ink story's knots: ``<scene>.s<n>`` -> text.

    Ink keeps a line or a choice as the pieces it is made of. A line made of text,
    variables printed into it (``Hello {name}.``) and glue (``<>``: the next line goes on
    this one) is one string, whole, each variable kept as ``{name}`` (so a translator
    moves it where the language needs it); play finds the line's translation by matching
    bink's output against it (:meth:`Translation.line`). A line with anything else inside
    it (a condition, a sequence, an expression printed) gives each text piece as its own
    string, looked up by its text: such a line shows in the source language unless it is
    one piece. Tags are left out; ``Name:`` speakers are kept.
    """
    doc = json.loads(story.json_text)
    root = doc.get("root")
    named = root[-1] if isinstance(root, list) and root and isinstance(root[-1], dict) else {}
    out: dict[str, str] = {}
    for sid, info in story.knots.items():
        container = root[0] if sid == ROOT_SCENE and isinstance(root, list) and root else named.get(info.name)
        seen: dict[str, None] = {}
        _ink_texts(container, seen)
        for n, text in enumerate(seen):
            out[f"{sid}.s{n}"] = text
    return out


#: A variable printed into an Ink line, as the string table writes it: ``{name}``.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)\}")


def _printed_var(node: list[Any], i: int) -> str:
    """The variable name if ``node[i:i + 4]`` prints one (``ev {"VAR?": x} out /ev``), else ``""``."""
    part = node[i:i + 4]
    if len(part) == 4 and part[0] == "ev" and isinstance(part[1], dict) and set(part[1]) == {"VAR?"} \
            and part[2] == "out" and part[3] == "/ev":
        return str(part[1]["VAR?"])
    return ""


def _ink_texts(node: Any, out: dict[str, None]) -> None:
    """Collect the lines of the container ``node`` (see :func:`ink_strings`): whole lines of
    text, printed variables and glue as one string each, other lines piece by piece."""
    if isinstance(node, dict):
        for value in node.values():
            _ink_texts(value, out)
        return
    if not isinstance(node, list):
        return
    pieces: list[str] = []
    whole, glued, in_tag = True, False, False

    def add(text: str) -> None:
        text = " ".join(text.split())
        if text and any(ch.isalpha() for ch in PLACEHOLDER.sub("", text)):
            out.setdefault(text, None)

    def flush() -> None:
        nonlocal whole, glued
        if whole:
            add("".join(pieces))
        else:
            for p in pieces:
                if not PLACEHOLDER.fullmatch(p):
                    add(p)
        pieces.clear()
        whole, glued = True, False

    i = 0
    while i < len(node):
        item = node[i]
        name = "" if in_tag else _printed_var(node, i)
        if in_tag:
            in_tag = item != "/#"
        elif name:
            pieces.append("{" + name + "}")
            i += 4
            continue
        elif item == "#":
            in_tag = True
        elif item == "\n":
            if glued:
                glued = False
            else:
                flush()
        elif item == "<>":
            glued = True
        elif isinstance(item, str) and item.startswith("^"):
            pieces.append(item[1:])
            glued = glued and not item[1:].strip()
        elif item in ("str", "/str"):  # a choice's text: a string of its own
            flush()
        elif item == "out" or isinstance(item, list):  # something else printed inside the line
            whole = False
            _ink_texts(item, out)
        elif isinstance(item, dict):
            _ink_texts(item, out)
        i += 1
    flush()


def reaction_base(path: tuple[str | int, ...], own_id: str) -> str:
    """The prefix the runtime gives a reaction's lines (see :meth:`StoryRuntime.react`): a gift's
    ``give.<who>.<key>`` (story-wide) or ``<scene>.give.<who>.<key>`` (a scene's own), an exit's
    ``<scene>.exit_<dir>``, else the reaction's own id (``own_id``)."""
    if path[0] == "scenes" and path[2] == "exits":
        return f"{path[1]}.exit_{path[3]}"
    if path[0] == "scenes" and path[2] == "on_give":  # a scene's own answer to a gift
        return f"{path[1]}.give.{path[3]}.{path[4]}"
    if path[0] == "on_give":
        return f"give.{path[1]}.{path[2]}"
    return own_id


#: A language code: a BCP 47 tag or a gettext locale name (``fr``, ``pt_BR``, ``zh-Hant-TW``), at most
#: 35 characters (RFC 5646 section 4.4.1's minimum buffer); a POSIX ``.encoding``/``@modifier`` tail
#: (``fr_FR.UTF-8``, as ``$LANG`` holds it) is dropped first.
_LANG_CODE = re.compile(r"[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8})*")
_POSIX_TAIL = re.compile(r"[.@].*\Z", re.DOTALL)


def language_code(lang: str) -> str | None:
    """``lang`` as a language code (``fr_FR.UTF-8`` -> ``fr_FR``), or ``None`` when it is not one
    (a path such as ``../x``, an empty or overlong name): never a file name outside ``locale/``."""
    code = _POSIX_TAIL.sub("", lang.strip())
    return code if len(code) <= 35 and _LANG_CODE.fullmatch(code) else None


def catalogue_path(story: Story, lang: str) -> Path:
    """``<story folder>/locale/<lang>.po`` (``lang`` as :func:`language_code` reads it).

    Raises:
        InputError: ``lang`` is not a language code (it would name a file elsewhere, or one no
            system can open).
    """
    code = language_code(lang)
    if code is None:
        raise InputError(f"{lang[:60]!r} is not a language code", where="--lang / $" + LANG_ENV,
                         hint="a code such as fr, de, pt_BR or zh-Hant")
    return story.folder / "locale" / f"{code}.po"


def write_catalogue(story: Story, path: Path, lang: str = "") -> tuple[int, int, int]:
    """Write or update the PO catalogue at ``path``: ``(strings, kept translations, stale)``.

    Raises:
        StoryError: the existing file is not a readable PO catalogue, or cannot be written.
    """
    table = string_table(story)
    old = _read_po(path) if path.is_file() else None
    po = polib.POFile()
    po.metadata = {"Project-Id-Version": story.id, "Language": lang, "MIME-Version": "1.0",
                   "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit"}
    kept = stale = 0
    previous = {e.msgctxt: e for e in old if not e.obsolete} if old is not None else {}
    for sid, text in table.items():
        entry = polib.POEntry(msgctxt=sid, msgid=text, msgstr="")
        was = previous.pop(sid, None)
        if was is not None and was.msgstr:
            entry.msgstr = was.msgstr
            if was.msgid != text:
                entry.flags.append("fuzzy")
                entry.previous_msgid = was.msgid
                stale += 1
            elif "fuzzy" in was.flags:
                entry.flags.append("fuzzy")
                entry.previous_msgid = was.previous_msgid
                stale += 1
            else:
                kept += 1
        po.append(entry)
    for was in previous.values():  # no longer in the story
        was.obsolete = True
        po.append(was)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        po.save(str(path))
    except OSError as exc:
        raise StoryError(f"cannot write the catalogue: {exc}", where=str(path)) from exc
    return len(table), kept, stale


def _read_po(path: Path) -> polib.POFile:
    try:
        return polib.pofile(str(path))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise StoryError(f"not a readable PO catalogue: {exc}", where=str(path)) from exc


@dataclass(frozen=True)
class CatalogueCheck:
    """What a catalogue lacks against its story: ids ``missing`` (no translation), ``stale``
    (translated from an older source text, or marked fuzzy) and ``unused`` (not in the story);
    ``lines``: id -> the line of its entry in the file (where polib read it)."""

    missing: list[str]
    stale: list[str]
    unused: list[str]
    lines: dict[str, int] = field(default_factory=dict)


#: A PO line: a keyword and its string, a continuation string, a comment, or blank (GNU gettext's PO grammar).
_PO_STRING = r'"(?:[^"\\]|\\["\\abfnrtv0-7x?])*"'
_PO_KEYWORD = re.compile(rf"(msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?)\s+({_PO_STRING})\s*")
_PO_CONTINUED = re.compile(rf"{_PO_STRING}\s*")


def po_syntax(path: Path) -> list[tuple[int, str]]:
    """Syntax problems of the PO file at ``path``: ``(line, what)``, 1-based (``[]``: none).

    ``polib`` reads past some of these (a string left open is cut short), so they are
    found here line by line: a line that is not a keyword with one quoted string, a
    quoted continuation, a comment or blank; a string continued with no keyword before
    it; an entry with a ``msgstr`` and no ``msgid`` or the other way; the same
    ``msgctxt``/``msgid`` twice.

    Raises:
        StoryError: the file cannot be read as UTF-8.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StoryError(f"not a readable PO catalogue: {exc}", where=str(path)) from exc
    out: list[tuple[int, str]] = []
    seen: dict[tuple[str, str], int] = {}
    entry: dict[str, tuple[int, str]] = {}  # keyword -> (line, first string) of the entry being read
    last = ""

    def close() -> None:
        if not entry:
            return
        if "msgid" in entry and not any(k.startswith("msgstr") for k in entry):
            out.append((entry["msgid"][0], "msgid with no msgstr"))
        elif "msgid" not in entry:
            first = min(n for n, _ in entry.values())
            out.append((first, "msgstr with no msgid before it"))
        else:
            key = (entry.get("msgctxt", (0, ""))[1], entry["msgid"][1])
            n = entry["msgid"][0]
            if key in seen and key != ("", ""):
                out.append((n, f"the same msgctxt/msgid as line {seen[key]}"))
            seen.setdefault(key, n)
        entry.clear()

    broken = False  # the entry being read had a syntax error: its other checks would only repeat it
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            if not line or line.startswith("#~") or entry:
                if broken:
                    entry.clear()
                close()
                last, broken = "", False
            continue
        m = _PO_KEYWORD.fullmatch(line)
        if m:
            word = m.group(1)
            if word in ("msgctxt", "msgid") and any(k.startswith("msgstr") for k in entry):
                close()
            if word in entry:
                out.append((n, f"a second {word} in one entry"))
            entry[word] = (n, m.group(2))
            last = word
        elif _PO_CONTINUED.fullmatch(line):
            if not last:
                out.append((n, "a quoted string with no msgid/msgstr before it"))
            else:
                was = entry[last]
                entry[last] = (was[0], was[1] + line)
        elif line.startswith(('"', "msg")):
            out.append((n, "a string not closed, or text after it (a quote inside must be written \\\")"))
            broken = True
        else:
            out.append((n, f"not PO syntax: {line[:40]!r}"))
            broken = True
    if broken:
        entry.clear()
    close()
    return out


def placeholder_problems(path: Path) -> list[tuple[int, str, str]]:
    """Translations that drop or invent a ``{name}`` placeholder: ``(line, id, what)``.

    A placeholder of the source missing from the translation loses its value on screen;
    one the source does not have is shown raw (``{nmae}``). Untranslated and fuzzy
    entries are not checked.

    Raises:
        StoryError: not a readable PO catalogue.
    """
    out: list[tuple[int, str, str]] = []
    for e in _read_po(path):
        if e.obsolete or not e.msgstr or "fuzzy" in e.flags:
            continue
        source, target = set(PLACEHOLDER.findall(e.msgid)), set(PLACEHOLDER.findall(e.msgstr))
        sid = e.msgctxt or e.msgid
        for name in sorted(source - target):
            out.append((e.linenum, sid, f"the translation lacks {{{name}}}"))
        for name in sorted(target - source):
            out.append((e.linenum, sid, f"the translation has {{{name}}}, which the source does not"))
    return out


def check_catalogue(story: Story, path: Path) -> CatalogueCheck:
    """Compare the catalogue at ``path`` with the story's string table.

    Raises:
        StoryError: not a readable PO catalogue.
    """
    table = string_table(story)
    po = _read_po(path)
    have = {e.msgctxt: e for e in po if e.msgctxt and not e.obsolete}
    missing = [k for k in table if k not in have or not have[k].msgstr]
    stale = [k for k in table if k in have and have[k].msgstr and (have[k].msgid != table[k]
                                                                   or "fuzzy" in have[k].flags)]
    unused = sorted(k for k in have if k not in table)
    return CatalogueCheck(missing, stale, unused, {k: e.linenum for k, e in have.items()})


class Translation:
    """A catalogue for play: translations by id and by source text (fuzzy ones left out)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.by_id: dict[str, tuple[str, str]] = {}  # id -> (source it translates, translation)
        self.by_text: dict[str, str] = {}
        for e in _read_po(path):
            if e.obsolete or not e.msgstr or "fuzzy" in e.flags:
                continue
            if e.msgctxt:
                self.by_id[e.msgctxt] = (e.msgid, e.msgstr)
            self.by_text.setdefault(e.msgid, e.msgstr)
        #: ``(pattern, variable names, translation)`` of entries with variables, built on first use.
        self._templates: list[tuple[re.Pattern[str], list[str], str]] | None = None

    def get(self, string_id: str, source: str) -> str:
        """The translation of string ``string_id`` whose source is ``source``, else ``source``.

        A translation made for another source text (the story changed since) is not used;
        a string with no entry of its own is looked up by its text.
        """
        found = self.by_id.get(string_id)
        if found is None:
            return self.by_text.get(source, source)
        return found[1] if found[0] == source else source

    def text(self, source: str) -> str:
        """The translation of a source text (the first entry with that text), else the text itself."""
        return self.by_text.get(source, source)

    def line(self, shown: str) -> str:
        """The translation of a line as Ink shows it: by its text, else by a whole-line entry
        with variables (``Hello {name}.``, see :func:`ink_strings`) whose text around the
        variables matches, with the values shown put into the translation; else ``shown``."""
        found = self.by_text.get(shown)
        if found is not None:
            return found
        if self._templates is None:
            self._templates = []
            for source, target in self.by_text.items():
                parts = PLACEHOLDER.split(source)
                if len(parts) > 1:
                    pattern = "".join(re.escape(p) if k % 2 == 0 else "(.+?)" for k, p in enumerate(parts))
                    self._templates.append((re.compile(pattern, re.S), parts[1::2], target))
        flat = " ".join(shown.split())
        for rx, names, target in self._templates:
            m = rx.fullmatch(flat)
            if m:
                values: dict[str, str] = {}
                for name, value in zip(names, m.groups(), strict=True):
                    values.setdefault(name, value)
                return _fill(target, values)
        return shown


def ending_title(ending: str) -> str:
    """How an ending's id is shown where nothing names it: each word's first letter upper-cased
    (``the_light_holds`` -> ``The Light Holds``, ``The Letter`` as it is), and a lone ``s`` between two
    words read as a possessive (``brann_s_share`` -> ``Brann's Share``, not ``Brann S Share``)."""
    words = [w for w in ending.replace("_", " ").split(" ") if w]
    out: list[str] = []
    for i, word in enumerate(words):
        if word.lower() == "s" and out and i < len(words) - 1:
            out[-1] += "'s"
        else:
            out.append(opening(word))
    return " ".join(out)


def ending_name(story: Story, scene: str, ending: str) -> str:
    """The shown name of ending ``ending`` (of scene ``scene``), on the window's ending card and in
    headless play and replay: the catalogue's ``scene.<id>.ending`` where :func:`localised` gave
    ``story`` one, else the scene's authored ``title`` (in the play language; the location's name is
    no ending's title), else :func:`ending_title` (``brann_s_share`` -> "Brann's Share")."""
    if story.ending_names.get(scene):
        return story.ending_names[scene]
    sc = story.model.scenes.get(scene)
    loc = story.model.locations.get(sc.location) if sc is not None else None
    if sc is not None and sc.title and sc.title != (loc.name if loc is not None else sc.location):
        return sc.title
    return ending_title(ending)


def _fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{name}`` of ``values`` replaced by its value (others left as they are)."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def localised(story: Story, translation: Translation | None) -> Story:
    """``story`` with the names and titles ``translation`` has: the story title, scene titles,
    ending names (:attr:`Story.ending_names`; the ending itself stays the id events carry),
    choice texts, exit labels, item, character, location, role and quest names, role and quest
    stage texts (each by its id, so two equal source texts may translate apart).

    Lines keep their source text (the runtime translates each as it shows it, by id: a line
    shown by the runtime may be one of several that share a text). Conditions, effects, ids
    and the digest are unchanged, so saves and transcripts fit either language.
    Returns ``story`` itself without a translation; else a shallow copy (the compiled
    expressions are shared) with a new model.
    """
    if translation is None:
        return story
    m = story.model
    get = translation.get

    def named(table: Mapping[str, _Named], prefix: str) -> dict[str, Any]:
        return {k: v.model_copy(update={"name": get(f"{prefix}.{k}", v.name)}) for k, v in table.items()}

    scenes = {}
    for sid, sc in m.scenes.items():
        exits = {d: x.model_copy(update={"label": get(f"exit.{sid}.{d}", x.label)}) if x.label else x
                 for d, x in sc.exits.items()}
        choices = tuple(c.model_copy(update={"text": get(f"choice.{c.id}", c.text)}) for c in sc.choices)
        scenes[sid] = sc.model_copy(update={"title": get(f"scene.{sid}.title", sc.title) if sc.title else "",
                                            "exits": exits, "choices": choices})
    roles = {k: r.model_copy(update={"name": get(f"role.{k}", r.name), "text": get(f"role.{k}.text", r.text)})
             for k, r in m.roles.items()}
    quests = {k: q.model_copy(update={"name": get(f"quest.{k}", q.name), "stages": {
        s: st.model_copy(update={"text": get(f"quest.{k}.{s}", st.text)}) for s, st in q.stages.items()}})
        for k, q in m.quests.items()}
    out = copy.copy(story)
    out.ending_names = {sid: get(f"scene.{sid}.ending", ending_title(sc.ending))
                        for sid, sc in m.scenes.items() if sc.ending}
    out.model = m.model_copy(update={
        "title": get("story.title", m.title), "scenes": scenes, "items": named(m.items, "item"),
        "cast": named(m.cast, "cast"), "locations": named(m.locations, "location"), "roles": roles,
        "quests": quests})
    return out


#: English names of common languages by ISO 639-1 code (CLDR's English display names), for
#: telling a dialogue model which language to answer in; another code is named as it is.
LANGUAGE_NAMES = {
    "ar": "Arabic", "bn": "Bengali", "ca": "Catalan", "cs": "Czech", "cy": "Welsh", "da": "Danish",
    "de": "German", "el": "Greek", "en": "English", "es": "Spanish", "fa": "Persian", "fi": "Finnish",
    "fr": "French", "ga": "Irish", "he": "Hebrew", "hi": "Hindi", "hu": "Hungarian", "id": "Indonesian",
    "is": "Icelandic", "it": "Italian", "ja": "Japanese", "ko": "Korean", "nb": "Norwegian Bokmål",
    "nl": "Dutch", "no": "Norwegian", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian",
    "sv": "Swedish", "sw": "Swahili", "th": "Thai", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu",
    "vi": "Vietnamese", "zh": "Chinese",
}


def language_fallbacks(code: str) -> tuple[str, ...]:
    """The codes to look up for language ``code``, most specific first: ``fr_CA`` and ``fr-CA``
    -> ``("fr_CA", "fr")``, ``fr`` -> ``("fr",)``, ``""`` -> ``()`` (BCP 47 / gettext: a regional
    variant falls back to its base language); ``()`` too for what is not a language code
    (:func:`language_code`)."""
    lang = language_code(code) if code else None
    if lang is None:
        return ()
    return tuple(dict.fromkeys((lang, lang.replace("-", "_").split("_")[0])))


def language_file(directory: Path, lang: str, suffix: str) -> tuple[str, Path] | None:
    """The first ``<directory>/<code><suffix>`` that exists for ``lang``, most specific code first
    (:func:`language_fallbacks`: ``fr_CA`` finds ``fr_CA.po``, else ``fr.po``): ``(code, path)``, or
    ``None`` when there is none (or ``lang`` is ``""``)."""
    for code in language_fallbacks(lang):
        path = directory / f"{code}{suffix}"
        if path.is_file():
            return code, path
    return None


def language_name(code: str) -> str:
    """The English name of language ``code`` (``fr``, ``pt_BR``, ``pt-BR`` -> French, Portuguese),
    else the code itself; ``""`` for ``""``."""
    codes = language_fallbacks(code)
    return LANGUAGE_NAMES.get(codes[-1].lower(), code) if codes else code


#: Scripts written right to left, by the language codes that use them (Unicode CLDR).
RTL_LANGUAGES = frozenset({"ar", "fa", "he", "ur", "yi", "ps", "sd", "ug", "dv", "ckb"})


def language() -> str:
    """The language to play: ``$WORLDLOOM_LANG`` (``""``: the story's own)."""
    return os.environ.get(LANG_ENV, "").strip()


def translation_for(story: Story, lang: str | None = None) -> Translation | None:
    """The story's catalogue for ``lang`` (default :func:`language`), or ``None`` (none, or no file).

    Raises:
        StoryError: the catalogue exists but is not readable PO.
    """
    lang = language() if lang is None else lang
    if not lang:
        return None
    path = catalogue_path(story, lang)
    return Translation(path) if path.is_file() else None


__all__ = ["BUILTINS", "LANGUAGE_NAMES", "LANG_ENV", "RTL_LANGUAGES", "CatalogueCheck", "Translation",
           "catalogue_path", "check_catalogue", "ending_name", "ending_title", "language", "language_code",
           "language_file", "placeholder_problems", "po_syntax", "language_name", "localised", "reaction_base",
           "string_table", "translation_for", "write_catalogue"]

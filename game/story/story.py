"""`Story`: the immutable, validated story with its expressions compiled."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from game.story.expr import Condition, Effect, compile_condition, compile_effect
from game.story.schema import Line, Reaction, Scene, StoryModel
from game.story.yamlio import Marked, Path_


class Story:
    """A loaded story: read-only data plus compiled conditions and effects.

    Attributes:
        model: the validated :class:`StoryModel`.
        folder: the story folder (assets are relative to it).
        digest: SHA-256 of the sources (saves record it).
        marked: the YAML with line marks, or ``None`` when loaded from the cache.
    """

    _reactions: list[tuple[Path_, Reaction]] | None
    _lines: list[tuple[Path_, Line]] | None

    def __init__(self, model: StoryModel, folder: Path, digest: str, marked: Marked | None,
                 compile_now: bool = True, marks: Callable[[], Marked] | None = None) -> None:
        self.model = model
        self.folder = folder
        self.digest = digest
        self.marked = marked
        #: Reads the line marks on first need (a story from the cache has none until a ``where``).
        self._marks = marks
        self._conditions: dict[str, Condition] = {}
        self._effects: dict[str, Effect] = {}
        #: Scene id -> its ending's shown name in the play language (set by ``strings.localised``;
        #: empty: each shown as ``strings.ending_title`` makes it).
        self.ending_names: dict[str, str] = {}
        if marked is not None and compile_now:
            self.compile_all()

    @property
    def id(self) -> str:
        return self.model.id

    def where(self, path: Path_) -> str:
        """``file:line:col`` of a path in the source.

        A story loaded from the cache reads its marks (parses the YAML once) on the first
        call when it was given a way to (``marks``); without one, the story file's path.
        """
        if self.marked is None and self._marks is not None:
            read, self._marks = self._marks, None
            self.marked = read()
        return self.marked.where(path) if self.marked else f"{self.folder / 'story.yaml'}"

    def scene(self, scene_id: str) -> Scene:
        """The scene ``scene_id``. Raises ``KeyError`` if absent."""
        return self.model.scenes[scene_id]

    def condition(self, src: str, where: str = "") -> Condition:
        """The compiled condition for ``src`` (compiled once, then memoised)."""
        c = self._conditions.get(src)
        if c is None:
            c = self._conditions[src] = compile_condition(src, where)
        return c

    def effect(self, src: str, where: str = "") -> Effect:
        """The compiled effect for ``src`` (compiled once, then memoised)."""
        e = self._effects.get(src)
        if e is None:
            e = self._effects[src] = compile_effect(src, where)
        return e

    @property
    def model(self) -> StoryModel:
        """The validated story model (setting another drops what was derived from the old one)."""
        return self._model

    @model.setter
    def model(self, model: StoryModel) -> None:
        self._model = model
        self._reactions = None
        self._lines = None

    def reactions(self) -> Iterator[tuple[Path_, Reaction]]:
        """Every choice, action, exit and gift reaction with its source path (listed once, then reused)."""
        if self._reactions is None:
            self._reactions = list(self._walk_reactions())
        return iter(self._reactions)

    def _walk_reactions(self) -> Iterator[tuple[Path_, Reaction]]:
        for sid, scene in self.model.scenes.items():
            for i, c in enumerate(scene.choices):
                yield ("scenes", sid, "choices", i), c
            for i, a in enumerate(scene.actions):
                yield ("scenes", sid, "actions", i), a
            for d, x in scene.exits.items():
                yield ("scenes", sid, "exits", d), x
            for cid, table in scene.on_give.items():
                for tag, r in table.items():
                    yield ("scenes", sid, "on_give", cid, tag), r
        for cid, table in self.model.on_give.items():
            for tag, r in table.items():
                yield ("on_give", cid, tag), r

    def lines(self) -> Iterator[tuple[Path_, Line]]:
        """Every line (scene entry lines and reaction lines) with its source path (listed once, then reused)."""
        if self._lines is None:
            self._lines = list(self._walk_lines())
        return iter(self._lines)

    def _walk_lines(self) -> Iterator[tuple[Path_, Line]]:
        for sid, scene in self.model.scenes.items():
            for i, line in enumerate(scene.lines):
                yield ("scenes", sid, "lines", i), line
        for path, r in self.reactions():
            for i, line in enumerate(r.say):
                yield (*path, "say", i), line

    def compile_all(self) -> None:
        """Compile every condition and effect now (errors name file:line).

        Each distinct text compiles once, at its first place (its ``where`` is built only then:
        a big story repeats most of its expressions).

        Raises:
            game.errors.ExpressionError: the first bad expression.
        """
        conditions, effects = self._conditions, self._effects
        for path, r in self.reactions():
            if r.if_ and r.if_ not in conditions:
                self.condition(r.if_, self.where((*path, "if")))
            for i, e in enumerate(r.do):
                if e not in effects:
                    self.effect(e, self.where((*path, "do", i)))
        for sid, scene in self.model.scenes.items():
            for i, e in enumerate(scene.on_enter):
                if e not in effects:
                    self.effect(e, self.where(("scenes", sid, "on_enter", i)))
        for path, line in self.lines():
            if line.if_ and line.if_ not in conditions:
                self.condition(line.if_, self.where((*path, "if")))

    def line_id(self, scene_id: str, index: int, line: Line) -> str:
        """Stable id of a scene's entry line: its own ``id`` or ``<scene>.l<index>``."""
        return line.id or f"{scene_id}.l{index}"

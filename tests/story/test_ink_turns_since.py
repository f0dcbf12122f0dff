"""``TURNS_SINCE(-> knot)`` and ``READ_COUNT(-> knot)`` through ``InkRuntime`` on both engines, as Ink
documents them: -1 before the knot is ever visited, 0 in the turn it is visited, then one more for
each choice taken; the read count the knot's own. Before, the divert target named the hook knot
worldloom puts before each knot (``__wl_enter__den``), which has no counts: a runtime error on both."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from game.state import Choose
from game.story.ink import load_ink
from game.story.ink_runtime import InkRuntime

SOURCE = """\
-> hub
=== hub ===
Hub: {TURNS_SINCE(-> den)} since den, read {READ_COUNT(-> den)}.
+ [Go to den] -> den
+ [Wait] -> hub
=== den ===
In den: {TURNS_SINCE(-> den)}.
+ [Back] -> hub
"""
#: den, back, wait, wait, den: what Ink's semantics give at each step.
PICKS = [0, 0, 1, 1, 0]
EXPECTED = ["-1 since den, read 0.", "In den: 0.", "1 since den, read 1.", "2 since den, read 1.",
            "3 since den, read 1.", "In den: 0."]


@pytest.fixture(scope="module")
def compiled(ink_compile: Callable[[Path, Path], Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("turns")
    (folder / "ts.ink").write_text(SOURCE, encoding="utf-8")
    return ink_compile(folder / "ts.ink", folder / "ts.ink.json")


@pytest.mark.parametrize("engine", ["vm", "bink"])
def test_turns_since_a_knot_counts_choices_from_its_visit(compiled: Path, engine: str) -> None:
    rt = InkRuntime(load_ink(compiled), engine=engine)
    state = rt.new_state(0)
    texts = [e.text for e in rt.begin(state) if e.kind == "line"]
    for k in PICKS:
        texts += [e.text for e in rt.apply(state, Choose(choice_id=rt.available_choices(state)[k].id))
                  if e.kind == "line"]
    assert [t.removeprefix("Hub: ") for t in texts] == EXPECTED


def test_the_compiled_story_itself_gives_the_same_on_bink(compiled: Path) -> None:
    bink_story = pytest.importorskip("bink.story")
    s = bink_story.Story(compiled.read_text(encoding="utf-8-sig"))
    texts = []
    for k in [*PICKS, None]:
        while s.can_continue():
            texts.append(s.cont().strip().removeprefix("Hub: "))
        if k is not None:
            s.choose_choice_index(k)
    assert texts == EXPECTED  # Ink's own runtime, with no hook knots: the reference
    assert json.loads(compiled.read_text(encoding="utf-8-sig"))["inkVersion"] >= 20

"""A hot reload (``Session.reload()``, not strict) refuses every lint error that would stop play with an
error (each code's ``breaks_play``), the old story playing on; its refused set is that data, not a hand
list (WL040-WL049 and WL024 were missing from it)."""

from __future__ import annotations

import os
from pathlib import Path

from game.session import Session
from game.session.reload import FATAL_CODES
from game.state import Choose
from game.story.diagnostics import CODES

GOOD = """id: t
title: T
start: a
locations: {here: {name: Here}}
scenes:
  a: {location: here, lines: [Here.], choices: [{id: c, text: go, goto: a}]}
"""


def _write(path: Path, text: str) -> None:
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 10_000_000, before + 10_000_000))  # a visibly newer mtime


def test_the_refused_codes_are_the_codes_that_break_play() -> None:
    assert FATAL_CODES == {c.code for c in CODES.values() if c.breaks_play}
    # an undefined timer, quest, role or need/goal raises when its effect runs (game.story.runtime)
    assert {"WL040", "WL041", "WL042", "WL049"} <= FATAL_CODES
    assert all(CODES[code].severity == "error" for code in FATAL_CODES)


def test_every_error_that_breaks_play_is_refused_on_reload(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    _write(folder / "story.yaml", GOOD)
    s = Session.from_path(folder, "null", save_dir=tmp_path / "saves")
    s.start()
    old_story = s.story
    accepted = []
    for c in (c for c in CODES.values() if c.breaks_play):
        code = c.code
        for name, text in c.files:
            _write(folder / name, text)
        _write(folder / "story.yaml", c.example)
        result = s.reload()
        if result.ok or code not in {d.code for d in result.diagnostics if d.severity == "error"}:
            accepted.append(code)
        for name, _ in c.files:
            (folder / name).unlink()
    assert accepted == [], f"reloaded onto a story that breaks play: {accepted}"
    assert s.story is old_story
    assert [e.text for e in s.submit(Choose(choice_id="c")).events if e.kind == "line"] == ["Here."]

"""What an Ink resync defers (a warning and the knot's lines when a state's knot changed since it
was saved) belongs to the turn the player takes on that state, not to the copy the session's
prepare phase runs the rules on first (``Session._prepare``: a step that prepares, such as a
character writing her reply, sees the turn ahead on a copy, off the lock).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from game.session import Session
from game.state import AnyIntent, Choose, Event
from game.story.loader import load_story

InkCompile = Callable[[Path, Path], Path]

ROAD = """\
-> camp

=== camp ===
# scene: camp
The fire crackles.
+ [Walk north] -> north

=== north ===
# scene: north road
The wind is cold.
+ [Back to camp] -> camp
+ [Wait] -> north
"""
#: ``north`` gains a choice: a state saved there no longer fits (its shape changed).
EDITED = ROAD.replace("+ [Wait] -> north", "+ [Wait] -> north\n+ [Sing] -> north")


class Ahead:
    """A step that prepares every choice (as a character writing ahead would), and records what it saw."""

    def __init__(self) -> None:
        self.seen: list[list[Event]] = []

    def prepares(self, intent: AnyIntent) -> bool:
        return isinstance(intent, Choose)

    def prepare(self, host: object, intent: AnyIntent, events: list[Event]) -> None:
        self.seen.append(list(events))

    def on_turn(self, host: object, intent: AnyIntent, events: list[Event]) -> list[Event]:
        return []


def turn_after_an_edit(ink_compile: InkCompile, folder: Path, steps: list[Ahead]) -> tuple[list[Event], Session]:
    """Play to a checkpoint in ``north``, edit ``north``, reload, roll back to it, look at the
    choices (the resync happens there) and take one: that turn's events."""
    folder.mkdir()
    source, compiled = folder / "road.ink", folder / "road.ink.json"
    source.write_text(ROAD, encoding="utf-8")
    s = Session(load_story(ink_compile(source, compiled)), "null", seed=2, save_dir=folder / "saves", steps=steps)
    s.start()
    s.submit(Choose(choice_id="camp.walk_north"))
    s.submit(Choose(choice_id="north.back_to_camp"))  # the checkpoint before it is in north
    source.write_text(EDITED, encoding="utf-8")
    ink_compile(source, compiled)
    assert s.reload().ok
    s.rollback(1)
    assert [c.id for c in s.choices()] == ["north.back_to_camp", "north.wait", "north.sing"]
    return s.submit(Choose(choice_id="north.wait")).events, s


def test_a_resync_s_warning_and_lines_reach_the_turn_not_the_prepare_phase_copy(ink_compile: InkCompile,
                                                                                tmp_path: Path) -> None:
    ahead = Ahead()
    events, s = turn_after_an_edit(ink_compile, tmp_path / "with", [ahead])
    assert any(e.kind == "warning" and "knot 'north' changed" in e.text for e in events), events
    assert [e.text for e in events if e.kind == "line"] == ["The wind is cold.", "The wind is cold."]
    assert ahead.seen and not any(e.kind == "warning" for seen in ahead.seen[-1:] for e in seen)
    plain, _ = turn_after_an_edit(ink_compile, tmp_path / "without", [])
    assert [(e.kind, e.scene, e.text) for e in events] == [(e.kind, e.scene, e.text) for e in plain]

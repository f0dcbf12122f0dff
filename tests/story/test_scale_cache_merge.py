"""Big-story tooling: lint and play share the story cache (lint reads its findings back for an
unchanged story, and still names file:line:col); the explorer merges states that cannot differ
in future and says how many."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

from game.story.explorer import explore
from game.story.lint import lint_story
from game.story.loader import load_story, story_from_dict

BASE = {"id": "t", "title": "T", "start": "a", "locations": {"here": {"name": "Here"}},
        "variables": {"courage": {"type": "int", "default": 0}}}


def write(folder: Path, doc: dict[str, object]) -> Path:
    (folder / "story.yaml").write_text(json.dumps(doc, indent=1))
    return folder


def test_lint_after_play_names_lines_and_sees_asset_changes(tmp_path: Path) -> None:
    Image.new("RGB", (4, 4)).save(tmp_path / "anchor.png")
    write(tmp_path, {**BASE, "world": {"anchors": ["anchor.png"]}, "scenes": {
        "a": {"location": "here", "lines": ["Hello {nmae}."], "choices": [{"id": "c", "text": "go", "goto": "b"}]},
        "b": {"location": "here", "ending": "e"}}})
    load_story(tmp_path)  # play fills the cache; lint then reads the story from it
    first = lint_story(tmp_path)
    assert [d.code for d in first] == ["WL019"]
    where = first[0].where  # a line and column, though the story came from the cache
    assert where.startswith(str(tmp_path / "story.yaml") + ":") and where.count(":") >= 2
    assert lint_story(tmp_path) == first  # unchanged: the same findings
    (tmp_path / "anchor.png").unlink()
    assert [d.code for d in lint_story(tmp_path)] == ["WL009", "WL019"]  # an asset changed: linted again
    text = (tmp_path / "story.yaml").read_text().replace("{nmae}", "{courage}")
    (tmp_path / "story.yaml").write_text(text)
    assert [d.code for d in lint_story(tmp_path)] == ["WL009"]


def test_spent_once_only_choices_merge_and_the_report_counts_them(tmp_path: Path) -> None:
    rests = [{"id": f"rest{i}", "text": f"Rest {i}", "once": True, "do": ["courage += 1"]} for i in range(3)]
    story = story_from_dict({**BASE, "scenes": {
        "a": {"location": "here", "choices": [*rests, {"id": "go", "text": "Go", "if": "courage >= 1", "goto": "b"}],
              "lines": [{"text": "Again.", "if": "visited('a') >= 2"}]},
        "b": {"location": "here", "ending": "e"}}}, tmp_path)
    report = explore(story, n_random=0)
    # courage is capped at 1 (all the conditions ask); once it is there, which rests were taken
    # changes nothing to come: a/0, a/1 and the ending are all the states there are
    assert report.states == 3 and not report.bound_hit and report.endings == ["e"]
    assert report.merged >= 3  # rest0, rest1 and rest2 first, and the rest pairs after them, merged
    assert "merged" in report.format() and report.to_json()["merged"] == report.merged

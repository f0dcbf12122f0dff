"""WL031: a scene that still lists a thing its own text says is gone (the world would draw it)."""

from __future__ import annotations

from pathlib import Path

from game.story.lint import gone_in, lint_story

STORY = """id: t
title: T
start: a
locations: {here: {name: Here}}
items: {kite: {name: red kite}, leaf: {name: green leaf}}
cast: {fox: {name: the fox}}
scenes:
  a:
    location: here
    ending: e
    items: {kite: 0.5, leaf: 0.3}
    present: {fox: 0.6}
    lines:
      - "The leaf lies in the grass."
      - {text: "The kite is gone.", if: "kite_free"}
      - "The fox got away into the bracken."
"""


def test_a_listed_thing_the_text_says_is_gone_is_flagged_and_only_that(tmp_path: Path) -> None:
    (tmp_path / "story.yaml").write_text(STORY)
    found = [d for d in lint_story(tmp_path, use_cache=False) if d.code == "WL031"]
    assert len(found) == 1 and "fox" in found[0].message  # the kite's line holds only when it is gone
    assert found[0].severity == "warning"


def test_gone_reads_the_usual_phrasings_by_id_name_or_its_last_word() -> None:
    assert gone_in("You lost the kite in the reeds.", "kite", "red kite")
    assert gone_in("The red kite got away over the trees.", "kite", "red kite")
    assert gone_in("No kite now.", "kite", "red kite")
    assert not gone_in("The kite climbs; the tail is gone in the dusk.", "leaf", "green leaf")
    assert not gone_in("The kite tugs at its string.", "kite", "red kite")

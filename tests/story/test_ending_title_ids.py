"""An ending id nothing names is shown title-cased, a possessive ``_s_`` read as one: ``brann_s_share``
is "Brann's Share", never "Brann S Share" (on the ending card and as the catalogue's source text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.story.loader import load_story
from game.story.strings import ending_name, ending_title, string_table

STORY = """\
id: share
title: Share
start: quay
locations:
  quay: {name: The Quay, palette: dusk}
scenes:
  quay:
    location: quay
    lines: ["The boats are in."]
    choices:
      - {id: row, text: Row out with Brann, goto: brann_s_share}
  brann_s_share:
    location: quay
    ending: brann_s_share
    lines: ["Your share is heavy."]
"""


@pytest.mark.parametrize(("ending", "shown"), [
    ("brann_s_share", "Brann's Share"),
    ("the_keeper_s_last_log", "The Keeper's Last Log"),
    ("the_light_holds", "The Light Holds"),
    ("walked_home", "Walked Home"),
    ("The Letter", "The Letter"),
    ("s_bend", "S Bend"),        # a leading s follows no word: no possessive
    ("plan_b_s", "Plan B S"),     # nor a trailing one
    ("bees_and_lemons", "Bees And Lemons"),
    ("eve_2nd_night", "Eve 2nd Night"),  # not "2Nd", as str.title would write it
])
def test_an_ending_id_is_written_out_with_its_possessive(ending: str, shown: str) -> None:
    assert ending_title(ending) == shown


def test_the_catalogue_and_the_shown_name_default_to_the_written_out_id(tmp_path: Path) -> None:
    (tmp_path / "story.yaml").write_text(STORY)
    story = load_story(tmp_path)
    assert string_table(story)["scene.brann_s_share.ending"] == "Brann's Share"
    assert ending_name(story, "brann_s_share", "brann_s_share") == "Brann's Share"

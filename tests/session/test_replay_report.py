"""`worldloom replay` of a transcript whose story was edited since: it says the story changed and
names the first difference readably (frame, kind, id, text), with a count, not raw JSON dumps."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from game.cli import main


def test_replay_of_an_edited_story_says_it_changed_and_where(mini_path: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    story = tmp_path / "mini"
    shutil.copytree(mini_path, story)
    script = tmp_path / "play.txt"
    script.write_text("choose offer_kite\nchoose finish_good\n")
    assert main(["play", str(story), "--headless", "--quiet", "--inputs", str(script), "--backend", "null",
                 "--transcript", str(tmp_path / "t.jsonl"), "--save-dir", str(tmp_path / "s")]) == 0
    text = (story / "story.yaml").read_text()
    (story / "story.yaml").write_text(text.replace('      - "Hello {name}."\n',
                                                   '      - "A gust of wind."\n      - "Hello {name}."\n'))
    capsys.readouterr()
    assert main(["replay", "--quiet", str(tmp_path / "t.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "the story changed since this transcript was recorded (hash " in err
    assert ("the first difference is at frame 0: line meadow.l0 'Hello Ada.' recorded, "
            "'A gust of wind.' replayed") in err
    assert "nothing recorded, line meadow.l1 'Hello Ada.' replayed" in err
    assert "2 of " in err and " events differ" in err
    assert "mismatch recorded {" not in err  # no raw JSON

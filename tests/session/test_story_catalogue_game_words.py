"""A story's catalogue translates the game's own words (``game.locale.ui``) first, as the docs say:
opening a story for play hands its catalogue to ``game.locale.use_story``; the next story opened
without one falls back to the shipped catalogue (nothing of the first story's is left)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from game.locale import ui
from game.session.assembly import open_game
from game.story.strings import LANG_ENV

MINI = Path(__file__).resolve().parents[1] / "data" / "mini"
PO = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
      'msgctxt "ui.carrying"\nmsgid "CARRYING"\nmsgstr "DANS LE SAC"\n')


def test_the_playing_storys_catalogue_wins_over_the_shipped_one(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LANG_ENV, "fr")
    own = tmp_path / "own"
    shutil.copytree(MINI, own)
    (own / "locale").mkdir()
    (own / "locale" / "fr.po").write_text(PO, encoding="utf-8")
    open_game(own, backend="null", save_dir=tmp_path / "s1", dialogue=None, voice=False, errorbank=None)
    assert ui("ui.carrying") == "DANS LE SAC"
    open_game(MINI, backend="null", save_dir=tmp_path / "s2", dialogue=None, voice=False, errorbank=None)
    assert ui("ui.carrying") == "VOUS PORTEZ"  # the shipped French: the first story's word is gone
    monkeypatch.setenv(LANG_ENV, "")
    assert ui("ui.carrying") == "CARRYING"

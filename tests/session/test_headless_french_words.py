"""Headless play in French reads French throughout: the game's own words around the story's
(the give echo, what the player carries, a quest's stage, a character acting, the ending's label)
come from ``game.locale``'s ``read.*`` strings and its shipped French catalogue, as the story's
lines come from its own catalogue."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.headless import play_headless
from game.inputs.script import read_script
from game.locale import UI
from game.story.strings import LANG_ENV

ROOT = Path(__file__).resolve().parents[2]
#: The English the game itself writes around a story's lines (none of it may show in French).
ENGLISH = ("Give the", "Use the", "you now carry", "Quest:", "Quest done", "AN ENDING", " goes to ", " takes the ",
           " drops the ", " gives you ", " gives the ")


def _played(story: str, script: str, tmp_path: Path) -> list[str]:
    lines: list[str] = []
    play_headless(str(ROOT / "stories" / story), read_script(ROOT / "stories" / story / script), backend="null",
                  dialogue=None, voice=False, save_dir=tmp_path, on_text=lines.append, errorbank=None)
    return lines


def test_zero_mark_in_french_gives_carries_and_ends_in_french(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LANG_ENV, "fr")
    lines = _played("zero_mark", "kite.txt", tmp_path)
    assert "> Donner la pierre lisse à la créature" in lines  # the story's French names in the game's French words
    assert "(vous portez maintenant : le cerf-volant rouge, la feuille verte)" in lines
    assert "La créature : Chrr-rrip ! Chrr-rrip !" in lines
    assert lines[-1] == "UNE FIN : Marqué"
    assert not [x for x in lines if any(w in x for w in ENGLISH)]


def test_gullhaven_acts_and_quests_take_the_game_s_french(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LANG_ENV, "fr")  # Gullhaven has no French catalogue: its own words stay English
    lines = _played("gullhaven", "playthroughs/the_light_holds.txt", tmp_path)
    assert "Ysolde vous donne tower key." in lines
    assert "(vous portez maintenant : tower key)" in lines
    assert "Quête : Get the oil and a wick up to the lamp room." in lines
    assert "> Utiliser oil flask sur spare wick" in lines
    assert any(x.startswith("Quête accomplie : Light the lamp") for x in lines)
    assert not [x for x in lines if any(w in x for w in ENGLISH)]


def test_english_play_keeps_the_english_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LANG_ENV, raising=False)
    lines = _played("zero_mark", "kite.txt", tmp_path)
    assert "> Give the smooth stone to the creature" in lines and lines[-1] == "AN ENDING: Marked"
    assert UI["read.carry"].format(items="red kite, green leaf") in lines


@pytest.mark.parametrize(("lang", "saved", "rolled"), [
    ("", "(saved as 'creek')", "(rolled back one choice)"),
    ("fr", "(partie enregistrée sous « creek »)", "(retour avant le dernier choix)")])
def test_a_save_and_a_rollback_say_so_where_they_happen(lang: str, saved: str, rolled: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # a newcomer read the leaf run's second "> Crouch at the oak's door" as a bug: nothing said it was rolled back
    if lang:
        monkeypatch.setenv(LANG_ENV, lang)
    else:
        monkeypatch.delenv(LANG_ENV, raising=False)
    lines = _played("zero_mark", "leaf.txt", tmp_path)
    assert saved in lines and rolled in lines
    took = [i for i, x in enumerate(lines) if x.startswith("> ") and "ch" in x.lower()]  # the crouch, twice
    back = lines.index(rolled)
    assert lines.index(saved) < back and any(i < back for i in took) and any(i > back for i in took)
    assert (tmp_path / "creek.json").exists() or list(tmp_path.glob("creek*"))

"""The window's own words in French (#17): labels, key hints, notices and the parser's replies
come from the game's string table (``game.locale.UI``) and its shipped French catalogue; French
typed instructions are understood; ``play --lang`` warns when a story has no translation."""

from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import polib  # noqa: E402
import pytest  # noqa: E402

from game.app.app import App  # noqa: E402
from game.cli import main  # noqa: E402
from game.inputs.meaning import LexicalEmbedder, NotUnderstood, Resolver, Understood  # noqa: E402
from game.inputs.phrasebook import phrasebook  # noqa: E402
from game.locale import LOCALE_DIR, UI, ui  # noqa: E402
from game.session import open_game  # noqa: E402
from game.state import Instruct  # noqa: E402
from game.story.strings import LANG_ENV, PLACEHOLDER  # noqa: E402
from tests.app.test_window_french_rest import window  # noqa: E402

STORIES = Path(__file__).parents[2] / "stories"


def test_every_string_of_the_game_has_a_french_translation_with_its_placeholders() -> None:
    po = polib.pofile(str(LOCALE_DIR / "fr.po"))
    entries = {e.msgctxt: e for e in po if not e.obsolete}
    assert set(entries) == set(UI)
    for sid, source in UI.items():
        e = entries[sid]
        assert e.msgid == source and e.msgstr and "fuzzy" not in e.flags, sid
        assert set(PLACEHOLDER.findall(e.msgstr)) == set(PLACEHOLDER.findall(source)), sid


@pytest.fixture()
def french_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[App, list[str]]]:
    """Zero Mark in French in the window, with every text the window draws recorded."""
    yield from window("zero_mark", tmp_path, monkeypatch, "fr")


def test_the_window_chrome_is_french(french_window: tuple[App, list[str]]) -> None:
    app, drawn = french_window
    for _ in range(8):
        app.step()
    assert "VOUS PORTEZ" in drawn and "CARRYING" not in drawn  # the inventory's label
    assert UI["ui.hint.keys"] not in drawn and any(t.startswith("T  écrire") for t in drawn)  # the key hints
    drawn.clear()
    app.help_open = True
    app.step()
    assert {"Touches", "RÉGLAGES", "revenir sur le dernier choix"} <= set(drawn)
    assert not {"Keys", "SETTINGS", "roll back the last choice"} & set(drawn)
    app.help_open = False
    app.choose(9)
    assert app.notice == "Il n'y a pas de choix 9 ici."


def test_a_french_instruction_is_understood_and_answered_in_french(french_window: tuple[App, list[str]]) -> None:
    app, _ = french_window
    session = app.session
    before = session.log.since(0)
    app.say("fais pleuvoir")
    for _ in range(8):
        app.step()
    assert session.state.world.get("weather") == "rain"
    new = [e for e in session.log.since(0) if e not in before]
    said = [e.text for e in new if e.kind == "say" and e.speaker == "player"]
    assert said == ["fais pleuvoir"]  # the player's own words, not the English they were read as
    assert ui("edit.weather.rain") == "Les nuages se referment, et la pluie commence à tomber."
    assert "Les nuages se referment, et la pluie commence à tomber." in [e.text for e in new if e.kind == "line"]


@pytest.mark.parametrize("french, english", [
    ("fais pleuvoir", "make it rain"), ("qu'il fasse nuit", "make it night"), ("fais neiger", "make it snow"),
    ("donne-lui une écharpe bleue", "give her a blue scarf"), ("ajoute une chaise", "add a chair"),
])
def test_french_reads_as_its_english(french: str, english: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """In Eve's kitchen (she is there), a French line means what its English means; in English play
    the French line means nothing."""
    game = open_game(STORIES / "eve", backend="null", dialogue=None, voice=False, save_dir=tmp_path / "s",
                     size=(64, 36))
    try:
        session = game.session
        session.start()
        session.state.scene = "kitchen"
        resolver = Resolver(session.story, LexicalEmbedder())
        want = resolver.understand(english, session.state)
        assert isinstance(want, Understood)
        assert isinstance(resolver.understand(french, session.state), NotUnderstood)
        monkeypatch.setenv(LANG_ENV, "fr")
        got = resolver.understand(french, session.state)
        assert isinstance(got, Understood) and got.key == want.key, (got, want)
        if isinstance(got.intent, Instruct):
            assert got.intent.params == want.intent.params and got.intent.text == french
    finally:
        game.close()


def test_the_phrase_book_keeps_the_storys_own_names() -> None:
    book = phrasebook("fr")
    assert book is not None and phrasebook("en") is None
    assert book.rewrite("Donne-lui une lanterne") == "give her a lantern"
    assert book.rewrite("mets une chaise rouge près de l'arbre") == "put a chair red near the tree"
    # "feuille" is not in the book, "lanterne" is: a story item named "lanterne" stays the story's
    assert book.rewrite("offre la lanterne", frozenset({"lanterne"})) == "offer the lanterne"


def test_play_warns_when_a_story_has_no_translation(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LANG_ENV, "")  # restored after the test (play --lang sets it for the process)
    script = tmp_path / "none.txt"
    script.write_text("wait 1\n")
    args = ["play", str(STORIES / "gullhaven"), "--headless", "--dialogue", "none", "--backend", "null",
            "--no-voice", "--inputs", str(script), "--save-dir", str(tmp_path / "saves")]
    assert main([*args, "--lang", "fr"]) == 0
    out = " ".join(capsys.readouterr().err.split())
    assert "warning: gullhaven has no fr translation" in out and "strings extract" in out
    assert "game's own words" not in out  # those ship in French
    assert main([*args, "--lang", "de"]) == 0
    out = " ".join(capsys.readouterr().err.split())
    assert "gullhaven has no de translation" in out and "game's own words (window labels, key hints, replies) " \
        "have no de translation" in out
    monkeypatch.setenv(LANG_ENV, "fr")
    assert main(["play", str(STORIES / "zero_mark"), "--headless", "--backend", "null", "--no-voice",
                 "--inputs", str(script), "--save-dir", str(tmp_path / "saves"), "--lang", "fr"]) == 0
    assert "warning: zero_mark has no" not in capsys.readouterr().err

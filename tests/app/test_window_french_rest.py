"""The rest of the window in French (#17): ending names, a question asked back and its options,
error notices and the F10 statistics line come from catalogues too; English play is unchanged."""

from __future__ import annotations

import os
import re

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pygame  # noqa: E402
import pytest  # noqa: E402

from game.app import paint  # noqa: E402
from game.app.app import App  # noqa: E402
from game.errors import SaveError  # noqa: E402
from game.inputs.channels import Channels  # noqa: E402
from game.inputs.meaning import Clarify, LexicalEmbedder, Resolver  # noqa: E402
from game.locale import error_text, message  # noqa: E402
from game.session import open_game  # noqa: E402
from game.story.strings import LANG_ENV, ending_name, string_table  # noqa: E402

STORIES = Path(__file__).parents[2] / "stories"


def window(story: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lang: str) -> Iterator[tuple[App, list[str]]]:
    monkeypatch.setenv(LANG_ENV, lang)
    drawn: list[str] = []
    real = paint.text

    def spy(surface: pygame.Surface, font: Any, text: str, *args: Any, **kw: Any) -> pygame.Rect:
        drawn.append(text)
        return real(surface, font, text, *args, **kw)

    monkeypatch.setattr(paint, "text", spy)
    game = open_game(STORIES / story, backend="null", dialogue=None, voice=False, save_dir=tmp_path / "saves",
                     size=(64, 36))
    session = game.session
    channels = Channels(session, Resolver(session.story, LexicalEmbedder()), voice_dir=tmp_path / "voice")
    app = App(session, (960, 540), threaded=False, audio=False, channels=channels)
    try:
        app.start()
        yield app, drawn
    finally:
        app.close()
        game.close()


@pytest.fixture()
def zero_mark_fr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[App, list[str]]]:
    yield from window("zero_mark", tmp_path, monkeypatch, "fr")


@pytest.fixture()
def zero_mark_en(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[App, list[str]]]:
    yield from window("zero_mark", tmp_path, monkeypatch, "")


def test_ending_names_have_ids_and_show_translated(zero_mark_fr: tuple[App, list[str]], tmp_path: Path) -> None:
    app, drawn = zero_mark_fr
    story = app.session.story
    assert string_table(story)["scene.ending_unmarked.ending"] == "Unmarked"
    assert ending_name(story, "ending_unmarked", "unmarked") == "Sans marque"
    # the Eve demo's endings too
    game = open_game(STORIES / "eve", backend="null", dialogue=None, voice=False, save_dir=tmp_path / "eve",
                     size=(64, 36))
    try:
        assert game.session.story.ending_names == {"letter": "La Lettre", "dawn": "Marée basse"}
    finally:
        game.close()
    # the ending card in the window, once the player is at an ending (put there: the state is data)
    app.session.state.scene = "ending_unmarked"
    app.step()
    while app.reader.more:
        app.reader.advance()
    drawn.clear()
    app.step()
    # the translation as the translator wrote it (not title-cased again: "Sans Marque")
    assert "Sans marque" in drawn and "UNE FIN" in drawn and not {"Unmarked", "Sans Marque"} & set(drawn)


def test_a_question_asked_back_and_its_options_are_french(zero_mark_fr: tuple[App, list[str]]) -> None:
    app, _ = zero_mark_fr
    session = app.session
    resolver = Resolver(session.story, LexicalEmbedder())
    asked = resolver.understand("change the weather", session.state)
    assert isinstance(asked, Clarify)
    assert [o.label for o in asked.options] == ["pluie", "neige", "brouillard", "ciel dégagé"]
    assert asked.question.startswith("Pluie, neige")
    # an answer in French takes its option
    answered = resolver.understand("neige", session.state, pending=asked)
    assert getattr(answered, "key", "") == "edit:weather:snow"
    # "offer it something": which of the things held, named by their French names
    gift = resolver.understand("offer it something", session.state)
    assert isinstance(gift, Clarify)
    assert " ou " in gift.question and gift.question.endswith(" ?") and " or " not in gift.question
    assert "the " not in gift.question.lower()
    assert all(not o.label.startswith("give ") for o in gift.options)


def test_english_play_keeps_the_english_question(zero_mark_en: tuple[App, list[str]]) -> None:
    app, _ = zero_mark_en
    resolver = Resolver(app.session.story, LexicalEmbedder())
    asked = resolver.understand("change the weather", app.session.state)
    assert isinstance(asked, Clarify) and [o.label for o in asked.options] == ["rain", "snow", "fog", "clear"]
    gift = resolver.understand("offer it something", app.session.state)
    assert isinstance(gift, Clarify) and " or " in gift.question and gift.question.startswith("The ")


def test_error_notices_are_french(zero_mark_fr: tuple[App, list[str]]) -> None:
    app, _ = zero_mark_fr
    assert not app.quick_load()  # nothing saved yet
    assert app.notice.endswith(": aucune sauvegarde de ce nom"), app.notice
    exc = SaveError("save is corrupt (schema 1: bad json)", where="x.json", hint="load the previous copy instead")
    assert error_text(exc) == ("x.json: la sauvegarde est abîmée (schema 1: bad json) "
                               "(chargez plutôt la copie précédente)")
    assert message("something no catalogue has") == "something no catalogue has"


def test_english_error_notices_are_unchanged(zero_mark_en: tuple[App, list[str]]) -> None:
    app, _ = zero_mark_en
    assert not app.quick_load()
    assert app.notice.endswith(": no such save")
    exc = SaveError("save is corrupt (bad)", where="x.json", hint="load the previous copy instead")
    assert error_text(exc) == str(exc)


def test_the_f10_line_is_french(zero_mark_fr: tuple[App, list[str]]) -> None:
    app, drawn = zero_mark_fr
    app.show_stats = True
    drawn.clear()
    app.step()
    line = next(t for t in drawn if "i/s affichées" in t)
    assert "fps" not in line and "stalls" not in line and " son " in line and " voix " in line


def test_give_her_a_lantern_in_french_is_the_gift_not_the_choice_about_the_light(
        embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In Eve's kitchen, with MiniLM reading (as the window does): "donne-lui une lanterne" makes a
    lantern and gives it to her, as "give her a lantern" does; her French choice "Lui dire que vous
    êtes venu voir la lumière" stays untaken."""
    monkeypatch.setenv(LANG_ENV, "fr")
    game = open_game(STORIES / "eve", backend="null", dialogue=None, voice=False, save_dir=tmp_path / "saves",
                     size=(64, 36))
    try:
        session = game.session
        channels = Channels(session, Resolver(session.story, embedder), voice_dir=tmp_path / "voice")
        app = App(session, (960, 540), threaded=False, audio=False, channels=channels)
        try:
            app.start()
            app.choose(1 + [c.id for c in session.choices()].index("knock"))
            for _ in range(4):
                app.step()
            assert session.state.scene == "kitchen"
            before = len(session.log.since(0))
            app.say("donne-lui une lanterne")
            for _ in range(8):
                app.step()
            new = session.log.since(0)[before:]
            assert [e.ids.get("item") for e in new if e.kind == "give"] == ["lantern"]
            assert not [e for e in new if e.kind == "choice"]
            assert "came_for_light" in {c.id for c in session.choices()}
            # said in French, the thing named in French (the world model is still told "a golden lantern")
            lines = [e.text for e in new if e.kind == "line"]
            assert lines[0] == "Vous tendez : lanterne." and not any(re.search(r"\blantern\b", t) for t in lines)
            made = next(o for o in session.state.objects.values() if o.get("noun") == "lantern")
            assert made["name"] == "lanterne" and made["look"] == "a golden lantern"
        finally:
            app.close()
    finally:
        game.close()

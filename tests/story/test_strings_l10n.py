"""Strings and translations: every player-visible string has a stable id; ``worldloom strings
extract`` writes a PO catalogue; ``worldloom play --lang fr`` plays it, falling back per string;
lint reports missing, stale and unused entries."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import polib
import pytest

from game.cli import main
from game.session import open_game
from game.state import Choose, Move
from game.story.explorer import Explorer
from game.story.lint import lint_story
from game.story.loader import load_story
from game.story.runtime import INTERPOLATION
from game.story.strings import LANG_ENV, catalogue_path, check_catalogue, localised, string_table, translation_for

MINI = Path(__file__).parents[1] / "data" / "mini"
FRENCH = {"meadow.l0": "Bonjour {name}.", "choice.offer_kite": "Offrir le cerf-volant",
          "offer_kite.say0": "Kyaa !", "item.kite": "cerf-volant rouge"}


@pytest.fixture
def story(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(LANG_ENV, "")  # restored after the test, whatever play --lang sets
    folder = tmp_path / "mini"
    shutil.copytree(MINI, folder)
    return folder


def translate(po_path: Path, entries: dict[str, str]) -> None:
    po = polib.pofile(str(po_path))
    for e in po:
        if e.msgctxt in entries:
            e.msgstr = entries[e.msgctxt]
    po.save(str(po_path))


def play(story: Path, tmp: Path, script: str, *lang: str) -> list[dict[str, object]]:
    (tmp / "play.txt").write_text(script)
    out = tmp / "t.jsonl"
    code = main(["play", str(story), "--headless", "--inputs", str(tmp / "play.txt"), "--transcript", str(out),
                 "--no-errorbank", "--size", "32x18", "--backend", "null", "--no-voice", *lang])
    assert code == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_extract_gives_every_visible_string_a_stable_id(story: Path) -> None:
    table = string_table(load_story(story, use_cache=False))
    assert table["meadow.l0"] == "Hello {name}." and table["choice.offer_kite"] == "Offer the kite"
    assert table["offer_kite.say0"] == "Kyaa!" and table["item.kite"] == "red kite"
    assert table["cast.creature"] == "the creature" and table["builtin.nothing"] == "Nothing happens."
    assert main(["strings", "extract", str(story), "--lang", "fr"]) == 0
    po = polib.pofile(str(story / "locale" / "fr.po"))
    assert {e.msgctxt: e.msgid for e in po} == table and not any(e.msgstr for e in po)


def test_play_in_french_falls_back_per_string(story: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["strings", "extract", str(story), "--lang", "fr"]) == 0
    translate(story / "locale" / "fr.po", FRENCH)
    rows = play(story, tmp_path, "choose offer_kite\n", "--lang", "fr")
    lines = [r["text"] for r in rows if r.get("type") == "line"]
    assert lines[0] == "Bonjour Ada." and "Kyaa !" in lines  # translated, still interpolated
    assert "You feel brave." not in lines[:1]
    choices = [r for r in rows if r.get("type") == "choice"]
    assert choices and choices[0]["ids"]["choice"] == "offer_kite"  # ids do not change with the language
    monkeypatch.setenv(LANG_ENV, "")  # restored after the test, whatever play --lang sets
    english = [r["text"] for r in play(story, tmp_path, "choose offer_kite\n") if r.get("type") == "line"]
    assert english[0] == "Hello Ada." and "Kyaa!" in english


def test_lint_reports_missing_stale_and_unused_translations(story: Path) -> None:
    assert main(["strings", "extract", str(story), "--lang", "fr"]) == 0
    po_path = story / "locale" / "fr.po"
    translate(po_path, FRENCH)
    po = polib.pofile(str(po_path))
    po.append(polib.POEntry(msgctxt="gone.l0", msgid="Gone.", msgstr="Parti."))
    po.save(str(po_path))
    text = (story / "story.yaml").read_text().replace('"Hello {name}."', '"Hello there, {name}."')
    (story / "story.yaml").write_text(text)
    found = {(d.code, d.message.split("'")[1]) for d in lint_story(story) if d.code in ("WL021", "WL022", "WL023")}
    assert ("WL022", "meadow.l0") in found and ("WL023", "gone.l0") in found
    assert ("WL021", "choice.offer_leaf") in found and ("WL021", "choice.offer_kite") not in found
    # extract again: the changed line keeps its old translation, marked fuzzy (and not played)
    assert main(["strings", "extract", str(story), "--lang", "fr"]) == 0
    entry = next(e for e in polib.pofile(str(po_path)) if e.msgctxt == "meadow.l0")
    assert "fuzzy" in entry.flags and entry.previous_msgid == "Hello {name}." and entry.msgstr == "Bonjour {name}."


@pytest.mark.parametrize(("demo", "script", "opening", "chosen"), [
    ("zero_mark", "choose offer_kite\n", "Le crépuscule. L'herbe est devenue bleue, et les fougères retiennent leur "
     "souffle.", "Tendre le cerf-volant"),
    ("eve", "choose knock\n", "Le soir sur l'Échine. Pierres noires, varech, et la mer qui revient déjà en "
     "murmurant des deux côtés.", "Monter vite les marches et frapper"),
])
def test_the_demos_open_in_french(demo: str, script: str, opening: str, chosen: str, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LANG_ENV, "")  # restored after the test, whatever play --lang sets
    root = Path(__file__).parents[2] / "stories" / demo
    extra = ["--dialogue", f"scripted:{root / 'scripted.yaml'}"] if (root / "scripted.yaml").is_file() else []
    rows = play(root, tmp_path, script, "--lang", "fr", *extra)
    assert [r["text"] for r in rows if r.get("type") == "line"][0] == opening
    assert [r["text"] for r in rows if r.get("type") == "choice"] == [chosen]


DEMOS = Path(__file__).parents[2] / "stories"


@pytest.mark.parametrize("demo", ["zero_mark", "eve"])
def test_the_demo_catalogues_translate_every_string(demo: str) -> None:
    """Both demos are wholly in French: nothing missing, stale or unused, and lint agrees."""
    story = load_story(DEMOS / demo)
    found = check_catalogue(story, catalogue_path(story, "fr"))
    assert (found.missing, found.stale, found.unused) == ([], [], [])
    assert not [d for d in lint_story(DEMOS / demo) if d.code in ("WL021", "WL022", "WL023")]


def test_names_and_titles_are_translated_where_the_player_sees_them(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LANG_ENV, "fr")
    game = open_game(DEMOS / "zero_mark", backend="null", dialogue=None, voice=False, save_dir=tmp_path)
    try:
        game.session.start()
        view = game.session.view()
        assert (view.title, view.scene_title, view.location) == ("La Marque du zéro", "Crépuscule",
                                                                 "La clairière du crépuscule")
        assert dict(view.inventory)["kite"] == "le cerf-volant rouge"
        assert dict(view.characters)["creature"] == "la créature"
        game.session.submit(Choose(choice_id="offer_kite"))
        scenes = [e.text for e in game.session.log.since(0) if e.kind == "scene"]
        assert scenes[-1] == "Le cerf-volant"
        game.session.submit(Move(direction="d"))
        assert [e.text for e in game.session.log.since(0) if e.kind == "exit"] == ["Le suivre jusqu'au ruisseau"]
    finally:
        game.close()
    monkeypatch.setenv(LANG_ENV, "")
    english = open_game(DEMOS / "zero_mark", backend="null", dialogue=None, voice=False, save_dir=tmp_path)
    try:
        english.session.start()
        assert english.session.view().scene_title == "Dusk"
    finally:
        english.close()


def _pattern(text: str) -> re.Pattern[str]:
    """A translation as a pattern: each ``{name}`` may have become any value."""
    return re.compile(".*".join(re.escape(part) for part in INTERPOLATION.split(text)[::2]), re.S)


@pytest.mark.parametrize("demo", ["zero_mark", "eve"])
def test_every_line_to_every_ending_plays_in_french(demo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded random walks over every kind of move until each ending is reached: every line,
    choice and exit shown is its French translation (interpolated), none is the English."""
    monkeypatch.setenv(LANG_ENV, "fr")
    story = localised(load_story(DEMOS / demo), translation_for(load_story(DEMOS / demo)))  # as open_game does
    french = {e.msgctxt: e.msgstr for e in polib.pofile(str(catalogue_path(story, "fr"))) if e.msgctxt}
    table = string_table(load_story(DEMOS / demo))
    ex = Explorer(story)
    endings: set[str] = set()
    shown = 0
    rng = random.Random(3)
    for _ in range(400):
        state, events = ex.start()
        for _ in range(60):
            for e in events:
                if e.kind == "line" and e.ids.get("line") in table:
                    assert _pattern(french[e.ids["line"]]).fullmatch(e.text), (e.ids, e.text)
                    shown += 1
                elif e.kind == "scene":
                    assert e.text == french[f"scene.{e.ids['scene']}.title"]
            if ex.ending_name(state):
                endings.add(ex.ending_name(state))
                break
            for c in ex.rt.available_choices(state):
                assert c.text == french[f"choice.{c.id}"]
            moves = ex.moves(state)
            if not moves:
                break
            done = ex.step(state, rng.choice(moves))
            if done is not None:
                state, events, _ = done
        if endings == set(ex.declared_endings()):
            break
    assert endings == set(ex.declared_endings()) and shown > 100


def test_a_localised_story_lists_its_own_reactions_not_the_sources() -> None:
    """The story lists its reactions and lines once; a localised copy must list the translated ones."""
    story = load_story(DEMOS / "zero_mark")
    english = {str(p): r for p, r in story.reactions()}  # listed (and kept) before the copy is made
    french = localised(story, translation_for(story, "fr"))
    assert french is not story and french.digest == story.digest
    texts = {str(p): getattr(r, "text", "") for p, r in french.reactions()}
    key = str(("scenes", "clearing", "choices", 0))
    assert getattr(english[key], "text", "") == "Hold out the kite" and texts[key] == "Tendre le cerf-volant"
    assert [ln.text for _, ln in story.lines()] == [ln.text for _, ln in french.lines()]  # lines: by id, at play


def test_lint_names_a_broken_catalogue_line_by_line(tmp_path: Path) -> None:
    """A catalogue lint cannot read, a translation that drops or invents a placeholder, and stale or
    unused entries: each reported at its file:line (#17)."""
    from game.story.lint import lint_story

    (tmp_path / "story.yaml").write_text(
        "id: t\ntitle: T\nstart: a\nlocations: {here: {name: Here}}\nvariables: {who: {type: str, default: Ann}}\n"
        "scenes:\n  a: {location: here, ending: e, lines: ['Hello, {who}.', 'Goodbye.', 'Rain.']}\n")
    po = tmp_path / "locale" / "fr.po"
    po.parent.mkdir()
    head = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
    good = (head + 'msgctxt "a.l0"\nmsgid "Hello, {who}."\nmsgstr "Bonjour, {qui}."\n\n'  # line 5
            'msgctxt "a.l1"\nmsgid "Goodbye, then."\nmsgstr "Au revoir, alors."\n\n'  # line 9: stale
            'msgctxt "gone.l0"\nmsgid "Gone."\nmsgstr "Parti."\n')  # line 13: unused
    po.write_text(good)
    found = {(d.code, d.where.rsplit(":", 1)[-1]) for d in lint_story(tmp_path)}
    assert {("WL026", "5"), ("WL022", "9"), ("WL023", "13")} <= found
    wl026 = [d.message for d in lint_story(tmp_path) if d.code == "WL026"]
    assert any("lacks {who}" in m for m in wl026) and any("has {qui}" in m for m in wl026)
    po.write_text(head + 'msgctxt "a.l0"\nmsgid "Hello, {who}.\nmsgstr "Bonjour, {who}."\n\nmsgstr "x"\n')
    bad = [d for d in lint_story(tmp_path) if d.code == "WL025"]
    assert [(d.where, d.severity) for d in bad] == [(f"{po}:6", "error"), (f"{po}:9", "error")]
    assert "not closed" in bad[0].message and "no msgid" in bad[1].message


@pytest.mark.parametrize("lang", ["../../../tmp/elsewhere", "xx-" + "a" * 300, "fr/fr", "f"])
def test_a_lang_that_is_not_a_language_code_is_refused(story: Path, tmp_path: Path, lang: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`--lang ../x` named a .po file outside the story's locale folder, and a 300-character code
    ended play in an OSError traceback (file name too long); both are a clear error before play."""
    (tmp_path / "play.txt").write_text("choose offer_kite\n")
    code = main(["play", str(story), "--headless", "--inputs", str(tmp_path / "play.txt"), "--no-errorbank",
                 "--size", "32x18", "--backend", "null", "--no-voice", "--lang", lang])
    assert code == 2
    assert "is not a language code" in capsys.readouterr().err
    assert main(["strings", "extract", str(story), "--lang", lang]) == 2
    assert not list(tmp_path.rglob("*.po"))


def test_a_posix_locale_name_finds_its_catalogue(story: Path) -> None:
    """`$LANG`'s form (fr_FR.UTF-8, de_DE@euro) names the language, not a file `fr_FR.UTF-8.po`."""
    from game.story.strings import language_code, language_fallbacks, language_name

    assert catalogue_path(load_story(story, use_cache=False), "fr_FR.UTF-8").name == "fr_FR.po"
    assert language_code("de_DE@euro") == "de_DE" and language_code("zh-Hant-TW") == "zh-Hant-TW"
    assert language_fallbacks("fr_FR.UTF-8") == ("fr_FR", "fr") and language_fallbacks("../fr") == ()
    assert language_name("../fr") == "../fr" and language_name("pt-BR") == "Portuguese"

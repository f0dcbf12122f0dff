"""Strings and translations: every player-visible string has a stable id; ``worldloom strings
extract`` writes a PO catalogue; ``worldloom play --lang fr`` plays it, falling back per string;
lint reports missing, stale and unused entries."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polib
import pytest

from game.cli import main
from game.story.lint import lint_story
from game.story.loader import load_story
from game.story.strings import LANG_ENV, string_table

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

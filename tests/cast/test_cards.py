"""Character cards: Eve's card, YAML / Tavern V2 / V3 round trips as JSON and PNG, bad cards."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, PngImagePlugin

from game.cast import card_io
from game.cast.card import CharacterCard, DepthPrompt, find_card, substitute
from game.cast.card_io import load_card
from game.errors import CardError

ROOT = Path(__file__).parents[2]
EVE = ROOT / "characters" / "eve.yaml"


def same(a: CharacterCard, b: CharacterCard) -> None:
    """Equal in every exported field (``where`` is where it was read from)."""
    assert a.model_dump(mode="json") == b.model_dump(mode="json")


def b64(doc: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(doc).encode("utf-8")).decode("ascii")


def png_with(path: Path, chunks: list[tuple[str, str]]) -> Path:
    info = PngImagePlugin.PngInfo()
    for key, value in chunks:
        info.add_text(key, value)
    Image.new("RGB", (8, 8), (10, 20, 30)).save(path, pnginfo=info)
    return path


# -- Eve's card ---------------------------------------------------------------------

def test_eve_card_is_complete(eve: CharacterCard) -> None:
    assert eve.id == "eve" and eve.display_name == "Eve"
    assert eve.description and eve.personality and len(eve.traits) >= 5 and eve.speaking_style
    assert len(eve.greetings) >= 2 and len(eve.examples) >= 6 and all(x.user and x.char for x in eve.examples)
    assert len(eve.lorebook.entries) >= 10
    assert all(e.keys and e.content and e.priority > 0 for e in eve.lorebook.entries)
    assert {"trust", "affinity", "curiosity"} <= set(eve.axes)
    for axis in eve.axes.values():
        assert axis.min <= axis.start <= axis.max and axis.min <= axis.baseline <= axis.max
    assert eve.voice.voice.startswith("en") and 60 <= eve.voice.rate <= 500
    assert eve.look.description and eve.reference_image == "eve.png"
    ref = eve.image_paths()[0]
    assert ref.is_file()
    with Image.open(ref) as im:
        assert im.format == "PNG" and im.size[0] >= 256
    assert any("AI" in line for line in eve.never_say)
    assert find_card("eve", ROOT / "characters") == EVE


def test_macros_are_plain_substitution_only() -> None:
    text = "{{char}} greets {{User}}. <BOT>/<USER> {{random:a,b}} {{#if x}}{% for %}${x}"
    out = substitute(text, "Eve", "Ada")
    # known macros become text, unknown ones ({{#if}}) are removed, other template syntax is only text
    assert out in ("Eve greets Ada. Eve/Ada a {% for %}${x}", "Eve greets Ada. Eve/Ada b {% for %}${x}")
    assert substitute("{{user}}", "Eve", "{{char}}") == "{{char}}"  # never re-scanned


# -- round trips ----------------------------------------------------------------------

def test_yaml_to_v2_json_and_back(eve: CharacterCard, tmp_path: Path) -> None:
    path = card_io.write_card_json(eve, tmp_path / "eve.json", version=2)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["spec"] == "chara_card_v2" and doc["spec_version"] == "2.0"
    data = doc["data"]
    assert data["name"] == "Eve Solvang" and data["first_mes"] == eve.greetings[0]
    assert data["alternate_greetings"] == list(eve.greetings[1:])
    assert "<START>" in data["mes_example"] and "{{user}}:" in data["mes_example"]
    assert len(data["character_book"]["entries"]) == len(eve.lorebook.entries)
    ours = data["extensions"]["worldloom"]
    assert ours["traits"] == list(eve.traits) and ours["voice"]["voice"] == eve.voice.voice
    assert ours["nickname"] == "Eve"  # V3-only field kept under our key in V2
    same(card_io.read_card_json(path), eve)


def test_v3_json_round_trip(eve: CharacterCard, tmp_path: Path) -> None:
    path = card_io.write_card_json(eve, tmp_path / "eve3.json", version=3)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["spec"] == "chara_card_v3" and doc["data"]["nickname"] == "Eve"
    assert doc["data"]["group_only_greetings"] == list(eve.group_greetings)
    assert all("use_regex" in e for e in doc["data"]["character_book"]["entries"])
    same(card_io.read_card_json(path), eve)


@pytest.mark.parametrize(("versions", "chunk"), [((2,), "chara"), ((3,), "ccv3")])
def test_png_round_trip(eve: CharacterCard, tmp_path: Path, versions: tuple[int, ...], chunk: str) -> None:
    path = card_io.write_card_png(eve, tmp_path / "eve.png", versions=versions)
    assert set(card_io.png_card_chunks(path)) == {chunk}
    with Image.open(path) as im:
        assert im.size == (512, 768)  # the reference image is the picture
    back = card_io.read_card_png(path)
    same(back, eve)
    assert back.where == str(path)


def test_both_chunks_v3_wins_and_unrelated_chunks_are_ignored(eve: CharacterCard, tmp_path: Path) -> None:
    v2 = card_io.card_to_v2(eve.model_copy(update={"name": "Old Eve"}))
    v3 = card_io.card_to_v3(eve.model_copy(update={"name": "New Eve"}))
    path = png_with(tmp_path / "both.png", [("Comment", "not a card"), ("chara", b64(v2)), ("ccv3", b64(v3))])
    assert card_io.read_card_png(path).name == "New Eve"
    path = png_with(tmp_path / "v2only.png", [("Software", "x"), ("Chara", b64(v2))])  # keyword case ignored
    assert card_io.read_card_png(path).name == "Old Eve"
    written = card_io.write_card_png(eve, tmp_path / "st.png")  # like SillyTavern: both chunks
    assert set(card_io.png_card_chunks(written)) == {"chara", "ccv3"}


def test_our_and_foreign_extensions_survive(eve: CharacterCard, tmp_path: Path) -> None:
    foreign = {"talkativeness": 0.7, "depth_prompt": {"prompt": "Stay wry.", "depth": 4, "role": "system"},
               "other_app": {"x": [1, 2]}}
    entries = list(eve.lorebook.entries)
    entries[0] = entries[0].model_copy(update={"extensions": {"position": 4, "probability": 80}, "meaning": True})
    card = eve.model_copy(update={"extensions": foreign,
                                  "lorebook": eve.lorebook.model_copy(update={"entries": tuple(entries)})})
    # SillyTavern's depth_prompt is read into the card's field (and written back where it was)
    other = {k: v for k, v in foreign.items() if k != "depth_prompt"}
    expected = card.model_copy(update={"extensions": other,
                                       "depth_prompt": DepthPrompt(prompt="Stay wry.", depth=4, role="system")})
    for version in (2, 3):
        path = card_io.write_card_png(card, tmp_path / f"ext{version}.png", versions=(version,))
        back = card_io.read_card_png(path)
        same(back, expected)
        again = card_io.read_card_png(card_io.write_card_png(back, tmp_path / f"again{version}.png",
                                                             versions=(version,)))
        same(again, expected)
        assert back.extensions == other and back.lorebook.entries[0].meaning
        assert back.lorebook.entries[0].extensions == {"position": 4, "probability": 80}
        assert back.axes == eve.axes and back.never_say == eve.never_say and back.look == eve.look


def test_foreign_v2_card_imports(tmp_path: Path) -> None:
    doc = {
        "spec": "chara_card_v2", "spec_version": "2.0",
        "data": {
            "name": "Captain Ilse Varg", "description": "{{char}} runs the ferry.", "personality": "gruff",
            "scenario": "", "first_mes": "Ticket, {{user}}.", "alternate_greetings": ["Mind the gap."],
            "mes_example": "<START>\n{{user}}: When do we sail?\n{{char}}: When the fog lifts.\nNot before.\n"
                           "<START>\n<BOT>: Hold on to the rail.",
            "creator_notes": "do not put in prompts", "system_prompt": "", "post_history_instructions": "",
            "tags": ["ferry"], "creator": "someone", "character_version": "2",
            "extensions": {"talkativeness": "0.5", "fav": False},
            "character_book": {"entries": [
                {"keys": ["fog"], "content": "Fog comes at dawn.", "extensions": {}, "enabled": True,
                 "insertion_order": 5, "priority": 3, "position": "after_char"},
                {"keys": [], "content": "", "extensions": {}, "enabled": True, "insertion_order": 6},
            ]},
        },
    }
    path = tmp_path / "ilse.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    card = card_io.read_card_json(path)
    assert card.id == "captain_ilse_varg" and card.greetings == ("Ticket, {{user}}.", "Mind the gap.")
    assert [(x.user, x.char) for x in card.examples] == [("When do we sail?", "When the fog lifts.\nNot before."),
                                                         ("", "Hold on to the rail.")]
    assert card.lorebook.entries[0].matches("thick FOG today") and not card.lorebook.entries[1].matches("fog")
    assert card.lorebook.entries[0].position == "after_char"
    assert card.extensions == {"talkativeness": "0.5", "fav": False}
    assert card.axes == {} and card.look.images == ()
    # V1: flat fields
    v1 = tmp_path / "v1.json"
    v1.write_text(json.dumps({"name": "Old Tom", "description": "d", "first_mes": "Hello."}), encoding="utf-8")
    assert card_io.read_card_json(v1).greetings == ("Hello.",)


# -- bad cards ---------------------------------------------------------------------------

def v2_doc(**data: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "X", "description": "", "personality": "", "scenario": "", "first_mes": "",
                            "mes_example": "", "extensions": {}}
    base.update(data)
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": base}


def entries(*rows: dict[str, Any]) -> dict[str, Any]:
    full = [{"keys": ["k"], "content": "c", "extensions": {}, "enabled": True, "insertion_order": 1, **r}
            for r in rows]
    return {"entries": full}


BAD_JSON = [
    (v2_doc(character_book=entries({}, {}, {"keys": "lamp"})),
     "data.character_book.entries[2].keys: must be a list of strings"),
    (v2_doc(character_book=entries({"priority": "high"})), "data.character_book.entries[0].priority: must be a number"),
    (v2_doc(character_book=entries({"enabled": "yes"})), "data.character_book.entries[0].enabled: must be true or"),
    (v2_doc(character_book=entries({"use_regex": True, "keys": ["(unclosed"]})),
     "data.character_book.entries[0]: key '(unclosed' is not a valid regular expression"),
    (v2_doc(character_book={"entries": "none"}), "data.character_book.entries: must be a list"),
    (v2_doc(alternate_greetings=["hi", 3]), "data.alternate_greetings: must be a list of strings"),
    (v2_doc(name=None), "data.name: is required"),
    (v2_doc(name="   "), "data.name: must not be empty"),
    (v2_doc(description=["a"]), "data.description: must be a string"),
    (v2_doc(extensions={"worldloom": {"axes": {"trust": {"start": 50, "max": 10}}}}),
     "data.extensions.worldloom.axes.trust: start 50.0 is outside [-10.0, 10.0]"),
    (v2_doc(extensions={"worldloom": {"voice": {"rate": "fast"}}}), "data.extensions.worldloom.voice.rate:"),
    (v2_doc(extensions={"worldloom": {"colour": "red"}}), "data.extensions.worldloom.colour: is not a card field"),
    (v2_doc(extensions="none"), "data.extensions: must be an object"),
    ({"spec": "chara_card_v9", "data": {}}, "spec: unknown card spec 'chara_card_v9'"),
    ({"spec": "chara_card_v2", "data": "x"}, "data: must be an object"),
    (["not", "a", "card"], "card: must be an object"),
    ({"spec": "chara_card_v3", "spec_version": "3.0",
      "data": {**v2_doc()["data"], "assets": [{"type": "icon"}]}}, "data.assets[0].uri: is required"),
]


@pytest.mark.parametrize(("doc", "message"), BAD_JSON, ids=[m.split(":")[0] for _, m in BAD_JSON])
def test_bad_tavern_card_names_the_field(tmp_path: Path, doc: Any, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(CardError) as err:
        card_io.read_card_json(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_bad_card_files(tmp_path: Path) -> None:
    cases: list[tuple[Path, str]] = []
    p = tmp_path / "notjson.json"
    p.write_text("{name: oops", encoding="utf-8")
    cases.append((p, "card: not JSON"))
    p = tmp_path / "latin1.json"
    p.write_bytes(b'{"name": "\xe9"}')
    cases.append((p, "card: not UTF-8"))
    cases.append((png_with(tmp_path / "none.png", [("Comment", "hello")]), "no character card in this PNG"))
    cases.append((png_with(tmp_path / "b64.png", [("chara", "@@not base64@@")]), "chunk 'chara': not base64"))
    cases.append((png_with(tmp_path / "json.png", [("ccv3", base64.b64encode(b"{oops").decode())]),
                  "chunk 'ccv3': not JSON"))
    cases.append((png_with(tmp_path / "field.png", [("chara", b64(v2_doc(tags="x")))]), "data.tags: must be a list"))
    p = tmp_path / "text.png"
    p.write_text("I am not a picture", encoding="utf-8")
    cases.append((p, "not a PNG image: the file does not start with the PNG signature"))
    p = tmp_path / "photo.png"
    Image.new("RGB", (4, 4)).save(p, format="JPEG")
    cases.append((p, "not a PNG image"))
    cases.append((tmp_path / "missing.png", "not found"))
    cases.append((tmp_path / "card.txt", "unknown card format"))
    for path, message in cases:
        with pytest.raises(CardError) as err:
            load_card(path)
        assert message in str(err.value), (path, str(err.value))


BAD_YAML = [
    ("id: bad\nname: X\nlorebook:\n  - keys: [lamp, 1923]\n    content: c\n", "bad.yaml:4:",
     "lorebook.entries[0].keys: must be a list of text"),
    ("id: bad\nname: X\nlorebook:\n  entries:\n    - {keys: [a], content: c}\n    - {content: c}\n", "bad.yaml:6:",
     "lorebook.entries[1].keys: an enabled entry needs keys"),
    ("id: bad\nname: X\naxes:\n  trust: {start: 20}\n", "bad.yaml:4:", "axes.trust: start 20.0 is outside"),
    ("id: bad\nname: X\nvoice:\n  pitch: 300\n", "bad.yaml:4:", "voice.pitch:"),
    ("id: bad\nname: X\nfavourite_colour: red\n", "bad.yaml:3:", "favourite_colour: is not a card field"),
    ("id: bad\nname: X\ngifts:\n  shell: {trust: 1}\naxes:\n  affinity: {}\n", "bad.yaml", "gifts.shell: unknown axis"),
    ("id: bad\n", "bad.yaml", "name: is required"),
    ("id: bad\nname: X\nexamples:\n  - {user: hi}\n", "bad.yaml:4:", "examples[0].char: is required"),
    ("id: bad\nname: [unclosed\n", "bad.yaml:2:7", "YAML syntax error"),  # where the bracket opened
    ("id: bad\nname: !!python/object/apply:os.system [echo]\n", "bad.yaml:2", "not allowed"),
    ("id: other\nname: X\n", "bad.yaml:1:", "id: 'other' does not match the file name"),
]


@pytest.mark.parametrize(("text", "where", "message"), BAD_YAML, ids=[m for _, _, m in BAD_YAML])
def test_bad_yaml_card_names_file_line_and_field(tmp_path: Path, text: str, where: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CardError) as err:
        load_card(path)
    assert where in str(err.value) and message in str(err.value), str(err.value)


def test_a_card_png_that_is_a_decompression_bomb_is_a_named_error(tmp_path: Path) -> None:
    import struct
    import zlib

    from game.cast.card_io import read_card_png

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    # a 30000 x 30000 picture in a few kilobytes, carrying a valid card
    side = 30000
    ihdr = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    rows = zlib.compress(b"\x00" * (side + 1) * 64, 9)
    card = base64.b64encode(json.dumps({"spec": "chara_card_v2", "spec_version": "2.0",
                                        "data": {"name": "Bomb"}}).encode()).decode()
    p = tmp_path / "bomb.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"tEXt", b"chara\x00" + card.encode())
                  + chunk(b"IDAT", rows) + chunk(b"IEND", b""))
    assert p.stat().st_size < 100_000
    with pytest.raises(CardError) as err:
        read_card_png(p)
    assert "card image refused" in str(err.value) and "bomb.png" in str(err.value)


def test_a_catastrophic_regex_lorebook_key_cannot_freeze_a_turn() -> None:
    from game.cast.card import LoreEntry

    entry = LoreEntry(keys=("(a+)+$",), content="never", use_regex=True)
    line = "a" * 40 + "!"  # plain backtracking takes hours on this: the key's time limit ends it, as no match
    assert entry.matches(line) is False
    assert LoreEntry(keys=(r"\blight(house)?\b",), content="x", use_regex=True).matches("the lighthouse")

"""SillyTavern card parity (issue 11): greetings, depth_prompt, macros, World Info import,
the over-budget warning and ``worldloom card import | export | validate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from game.cast import card_io
from game.cast.card import CharacterCard, card_from_dict, substitute
from game.cast.card_io import load_card
from game.cast.cardcheck import check_card
from game.cast.macros import expand, unknown_macros
from game.cast.memory import Memory, MemoryConfig, sink_parts
from game.cast.prompt import PromptBuilder
from game.cast.worldinfo import read_world_info, with_lorebook, world_info_from_dict
from game.cli import main
from game.errors import CardError
from game.headless import play_headless
from game.inputs.script import parse_script
from game.state.events import Event

ROOT = Path(__file__).resolve().parents[2]


def v2(**data: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "Ilse", "description": "{{char}} runs the ferry.", "personality": "gruff",
                            "scenario": "", "first_mes": "Ticket, {{user}}.", "mes_example": "", "extensions": {}}
    base.update(data)
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": base}


def write(tmp: Path, name: str, doc: Any) -> Path:
    p = tmp / name
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


# -- macros ------------------------------------------------------------------------------------------

def test_macros_are_expanded_or_removed_and_never_rescanned() -> None:
    fields = {"description": "{{char}} keeps the light for {{user}}. {{time}}", "scenario": "a storm"}
    out = expand("{{char}} and {{User}} <BOT>/<USER>.{{newline}}{{description}} In {{scenario}}."
                 "{{// author's note}}{{noop}}{{trim}} {{time}} {{date}} {{getvar::mood}} {{#if x}}",
                 "Eve", "Ada", fields)
    assert out == "Eve and Ada Eve/Ada.\nEve keeps the light for Ada.  In a storm." + " " * 4
    assert "{{" not in out
    assert expand("{{user}}", "Eve", "{{char}}") == "{{char}}"  # a replacement is never scanned again
    assert unknown_macros("{{char}} {{time}} {{getvar::x}} {{roll:d6}}") == ["{{time}}", "{{getvar::x}}"]


def test_random_pick_and_roll_are_chosen_by_the_seed() -> None:
    text = "{{random:tea,coffee,cocoa}} {{pick::gull::tern}} {{roll:d20}}"
    runs = {expand(text, "Eve", seed=s) for s in range(12)}
    assert len(runs) > 1  # the seed chooses
    assert expand(text, "Eve", seed=5) == expand(text, "Eve", seed=5)  # and the same seed, the same text
    for out in runs:
        drink, bird, roll = out.split()
        assert drink in ("tea", "coffee", "cocoa") and bird in ("gull", "tern") and 1 <= int(roll) <= 20


def test_no_raw_macro_reaches_the_prompt(tmp_path: Path) -> None:
    card = card_io.read_card_json(write(tmp_path, "c.json", v2(
        description="{{char}} runs the ferry at {{time}}. {{random:Calm,Rough}} seas. {{personality}}.",
        scenario="{{user}} boards. {{getvar::ticket}}",
        character_book={"entries": [{"keys": ["fog"], "content": "{{char}} hates fog {{date}}.", "extensions": {},
                                     "enabled": True, "insertion_order": 1}]})))
    memory = Memory(card, embedder=_NoEmbedder())
    system = PromptBuilder(memory).build("Is there fog tonight?").to_messages()
    text = "\n".join(m["content"] for m in system)
    assert "{{" not in text and "}}" not in text
    assert "Ilse runs the ferry at . " in text and "gruff." in text and "Ilse hates fog ." in text


class _NoEmbedder:
    """Prompts without memories or meaning-lore need no vectors."""

    dim = 4

    def encode(self, texts: list[str]) -> Any:
        out = np.zeros((len(texts), 4), np.float32)
        out[:, 0] = 1.0
        return out


# -- depth_prompt --------------------------------------------------------------------------------------

def test_depth_prompt_is_read_kept_and_put_at_its_depth(tmp_path: Path) -> None:
    path = write(tmp_path, "c.json", v2(extensions={"depth_prompt": {"prompt": "{{char}} is wary of {{user}}.",
                                                                       "depth": 2, "role": "system"}}))
    card = card_io.read_card_json(path)
    assert card.depth_prompt is not None and card.depth_prompt.depth == 2
    back = card_io.read_card_json(card_io.write_card_json(card, tmp_path / "back.json"))
    assert back.depth_prompt == card.depth_prompt
    assert "depth_prompt" not in back.extensions  # a field of the card, written back where SillyTavern reads it
    memory = Memory(card, embedder=_NoEmbedder())
    for turn, (who, text) in enumerate([("player", "Hello."), ("ilse", "Ticket."), ("player", "Here."),
                                        ("ilse", "Sit down.")], 1):
        kind = "say" if who == "player" else "reply"
        memory.observe(Event(kind=kind, turn=turn, speaker=who, text=text, data={"target": "ilse"}))
    msgs = PromptBuilder(memory).build("When do we sail?").to_messages()
    chat = [m["content"] for m in msgs if m["role"] in ("user", "assistant")]
    at = next(i for i, m in enumerate(msgs) if m["content"] == "Ilse is wary of the player.")
    after = [m for m in msgs[at + 1:] if m["role"] in ("user", "assistant")]
    assert len(after) == 2 and after[-1]["content"] == "When do we sail?" and chat[-1] == "When do we sail?"
    # depth 0: after the player's line, the last thing before her reply
    zero = card.model_copy(update={"depth_prompt": card.depth_prompt.model_copy(update={"depth": 0})})
    msgs = PromptBuilder(Memory(zero, embedder=_NoEmbedder())).build("When?").to_messages()
    assert msgs[-1]["content"] == "Ilse is wary of the player." and msgs[-2]["content"] == "When?"


@pytest.mark.parametrize(("depth", "message"), [
    ({"prompt": "x", "depth": "deep"}, "data.extensions.depth_prompt.depth: must be a whole number"),
    ({"prompt": "x", "depth": -1}, "data.extensions.depth_prompt.depth:"),
    ({"prompt": "x", "role": "narrator"}, "data.extensions.depth_prompt.role:"),
    ("be nice", "data.extensions.depth_prompt: must be an object"),
])
def test_a_bad_depth_prompt_names_the_field(tmp_path: Path, depth: Any, message: str) -> None:
    with pytest.raises(CardError) as err:
        card_io.read_card_json(write(tmp_path, "bad.json", v2(extensions={"depth_prompt": depth})))
    assert message in str(err.value)


# -- greetings ---------------------------------------------------------------------------------------

STORY = """format: 1
id: ferry
title: Ferry
start: quay
cast:
  ilse: {name: Ilse, card: ilse.yaml}
locations:
  quay: {name: Quay}
scenes:
  quay:
    location: quay
    lines: ["Fog on the quay."]
    choices:
      - {id: board, text: Board the ferry, goto: deck}
  deck:
    location: quay
    present: {ilse: 0.5}
    lines: ["The deck rolls."]
    choices:
      - {id: wait, text: Wait}
      - {id: back, text: Go back, goto: quay}
"""
CARD = """id: ilse
name: Ilse Varg
greetings:
  - "Ticket, {{user}}. {{random:Mind the rail.,Sit anywhere.}}"
  - "Another one for the crossing. I'm {{char}}."
  - "Fog again. You'll be wanting the cabin."
"""


def _run(tmp: Path, embedder: Any, seed: int, script: str, story_text: str = STORY) -> list[dict[str, Any]]:
    story = tmp / f"story{seed}-{abs(hash(story_text)) % 1000}"
    story.mkdir(exist_ok=True)
    (story / "story.yaml").write_text(story_text, encoding="utf-8")
    (story / "ilse.yaml").write_text(CARD, encoding="utf-8")
    out = story / "t.jsonl"
    play_headless(str(story), parse_script(script, "g.txt"), backend="null", seed=seed, save_dir=story / "saves",
                  transcript=out, dialogue=None, voice=False, cast_options={"embedder": embedder,
                                                                             "show_progress": False})
    return [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]


def test_her_greeting_is_shown_once_when_she_first_appears_chosen_by_seed(tmp_path: Path, embedder: Any) -> None:
    card = card_from_dict(yaml.safe_load(CARD))
    shown: dict[int, int] = {}
    for seed in range(6):
        rows = _run(tmp_path, embedder, seed, "choose board\nchoose wait\nchoose back\nchoose board\n")
        greets = [r for r in rows if r.get("type") == "line" and r.get("speaker") == "ilse"]
        assert len(greets) == 1, greets  # once, though she is met twice
        index = greets[0]["data"]["greeting"]
        shown[seed] = index
        expected = substitute(card.greetings[index], "Ilse Varg", "traveller", seed=seed)
        assert greets[0]["text"] == expected and "{{" not in greets[0]["text"]
        assert greets[0]["frame"] == next(r["frame"] for r in rows if r.get("type") == "scene" and
                                          r["ids"].get("scene") == "deck")  # when she first appears
    assert len(set(shown.values())) > 1  # first_mes and the alternates, by seed
    again = _run(tmp_path, embedder, 2, "choose board\n")
    assert [r["text"] for r in again if r.get("speaker") == "ilse"][0].startswith(
        card.greetings[shown[2]][:6])  # the same seed, the same greeting


def test_an_authored_line_of_hers_wins_over_the_card_greeting(tmp_path: Path, embedder: Any) -> None:
    story = yaml.safe_load(STORY)
    story["scenes"]["deck"]["lines"] = [{"speaker": "ilse", "text": "Welcome aboard."}]
    rows = _run(tmp_path, embedder, 0, "choose board\nchoose wait\n", yaml.safe_dump(story))
    said = [r["text"] for r in rows if r.get("speaker") == "ilse"]
    assert said == ["Welcome aboard."]


# -- World Info ---------------------------------------------------------------------------------------

WORLD = {"name": "Ferry lore", "entries": {
    "0": {"uid": 0, "key": ["fog", "mist"], "keysecondary": [], "comment": "Fog", "content": "Fog comes at dawn.",
          "constant": False, "selective": False, "order": 10, "position": 0, "disable": False, "probability": 100},
    "1": {"uid": 1, "key": ["/lant(e|a)rns?/i"], "comment": "Lanterns", "content": "Lanterns hang on the mast.",
          "order": 20, "disable": False},
    "2": {"uid": 2, "key": ["ghost"], "comment": "Off", "content": "Nothing.", "disable": True},
    "3": {"uid": 3, "key": [], "comment": "Always", "content": "The ferry is the Maren.", "constant": True},
}}


def test_world_info_json_imports_as_lore_entries(tmp_path: Path) -> None:
    book = read_world_info(write(tmp_path, "world.json", WORLD))
    assert book.name == "Ferry lore" and [e.name for e in book.entries] == ["Fog", "Lanterns", "Off", "Always"]
    fog, lantern, ghost, always = book.entries
    assert fog.matches("thick MIST tonight") and fog.insertion_order == 10
    assert fog.extensions["world_info"]["probability"] == 100  # kept for a round trip
    assert lantern.use_regex and lantern.matches("two LANTARNS") and not lantern.matches("a lamp")
    assert not ghost.enabled and not ghost.matches("ghost")
    assert always.constant and always.matches("anything")
    card = with_lorebook(card_io.card_from_tavern(v2()), book)
    assert len(card.lorebook.entries) == 4
    # a card's own character_book saved alone reads too
    alone = world_info_from_dict({"entries": [{"keys": ["quay"], "content": "The quay is stone.",
                                               "extensions": {}, "enabled": True, "insertion_order": 1}]})
    assert alone.entries[0].matches("on the quay")


@pytest.mark.parametrize(("doc", "message"), [
    ({"entries": {"3": {"key": "fog", "content": 3}}}, 'entries["3"].content: must be a string'),
    ({"entries": {"3": {"key": [1, 2]}}}, 'entries["3"].key: must be a list of strings'),
    ({"entries": {"0": {"key": ["/(unclosed/"]}}}, 'entries["0"].key: key \'/(unclosed/\' is not a valid regular'),
    ({"entries": {"0": {"key": ["a"], "disable": "no"}}}, 'entries["0"].disable: must be true or false'),
    ({"entries": {"0": {"key": ["a"], "order": "first"}}}, 'entries["0"].order: must be a number'),
    ({"entries": "none"}, "entries: must be an object of entries by uid"),
    ({"entries": [{"keys": "fog", "content": "x"}]}, "character_book.entries[0].keys: must be a list of strings"),
])
def test_bad_world_info_names_the_field(tmp_path: Path, doc: Any, message: str) -> None:
    with pytest.raises(CardError) as err:
        read_world_info(write(tmp_path, "bad.json", doc))
    assert message in str(err.value) and "bad.json" in str(err.value)


# -- over budget -----------------------------------------------------------------------------------------

def _fat_card(tmp: Path) -> CharacterCard:
    words = " ".join(["the salt wind turns the weathervane over the quay"] * 30)
    examples = "".join(f"<START>\n{{{{user}}}}: Question {i}?\n{{{{char}}}}: {words}\n" for i in range(3))
    lore = [{"keys": [f"k{i}"], "content": words, "extensions": {}, "enabled": True, "insertion_order": i,
             "constant": i < 3, "name": f"entry{i}"} for i in range(12)]
    return card_io.read_card_json(write(tmp, "fat.json", v2(description=words, mes_example=examples,
                                                             character_book={"entries": lore})))


def test_a_card_over_its_budget_is_reported_with_what_is_lost(tmp_path: Path) -> None:
    card = _fat_card(tmp_path)
    problems = {p.field: p for p in check_card(card, MemoryConfig(context_tokens=2048))}
    assert problems["examples"].severity == "warning" and "left out of every prompt" in problems["examples"].why
    assert problems["examples"].tokens > 0
    assert "x the" in problems["card+lorebook"].why and problems["card+lorebook"].tokens > 2048
    assert "never sent" in problems["lorebook"].why and "entry" in problems["lorebook"].why
    # and the examples really are out of her prompt
    assert Memory(card, MemoryConfig(context_tokens=2048), embedder=_NoEmbedder()).examples == ""
    # Eve's own card fits
    eve = load_card(ROOT / "characters" / "eve.yaml")
    assert [p for p in check_card(eve) if p.severity == "error" or p.field in ("examples", "card+lorebook")] == []
    assert any(p.severity == "error" for p in check_card(eve, MemoryConfig(context_tokens=1024)))


def test_an_over_budget_card_is_a_warning_when_the_game_opens(tmp_path: Path, embedder: Any) -> None:
    from game.session import open_game

    _fat_card(tmp_path)
    story = tmp_path / "fat"
    story.mkdir()
    (story / "story.yaml").write_text(STORY.replace("ilse.yaml", "../fat.json"), encoding="utf-8")
    game = open_game(story, backend="null", save_dir=tmp_path / "saves", dialogue=None, voice=False,
                     cast_options={"embedder": embedder, "show_progress": False})
    try:
        assert any("card+lorebook" in w and "can never be in one prompt" in w for w in game.warnings), game.warnings
        assert any("lorebook: constant entries" in w and "never sent" in w for w in game.warnings)
        assert any("fat.json" in w for w in game.warnings)
    finally:
        game.close()


# -- the command line ----------------------------------------------------------------------------------

def test_card_validate_import_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, "ilse.json", v2(alternate_greetings=["Mind the gap."], description="{{char}} {{time}}",
                                          extensions={"depth_prompt": {"prompt": "Be terse.", "depth": 1}}))
    world = write(tmp_path, "world.json", WORLD)
    assert main(["card", "validate", str(src), "--lore", str(world)]) == 0
    out = capsys.readouterr().out
    assert "description: macros {{time}} are not known" in out and "4 lore entries" in out
    yml = tmp_path / "characters" / "ilse.yaml"
    assert main(["card", "import", str(src), "--lore", str(world), "-o", str(yml)]) == 0
    card = load_card(yml)
    assert card.greetings == ("Ticket, {{user}}.", "Mind the gap.") and len(card.lorebook.entries) == 4
    assert card.depth_prompt is not None and card.depth_prompt.prompt == "Be terse."
    assert card.lorebook.entries[1].use_regex
    assert main(["card", "import", str(src), "-o", str(yml)]) == 2  # exists: not overwritten
    assert "pass --force" in capsys.readouterr().err
    png = tmp_path / "ilse.png"
    assert main(["card", "export", str(yml), "-o", str(png)]) == 0
    again = load_card(png)
    assert again.greetings == card.greetings and len(again.lorebook.entries) == 4
    assert again.depth_prompt == card.depth_prompt
    assert main(["card", "export", str(yml), "-o", str(tmp_path / "v3.json"), "--spec", "3"]) == 0
    assert json.loads((tmp_path / "v3.json").read_text(encoding="utf-8"))["spec"] == "chara_card_v3"


def test_card_commands_name_the_bad_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "bad.json", v2(alternate_greetings=["hi", 3]))
    assert main(["card", "validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "data.alternate_greetings: must be a list of strings" in err
    small = write(tmp_path, "ok.json", v2())
    assert main(["card", "validate", str(small), "--context", "300"]) == 1  # cannot load in 300 tokens
    assert "error" in capsys.readouterr().out
    assert main(["card", "validate", str(small), "--lore", str(write(tmp_path, "w.json", {"entries": 1}))]) == 2
    assert "w.json" in capsys.readouterr().err
    assert sink_parts(card_io.read_card_json(small))  # the card itself was fine

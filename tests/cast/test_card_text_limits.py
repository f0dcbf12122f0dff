"""A card whose text holds a lone UTF-16 surrogate is refused on import, so every card that loads exports."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from game.cast import card_io
from game.errors import CardError

CARD = {"spec": "chara_card_v2", "spec_version": "2.0",
        "data": {"name": "Ada", "description": "TEXT", "personality": "", "scenario": "", "first_mes": "Hi.",
                 "mes_example": ""}}


def card_text(description: str) -> str:
    return json.dumps(CARD).replace("TEXT", description)


def test_a_lone_surrogate_in_a_json_card_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(card_text("a \\ud800 b"))
    with pytest.raises(CardError, match="lone UTF-16 surrogate") as err:
        card_io.read_card_json(path)
    assert err.value.where == str(path)


def test_a_lone_surrogate_in_a_png_card_is_refused(tmp_path: Path) -> None:
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("chara", base64.b64encode(card_text("\\udfff").encode()).decode())
    path = tmp_path / "c.png"
    Image.new("RGB", (4, 4)).save(path, pnginfo=info)
    with pytest.raises(CardError, match="lone UTF-16 surrogate"):
        card_io.read_card_png(path)


def test_a_surrogate_pair_is_text_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(card_text("smile \\ud83d\\ude00"))
    card = card_io.read_card_json(path)
    out = card_io.write_card_json(card, tmp_path / "out.json")
    assert "\U0001f600" in out.read_text(encoding="utf-8")

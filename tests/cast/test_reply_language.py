"""What the model says cannot be translated by a catalogue (#17): with ``--lang`` her prompt asks her
to answer in the player's language; the window's "You" comes from the story's catalogue."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.cast.card import card_from_dict
from game.cast.castroom import RecordedReplies, build_cast
from game.cast.memory import Memory
from game.cast.prompt import PromptBuilder
from game.session import Session
from game.story.loader import load_story
from game.story.strings import LANG_ENV, language_name
from game.world.backends.null import NullBackend

ROOT = Path(__file__).parents[2]
CARD = {"id": "fox", "name": "Fox", "greetings": ["Hello."], "description": "A fox of the wood."}


def test_the_prompt_asks_for_the_players_language() -> None:
    card = card_from_dict(CARD)
    french = PromptBuilder(Memory(card), language="fr").build("Bonjour, qui es-tu ?")
    assert "always answer in French" in french.post_history
    assert french.to_messages()[-1]["content"] == "Bonjour, qui es-tu ?"
    assert any("always answer in French" in m["content"] for m in french.to_messages())
    plain = PromptBuilder(Memory(card)).build("Hello, who are you?")
    assert "answer in" not in plain.post_history
    assert french.tokens > plain.tokens  # the note is counted in the budget
    assert language_name("pt-BR") == "Portuguese" and language_name("xx") == "xx"


def test_play_in_french_gives_her_the_language(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LANG_ENV, "fr")
    room = build_cast(load_story(ROOT / "stories" / "eve"), None, voice=False, recorded=RecordedReplies([]),
                      show_progress=False)
    assert room is not None
    assert "always answer in French" in room.characters["eve"].builder.language_note


def test_the_players_speaker_label_is_translated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LANG_ENV, "fr")
    assert Session(load_story(ROOT / "stories" / "zero_mark"), NullBackend()).speaker_name("player") == "Vous"
    monkeypatch.setenv(LANG_ENV, "")
    assert Session(load_story(ROOT / "stories" / "zero_mark"), NullBackend()).speaker_name("player") == "You"

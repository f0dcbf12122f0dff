"""A French name typed without its apostrophe ("Je m appelle Tomas", "je mappelle Ada") is the
player's name, as "Je m'appelle Tomas" is."""

from __future__ import annotations

import pytest

from game.cast.card import CharacterCard
from game.cast.memory import Memory
from game.cast.retrieval import HashEmbedder
from game.cast.told import told_name
from game.state.events import Event


@pytest.mark.parametrize(("line", "name"), [
    ("Bonsoir. Je m appelle Tomas.", "Tomas"),
    ("je mappelle ada", "Ada"),
    ("Je m'appelle Tomas.", "Tomas"),
    ("Je m’appelle Ysolde.", "Ysolde"),
])
def test_the_name_is_read_with_or_without_the_apostrophe(eve: CharacterCard, line: str, name: str) -> None:
    assert told_name(line)[0] == name
    memory = Memory(eve, embedder=HashEmbedder())
    memory.observe(Event(kind="say", turn=1, speaker="player", text=line, data={"target": "eve"}))
    assert memory.player_name == name


def test_other_words_after_je_m_are_no_name() -> None:
    assert told_name("Je m ennuie un peu.") == ("", "")

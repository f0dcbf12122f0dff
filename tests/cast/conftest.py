"""Fixtures of the cast room's tests: ``eve``, her card (``characters/eve.yaml``), read once per module."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.cast.card import CharacterCard
from game.cast.card_io import load_card
from game.cast.grounding import Grounding
from game.cast.topics import TopicRouter

#: Eve Solvang's card, the one the Eve story plays.
EVE_CARD = Path(__file__).resolve().parents[2] / "characters" / "eve.yaml"


@pytest.fixture(scope="module")
def eve() -> CharacterCard:
    """Eve's card as ``load_card`` reads it (module scope: no test may change it)."""
    return load_card(EVE_CARD)


@pytest.fixture(scope="module")
def grounding(eve: CharacterCard, embedder: object) -> Grounding:
    """:class:`Grounding` over Eve's card with the shared MiniLM (module scope: no test may change it)."""
    return Grounding(eve, embedder)


@pytest.fixture(scope="module")
def topics(eve: CharacterCard, embedder: object) -> TopicRouter:
    """:class:`TopicRouter` over Eve's card with the shared MiniLM (module scope: no test may change it)."""
    return TopicRouter(eve, embedder)

"""The cast: character cards, memory, prompt assembly, relationships.

- :mod:`game.cast.card`: :class:`CharacterCard` and its YAML loader;
- :mod:`game.cast.card_io`: SillyTavern V1/V2/V3 cards as JSON or PNG, in and out;
- :mod:`game.cast.memory`: :class:`Memory` (sink, rolling history, episodic, entity);
- :mod:`game.cast.retrieval`: episodic scoring (Park et al. 2023), vectorised;
- :mod:`game.cast.prompt`: :class:`PromptBuilder` under a token budget;
- :mod:`game.cast.relationships`: axes in ``GameState``, tone, gifts, decay, the turn hook.

- :mod:`game.cast.dialogue` and :mod:`game.cast.guard`: the reply pipeline and the persona guard;
- :mod:`game.cast.castroom`: :func:`~game.cast.castroom.build_cast` makes all of it (and her
  voice, and the director's identity anchors) into a :class:`game.session.Session`.

See ``docs/characters.md``.
"""

from game.cast.card import (
    Axis,
    CharacterCard,
    Exchange,
    ExpressionRule,
    Look,
    Lorebook,
    LoreEntry,
    Voice,
    find_card,
    substitute,
)
from game.cast.card_io import (
    card_to_v2,
    card_to_v3,
    load_card,
    read_card_json,
    read_card_png,
    write_card_json,
    write_card_png,
)
from game.cast.memory import Belief, HistoryMessage, Memory, MemoryConfig, approx_tokens, tokenizer_counter
from game.cast.prompt import PromptBuilder, PromptParts
from game.cast.relationships import RelationshipHook, Relationships, VoiceStyle
from game.cast.retrieval import HashEmbedder, Scored, Weights

__all__ = [
    "Axis",
    "Belief",
    "CharacterCard",
    "Exchange",
    "ExpressionRule",
    "HashEmbedder",
    "HistoryMessage",
    "Look",
    "LoreEntry",
    "Lorebook",
    "Memory",
    "MemoryConfig",
    "PromptBuilder",
    "PromptParts",
    "RelationshipHook",
    "Relationships",
    "Scored",
    "Voice",
    "VoiceStyle",
    "Weights",
    "approx_tokens",
    "card_to_v2",
    "card_to_v3",
    "find_card",
    "load_card",
    "read_card_json",
    "read_card_png",
    "substitute",
    "tokenizer_counter",
    "write_card_json",
    "write_card_png",
]

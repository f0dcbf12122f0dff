"""The scene vocabulary: things named by their words, unknown nouns mapped by meaning or reported."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from game.world.backends.procedural import ProceduralBackend
from game.world.backends.scenery import Vocabulary
from game.world.protocol import Entity, Scene, SessionStart, WorldRequest


def test_settings_name_things_by_their_words_and_longest_phrase_first() -> None:
    v = Vocabulary()
    room = v.read("inside a lighthouse lantern room: a huge beehive Fresnel lens turning")
    assert room.interior == "lantern_room" and room.has("lens") and not room.has("lantern")
    oak = v.read("a huge old oak on a slope, hollow at its foot, dry brown leaves inside")
    assert {"oak", "hollow", "leaf_bed"} <= set(oak.things) and oak.interior == ""
    assert v.read("a hollow").has("oak")  # a hollow is drawn at the foot of its oak


def test_without_an_embedder_a_phrase_naming_nothing_is_reported_not_dropped() -> None:
    s = Vocabulary().read("a kitchen, a singing kettle")
    assert s.interior == "kitchen"
    assert any("a singing kettle" in n and "no embedder" in n for n in s.notes)


def test_unknown_nouns_map_to_the_nearest_thing_by_meaning(embedder: Any) -> None:
    v = Vocabulary(embedder.encode)
    s = v.read("a kitchen, a singing kettle, a wooden bench")
    assert s.has("stove") and s.has("table")
    assert ("a singing kettle", "stove") in s.mapped
    far = v.read("a meadow, the taste of regret")
    assert not far.mapped and any("the taste of regret" in n and "nearest is" in n for n in far.notes)
    assert v.noun("a wooden bench")[0] == "table"
    assert v.noun("a brolly")[0] == ""


def test_an_entity_nothing_is_near_is_drawn_and_reported() -> None:
    def embed(texts: Sequence[str]) -> np.ndarray:  # a random direction per text: nothing is near anything
        rows = [np.random.default_rng(list(t.encode())).normal(size=256) for t in texts]
        return np.array([r / np.linalg.norm(r) for r in rows], dtype=np.float32)

    b = ProceduralBackend(width=160, height=90, embed=embed)
    b.start(SessionStart("s", 1, "p"))
    thing = Entity("zorb", "object", "zorb", x=0.5)
    chunk = next(iter(b.generate(WorldRequest("s", 1, 12, "p", scene=Scene("meadow", entities=(thing,))))))
    assert chunk.drawn == ("zorb",)
    assert any("zorb" in n and "nothing in the vocabulary is near" in n for n in chunk.ignored)

"""The object cache tier: the world's truth about each entity, built once, reused until it changes.

One :class:`CachedObject` per entity id: its description (the look text), its
reference image, the key of the sprite a backend draws for it, and optionally
its sentence embedding (``embed``, e.g. MiniLM's ``encode``: ``(N, D)`` unit
vectors). An entry is keyed by a fingerprint of what the entity *is* (kind,
name, look, image), not of what it is *doing* (reaction, position, what it
holds), so a creature that leaps stays a hit while a creature whose look changed
(a new colour) is a miss and is rebuilt. Hits and misses are counted per call
and in total; the Director reports them in every request's ``tiers``.

The world's object cache is what exists; a character's memory of it (the cast
room's entity memory) is belief, with its source and time.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from game.world.protocol import Entity


@dataclass(frozen=True)
class CachedObject:
    """One entity as the world knows it.

    Attributes:
        id: entity id.
        fingerprint: 24 hex digits of BLAKE2b over (kind, name, look, image).
        description: "<name>: <look>" as sent to text-conditioned backends.
        image: reference image path, or ``""``.
        sprite_key: key of the drawn sprite (``sprite:<fingerprint>``), stable while the entity is.
        embedding: ``(D,)`` float32 unit vector of ``description``, or ``None`` without an embedder.
        built_at: request ``seq`` when this entry was built.
    """

    id: str
    fingerprint: str
    description: str
    image: str
    sprite_key: str
    embedding: np.ndarray | None = field(default=None, compare=False, repr=False)
    built_at: int = 0


def fingerprint(entity: Entity) -> str:
    """What the entity is: kind, name, look, image (not its state, place or holdings)."""
    text = json.dumps([entity.kind, entity.name, entity.look, entity.image], ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


class ObjectMemory:
    """The object cache of one session.

    Args:
        embed: ``texts -> (N, D)`` unit vectors, called once per new or changed
            entity; ``None`` stores no embeddings.
        capacity: entries kept (least recently used dropped beyond it).

    Attributes:
        hits, misses: totals since construction.
    """

    def __init__(self, embed: Callable[[Sequence[str]], np.ndarray] | None = None, capacity: int = 512) -> None:
        self.embed = embed
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[str, CachedObject] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, entity_id: str) -> CachedObject | None:
        """The entry of ``entity_id``, or ``None``."""
        return self._entries.get(entity_id)

    def refresh(self, entities: Iterable[Entity], seq: int = 0) -> tuple[list[CachedObject], int, int]:
        """Look every entity up, rebuilding the entries of new or changed ones.

        Returns:
            ``(entries in the order given, hits, misses)`` of this call.
        """
        out: list[CachedObject] = []
        new: list[tuple[int, Entity, str]] = []
        hits = misses = 0
        for e in entities:
            fp = fingerprint(e)
            entry = self._entries.get(e.id)
            if entry is not None and entry.fingerprint == fp:
                hits += 1
                self._entries.move_to_end(e.id)
                out.append(entry)
            else:
                misses += 1
                new.append((len(out), e, fp))
                out.append(CachedObject(e.id, fp, "", "", ""))
        vectors = None
        if new and self.embed is not None:
            vectors = self.embed([_describe(e) for _, e, _ in new])
        for k, (i, e, fp) in enumerate(new):
            entry = CachedObject(e.id, fp, _describe(e), e.image, f"sprite:{fp}",
                                 None if vectors is None else np.asarray(vectors[k], np.float32), seq)
            self._entries[e.id] = entry
            self._entries.move_to_end(e.id)
            out[i] = entry
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        self.hits += hits
        self.misses += misses
        return out, hits, misses

    def invalidate(self, entity_id: str) -> None:
        """Forget ``entity_id`` (its next lookup is a miss)."""
        self._entries.pop(entity_id, None)

    def clear(self) -> None:
        """Forget every entry (totals are kept)."""
        self._entries.clear()


def _describe(e: Entity) -> str:
    return f"{e.name}: {e.look}" if e.look else e.name

"""The object cache: things built once per key and reused, with hit and miss counts.

The procedural backend keeps every entity's sprite (and each pose variant of it)
here, keyed by what it looks like (entity id, look text, image path, size,
pose), so an entity that does not change is never drawn twice.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class ObjectCache(Generic[T]):
    """A least-recently-used cache of built values.

    Args:
        capacity: entries kept; the least recently used is dropped beyond it.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[Hashable, T] = OrderedDict()

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The value for ``key``, built by ``build()`` on a miss."""
        if key in self._items:
            self.hits += 1
            self._items.move_to_end(key)
            return self._items[key]
        self.misses += 1
        value = build()
        self._items[key] = value
        if len(self._items) > self.capacity:
            self._items.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        """Forget every entry (counters are kept)."""
        self._items.clear()

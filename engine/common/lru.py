"""``LRUCache`` (cachetools) for the per-query hot paths: ``cache[key]`` answers None for a
missing key instead of raising. ``cache.get(key)`` is a containment test and then an item
lookup, four Python calls on a hit; ``cache[key]`` here is two, which matters for lookups made
several times per query (the decoded cache, the plan cache). Misses cost a caught KeyError
inside cachetools, so this suits caches that mostly hit. Not for None values (a None read is a
miss)."""

from __future__ import annotations

from cachetools import LRUCache


class HitLRU(LRUCache):
    """An ``LRUCache`` whose ``[]`` gives None for a missing key (cachetools' documented
    ``__missing__`` hook: nothing is stored, the recency order is untouched)."""

    def __missing__(self, key):
        return None

"""engine.common.lru.HitLRU: cachetools' LRU whose [] answers None for a missing key."""

from __future__ import annotations

from engine.common.lru import HitLRU


def test_missing_key_is_none_and_not_stored():
    cache = HitLRU(2)
    assert cache["absent"] is None
    assert "absent" not in cache and len(cache) == 0


def test_a_hit_is_the_most_recently_used():
    cache = HitLRU(2)
    cache["a"], cache["b"] = 1, 2
    assert cache["a"] == 1  # a is now newer than b
    cache["c"] = 3  # evicts the least recently used: b
    assert cache["b"] is None and cache["a"] == 1 and cache["c"] == 3


def test_weighted_size_evicts_by_bytes():
    cache = HitLRU(10, getsizeof=len)
    cache["x"], cache["y"] = "aaaa", "bbbbb"
    cache["z"] = "cccc"  # 4 + 5 + 4 > 10: x goes
    assert cache["x"] is None and cache.currsize == 9

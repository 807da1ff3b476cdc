"""The decoded-column cache stays within its byte budget and forgets unloaded segments."""

from __future__ import annotations

import gc

import numpy as np

from engine.query.decoded_cache import DecodedCache


class FakeSegment:  # a stand-in object with identity and weak references, nothing more
    pass


def test_lru_eviction_within_budget():
    cache = DecodedCache(budget_bytes=3000)
    seg = FakeSegment()
    for i in range(5):
        cache.put(seg, ("ids", i), np.zeros(1000, dtype=np.uint8))
    assert cache.used <= 3000
    assert cache.get(seg, ("ids", 0)) is None  # oldest evicted
    assert cache.get(seg, ("ids", 4)) is not None
    cache.put(seg, ("big", 0), np.zeros(10_000, dtype=np.uint8))  # larger than the budget
    assert cache.get(seg, ("big", 0)) is None


def test_entries_die_with_their_segment():
    cache = DecodedCache(budget_bytes=1 << 20)
    seg = FakeSegment()
    cache.put(seg, ("ids", "a"), np.zeros(100))
    assert cache.used == 800
    del seg
    gc.collect()
    assert cache.used == 0


def test_forget_drops_a_segments_entries_now():
    cache = DecodedCache(budget_bytes=1 << 20)
    seg, other = FakeSegment(), FakeSegment()
    cache.put(seg, ("ids", "x"), np.zeros(10))
    cache.put(other, ("ids", "x"), np.zeros(10))
    assert cache.get(seg, ("ids", "x")) is not None
    cache.forget(seg)
    assert cache.get(seg, ("ids", "x")) is None
    assert cache.get(other, ("ids", "x")) is not None and cache.used == 80

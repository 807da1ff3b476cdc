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


def test_reads_under_concurrent_puts_evictions_and_drops():
    """Readers never fail, nor see another segment's entry, while writers add, evict and
    drop segments from other threads."""
    import sys
    import threading

    cache = DecodedCache(budget_bytes=64 * 200)  # ~200 entries of 64 bytes: constant eviction
    segments = [FakeSegment() for _ in range(8)]
    errors: list[BaseException] = []
    stop = threading.Event()

    def read(seg_index: int) -> None:
        seg = segments[seg_index]
        try:
            while not stop.is_set():
                for i in range(50):
                    value = cache.get(seg, ("k", i))
                    if value is not None and value != (seg_index, i):
                        raise AssertionError(f"segment {seg_index} read {value}")
        except BaseException as exc:
            errors.append(exc)

    def write() -> None:
        try:
            for round_ in range(100):
                for s, seg in enumerate(segments):
                    for i in range(50):
                        cache.put(seg, ("k", i), (s, i))
                cache.forget(segments[round_ % len(segments)])
        except BaseException as exc:
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        readers = [threading.Thread(target=read, args=(i,)) for i in range(4)]
        writers = [threading.Thread(target=write) for _ in range(2)]
        for t in readers + writers:
            t.start()
        for t in writers:
            t.join()
        stop.set()
        for t in readers:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[:3]
    assert 0 <= cache.used <= cache.budget


def test_a_segment_freed_by_a_collection_inside_put_does_not_deadlock():
    """A finalizer that runs on the thread already holding the cache's lock (a garbage
    collection started by an allocation inside put) drops its segment without deadlock."""
    import threading

    cache = DecodedCache(budget_bytes=1 << 20)
    doomed = FakeSegment()
    doomed.cycle = doomed  # freed only by the cyclic collector, at an arbitrary allocation
    cache.put(doomed, ("k", 0), np.zeros(10, dtype=np.uint8))
    del doomed
    alive = FakeSegment()
    done = threading.Event()

    def put_with_collection() -> None:
        with cache._lock:  # what put holds when its allocation triggers the collection
            gc.collect()
        cache.put(alive, ("k", 1), np.zeros(10, dtype=np.uint8))
        done.set()

    worker = threading.Thread(target=put_with_collection, daemon=True)
    worker.start()
    assert done.wait(10), "deadlocked: the finalizer waited for a lock its own thread held"
    assert cache.used == 10 and cache.get(alive, ("k", 1)) is not None


def test_a_segment_at_a_collected_segments_address_never_reads_its_entries():
    """CPython reuses a freed object's address at once; the new segment has the old one's id
    but must not see its entries (its finalizer's drop is applied before the next read)."""
    cache = DecodedCache(budget_bytes=1 << 20)
    reused = 0
    for i in range(200):
        old = FakeSegment()
        old_id = id(old)
        cache.put(old, ("ids", "x"), np.full(10, i))
        del old
        new = FakeSegment()
        if id(new) == old_id:
            reused += 1
            assert cache.get(new, ("ids", "x")) is None
        del new
    assert reused > 0, "no address was reused: the test did not test anything"
    assert cache.used == 0

"""The sorted key index against a dict: random batches of inserts, removals and lookups
through all three levels (small limits so every merge and fold happens), with plain and
hashed keys (equal first halves included), looked up in any order (large batches are sorted
first)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.upsert import key_index
from engine.upsert.key_index import SortedKeyIndex
from engine.upsert.keys import Keys


@pytest.mark.parametrize("hashed", [False, True])
def test_sorted_index_matches_a_dict(monkeypatch, hashed):
    monkeypatch.setattr(key_index, "RECENT_LIMIT", 8)
    monkeypatch.setattr(key_index, "DELTA_LIMIT", 32)
    monkeypatch.setattr(key_index, "SORTED_LOOKUP_MIN", 5)  # batches of 1 and 3 stay unsorted
    rng = np.random.default_rng(5)
    low_by_slot = np.zeros(100_000, np.int64)
    index = SortedKeyIndex((lambda slots: low_by_slot[slots]) if hashed else None)
    model: dict = {}  # key -> slot
    next_slot = 0

    def keys_of(pairs) -> Keys:
        main = np.array([p[0] for p in pairs], np.int64)
        return Keys(main, np.array([p[1] for p in pairs], np.int64) if hashed else None)

    for _ in range(400):
        # the first half from a small range, so hashed keys often share it
        size = int(rng.choice([1, 3, 7, 20, 90]))
        drawn = {(int(rng.integers(0, 300)), int(rng.integers(0, 4)) if hashed else 0)
                 for _ in range(size)}  # fmt: skip
        pairs = [tuple(p) for p in rng.permutation(sorted(drawn)).tolist()]  # any order
        found = index.lookup(keys_of(pairs))
        assert found.tolist() == [model.get(p, -1) for p in pairs]
        absent = [p for p in pairs if p not in model]
        present = [p for p in pairs if p in model]
        if absent:
            slots = np.arange(next_slot, next_slot + len(absent), dtype=np.int64)
            next_slot += len(absent)
            low_by_slot[slots] = [p[1] for p in absent]
            index.insert(keys_of(absent), slots)
            model.update(zip(absent, slots.tolist(), strict=True))
        gone = [p for p in present if rng.random() < 0.4]
        if gone:
            index.remove(keys_of(gone), np.array([model.pop(p) for p in gone], np.int64))
        assert len(index) == len(model)
    everything = [tuple(p) for p in rng.permutation(sorted(model)).tolist()]
    assert index.lookup(keys_of(everything)).tolist() == [model[p] for p in everything]

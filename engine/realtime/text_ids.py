"""The value -> id map of a consuming segment's text dictionary, with no Python object kept
per value.

A dict from each distinct string to its id costs ~150 bytes a value (the key object, the id
object, the table slot); for a column whose values are all distinct (an event id) that is
per row. Here the map is a few runs of (64-bit hash, id) pairs sorted by hash, merged
geometrically like the consuming inverted index: 12 bytes a value. The values themselves are
the dictionary's Arrow chunks, which ``ValueChunks`` keeps few (merged geometrically too) so
a hash match can be confirmed by comparing the stored value: a collision is never taken for
a match. The first collision seen is reported to the caller, which falls back to a dict.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

value_hash = hash  # Python's 64-bit string hash (SipHash); a module name so tests can vary it


class HashCollision(Exception):
    """Two different values with one hash: the caller must fall back to an exact dict."""


class TextIds:
    """Hash -> id for ``count`` distinct values; runs are never changed in place."""

    def __init__(self):
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []
        self.count = 0

    def hashes(self, values: list) -> np.ndarray:
        """The hashes of distinct ``values``; HashCollision if two of them share one."""
        hashes = np.fromiter(map(value_hash, values), np.int64, len(values))
        if len(np.unique(hashes)) < len(hashes):
            raise HashCollision
        return hashes

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        """The id of each hash, -1 where unknown (hashes are unique across runs)."""
        found = np.full(len(hashes), -1, dtype=np.int32)
        for run_hashes, run_ids in self.runs:
            pos = np.minimum(np.searchsorted(run_hashes, hashes), len(run_hashes) - 1)
            hit = run_hashes[pos] == hashes
            found[hit] = run_ids[pos[hit]]
        return found

    def add(self, hashes: np.ndarray) -> np.ndarray:
        """Give ``hashes`` (none known yet) the next ids, in order; returns them."""
        ids = np.arange(self.count, self.count + len(hashes), dtype=np.int32)
        self.count += len(hashes)
        order = np.argsort(hashes)
        runs = [*self.runs, (hashes[order], ids[order])]
        while len(runs) > 1 and len(runs[-2][0]) <= 2 * len(runs[-1][0]):
            newer, older = runs.pop(), runs.pop()
            merged = np.concatenate((older[0], newer[0]))
            order = np.argsort(merged)
            runs.append((merged[order], np.concatenate((older[1], newer[1]))[order]))
        self.runs = runs
        return ids

    @property
    def nbytes(self) -> int:
        return sum(h.nbytes + i.nbytes for h, i in self.runs)


class ValueChunks:
    """A dictionary's values in id order as a few Arrow chunks: each batch's new values are a
    chunk, merged into the one before while that one is at most twice its size. ``chunks`` is
    replaced, never changed in place, so a reader's copy stays valid."""

    def __init__(self):
        self.chunks: list[pa.Array] = []
        self.starts: list[int] = []  # the id of each chunk's first value
        self.count = 0

    def append(self, values: pa.Array) -> None:
        chunks, starts = [*self.chunks, values], [*self.starts, self.count]
        while len(chunks) > 1 and len(chunks[-2]) <= 2 * len(chunks[-1]):
            newer, older = chunks.pop(), chunks.pop()
            starts.pop()
            chunks.append(pa.concat_arrays([older, newer]))
        self.chunks, self.starts = chunks, starts
        self.count += len(values)

    def same(self, ids: np.ndarray, values: pa.Array) -> bool:
        """Whether the stored value of each of ``ids`` equals ``values`` at the same place."""
        chunks, starts = self.chunks, np.asarray(self.starts, dtype=np.int64)
        which = np.searchsorted(starts, ids, side="right") - 1
        for chunk in np.unique(which).tolist():
            at = np.flatnonzero(which == chunk)
            stored = chunks[chunk].take(pa.array(ids[at] - starts[chunk]))
            equal = pc.equal(stored, values.take(pa.array(at)))
            if not pc.all(equal).as_py():
                return False
        return True

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for c in self.chunks)

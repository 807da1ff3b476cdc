"""Growable column storage of a consuming segment.

Memory per row is bounded: a dictionary-encoded single-value column costs 4 bytes per row
(an int32 id) plus its distinct values once; a multi-value column 4 bytes per value plus 8 per
row (offsets); a raw fixed-width column its value width; a raw text column its Arrow bytes;
a null vector 1 byte per row; an inverted index 8 bytes per entry. No Python object is kept
per row or per distinct value of a text column: its value -> id map is sorted runs of
(hash, id), 12 bytes per distinct value (``engine.realtime.text_ids``); other dictionary
columns (numbers) keep a dict, ~100-150 bytes per distinct value, so a number column with a
distinct value per row is better raw (``noDictionaryColumns``). Measured in-process, 1M githubEvents rows (a unique text ``id``) hold about
60 MB of segment buffers.

Appends never touch the part of a buffer a reader may already hold: buffers grow by copying
into a new, larger array, and rows are only ever added past the end. So a snapshot that took
``n`` rows can read ``[:n]`` of the arrays it captured while the consumer keeps appending.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from engine.realtime.text_ids import HashCollision, TextIds, ValueChunks
from engine.spi.schema import FieldSpec

INITIAL_CAPACITY = 1024


class GrowableArray:
    """A numpy array that doubles its capacity as values are appended."""

    def __init__(self, dtype, capacity: int = INITIAL_CAPACITY):
        self.data = np.empty(capacity, dtype=dtype)
        self.size = 0

    def extend(self, values: np.ndarray) -> None:
        need = self.size + len(values)
        if need > len(self.data):
            grown = np.empty(max(need, 2 * len(self.data)), dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown  # readers keep the old buffer, whose first rows never change
        self.data[self.size : need] = values
        self.size = need

    def view(self, n: int | None = None) -> np.ndarray:
        return self.data[: self.size if n is None else n]

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)


class SortedDictionary:
    """A dictionary's values in sorted order at one cardinality, with ``rank`` mapping an
    insertion-order id to its sorted id and ``order`` the reverse."""

    def __init__(self, values: np.ndarray | pa.Array, rank: np.ndarray, order: np.ndarray):
        self.values = values
        self.rank = rank
        self.order = order


class Postings:
    """The inverted index of a consuming column: for each dictionary id, its docs.

    Kept as a few runs of (id, doc) pairs sorted by id (then doc), never as one object per
    value: 8 bytes per entry whatever the cardinality. Each appended batch is a new run; a
    run is merged into the one before it while that one is at most twice its size, so there
    are O(log n) runs and each entry is re-sorted O(log n) times (merging two sorted runs is
    linear with a stable sort). Runs are never changed in place: a reader keeps the list it
    took."""

    def __init__(self):
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []

    def add(self, ids: np.ndarray, docs: np.ndarray) -> None:
        order = np.argsort(ids, kind="stable")
        runs = [*self.runs, (ids[order].astype(np.int32), docs[order].astype(np.uint32))]
        while len(runs) > 1 and len(runs[-2][0]) <= 2 * len(runs[-1][0]):
            newer, older = runs.pop(), runs.pop()
            merged_ids = np.concatenate((older[0], newer[0]))
            order = np.argsort(merged_ids, kind="stable")  # docs stay ascending per id
            runs.append((merged_ids[order], np.concatenate((older[1], newer[1]))[order]))
        self.runs = runs

    @staticmethod
    def docs(runs: list, value_id: int, num_docs: int) -> BitMap:
        """Docs below ``num_docs`` holding ``value_id``, from the ``runs`` a reader took."""
        parts = []
        for ids, docs in runs:
            lo, hi = np.searchsorted(ids, [value_id, value_id + 1])
            if hi > lo:
                parts.append(docs[lo:hi])
        if not parts:
            return BitMap()
        found = np.concatenate(parts)
        return BitMap(found[found < num_docs])

    @property
    def nbytes(self) -> int:
        return sum(ids.nbytes + docs.nbytes for ids, docs in self.runs)


class DictionaryColumn:
    """A dictionary-encoded column (SV or MV). Values get ids in arrival order; the sorted
    dictionary the query engine needs is derived per snapshot (and reused while the
    cardinality does not change). With ``inverted``, ``postings`` keeps each id's docs up to
    date."""

    def __init__(self, spec: FieldSpec, inverted: bool):
        self.spec = spec
        self.fixed = spec.data_type.numpy_dtype is not None
        self._float = self.fixed and np.dtype(spec.data_type.numpy_dtype).kind == "f"
        arrow_type = spec.data_type.arrow_type
        text = pa.types.is_string(arrow_type) or pa.types.is_binary(arrow_type)
        # value -> id: text by hashes (no object per value, see text_ids), the rest by a dict
        self._ids: dict | None = None if text else {}
        self._text_ids: TextIds | None = TextIds() if text else None
        # fixed width: a numpy array; text and other variable-width values: Arrow chunks of
        # the new values of the batches (no Python object per value kept)
        self.values = GrowableArray(spec.data_type.numpy_dtype) if self.fixed else ValueChunks()
        self.forward = GrowableArray(np.int32)  # SV: one id per doc; MV: flat ids
        self.offsets = None if spec.single_value else GrowableArray(np.int64)
        if self.offsets is not None:
            self.offsets.extend(np.zeros(1, dtype=np.int64))
        self.postings: Postings | None = Postings() if inverted else None
        self._sorted: SortedDictionary | None = None

    @property
    def cardinality(self) -> int:
        return len(self._ids) if self._ids is not None else self._text_ids.count

    def append(self, column: pa.Array, first_doc: int) -> None:
        """Append one batch (a coerced Arrow column, a ListArray for MV) whose first row is
        doc ``first_doc``."""
        if self.offsets is not None:
            offsets = column.offsets.to_numpy().astype(np.int64)
            flat = column.flatten()
            self.offsets.extend(self.offsets.view()[-1] + (offsets[1:] - offsets[0]))
            docs = np.repeat(
                np.arange(first_doc, first_doc + len(column), dtype=np.uint32), np.diff(offsets)
            )
        else:
            flat = column
            docs = None
        ids = self._encode(flat)
        self.forward.extend(ids)
        if self.postings is not None and len(ids):
            if docs is None:
                docs = np.arange(first_doc, first_doc + len(ids), dtype=np.uint32)
            self.postings.add(ids, docs)

    def _encode(self, flat: pa.Array) -> np.ndarray:
        if len(flat) == 0:
            return np.empty(0, dtype=np.int32)
        encoded = pc.dictionary_encode(flat)
        distinct = encoded.dictionary.to_pylist()
        if self._ids is None:
            try:
                return self._encode_hashed(encoded, distinct)
            except HashCollision:  # never seen in practice; exact from now on
                values = self.arrival_values(self.cardinality).to_pylist()
                self._ids = dict(zip(values, range(len(values)), strict=True))
                self._text_ids = None
        known = self._ids
        # one dict probe per distinct value of the batch, not per row, and no Python loop:
        # the values not seen before get the next ids in batch order
        local = np.fromiter(map(known.get, distinct, itertools.repeat(-1)), np.int32, len(distinct))
        new = np.flatnonzero(local < 0)
        if len(new):
            start = len(known)
            fresh = [distinct[i] for i in new.tolist()]
            if self._float and len(set(fresh)) < len(fresh):
                return self._encode_one_by_one(encoded, distinct)  # 0.0 and -0.0 are one key
            known.update(zip(fresh, range(start, start + len(new)), strict=True))
            local[new] = np.arange(start, start + len(new), dtype=np.int32)
            self._add_values(encoded.dictionary.take(pa.array(new, type=pa.int64())))
        return local[encoded.indices.to_numpy(zero_copy_only=False)]

    def _encode_hashed(self, encoded: pa.DictionaryArray, distinct: list) -> np.ndarray:
        """Ids by hash, each match confirmed against the stored value; HashCollision (before
        anything is changed) when two different values share a hash."""
        text_ids = self._text_ids
        hashes = text_ids.hashes(distinct)
        local = text_ids.lookup(hashes)
        found = np.flatnonzero(local >= 0)
        if len(found) and not self.values.same(
            local[found], encoded.dictionary.take(pa.array(found))
        ):
            raise HashCollision
        new = np.flatnonzero(local < 0)
        if len(new):
            local[new] = text_ids.add(hashes[new])
            self._add_values(encoded.dictionary.take(pa.array(new, type=pa.int64())))
        return local[encoded.indices.to_numpy(zero_copy_only=False)]

    def _encode_one_by_one(self, encoded: pa.DictionaryArray, distinct: list) -> np.ndarray:
        """Values that Arrow keeps apart but a dict key does not (0.0 and -0.0) take the id of
        the first of them, as a dict lookup would give it."""
        known = self._ids
        local = np.empty(len(distinct), dtype=np.int32)
        new = []
        for i, value in enumerate(distinct):
            gid = known.get(value)
            if gid is None:
                gid = known[value] = len(known)
                new.append(i)
            local[i] = gid
        if new:
            self._add_values(encoded.dictionary.take(pa.array(new, type=pa.int64())))
        return local[encoded.indices.to_numpy(zero_copy_only=False)]

    def _add_values(self, added: pa.Array) -> None:
        if self.fixed:
            self.values.extend(added.to_numpy(zero_copy_only=False).astype(self.values.data.dtype))
        else:
            self.values.append(added.cast(self.spec.data_type.arrow_type))

    def arrival_values(self, cardinality: int) -> np.ndarray | pa.Array:
        """The first ``cardinality`` dictionary values in id (arrival) order."""
        if self.fixed:
            return self.values.view(cardinality)
        chunks = self.values.chunks  # replaced, never changed in place: a stable copy
        if not chunks:
            return pa.array([], type=self.spec.data_type.arrow_type)
        return pa.concat_arrays(chunks).slice(0, cardinality)

    def sorted_dictionary(self, cardinality: int) -> SortedDictionary:
        """The dictionary's first ``cardinality`` values, sorted (cached per cardinality)."""
        cached = self._sorted
        if cached is not None and len(cached.rank) == cardinality:
            return cached
        values = self.arrival_values(cardinality)
        if self.fixed:
            order = np.argsort(values, kind="stable")
            sorted_values = values[order]
        else:
            order = pc.sort_indices(values).to_numpy()
            sorted_values = values.take(pa.array(order))
        rank = np.empty(cardinality, dtype=np.int32)
        rank[order] = np.arange(cardinality, dtype=np.int32)
        result = SortedDictionary(sorted_values, rank, order)
        self._sorted = result
        return result

    @property
    def nbytes(self) -> int:
        size = self.forward.nbytes + (self.offsets.nbytes if self.offsets is not None else 0)
        size += self.postings.nbytes if self.postings is not None else 0
        # the value -> id map: a dict entry per distinct value (~100 B plus the value), or
        # 12 B per value by hash
        size += 100 * len(self._ids) if self._ids is not None else self._text_ids.nbytes
        return size + self.values.nbytes


class RawColumn:
    """A no-dictionary column: fixed-width values in a growable numpy array, text and other
    variable-width values as the appended Arrow chunks."""

    def __init__(self, spec: FieldSpec):
        self.spec = spec
        self.fixed = spec.data_type.numpy_dtype is not None
        self.values = GrowableArray(spec.data_type.numpy_dtype) if self.fixed else None
        self.chunks: list[pa.Array] = []
        self.offsets = None if spec.single_value else GrowableArray(np.int64)
        if self.offsets is not None:
            self.offsets.extend(np.zeros(1, dtype=np.int64))

    def append(self, column: pa.Array, first_doc: int) -> None:
        if self.offsets is not None:
            offsets = column.offsets.to_numpy().astype(np.int64)
            self.offsets.extend(self.offsets.view()[-1] + (offsets[1:] - offsets[0]))
            column = column.flatten()
        if self.fixed:
            self.values.extend(
                column.to_numpy(zero_copy_only=False).astype(self.values.data.dtype, copy=False)
            )
        elif len(column):
            self.chunks.append(column)

    def flat(self, entries: int, chunks: list[pa.Array]) -> np.ndarray | pa.Array:
        """The first ``entries`` flat values (numpy for fixed width, Arrow otherwise)."""
        if self.fixed:
            return self.values.view(entries)
        if not chunks:
            return pa.array([], type=self.spec.data_type.arrow_type)
        return pa.concat_arrays(chunks).slice(0, entries)

    @property
    def nbytes(self) -> int:
        size = self.values.nbytes if self.fixed else sum(c.nbytes for c in self.chunks)
        return size + (self.offsets.nbytes if self.offsets is not None else 0)

"""The inverted index writer's one-doc fast path writes the bytes pyroaring writes for every
bitmap one by one (the straightforward reference), and they read back as the docs."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from pyroaring import BitMap

from engine.segment.index.inverted import docs_grouped_by_id, write_inverted_index


class _Writer:
    """Collects what the index writer stores."""

    def __init__(self):
        self.streams: dict[str, io.BytesIO] = {}
        self.arrays: dict[str, np.ndarray] = {}

    @contextlib.contextmanager
    def stream(self, name: str):
        self.streams[name] = out = io.BytesIO()
        yield out

    def put_array(self, name: str, array: np.ndarray) -> None:
        self.arrays[name] = np.asarray(array)


def _reference(grouped: np.ndarray, bounds: np.ndarray) -> tuple[bytes, list[int]]:
    blobs, offsets = [], [0]
    for i in range(len(bounds) - 1):
        bitmap = BitMap(grouped[bounds[i] : bounds[i + 1]])
        bitmap.run_optimize()
        blobs.append(bitmap.serialize())
        offsets.append(offsets[-1] + len(blobs[-1]))
    return b"".join(blobs), offsets


@pytest.mark.parametrize(
    "ids",
    [
        np.arange(200_000, dtype=np.int64),  # unique: every id one doc, docs past 65535
        np.random.default_rng(1).integers(0, 90_000, 150_000),  # mixed one-doc and many
        np.repeat(np.arange(5), 30_000),  # few ids, long runs
        np.array([], dtype=np.int64),
    ],
    ids=["unique", "mixed", "runs", "empty"],
)
def test_written_bytes_equal_the_reference(ids):
    cardinality = int(ids.max()) + 2 if len(ids) else 1  # the last id has no doc
    grouped, bounds = docs_grouped_by_id(ids, cardinality)
    writer = _Writer()
    write_inverted_index(writer, "c", grouped, bounds)
    data, offsets = _reference(grouped, bounds)
    assert writer.streams["c.inv"].getvalue() == data
    assert writer.arrays["c.inv.off"].tolist() == offsets
    for value_id in np.random.default_rng(2).integers(0, cardinality, 50).tolist():
        start, end = offsets[value_id], offsets[value_id + 1]
        docs = BitMap.deserialize(data[start:end])
        assert list(docs) == np.flatnonzero(ids == value_id).tolist()

"""The segments of one partition that the metadata knows, with their valid-doc bitmaps.

``valid`` is Pinot's ``validDocIds``: each key's current doc, tombstones included;
``queryable`` (tables with a ``deleteRecordColumn``) is ``valid`` without tombstones, what
queries read. Every change bumps ``version``, so a query view copies a bitmap only when it
changed since the last copy (``frozen``).
"""

from __future__ import annotations

import array
import dataclasses

import numpy as np
from pyroaring import BitMap, FrozenBitMap


def doc_bitmap(docs: np.ndarray) -> BitMap:
    """``docs`` as a bitmap; through an ``array.array`` of uint32, which pyroaring copies in C
    (from a numpy array it iterates element by element, about 6x slower)."""
    return BitMap(_uint32(docs))


def _uint32(docs: np.ndarray) -> array.array:
    return array.array("I", np.ascontiguousarray(docs, dtype=np.uint32).tobytes())


@dataclasses.dataclass(eq=False)
class TrackedSegment:
    sid: int
    name: str
    segment: object  # an ImmutableSegment, or the consuming MutableSegment
    mutable: bool
    sequence: int | None  # LLC sequence number (None for uploaded segments)
    creation_ms: int
    has_deletes: bool
    valid: BitMap = dataclasses.field(default_factory=BitMap)
    queryable: BitMap | None = None
    version: int = 0
    max_comparison: float = float("-inf")  # for TTL (numeric comparison columns only)
    snapshot_version: int = -1  # the version last written as a snapshot
    _frozen: tuple | None = None  # (version, valid, queryable)

    def __post_init__(self) -> None:
        if self.has_deletes and self.queryable is None:
            self.queryable = BitMap()

    def set_docs(self, docs: np.ndarray, deleted: np.ndarray) -> None:
        """Docs become their keys' current versions (``deleted``: tombstones)."""
        if not len(docs):
            return
        self.valid.update(_uint32(docs))
        if self.queryable is not None:
            self.queryable.update(_uint32(docs[~deleted]))
        self.version += 1

    def clear_docs(self, docs: np.ndarray) -> None:
        if not len(docs):
            return
        gone = doc_bitmap(docs)
        self.valid -= gone
        if self.queryable is not None:
            self.queryable -= gone
        self.version += 1

    def frozen(self) -> tuple[FrozenBitMap, FrozenBitMap | None]:
        """Read-only copies of (valid, queryable), made again only after a change."""
        kept = self._frozen
        if kept is None or kept[0] != self.version:
            queryable = None if self.queryable is None else FrozenBitMap(self.queryable)
            kept = self._frozen = (self.version, FrozenBitMap(self.valid), queryable)
        return kept[1], kept[2]

    @property
    def query_bitmap(self) -> BitMap:
        return self.valid if self.queryable is None else self.queryable

    def wins_tie_against(self, other: TrackedSegment) -> bool:
        """Pinot's tie between two segments' docs of equal comparison value: both LLC ->
        the higher sequence; else the later creation time; else the current one stays."""
        if self.sequence is not None and other.sequence is not None:
            return self.sequence > other.sequence
        return self.creation_ms > other.creation_ms

"""Loading a segment directory: reads ``metadata.json`` only; column files are memory-mapped
when first used, so loading costs O(1) in the data size."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import orjson

from engine.common.errors import SegmentError
from engine.segment.column_reader import ColumnReader
from engine.segment.files import METADATA_FILE, BufferReader
from engine.segment.metadata import SegmentMetadata


class ImmutableSegment:
    """A loaded, read-only segment."""

    def __init__(self, seg_dir: Path, metadata: SegmentMetadata):
        self.path = seg_dir
        self.metadata = metadata
        self._store = BufferReader(seg_dir)
        self._columns: dict[str, ColumnReader] = {}

    @property
    def name(self) -> str:
        return self.metadata.segment_name

    @property
    def table_name(self) -> str:
        """The table name with type, e.g. ``airlineStats_OFFLINE``."""
        return self.metadata.table_name

    @property
    def total_docs(self) -> int:
        return self.metadata.total_docs

    @property
    def column_names(self) -> list[str]:
        return list(self.metadata.columns)

    def column(self, name: str) -> ColumnReader:
        """The reader of ``name``; raises SegmentError for an unknown column."""
        reader = self._columns.get(name)
        if reader is None:
            meta = self.metadata.columns.get(name)
            if meta is None:
                raise SegmentError(f"segment {self.name} has no column {name!r}")
            reader = self._columns[name] = ColumnReader(self._store, meta, self.total_docs)
        return reader

    def has_column(self, name: str) -> bool:
        return name in self.metadata.columns

    @functools.cached_property
    def star_trees(self) -> list:
        """The segment's star-trees (``engine.segment.startree.StarTree``), possibly empty."""
        from engine.segment.startree.reader import StarTree

        return [
            StarTree(self, self._store, i, entry)
            for i, entry in enumerate(self.metadata.star_trees)
        ]

    def to_arrow(self, columns: list[str] | None = None):
        """The rows as a pyarrow Table in stored types (see engine.segment.export); it can be
        passed back to build_segment, e.g. to merge or purge segments."""
        from engine.segment.export import segment_to_table

        return segment_to_table(self, columns)

    def map_data(self) -> None:
        """Map the data file now (it is otherwise mapped on first use): this object then keeps
        reading these bytes even after its directory is deleted or replaced, as when a
        server swaps in a refreshed copy while queries still run on this one."""
        self._store.bytes_mapped()

    def close(self) -> None:
        """Drop this object's references to the mapped data file (before the segment is
        deleted or replaced). Arrays already handed out stay valid until garbage-collected."""
        self._columns.clear()
        self.__dict__.pop("star_trees", None)
        self._store.close()

    def size_bytes(self) -> int:
        """Bytes on disk of all the segment's files."""
        return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())

    def __repr__(self) -> str:
        return f"ImmutableSegment({self.name!r}, docs={self.total_docs})"


def read_metadata(seg_dir: str | os.PathLike) -> SegmentMetadata:
    """Read only a segment's metadata; raises SegmentError if missing or malformed."""
    path = Path(seg_dir) / METADATA_FILE
    # messages name the segment's directory only: they reach API answers (uploads)
    where = Path(seg_dir).name
    try:
        return SegmentMetadata.from_json(orjson.loads(path.read_bytes()))
    except FileNotFoundError:
        raise SegmentError(f"{where} is not a segment: {METADATA_FILE} is missing") from None
    except OSError as exc:
        raise SegmentError(f"{where}/{METADATA_FILE} cannot be read: {exc.strerror}") from exc
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise SegmentError(f"{where}/{METADATA_FILE} is corrupt: {exc}") from exc


def load_segment(seg_dir: str | os.PathLike) -> ImmutableSegment:
    """Load the segment in ``seg_dir`` (memory-mapped, lazy)."""
    seg_dir = Path(seg_dir)
    if not seg_dir.is_dir():
        raise SegmentError(f"segment directory {seg_dir} does not exist")
    return ImmutableSegment(seg_dir, read_metadata(seg_dir))

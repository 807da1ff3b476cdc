"""Valid-doc snapshots and TTL watermarks on a server's disk, in Pinot's file names:
``<segment dir>/validdocids.bitmap.snapshot`` (and ``queryabledocids.bitmap.snapshot``) as
portable roaring bitmaps, and ``<table dir>/ttl.watermark.partition.<p>`` (``.dedup`` for dedup
tables) holding the watermark as a double. Each file is written to a temporary name and
renamed, so a server killed mid-write keeps the previous file."""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path

from pyroaring import BitMap

log = logging.getLogger(__name__)

VALID_DOCS_SNAPSHOT = "validdocids.bitmap.snapshot"
QUERYABLE_DOCS_SNAPSHOT = "queryabledocids.bitmap.snapshot"


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def write_snapshot(segment_dir: Path, valid: BitMap, queryable: BitMap | None) -> None:
    _write(segment_dir / VALID_DOCS_SNAPSHOT, valid.serialize())
    if queryable is not None:
        _write(segment_dir / QUERYABLE_DOCS_SNAPSHOT, queryable.serialize())


def read_snapshot(segment_dir: Path, *, len_docs: int) -> BitMap | None:
    """The segment's valid docs as snapshotted, None when there is none or it is unreadable
    (then the segment is replayed)."""
    path = segment_dir / VALID_DOCS_SNAPSHOT
    try:
        bitmap = BitMap.deserialize(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring the unreadable snapshot %s: %s", path, exc)
        return None
    if len(bitmap) and bitmap.max() >= len_docs:
        log.warning("ignoring the snapshot %s: it names doc %d of %d", path, bitmap.max(), len_docs)
        return None
    return bitmap


def delete_snapshots(segment_dir: Path) -> None:
    for name in (VALID_DOCS_SNAPSHOT, QUERYABLE_DOCS_SNAPSHOT):
        (segment_dir / name).unlink(missing_ok=True)


def _watermark_path(table_dir: Path, partition: int, dedup: bool) -> Path:
    return table_dir / (f"ttl.watermark.partition.{partition}" + (".dedup" if dedup else ""))


def write_watermark(table_dir: Path, partition: int, value: float, dedup: bool) -> None:
    table_dir.mkdir(parents=True, exist_ok=True)
    _write(_watermark_path(table_dir, partition, dedup), struct.pack(">d", value))


def read_watermark(table_dir: Path, partition: int, dedup: bool) -> float | None:
    try:
        data = _watermark_path(table_dir, partition, dedup).read_bytes()
        return struct.unpack(">d", data)[0] if len(data) == 8 else None
    except OSError:
        return None

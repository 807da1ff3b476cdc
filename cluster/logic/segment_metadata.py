"""A segment's metadata for ``GET /segments/{t}/{seg}/metadata``: its ZooKeeper metadata plus,
from its stored copy, the segment's own metadata (columns, star-trees). The copy is read
once per CRC and cached in-process."""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path

import fsspec

from cluster.logic.deep_store import get_deep_store
from controller.errors import NotFound
from engine.clusterstate import ClusterStore
from engine.common.errors import SegmentError
from engine.segment import read_metadata, unpack_segment


def segment_metadata(
    store: ClusterStore, row, segment: str, columns: list[str] | None, with_columns: bool
) -> dict:
    zk = store.segment_metadata(row.name_with_type, segment)
    if zk is None:
        raise NotFound(f"Segment {segment} of table {row.name_with_type} not found")
    deep_store = get_deep_store()
    if deep_store.exists(row.table_name, segment):
        location = deep_store.url_of(deep_store.segment_path(row.table_name, segment))
    else:
        location = zk.download_url
    own = _own_metadata(location, zk.crc)
    out = {
        "segmentName": segment,
        "tableName": row.name_with_type,
        "schemaName": row.table_name,
        "crc": zk.crc,
        "totalDocs": zk.total_docs,
        "creationTimeMillis": zk.creation_time_ms,
        "pushTimeMillis": zk.push_time_ms,
        "refreshTimeMillis": zk.refresh_time_ms,
        "startTime": zk.start_time,
        "endTime": zk.end_time,
        "timeUnit": zk.time_unit,
        "downloadUrl": zk.download_url,
        "sizeInBytes": zk.size_in_bytes,
        "zkMetadata": zk.to_json(),
    }
    if own is not None:
        out["timeColumn"] = own.get("timeColumn")
        out["segmentVersion"] = own.get("segmentVersion")
        out["custom"] = own.get("custom", {})
        out["starTrees"] = own.get("starTrees", [])
        if with_columns:
            cols = own.get("columns", {})
            keep = columns if columns is not None else list(cols)
            out["columns"] = [{"columnName": c, **cols[c]} for c in keep if c in cols]
    else:
        out["error"] = f"the stored copy at {location} could not be read"
    return out


@functools.lru_cache(maxsize=256)
def _own_metadata(location: str, crc: str) -> dict | None:
    work = Path(tempfile.mkdtemp(prefix="sprig-meta-"))
    try:
        tar = work / "segment.tar.gz"
        with fsspec.open(location, "rb") as src, tar.open("wb") as out:
            shutil.copyfileobj(src, out)
        return read_metadata(unpack_segment(tar, work / "unpacked")).to_json()
    except (OSError, ValueError, SegmentError):
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)

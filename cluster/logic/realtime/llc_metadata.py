"""ZooKeeper metadata of LLC (real-time) segments, with Pinot's keys (``CommonConstants.Segment``).

A new CONSUMING segment has a start offset, its replica count, status IN_PROGRESS and its own
row target; no end offset. On commit the controller adds the end offset, status DONE and the
built segment's facts (times, docs, CRC, size, download URL).
"""

from __future__ import annotations

from engine.clusterstate.realtime_metadata import (  # noqa: F401 (re-exported for callers)
    COMMITTING,
    DONE,
    END_OFFSET,
    FLUSH_THRESHOLD_SIZE,
    IN_PROGRESS,
    NUM_REPLICAS,
    START_OFFSET,
    STATUS,
    UPLOADED,
    status_of,
)
from engine.clusterstate.segment_metadata import SegmentZKMetadata
from engine.common import clock
from engine.realtime.llc_name import LLCSegmentName
from engine.stream.config import FlushThreshold

PARTITION_METADATA = "segment.partition.metadata"
INDEX_VERSION = "segment.index.version"
DATA_CRC = "segment.data.crc"
USE_DATA_CRC = "segment.use.data.crc"

AUTOTUNE_SMOOTHING = 0.1  # weight of the newest segment in the rows-per-byte estimate
ROWS_PER_BYTE_KEY = "segment.flush.autotune.rowsPerByte"  # ours: the running estimate


def new_consuming_segment(
    table_with_type: str,
    name: LLCSegmentName,
    start_offset: int,
    num_replicas: int,
    row_threshold: int,
    *,
    now_ms: int | None = None,
    extra: dict[str, str] | None = None,
) -> SegmentZKMetadata:
    """The metadata of a new CONSUMING segment starting at ``start_offset`` (inclusive), to
    complete at ``row_threshold`` rows."""
    fields = {
        START_OFFSET: str(int(start_offset)),
        NUM_REPLICAS: str(int(num_replicas)),
        STATUS: IN_PROGRESS,
        FLUSH_THRESHOLD_SIZE: str(int(row_threshold)),
    }
    fields.update(extra or {})
    return SegmentZKMetadata(
        segment_name=str(name),
        table_name_with_type=table_with_type,
        creation_time_ms=clock.now_ms() if now_ms is None else int(now_ms),
        extra=fields,
    )


def committed_segment(
    current: SegmentZKMetadata,
    end_offset: int,
    built,
    *,
    download_url: str,
    size_in_bytes: int,
    now_ms: int | None = None,
    extra: dict[str, str] | None = None,
) -> SegmentZKMetadata:
    """``current`` (IN_PROGRESS) as DONE at ``end_offset`` (exclusive), with the facts of the
    built segment (``engine.segment.SegmentMetadata``) and ``extra`` fields (e.g. the
    deep-store URL). Times are epoch ms; a segment with no rows gets "now" as both bounds,
    as in Pinot."""
    now = clock.now_ms() if now_ms is None else int(now_ms)
    start_ms, end_ms = built.start_time_ms, built.end_time_ms
    if built.total_docs == 0 or start_ms is None or end_ms is None:
        start_ms = end_ms = now
    fields = dict(current.extra)
    fields.update(extra or {})
    fields.update(
        {
            END_OFFSET: str(int(end_offset)),
            STATUS: DONE,
            INDEX_VERSION: "v3",
            DATA_CRC: str(built.crc),
            USE_DATA_CRC: "true",
        }
    )
    return SegmentZKMetadata(
        segment_name=current.segment_name,
        table_name_with_type=current.table_name_with_type,
        crc=str(built.crc),
        total_docs=int(built.total_docs),
        start_time=int(start_ms),
        end_time=int(end_ms),
        time_unit="MILLISECONDS",
        download_url=download_url,
        creation_time_ms=current.creation_time_ms,
        size_in_bytes=int(size_in_bytes),
        extra=fields,
    )


def row_threshold(
    flush: FlushThreshold,
    max_partitions_per_instance: int,
    committing: SegmentZKMetadata | None = None,
    committing_size_bytes: int | None = None,
) -> tuple[int, dict[str, str]]:
    """The row target of a new segment and extra metadata to store with it.

    - ``realtime.segment.flush.threshold.segment.rows`` set: that many rows per segment;
    - ``...threshold.rows`` > 0: Pinot's per-server budget, divided by the most partitions
      any server consumes (``max_partitions_per_instance``);
    - 0 (autotune): the first segment takes ``autotune.initialRows``; later ones aim at the
      desired segment size using a smoothed rows-per-byte estimate from committed segments.
    """
    if flush.segment_rows:
        return flush.segment_rows, {}
    if flush.rows > 0:
        return max(1, flush.rows // max(1, int(max_partitions_per_instance))), {}
    if committing is None or not committing_size_bytes or committing.total_docs <= 0:
        return flush.autotune_initial_rows, {}
    latest = committing.total_docs / committing_size_bytes
    previous = committing.extra.get(ROWS_PER_BYTE_KEY)
    ratio = latest if previous is None else (
        AUTOTUNE_SMOOTHING * latest + (1 - AUTOTUNE_SMOOTHING) * float(previous)
    )  # fmt: skip
    rows = max(1, int(ratio * flush.segment_size_bytes))
    return rows, {ROWS_PER_BYTE_KEY: repr(ratio)}

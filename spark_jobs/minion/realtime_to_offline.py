"""RealtimeToOfflineSegmentsTask's data work: the rows of completed REALTIME segments that
fall in one window ``[start ms, end ms)``, merged on Spark with MergeRollupTask's transforms
(concat, rollup, dedup; roundBucketTimePeriod; maxNumRecordsPerSegment) and built as OFFLINE
segments through the engine's writer under names the caller fixes per window, so a retried
subtask rebuilds the same segments instead of adding new ones."""

from __future__ import annotations

from pathlib import Path

from spark_jobs.minion.merge_rollup import MergeSpec, merge_tables

# the segment custom.map keys an output segment carries
WINDOW_START_KEY = "RealtimeToOfflineSegmentsTask.windowStartMs"
WINDOW_END_KEY = "RealtimeToOfflineSegmentsTask.windowEndMs"


def segment_name(raw_table: str, start_ms: int, end_ms: int, partition: str, index: int) -> str:
    """Deterministic per window, partition group and output index."""
    return f"{raw_table}_{start_ms}_{end_ms}_{partition}_{index}"


def window_rows(table, time_format, time_column: str, start_ms: int, end_ms: int):
    """The rows of ``table`` whose time (in ``time_format``) is in [start_ms, end_ms)."""
    import pyarrow.compute as pc

    millis = time_format.to_millis(table.column(time_column).combine_chunks())
    mask = pc.and_(pc.greater_equal(millis, start_ms), pc.less(millis, end_ms))
    return table.filter(pc.fill_null(mask, False))


def move_window(spark, segment_dirs: list[Path], schema, offline_config, spec: MergeSpec,
                start_ms: int, end_ms: int, out_dir: Path, name_of) -> list:  # fmt: skip
    """Build the OFFLINE segments of the window's rows of ``segment_dirs``; segment ``i`` is
    named ``name_of(i)``. Returns the engine's SegmentBuildResults (none for no rows)."""
    from engine.segment import build_segment, load_segment

    time_column = spec.time_column
    time_format = schema.field(time_column).datetime_format
    tables = []
    for directory in segment_dirs:
        segment = load_segment(directory)
        try:
            rows = window_rows(segment.to_arrow(), time_format, time_column, start_ms, end_ms)
        finally:
            segment.close()
        if rows.num_rows:
            tables.append(rows)
    if not tables:
        return []
    outputs = merge_tables(spark, tables, spec, out_dir / "work")
    custom = {WINDOW_START_KEY: str(start_ms), WINDOW_END_KEY: str(end_ms)}
    return [
        build_segment(
            table,
            schema,
            offline_config,
            out_dir / "segments",
            segment_name=name_of(i),
            custom_metadata=dict(custom),
        )
        for i, table in enumerate(outputs)
    ]

"""Real-time ingestion on the server side: the consuming (mutable) segment and the
per-partition consuming loop.

Public API::

    from engine.realtime import MutableSegment
    segment = MutableSegment(name, schema, table_config)
    segment.index(record_batch) -> IndexResult(indexed, filtered, errors)  # transforms,
        # filter and coercion as in a batch build; bad rows skipped and returned
    segment.snapshot()       # read-only view with ImmutableSegment's reader API: pass it to
                             # engine.query.runner.run_query / execute_server like a segment
    segment.build(out_dir, segment_name=None, custom_metadata=None) -> SegmentBuildResult
    segment.num_docs / .memory_bytes / .num_rows_errored / .num_rows_filtered
"""

from engine.realtime.mutable_segment import IndexResult, MutableSegment

__all__ = ["IndexResult", "MutableSegment"]

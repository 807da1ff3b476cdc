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

    from engine.realtime.consuming_segment import ConsumingSegment   # what a server holds
    seg = ConsumingSegment(table_config, schema, segment_zk_metadata, instance_id=...,
                           completion=HttpCompletionClient(...), build_dir=...)
    seg.start(); seg.snapshot(); seg.force_commit(); seg.stop()
    seg.go_online(end_offset, download) -> segment dir to load (own build, catch-up, download)

    engine.realtime.partition_consumer.PartitionConsumer   # the consuming loop + protocol
    engine.realtime.consumer_state                          # its states and counters
    engine.realtime.committer                               # build, commitStart/upload/End
    engine.realtime.completion                              # statuses, HttpCompletionClient
    engine.realtime.consuming_info.segment_consumer_info    # consumingSegmentsInfo entry
    engine.realtime.llc_name.LLCSegmentName                 # <table>__<p>__<seq>__<time>

Memory per row of a consuming segment: 4 B per dictionary-encoded value (int32 id), 8 B per
inverted-index entry, the value width for raw fixed-width columns, the Arrow bytes for raw
text, 8 B per multi-value row (offsets), 1 B per row for a null vector; buffers grow by
doubling, so up to twice that. Per distinct value of a dictionary column: the value once
(numpy or Arrow) plus ~100 B for its entry in the value -> id hash map.
"""

from engine.realtime.mutable_segment import IndexResult, MutableSegment

__all__ = ["IndexResult", "MutableSegment"]

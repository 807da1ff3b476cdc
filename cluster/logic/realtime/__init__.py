"""The controller side of real-time (LLC) ingestion, as plain functions and small objects:

- ``llc_metadata``: ZK metadata of new CONSUMING segments and of committed ones, the row
  target of each new segment (``realtime.segment.flush.threshold.*``);
- ``completion_fsm``: the per-segment completion state machine (Pinot's blocking FSM);
- ``completion_manager``: the FSMs of a controller, keyed by segment, answering NOT_LEADER
  for tables it does not lead;
- ``consuming_segments``: CONSUMING segments for a new table (one per partition, on
  ``replicasPerPartition`` servers) and the three ZK steps of a commit;
- ``ensure_consuming``: RealtimeSegmentValidationManager's repairs (new partitions, deleted
  consuming segments, OFFLINE replicas, half-done commits).

LLC segment names are ``engine.realtime.llc_name.LLCSegmentName`` (shared with the servers).
"""

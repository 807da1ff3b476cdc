"""Keys and statuses of LLC (real-time) segment metadata in ZooKeeper, with Pinot's names
(``CommonConstants.Segment.Realtime``). The one home of these names: the controller writes
them, servers and minion generators read them.
"""

from __future__ import annotations

from engine.clusterstate.segment_metadata import SegmentZKMetadata

START_OFFSET = "segment.realtime.startOffset"
END_OFFSET = "segment.realtime.endOffset"
NUM_REPLICAS = "segment.realtime.numReplicas"
STATUS = "segment.realtime.status"
FLUSH_THRESHOLD_SIZE = "segment.flush.threshold.size"

IN_PROGRESS = "IN_PROGRESS"
COMMITTING = "COMMITTING"
DONE = "DONE"
UPLOADED = "UPLOADED"


def status_of(metadata: SegmentZKMetadata) -> str:
    """The segment's realtime status; UPLOADED when absent (a pushed segment), as in Pinot."""
    return metadata.extra.get(STATUS) or UPLOADED

"""What "still consuming" and "completed" mean for a REALTIME segment: one named rule per
meaning, each as Pinot's callers read it. Two records say it, and each rule names which:

- the segment's ZooKeeper metadata, ``segment.realtime.status``: IN_PROGRESS while its
  replicas consume, COMMITTING while a pauseless commit builds it, DONE once committed,
  UPLOADED for a pushed segment (also when the status is absent);
- the ideal state's replica states: CONSUMING while a replica consumes, ONLINE once it
  serves the built copy, OFFLINE where a replica stopped consuming on an error.

A commit writes DONE before it moves the ideal state, so for a moment a segment is committed
in ZooKeeper and still consuming in the ideal state; ``is_completed`` is the rule that is
safe across that moment.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.clusterstate.realtime_metadata import DONE, UPLOADED, status_of
from engine.clusterstate.records import SegmentState
from engine.clusterstate.segment_metadata import SegmentZKMetadata

_COMMITTED = frozenset({DONE, UPLOADED})
_CONSUMING = SegmentState.CONSUMING.value
_ONLINE = SegmentState.ONLINE.value

# the groups of Pinot's CompletedConsumingOfflineSegmentAssignment
COMPLETED_GROUP = "COMPLETED"
CONSUMING_GROUP = "CONSUMING"
OFFLINE_GROUP = "OFFLINE"


def is_committed(metadata: SegmentZKMetadata) -> bool:
    """The stream's rows of this segment are sealed in a built copy: status DONE or UPLOADED
    (Pinot's ``Status.isCompleted``). The minion generators (MergeRollup, RealtimeToOffline,
    Purge), a refresh upload, a repeated commit and the consuming-segment repair read this."""
    return status_of(metadata) in _COMMITTED


def is_consuming(replicas: Mapping[str, str]) -> bool:
    """Some replica still consumes the segment: CONSUMING in the ideal state (Pinot's
    ``findConsumingSegments``). Pause and force-commit act on these segments."""
    return _CONSUMING in replicas.values()


def is_completed(metadata: SegmentZKMetadata, replicas: Mapping[str, str]) -> bool:
    """Committed in ZooKeeper and no replica consuming it any more. Retention and the
    PurgeTask generator act only on these: Pinot reads the status alone, but a segment
    between the two commit steps is still served from memory, so it waits one more run."""
    return is_committed(metadata) and not is_consuming(replicas)


def assignment_group(replicas: Mapping[str, str]) -> str:
    """Which part of a REALTIME table's assignment the segment is in, as Pinot's rebalancer
    splits it: an ONLINE replica makes it COMPLETED (it goes to the completed servers, with
    ONLINE replicas); else a CONSUMING one makes it CONSUMING (it stays with the consuming
    servers, CONSUMING); else it is OFFLINE (every replica failed to consume: the repair
    task recreates it, and a rebalance leaves it where it is)."""
    states = replicas.values()
    if _ONLINE in states:
        return COMPLETED_GROUP
    if _CONSUMING in states:
        return CONSUMING_GROUP
    return OFFLINE_GROUP

"""The named rules of a REALTIME segment's state (engine.clusterstate.segment_status), on
the edges where the six former copies (retention, pause, completed placement, assignment,
rebalance, purge) and the status checks of the minion generators disagreed."""

from __future__ import annotations

import pytest

from engine.clusterstate import SegmentZKMetadata
from engine.clusterstate.segment_status import (
    COMPLETED_GROUP,
    CONSUMING_GROUP,
    OFFLINE_GROUP,
    assignment_group,
    is_committed,
    is_completed,
    is_consuming,
)

ON, CONS, OFF = "ONLINE", "CONSUMING", "OFFLINE"


def meta(status: str | None) -> SegmentZKMetadata:
    extra = {"segment.realtime.status": status} if status else {}
    return SegmentZKMetadata("t__0__0__20140101T0000Z", "t_REALTIME", extra=extra)


@pytest.mark.parametrize(
    ("status", "committed"),
    [("DONE", True), ("UPLOADED", True), (None, True),  # absent: a pushed segment
     ("IN_PROGRESS", False), ("COMMITTING", False)],
)  # fmt: skip
def test_is_committed(status, committed):
    assert is_committed(meta(status)) is committed


@pytest.mark.parametrize(
    ("replicas", "consuming", "group"),
    [
        ({"a": CONS, "b": CONS}, True, CONSUMING_GROUP),
        ({"a": ON, "b": ON}, False, COMPLETED_GROUP),
        # a commit half-way: the pause copy and the old placement/assignment/rebalance copies
        # said "consuming"; Pinot's rebalancer calls it completed (an ONLINE replica)
        ({"a": ON, "b": CONS}, True, COMPLETED_GROUP),
        ({"a": CONS, "b": OFF}, True, CONSUMING_GROUP),  # one replica failed to consume
        # every replica failed: the old placement copy relocated it as completed and the
        # rebalance copy moved it with ONLINE replicas; Pinot leaves it for the repair task
        ({"a": OFF, "b": OFF}, False, OFFLINE_GROUP),
        ({}, False, OFFLINE_GROUP),
        ({"a": ON, "b": OFF}, False, COMPLETED_GROUP),
    ],
)
def test_ideal_state_rules(replicas, consuming, group):
    assert is_consuming(replicas) is consuming
    assert assignment_group(replicas) == group


def test_is_completed_waits_for_the_second_commit_step():
    assert is_completed(meta("DONE"), {"a": ON})
    assert not is_completed(meta("DONE"), {"a": CONS})  # DONE, ideal state not moved yet
    assert not is_completed(meta("IN_PROGRESS"), {"a": ON})
    assert is_completed(meta(None), {})  # a pushed segment not yet assigned

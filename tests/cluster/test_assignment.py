"""Balanced assignment and rebalance targets (pure functions, no services)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.logic.assign_segments import assign_segment, rebalance_target
from controller.errors import BadRequest
from engine.clusterstate import ResourceAssignment


def test_new_segments_go_to_the_least_loaded_distinct_servers():
    ideal = ResourceAssignment("t_OFFLINE")
    servers = ["s1", "s2", "s3"]
    for i in range(6):
        ideal.segments[f"seg{i}"] = dict.fromkeys(assign_segment(ideal, servers, 2), "ONLINE")
    loads = ideal.segments_per_instance()
    assert {s: len(v) for s, v in loads.items()} == {"s1": 4, "s2": 4, "s3": 4}
    assert all(len(r) == 2 for r in ideal.segments.values())
    with pytest.raises(BadRequest, match="replication 4"):
        assign_segment(ideal, servers, 4)


@settings(max_examples=60, deadline=None)
@given(
    segments=st.integers(min_value=1, max_value=30),
    before=st.integers(min_value=1, max_value=5),
    after=st.integers(min_value=1, max_value=6),
    replication=st.integers(min_value=1, max_value=3),
)
def test_rebalance_target_is_balanced_and_keeps_valid_replicas(
    segments, before, after, replication
):
    if replication > before or replication > after:
        return
    old = [f"s{i}" for i in range(before)]
    new = [f"s{i}" for i in range(after)]
    ideal = ResourceAssignment("t_OFFLINE")
    for i in range(segments):
        ideal.segments[f"seg{i:03d}"] = dict.fromkeys(
            assign_segment(ideal, old, replication), "ONLINE"
        )
    target = rebalance_target(ideal, new, replication)
    assert set(target) == set(ideal.segments)
    load = dict.fromkeys(new, 0)
    for replicas in target.values():
        assert len(replicas) == replication and set(replicas) <= set(new)
        for instance in replicas:
            load[instance] += 1
    assert max(load.values()) - min(load.values()) <= 1
    # with the same servers an assignment made by assign_segment is already balanced
    if new == old:
        assert target == ideal.segments

"""Replica-group instance partitions and segment assignment (Pinot's
``replicaGroupPartitionConfig``), computed without a cluster."""

from __future__ import annotations

import orjson
import pytest

from cluster.errors import BadRequest
from cluster.logic.assign_segments import assign_segment
from cluster.logic.instance_partitions import ReplicaGroupPlacement, compute_placement
from engine.clusterstate import ResourceAssignment, SegmentState
from engine.spi import TableConfig

SERVERS = [f"Server_h_{port}" for port in (8004, 8001, 8003, 8002)]


@pytest.fixture(scope="module")
def user_attributes(pinot_examples) -> TableConfig:
    path = (pinot_examples / "all-configs" / "batch" / "colocated" / "userAttributes"
            / "userAttributes_offline_table_config.json")  # fmt: skip
    return TableConfig.from_json(orjson.loads(path.read_bytes()))


def test_replica_groups_are_runs_of_sorted_servers_split_by_partition(user_attributes):
    placement = compute_placement(user_attributes, SERVERS)
    # 2 replica groups of 2 servers; 2 partitions of 1 server each
    assert placement.name == "userAttributes_OFFLINE" and placement.column == "userUUID"
    assert placement.groups == [
        [["Server_h_8001"], ["Server_h_8003"]],
        [["Server_h_8002"], ["Server_h_8004"]],
    ]
    again = ReplicaGroupPlacement.from_record(placement.to_record())
    assert again == placement
    assert sorted(placement.to_record().list_fields) == ["0_0", "0_1", "1_0", "1_1"]


def test_too_few_servers_is_a_400(user_attributes):
    with pytest.raises(BadRequest, match="needs 2 replica group"):
        compute_placement(user_attributes, SERVERS[:3])


def test_segments_go_to_their_partition_in_every_group(user_attributes):
    placement = compute_placement(user_attributes, SERVERS)
    ideal = ResourceAssignment("userAttributes_OFFLINE")
    for partition in range(4):  # the data has 4 Murmur partitions; instances have 2
        name = f"seg_{partition}"
        chosen = assign_segment(ideal, SERVERS, 2, placement.placed(name, [partition]))
        ideal.segments[name] = dict.fromkeys(chosen, SegmentState.ONLINE.value)
        expected = placement.groups[partition % 2]
        assert chosen == [expected[0][0], expected[1][0]]
        # one replica per group, and sorted replicas list the groups in order
        assert sorted(chosen) == chosen
    spanning = placement.placed("spans-both", [0, 1])  # several partitions: a stable hash
    assert spanning == placement.placed("spans-both", [1, 0])


def test_mirrored_positions_within_a_partition():
    # one partition of two servers per group: a segment takes the same position in each
    placement = ReplicaGroupPlacement("t_OFFLINE", [[["A1", "A2"], ["B1", "B2"]]])
    ideal = ResourceAssignment("t_OFFLINE")
    for i in range(4):
        chosen = assign_segment(ideal, [], 2, placement.placed(f"s{i}", None))
        ideal.segments[f"s{i}"] = dict.fromkeys(chosen, SegmentState.ONLINE.value)
        assert chosen in (["A1", "B1"], ["A2", "B2"])
    assert sorted(tuple(sorted(r)) for r in ideal.segments.values()) == [
        ("A1", "B1"), ("A1", "B1"), ("A2", "B2"), ("A2", "B2")]  # fmt: skip


def test_balanced_tables_have_no_placement(pinot_examples):
    path = pinot_examples / "batch" / "billing" / "billing_offline_table_config.json"
    assert (
        compute_placement(TableConfig.from_json(orjson.loads(path.read_bytes())), SERVERS) is None
    )

"""Replica-group instance partitions and segment assignment (Pinot's
``replicaGroupPartitionConfig``), computed without a cluster."""

from __future__ import annotations

import time

import orjson
import pytest

from cluster.logic.assign_segments import assign_segment
from cluster.logic.instance_partitions import ReplicaGroupPlacement, compute_placement
from controller.errors import BadRequest
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


@pytest.mark.integration
@pytest.mark.django_db
def test_upload_and_rebalance_keep_replica_groups(api, store, pinot_examples, tmp_path):
    """Through the controller: uploaded segments land on their partition's server in both
    groups; after servers that sort first join, a rebalance rebuilds the groups over the new
    first four servers and moves every segment to match."""
    import pyarrow as pa

    from engine.common.types import DataType
    from engine.segment import build_segment, pack_segment
    from engine.spi import Schema
    from engine.spi.partition import partition_function
    from tests.cluster.conftest import register_servers, upload

    folder = pinot_examples / "all-configs" / "batch" / "colocated" / "userAttributes"
    schema = orjson.loads((folder / "userAttributes_schema.json").read_bytes())
    config = orjson.loads((folder / "userAttributes_offline_table_config.json").read_bytes())
    first = register_servers(api, 4)
    assert api.post("/schemas", schema, format="json").status_code == 200
    assert api.post("/tables", config, format="json").status_code == 200
    murmur = partition_function("Murmur", 4)
    users = [f"u{i}" for i in range(80)]
    parsed_schema = Schema.from_json(schema)
    parsed_config = TableConfig.from_json(config, schema=parsed_schema)
    for p in range(4):
        rows = [{"deviceOS": "ios", "userUUID": u, "daysSinceFirstTrip": 1, "totalTrips": 2}
                for u in users if murmur.partitions_of_values([u], DataType.STRING) == [p]]  # fmt: skip
        built = build_segment(pa.Table.from_pylist(rows), parsed_schema, parsed_config,
                              tmp_path / "built", segment_name=f"ua_p{p}")  # fmt: skip
        response = upload(api, pack_segment(built.path, tmp_path / f"ua_p{p}.tar.gz"),
                          table="userAttributes")  # fmt: skip
        assert response.status_code == 200, response.content

    def check(groups: list[list[str]]) -> None:
        ideal = store.ideal_state("userAttributes_OFFLINE").segments
        assert len(ideal) == 4
        for segment, replicas in ideal.items():
            p = int(segment.rsplit("_p", 1)[1]) % 2  # the instance partition (2 of them)
            assert sorted(replicas) == [groups[0][p], groups[1][p]], (segment, replicas)

    check([sorted(first)[:2], sorted(first)[2:]])
    shown = api.get("/tables/userAttributes/instancePartitions").json()["OFFLINE"]
    assert shown["instancePartitionsName"] == "userAttributes_OFFLINE"
    assert shown["partitionToInstancesMap"]["1_1"] == [sorted(first)[3]]
    newcomers = register_servers(api, 2, first_port=7001)  # their ids sort before the others
    response = api.post("/tables/userAttributes/rebalance?dryRun=true")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "DONE"
    check([sorted(first)[:2], sorted(first)[2:]])  # a dry run changes nothing
    response = api.post("/tables/userAttributes/rebalance?downtime=true")
    assert response.status_code == 200, response.content
    # with downtime the target is written at once; no server runs here to converge on it
    ordered = sorted([*newcomers, *first])
    deadline = time.monotonic() + 30
    while True:
        try:
            check([ordered[:2], ordered[2:4]])
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    assert api.delete("/tables/userAttributes/rebalance").status_code == 200
    # deleting the table removes its instance partitions
    assert api.delete("/tables/userAttributes").status_code == 200
    path = f"{store.paths.property_store}/INSTANCE_PARTITIONS/userAttributes_OFFLINE"
    assert store.get_record(path) == (None, -1)

"""Unit tests (no services) of the REALTIME rules of retention and relocation over an
in-memory stand-in for the cluster store: which segments retention may delete (completed
ones only, by their end time), which servers a table's consuming and completed segments
belong on, and where the relocator moves completed segments."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from cluster.logic.apply_retention import expired_segments
from cluster.logic.cluster_view import table_server_tag
from cluster.logic.completed_placement import completed_server_tag, completed_target
from controller.errors import BadRequest
from engine.clusterstate import InstanceType, ResourceAssignment, SegmentZKMetadata
from engine.spi import TableConfig

TABLE = "clicks_REALTIME"
DAY_MS = 86_400_000
NOW = 1_800_000_000_000


def realtime_config(**tenants) -> dict:
    return {
        "tableName": "clicks", "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "replicasPerPartition": "1",
                           "retentionTimeUnit": "DAYS", "retentionTimeValue": "7"},
        "tenants": tenants,
        "tableIndexConfig": {"streamConfigs": {
            "streamType": "kafka", "stream.kafka.topic.name": "clicks",
            "stream.kafka.broker.list": "localhost:9092",
            "stream.kafka.decoder.class.name":
                "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
        }},
    }  # fmt: skip


@dataclasses.dataclass
class Instance:
    instance_id: str
    tags: list[str]
    enabled: bool = True
    type: InstanceType = InstanceType.SERVER


class Store:
    """What retention and relocation read from ZooKeeper, in memory."""

    def __init__(self, metadata: dict[str, SegmentZKMetadata], ideal: dict, instances=()):
        self.metadata = metadata
        self.ideal = ResourceAssignment(TABLE, segments=ideal)
        self.instances = {i.instance_id: i for i in instances}

    def segment_names(self, table):
        return sorted(self.metadata)

    def segment_metadata(self, table, segment):
        return self.metadata.get(segment)

    def ideal_state(self, table):
        return self.ideal

    def instance_configs(self):
        return self.instances


def segment(name: str, status: str | None, end_ms: int | None) -> SegmentZKMetadata:
    extra = {"segment.realtime.status": status} if status else {}
    return SegmentZKMetadata(name, TABLE, end_time=end_ms, time_unit="MILLISECONDS",
                             extra=extra)  # fmt: skip


def test_retention_deletes_only_old_completed_segments():
    old, recent = NOW - 30 * DAY_MS, NOW - DAY_MS
    metadata = {
        "done_old": segment("done_old", "DONE", old),
        "uploaded_old": segment("uploaded_old", None, old),  # a pushed segment: UPLOADED
        "done_recent": segment("done_recent", "DONE", recent),
        "consuming": segment("consuming", "IN_PROGRESS", None),
        "committing_old": segment("committing_old", "COMMITTING", old),
        # DONE in ZK but the commit's ideal-state step has not run: still served consuming
        "half_committed_old": segment("half_committed_old", "DONE", old),
    }
    ideal = {name: {"Server_a": "ONLINE"} for name in metadata}
    ideal["consuming"] = ideal["half_committed_old"] = {"Server_a": "CONSUMING"}
    row = SimpleNamespace(config=realtime_config(), name_with_type=TABLE, table_type="REALTIME")
    assert expired_segments(Store(metadata, ideal), row, NOW) == ["done_old", "uploaded_old"]


def assignment(*pairs) -> dict:
    return {segment: dict.fromkeys(servers, state) for segment, servers, state in pairs}


SERVERS = [
    Instance("Server_c1", ["DefaultTenant_REALTIME"]),
    Instance("Server_c2", ["DefaultTenant_REALTIME"]),
    Instance("Server_done1", ["done_OFFLINE"]),
    Instance("Server_done2", ["done_OFFLINE"]),
    Instance("Server_off", ["done_OFFLINE"], enabled=False),
]


def test_tags_of_consuming_and_completed_servers():
    plain = TableConfig.from_json(realtime_config())
    assert table_server_tag(plain) == "DefaultTenant_REALTIME"
    assert completed_server_tag(plain) is None
    both = TableConfig.from_json(realtime_config(tagOverrideConfig={
        "realtimeConsuming": "hot_REALTIME", "realtimeCompleted": "done_OFFLINE"}))  # fmt: skip
    assert table_server_tag(both) == "hot_REALTIME"
    assert completed_server_tag(both) == "done_OFFLINE"
    same = TableConfig.from_json(realtime_config(tagOverrideConfig={
        "realtimeCompleted": "DefaultTenant_REALTIME"}))  # fmt: skip
    assert completed_server_tag(same) is None  # nothing to move


def test_completed_segments_target_the_completed_servers_only():
    config = TableConfig.from_json(realtime_config(tagOverrideConfig={
        "realtimeCompleted": "done_OFFLINE"}))  # fmt: skip
    ideal = assignment(
        ("s0", ["Server_c1"], "ONLINE"),
        ("s1", ["Server_c2"], "ONLINE"),
        ("s2", ["Server_done2"], "ONLINE"),  # already there: stays
        ("s3", ["Server_c1"], "CONSUMING"),
    )
    store = Store({}, ideal, SERVERS)
    target = completed_target(store, config, store.ideal)
    assert sorted(target) == ["s0", "s1", "s2"]  # the consuming segment is not moved
    assert target["s2"] == {"Server_done2": "ONLINE"}
    assert {i for m in target.values() for i in m} == {"Server_done1", "Server_done2"}
    assert all(len(m) == 1 for m in target.values())


def test_too_few_completed_servers_names_the_tag():
    config = realtime_config(tagOverrideConfig={"realtimeCompleted": "done_OFFLINE"})
    config["segmentsConfig"]["replicasPerPartition"] = "3"
    store = Store({}, assignment(("s0", ["Server_c1"], "ONLINE")), SERVERS)
    with pytest.raises(BadRequest, match=r"'done_OFFLINE'.*2 enabled server"):
        completed_target(store, TableConfig.from_json(config), store.ideal)


# --- engine.clusterstate.segment_status, as placement, assignment, rebalance and pause read it


def test_relocation_moves_segments_with_an_online_replica_only():
    config = TableConfig.from_json(realtime_config(tagOverrideConfig={
        "realtimeCompleted": "done_OFFLINE"}))  # fmt: skip
    ideal = assignment(
        ("online", ["Server_c1"], "ONLINE"),
        ("failed", ["Server_c1", "Server_c2"], "OFFLINE"),  # was relocated, now stays
        ("consuming", ["Server_c2"], "CONSUMING"),
    )
    ideal["committing"] = {"Server_c1": "ONLINE", "Server_c2": "CONSUMING"}  # was left behind
    store = Store({}, ideal, SERVERS)
    target = completed_target(store, config, store.ideal)
    assert sorted(target) == ["committing", "online"]
    assert all(set(r.values()) == {"ONLINE"} for r in target.values())


def test_rebalance_leaves_failed_and_optionally_consuming_segments_in_place():
    from cluster.logic.rebalance_table import staying_segments

    segments = {
        "online": {"Server_c1": "ONLINE"},
        "consuming": {"Server_c1": "CONSUMING", "Server_c2": "OFFLINE"},
        "failed": {"Server_c1": "OFFLINE", "Server_c2": "OFFLINE"},  # was moved as ONLINE
        "committing": {"Server_c1": "ONLINE", "Server_c2": "CONSUMING"},  # was kept
    }

    def stay(**flags):
        return sorted(staying_segments(segments, **flags))

    assert stay(realtime=True, include_consuming=True) == ["failed"]
    assert stay(realtime=True, include_consuming=False) == ["consuming", "failed"]
    assert stay(realtime=False, include_consuming=True) == []  # an OFFLINE table: all move
    assert stay(realtime=False, include_consuming=False) == ["consuming"]


def test_a_new_replica_takes_the_state_of_its_segments_group():
    from cluster.logic.assign_segments import rebalance_target

    ideal = ResourceAssignment(TABLE, segments={
        "consuming": {"Server_c1": "CONSUMING"},
        "committing": {"Server_c1": "ONLINE", "gone": "CONSUMING"},  # was given CONSUMING
    })  # fmt: skip
    target = rebalance_target(ideal, ["Server_c1", "Server_c2"], 2)
    assert target["consuming"] == {"Server_c1": "CONSUMING", "Server_c2": "CONSUMING"}
    assert target["committing"] == {"Server_c1": "ONLINE", "Server_c2": "ONLINE"}


def test_pause_lists_every_segment_with_a_consuming_replica():
    from cluster.logic.realtime.pause import consuming_segments

    ideal = ResourceAssignment(TABLE, segments={
        "a": {"s1": "CONSUMING"}, "b": {"s1": "ONLINE", "s2": "CONSUMING"},
        "c": {"s1": "ONLINE"}, "d": {"s1": "OFFLINE"},
    })  # fmt: skip
    assert consuming_segments(ideal) == ["a", "b"]

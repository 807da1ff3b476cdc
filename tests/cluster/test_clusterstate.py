"""engine.clusterstate codecs and aggregation (pure, no services)."""

from __future__ import annotations

import pytest

from engine.clusterstate import (
    ClusterStateError,
    CurrentState,
    InstanceConfig,
    ResourceAssignment,
    SegmentZKMetadata,
    ZNRecord,
    compute_external_view,
    table_config_from_record,
    table_config_to_record,
)


def test_znrecord_round_trip_and_helix_shape():
    record = ZNRecord("x", {"a": "1"}, {"seg": {"i": "ONLINE"}}, {"TAG_LIST": ["t"]})
    assert ZNRecord.from_bytes(record.to_bytes()) == record
    assert set(record.to_json()) == {"id", "simpleFields", "mapFields", "listFields"}
    with pytest.raises(ClusterStateError, match="not valid JSON"):
        ZNRecord.from_bytes(b"{nope", where="/p")
    with pytest.raises(ClusterStateError, match="needs a string 'id'"):
        ZNRecord.from_bytes(b'{"simpleFields": {}}')


def test_typed_records_round_trip():
    config = InstanceConfig("Server_h_1", "h", 1, ["DefaultTenant_OFFLINE"], False, 8097)
    assert InstanceConfig.from_record(config.to_record()) == config
    assert config.to_record().list_fields == {"TAG_LIST": ["DefaultTenant_OFFLINE"]}
    ideal = ResourceAssignment("t_OFFLINE", {"s": {"i": "ONLINE"}}, enabled=False, replicas="2")
    assert ResourceAssignment.from_record(ideal.to_record()) == ideal
    meta = SegmentZKMetadata("s", "t_OFFLINE", crc="12", total_docs=3, start_time=1, end_time=2,
                             time_unit="DAYS", extra={"segment.realtime.startOffset": "5"})  # fmt: skip
    again = SegmentZKMetadata.from_record(meta.to_record(), "t_OFFLINE")
    assert again == meta and meta.to_json()["segment.end.time"] == "2"


def test_table_config_codec_keeps_every_key():
    config = {"tableName": "t", "tableType": "OFFLINE", "segmentsConfig": {"replication": "2"},
              "tierConfigs": [{"name": "hot"}], "isDimTable": False}  # fmt: skip
    record = table_config_to_record(config)
    assert (
        record.id == "t_OFFLINE" and record.simple_fields["segmentsConfig"] == '{"replication":"2"}'
    )
    back = table_config_from_record(record)
    assert back == {**config, "tableName": "t_OFFLINE"}


def test_external_view_comes_from_live_current_states():
    states = {
        "a": {"t_OFFLINE": CurrentState("t_OFFLINE", "1", {"s1": "ONLINE", "s2": "DROPPED"})},
        "b": {"t_OFFLINE": CurrentState("t_OFFLINE", "2", {"s1": "ERROR"}),
              "u_OFFLINE": CurrentState("u_OFFLINE", "2", {"x": "ONLINE"})},
    }  # fmt: skip
    view = compute_external_view("t_OFFLINE", states)
    assert view.segments == {"s1": {"a": "ONLINE", "b": "ERROR"}}


@pytest.mark.integration
def test_concurrent_updates_are_not_lost(store):
    import threading

    path = f"{store.paths.root}/counter"

    def bump(record):
        record = record or ZNRecord("counter", {"n": "0"})
        record.simple_fields["n"] = str(int(record.simple_fields["n"]) + 1)
        return record

    def worker():
        for _ in range(20):
            store.update(path, bump)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.get_record(path)[0].simple_fields["n"] == "80"


@pytest.mark.integration
def test_live_instance_is_ephemeral(store, zookeeper):
    from kazoo.client import KazooClient

    from engine.clusterstate import ClusterStore

    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    other = ClusterStore(client, store.paths.cluster_name)
    live = other.register_live_instance("Server_h_1")
    assert store.live_instances()["Server_h_1"].session_id == live.session_id
    client.stop()
    client.close()
    assert "Server_h_1" not in store.live_instances()

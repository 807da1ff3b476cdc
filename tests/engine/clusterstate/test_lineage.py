"""The segment lineage record (Pinot's layout), the routing rule a broker applies with it, and
compare-and-set updates that lose no entry when writers race (against the real ZooKeeper)."""

from __future__ import annotations

import threading
import uuid

import pytest
from kazoo.client import KazooClient

from engine.clusterstate import ClusterStateError, ClusterStore, ZNRecord
from engine.clusterstate.lineage import (
    LineageEntry,
    LineageEntryState,
    SegmentLineage,
    delete_blocked_segments,
    lineage_consistent_segments,
    read_lineage,
    update_lineage,
)

IN_PROGRESS = LineageEntryState.IN_PROGRESS
COMPLETED = LineageEntryState.COMPLETED
REVERTED = LineageEntryState.REVERTED


def lineage(**entries: tuple[list[str], list[str], LineageEntryState]) -> SegmentLineage:
    return SegmentLineage(
        "t_OFFLINE",
        {k: LineageEntry(tuple(f), tuple(t), state, 1000 + i)
         for i, (k, (f, t, state)) in enumerate(entries.items())},
    )  # fmt: skip


def test_record_has_pinots_layout_and_round_trips():
    original = lineage(e1=(["a", "b"], ["c"], IN_PROGRESS), e2=([], ["d", "e"], COMPLETED))
    original.custom_map = {"k": "v"}
    record = original.to_record()
    assert record.to_json() == {
        "id": "t_OFFLINE",
        "simpleFields": {},
        "mapFields": {"custom.map": {"k": "v"}},
        "listFields": {"e1": ["a,b", "c", "IN_PROGRESS", "1000"],
                       "e2": ["", "d,e", "COMPLETED", "1001"]},
    }  # fmt: skip
    again = SegmentLineage.from_record(ZNRecord.from_bytes(record.to_bytes()))
    assert again == original
    assert again.entries["e2"].segments_from == ()
    assert list(again.to_json()["lineageEntries"]) == ["e1", "e2"]  # oldest first
    assert again.to_json()["lineageEntries"]["e2"] == {
        "segmentsFrom": [], "segmentsTo": ["d", "e"], "state": "COMPLETED", "timestamp": 1001
    }  # fmt: skip


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["a", "b", "IN_PROGRESS"], "expected [segmentsFrom, segmentsTo, state, timestamp]"),
        (["a", "b", "DONE", "1"], "unknown state 'DONE'"),
        (["a", "b", "COMPLETED", "soon"], "timestamp 'soon' is not epoch ms"),
    ],
)
def test_malformed_entries_are_named(value, message):
    record = ZNRecord("t_OFFLINE", list_fields={"e9": value})
    with pytest.raises(ClusterStateError, match="entry e9") as info:
        SegmentLineage.from_record(record)
    assert message in str(info.value)


def test_routing_rule_per_state():
    segments = ["a", "b", "c", "x"]
    assert lineage_consistent_segments(segments, None) == set(segments)
    # IN_PROGRESS: the old segments, never the new ones (even when already uploaded)
    assert lineage_consistent_segments(segments, lineage(e=(["a", "b"], ["c"], IN_PROGRESS))) == {
        "a", "b", "x"
    }  # fmt: skip
    # COMPLETED: the new ones only
    assert lineage_consistent_segments(segments, lineage(e=(["a", "b"], ["c"], COMPLETED))) == {
        "c", "x"
    }  # fmt: skip
    # REVERTED: back to the old ones
    assert lineage_consistent_segments(segments, lineage(e=(["a", "b"], ["c"], REVERTED))) == {
        "a", "b", "x"
    }  # fmt: skip


def test_completed_entry_whose_targets_are_not_served_yet_keeps_the_old_segments():
    completed = lineage(e=(["a", "b"], ["c", "d"], COMPLETED))
    # d is not loaded anywhere yet: the old pair stays, so no row is missed
    assert lineage_consistent_segments(["a", "b", "c", "x"], completed, ["a", "b", "c", "x"]) == {
        "a", "b", "x"
    }  # fmt: skip
    assert lineage_consistent_segments(["a", "b", "c", "d"], completed, ["a", "b", "c", "d"]) == {
        "c", "d"
    }  # fmt: skip


def test_a_chain_of_completed_replacements():
    chain = lineage(e1=(["a", "b"], ["c"], COMPLETED), e2=(["c"], ["d"], COMPLETED))
    # c was replaced by d (and deleted): e1 still holds, only d is routed
    assert lineage_consistent_segments(["a", "b", "d"], chain, ["a", "b", "d"]) == {"d"}
    # d not served yet: e2 falls back to c, which is served, so e1 holds
    assert lineage_consistent_segments(["a", "b", "c", "d"], chain, ["a", "b", "c"]) == {"c"}
    # neither c nor d is served: both fall back, to a and b
    assert lineage_consistent_segments(["a", "b", "c", "d"], chain, ["a", "b"]) == {"a", "b"}


def test_delete_blocked_segments():
    mixed = lineage(
        e1=(["a"], ["b"], IN_PROGRESS), e2=(["c"], ["d"], COMPLETED), e3=(["e"], ["f"], REVERTED)
    )
    assert delete_blocked_segments(mixed) == {"a", "b", "c"}
    assert delete_blocked_segments(None) == set()


@pytest.mark.integration
def test_concurrent_writers_lose_no_entry(zookeeper):
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    try:
        store = ClusterStore(client, f"lineage_{uuid.uuid4().hex[:8]}")
        store.ensure_cluster()
        assert read_lineage(store, "t_OFFLINE") is None
        errors = []

        def writer(worker: int) -> None:
            try:
                for i in range(10):
                    entry = LineageEntry((f"s{worker}_{i}",), (f"m{worker}_{i}",), IN_PROGRESS, i)

                    def add(current: SegmentLineage, key=f"w{worker}_{i}", entry=entry):
                        current.entries[key] = entry
                        return current

                    update_lineage(store, "t_OFFLINE", add)
            except Exception as exc:  # reported by the assertion below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        written = read_lineage(store, "t_OFFLINE")
        assert len(written.entries) == 60
        assert written.entries["w3_7"].segments_to == ("m3_7",)
        path = store.paths.segment_lineage("t_OFFLINE")
        assert path.endswith("/PROPERTYSTORE/SEGMENT_LINEAGE/t_OFFLINE")
        assert store.stat(path).version == 59  # one write per entry, none overwritten
    finally:
        client.stop()
        client.close()

"""UpsertCompactionTask's generator rules without services: its keys, defaults and Pinot's
messages, the tables it refuses, and which segments it deletes or compacts from the replicas'
validDocIdsMetadata; the executor's consensus over the replicas' bitmaps."""

from __future__ import annotations

import types

import pytest
from pyroaring import BitMap

from tasks.errors import SubtaskFailedError, TaskConfigError
from tasks.executors.upsert_compaction import agreed_bitmap
from tasks.generators.upsert_compaction import Rules, checked_upsert, rules_of, select
from tests.engine.upsert.test_full_upsert import config as upsert_table


def test_defaults_are_pinots():
    rules = rules_of({"invalidRecordsThresholdCount": "1"})
    assert rules == Rules(buffer_ms=7 * 86_400_000, percent=0.0, count=1, kind="SNAPSHOT",
                          mode="EQUAL", ignore_crc=False, batch=500, max_tasks=None)  # fmt: skip
    assert rules_of({"invalidRecordsThresholdPercent": "30", "bufferTimePeriod": "2h",
                     "validDocIdsType": "in_memory", "tableMaxNumTasks": "5"}) == Rules(
        buffer_ms=7_200_000, percent=30.0, kind="IN_MEMORY", max_tasks=5)  # fmt: skip


@pytest.mark.parametrize("task_config, message", [
    ({}, "invalidRecordsThresholdPercent or invalidRecordsThresholdCount or both must be provided"),
    ({"invalidRecordsThresholdPercent": "101"}, "must be >= 0 and <= 100"),
    ({"invalidRecordsThresholdPercent": "-1"}, "must be >= 0 and <= 100"),
    ({"invalidRecordsThresholdCount": "0"}, "invalidRecordsThresholdCount must be >= 1"),
    ({"invalidRecordsThresholdCount": "x"}, "'x' is not an integer"),
    ({"invalidRecordsThresholdCount": "1", "bufferTimePeriod": "soon"}, "invalid period"),
    ({"invalidRecordsThresholdCount": "1", "validDocIdsType": "ALL"}, "must be one of SNAPSHOT"),
    ({"invalidRecordsThresholdCount": "1", "validDocIdsConsensusMode": "ANY"},
     "must be one of EQUAL"),
    ({"invalidRecordsThresholdCount": "1", "tableMaxNumTasks": "0"}, "must be at least 1"),
])  # fmt: skip
def test_bad_task_configs_name_the_key(task_config, message):
    with pytest.raises(TaskConfigError, match=message):
        rules_of(task_config)


def test_valid_doc_ids_type_must_fit_the_upsert_config():
    no_snapshot = checked_upsert(upsert_table(snapshot="DISABLE"))
    with pytest.raises(TaskConfigError, match="'snapshot' must not be 'DISABLE'"):
        rules_of({"invalidRecordsThresholdCount": "1"}, no_snapshot)
    assert rules_of({"invalidRecordsThresholdCount": "1", "validDocIdsType": "IN_MEMORY"},
                    no_snapshot).kind == "IN_MEMORY"  # fmt: skip
    with pytest.raises(TaskConfigError, match="'deleteRecordColumn' must be provided"):
        rules_of({"invalidRecordsThresholdCount": "1", "validDocIdsType": "IN_MEMORY_WITH_DELETE"},
                 checked_upsert(upsert_table()))  # fmt: skip


def test_refused_tables():
    offline = {**upsert_table(), "tableType": "OFFLINE"}
    with pytest.raises(TaskConfigError, match="only supports realtime tables"):
        checked_upsert(offline)
    plain = upsert_table()
    del plain["upsertConfig"]
    with pytest.raises(TaskConfigError, match="Upsert must be enabled"):
        checked_upsert(plain)
    with pytest.raises(TaskConfigError, match="metadataTTL"):
        checked_upsert(upsert_table(metadataTTL=10, snapshot="ENABLE"))


def entry(segment: str, total: int, valid: int, crc: str = "7", status: str = "GOOD") -> dict:
    return {"segmentName": segment, "totalDocs": total, "totalValidDocs": valid,
            "totalInvalidDocs": total - valid, "segmentCrc": crc, "serverStatus": status}  # fmt: skip


def zk(crc: str = "7"):
    return types.SimpleNamespace(crc=crc)


def test_selection_deletes_the_fully_invalid_and_orders_the_rest():
    found = {
        "a": [entry("a", 100, 0)],  # all invalid: deleted
        "b": [entry("b", 100, 90)],  # 10 invalid
        "c": [entry("c", 100, 40)],  # 60 invalid: first
        "d": [entry("d", 100, 100)],  # nothing invalid
        "e": [entry("e", 100, 0)],  # all invalid, but its partition's newest
        "f": [entry("f", 100, 10, crc="8")],  # another copy than ZooKeeper's
        "g": [entry("g", 100, 10, status="STARTING")],  # server not GOOD
    }
    due = {s: zk() for s in found}
    replicas = {s: {"Server_1": "u"} for s in found}
    assert select(found, due, replicas, {"e"}, Rules()) == (["a"], ["c", "b"])
    assert select(found, due, replicas, set(), Rules(count=20)) == (["a", "e"], ["c"])
    assert select(found, due, replicas, set(), Rules(percent=10.5)) == (["a", "e"], ["c"])
    assert select(found, due, replicas, set(), Rules(percent=10.0)) == (["a", "e"], ["c", "b"])


def test_an_empty_segment_is_deleted_unless_its_partitions_newest():
    found = {"empty": [entry("empty", 0, 0)], "newest": [entry("newest", 0, 0)]}
    due = {s: zk() for s in found}
    replicas = {s: {"Server_1": "u"} for s in found}
    assert select(found, due, replicas, {"newest"}, Rules()) == (["empty"], [])


def test_selection_needs_the_replicas_to_agree_under_equal():
    two = {"Server_1": "u1", "Server_2": "u2"}
    found = {"s": [entry("s", 100, 40), entry("s", 100, 50)],
             "t": [entry("t", 100, 40)],  # one replica did not answer
             "u": [entry("u", 100, 40), entry("u", 100, 40)]}  # fmt: skip
    due = {s: zk() for s in found}
    replicas = {s: two for s in found}
    assert select(found, due, replicas, set(), Rules()) == ([], ["u"])
    assert select(found, due, replicas, set(), Rules(mode="MOST_VALID_DOCS")) == (
        [], ["t", "u", "s"])  # fmt: skip


def test_executor_consensus_over_bitmaps():
    same = {"Server_1": BitMap([1, 2]), "Server_2": BitMap([1, 2])}
    assert agreed_bitmap(same, "EQUAL", "s") == BitMap([1, 2])
    differ = {"Server_1": BitMap([1, 2]), "Server_2": BitMap([1, 2, 3])}
    with pytest.raises(SubtaskFailedError, match="disagree on its valid docs"):
        agreed_bitmap(differ, "EQUAL", "s")
    assert agreed_bitmap(differ, "MOST_VALID_DOCS", "s") == BitMap([1, 2, 3])

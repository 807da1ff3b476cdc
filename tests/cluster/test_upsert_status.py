"""The effective upsert/dedup settings the console's table page shows: Pinot's defaults filled
in (comparison and dedup time columns default to the time column); the compaction verdict per
segment, by the task generator's own rule."""

import types

import pytest

from cluster.logic import upsert_status
from cluster.logic.upsert_status import effective_config
from engine.common.errors import ConfigError
from tasks.generators.upsert_compaction import kept_segments, rules_of, select


def config(**sections) -> dict:
    streams = {"streamType": "kafka", "stream.kafka.topic.name": "t",
               "stream.kafka.broker.list": "localhost:9092"}  # fmt: skip
    return {"tableName": "t", "tableType": "REALTIME", "segmentsConfig": {"timeColumnName": "ts"},
            "tableIndexConfig": {"streamConfigs": streams}, **sections}  # fmt: skip


def test_partial_upsert_with_its_strategies():
    found = effective_config(config(upsertConfig={
        "mode": "PARTIAL", "partialUpsertStrategies": {"n": "INCREMENT"},
        "comparisonColumn": "version", "consistencyMode": "SNAPSHOT", "enableSnapshot": True,
    }))  # fmt: skip
    assert found["kind"] == "upsert"
    settings = found["config"]
    assert settings["comparisonColumns"] == ["version"]  # Pinot's legacy key read
    assert settings["partialUpsertStrategies"] == {"n": "INCREMENT"}
    assert settings["defaultPartialUpsertStrategy"] == "OVERWRITE"
    assert (settings["consistencyMode"], settings["snapshot"]) == ("SNAPSHOT", "ENABLE")


def test_empty_upsert_config_is_full_on_the_time_column():
    settings = effective_config(config(upsertConfig={}))["config"]
    assert (settings["mode"], settings["comparisonColumns"]) == ("FULL", ["ts"])
    assert "partialUpsertStrategies" not in settings


def test_dedup_and_neither():
    found = effective_config(config(dedupConfig={"metadataTTL": 30}))
    assert found == {"kind": "dedup", "config": {"dedupTimeColumn": "ts", "metadataTTL": 30.0,
                                                 "hashFunction": "NONE", "preload": "DEFAULT"}}  # fmt: skip
    assert effective_config(config(dedupConfig={"dedupEnabled": False})) is None
    assert effective_config(config(upsertConfig={"mode": "NONE"})) is None
    with pytest.raises(ConfigError, match=r"upsertConfig\.mode"):
        effective_config(config(upsertConfig={"mode": "SOMETIMES"}))


class Store:
    """ZooKeeper's view of an upsert table (a stand-in: the servers' answers come from
    ``entries``): partition 0 has completed segments 0 and 1 and consumes 2; partition 1 has
    completed segment 0 and consumes 1."""

    def __init__(self) -> None:
        self.status = {name(0, 0): "DONE", name(0, 1): "DONE", name(0, 2): "IN_PROGRESS",
                       name(1, 0): "DONE", name(1, 1): "IN_PROGRESS"}  # fmt: skip

    def segment_names(self, _table):
        return list(self.status)

    def segment_metadata(self, _table, segment):
        return types.SimpleNamespace(extra={"segment.realtime.status": self.status[segment]},
                                     crc="7")  # fmt: skip

    def ideal_state(self, _table):
        return types.SimpleNamespace(segments={s: {"Server_1": "ONLINE" if v == "DONE" else
                                                   "CONSUMING"} for s, v in self.status.items()})  # fmt: skip


def name(partition: int, sequence: int) -> str:
    return f"t__{partition}__{sequence}__20260101T0000Z"


def test_a_partitions_newest_segment_is_kept_as_the_task_keeps_it(monkeypatch):
    """Every doc invalid: the older segment is deleted, the partition's newest is kept (its
    end offset starts the next segment); the console says what the task's generator does."""
    counts = {name(0, 0): (100, 0), name(0, 1): (100, 0), name(1, 0): (100, 40)}
    entries = [{"segmentName": s, "instanceId": "Server_1", "totalDocs": total,
                "totalValidDocs": valid, "totalInvalidDocs": total - valid, "segmentCrc": "7",
                "serverStatus": "GOOD"} for s, (total, valid) in counts.items()]  # fmt: skip
    monkeypatch.setattr(upsert_status, "valid_docs_metadata", lambda *_a, **_k: (entries, {}))
    store = Store()
    task = {"invalidRecordsThresholdCount": "1", "validDocIdsType": "IN_MEMORY"}
    table = config(upsertConfig={}, task={"taskTypeConfigsMap": {"UpsertCompactionTask": task}})
    compaction, errors = upsert_status._compaction(
        store, "t_REALTIME", table, effective_config(table)
    )
    assert errors == {}
    verdicts = {s["segmentName"]: (s["verdict"], s["newestOfPartition"])
                for s in compaction["segments"]}  # fmt: skip
    assert verdicts == {name(0, 0): ("DELETE", False), name(0, 1): ("KEEP", True),
                        name(1, 0): ("COMPACT", True)}  # fmt: skip
    # the generator, on the same counts, does just that
    found = {e["segmentName"]: [e] for e in entries}
    due = {s: store.segment_metadata("t_REALTIME", s) for s in found}
    replicas = {s: {"Server_1": "u"} for s in found}
    keep = kept_segments(store, "t_REALTIME")
    assert select(found, due, replicas, keep, rules_of(task)) == ([name(0, 0)], [name(1, 0)])

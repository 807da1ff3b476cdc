# ruff: noqa: F811 - fixtures imported from tests.cluster.conftest are requested by name
"""MergeRollupTask's generator on a real ZooKeeper: segment ZK metadata in, subtask configs
and watermarks out. Levels run lowest first (a higher level waits for the lower one's
watermark), the watermark starts at the earliest day and moves to the first planned bucket,
the buffer and maxNumParallelBuckets bound the plan, a level with an unfinished subtask is
skipped, lineage-replaced segments are left out, a partitioned table gets a subtask per
partition, and REFRESH tables are refused."""

from __future__ import annotations

import orjson
import pytest

from engine.clusterstate import SegmentZKMetadata, ZNRecord
from tasks.errors import TaskConfigError
from tasks.generators.base import GenerationContext
from tasks.generators.merge_rollup import MergeRollupTaskGenerator
from tasks.metadata import read_metadata
from tasks.states import TriggeredBy
from tests.cluster.conftest import cluster_settings, controller_zk  # noqa: F401

pytestmark = pytest.mark.integration
DAY = 86_400_000
TABLE = "flights_OFFLINE"
D0 = 16071  # 2014-01-01 in days since epoch
CONFIG = {
    "1day.mergeType": "concat", "1day.bucketTimePeriod": "1d", "1day.bufferTimePeriod": "2d",
    "1day.maxNumParallelBuckets": "2",
    "7day.mergeType": "rollup", "7day.bucketTimePeriod": "7d", "7day.bufferTimePeriod": "2d",
    "Distance.aggregationType": "max",
}  # fmt: skip


@pytest.fixture
def store(cluster_settings):
    from controller.zk import get_store

    store = get_store()
    store.ensure_cluster()
    return store


def table_config(**extra) -> dict:
    return {"tableName": TABLE, "tableType": "OFFLINE",
            "segmentsConfig": {"timeColumnName": "DaysSinceEpoch"}, **extra}  # fmt: skip


def put_segment(store, name: str, first_day: int, last_day: int, docs: int = 10,
                level: str | None = None, partitions: dict | None = None,
                custom: dict | None = None) -> None:  # fmt: skip
    extra = {}
    if level or custom:
        custom = {**({"MergeRollupTask.mergeLevel": level} if level else {}), **(custom or {})}
        extra["custom.map"] = orjson.dumps(custom).decode()
    if partitions:
        extra["segment.partition.metadata"] = orjson.dumps({"columnPartitionMap": {
            col: {"functionName": "Modulo", "numPartitions": 2, "partitions": parts}
            for col, parts in partitions.items()}}).decode()  # fmt: skip
    store.put_segment_metadata(SegmentZKMetadata(
        segment_name=name, table_name_with_type=TABLE, total_docs=docs, start_time=first_day,
        end_time=last_day, time_unit="DAYS", download_url=f"http://c/segments/flights/{name}",
        extra=extra))  # fmt: skip


def generate(store, now_ms: int, config=None, incomplete=(), **table_extra) -> list[dict]:
    ctx = GenerationContext(store, TABLE, now_ms, TriggeredBy.MANUAL_TRIGGER, "http://ctl:9000",
                            lambda: list(incomplete))  # fmt: skip
    return MergeRollupTaskGenerator().generate(ctx, table_config(**table_extra),
                                               config or CONFIG)  # fmt: skip


def watermarks(store) -> dict[str, int]:
    record, _ = read_metadata(store, TABLE, "MergeRollupTask")
    return {k: int(v) for k, v in (record.simple_fields if record else {}).items()}


def test_levels_buckets_watermarks_and_buffer(store):
    for day in range(D0, D0 + 10):
        put_segment(store, f"flights_{day}", day, day)
    now = (D0 + 10) * DAY  # buffer 2d: buckets must end by day D0+8
    configs = generate(store, now)
    # the 1day level plans two buckets (maxNumParallelBuckets); 7day waits for its watermark
    # (see the next test; here 1day runs alone once it has a watermark)
    only_day = {k: v for k, v in CONFIG.items() if not k.startswith("7day.")}
    assert [(c["mergeLevel"], c["segmentName"]) for c in configs] == [
        ("1day", f"flights_{D0}"), ("1day", f"flights_{D0 + 1}")]  # fmt: skip
    first = configs[0]
    assert first["segmentNamePrefix"] == f"merged_1day_{now}_0_flights"
    assert first["downloadURL"] == f"http://c/segments/flights/flights_{D0}"
    assert first["uploadURL"] == "http://ctl:9000/segments"
    assert (first["mergeType"], first["partitionBucketTimePeriod"], first["Distance.aggregationType"],
            first["enableReplaceSegments"], first["maxNumRecordsPerSegment"]) == (
        "concat", "1d", "max", "true", "5000000")  # fmt: skip
    assert watermarks(store) == {"watermarkMs_1day": D0 * DAY}
    # an unfinished 1day subtask holds the level back; nothing else is due
    assert generate(store, now, config=only_day, incomplete=[first]) == []
    # the merged days are done: the watermark moves to the next unmerged bucket
    for day in (D0, D0 + 1):
        store.delete_segment_metadata(TABLE, f"flights_{day}")
        put_segment(store, f"merged_{day}", day, day, level="1day")
    configs = generate(store, now, config=only_day)
    assert [c["segmentName"] for c in configs] == [f"flights_{D0 + 2}", f"flights_{D0 + 3}"]
    assert watermarks(store) == {"watermarkMs_1day": (D0 + 2) * DAY}
    # the buffer: nothing past day D0+8 is merged however often the task runs (1day alone)
    for _ in range(4):
        for config in configs:
            day = int(config["segmentName"].rsplit("_", 1)[1])
            store.delete_segment_metadata(TABLE, config["segmentName"])
            put_segment(store, f"merged_{day}", day, day, level="1day")
        configs = generate(store, now, config=only_day)
    assert configs == []
    assert watermarks(store)["watermarkMs_1day"] == (D0 + 6) * DAY
    assert [n for n in store.segment_names(TABLE) if n.startswith("flights_")] == [
        f"flights_{D0 + 8}", f"flights_{D0 + 9}"]  # fmt: skip


def test_higher_level_follows_the_lower_watermark(store):
    for day in range(D0, D0 + 20):
        put_segment(store, f"flights_{day}", day, day, level="1day")
    now = (D0 + 40) * DAY
    configs = generate(store, now)
    # every day is merged at 1day already; 7day buckets end by the 1day watermark, which
    # cold-starts at the first day: so 7day has nothing yet
    assert configs == []
    week = (D0 * DAY) // (7 * DAY) * 7 * DAY
    record = ZNRecord(id=TABLE, simple_fields={"watermarkMs_1day": str(week + 14 * DAY)})
    from tasks.metadata import write_metadata

    write_metadata(store, TABLE, "MergeRollupTask", record)
    configs = generate(store, now, config={**CONFIG, "7day.maxNumParallelBuckets": "5"})
    assert [c["mergeLevel"] for c in configs] == ["7day", "7day"]
    first_week = [f"flights_{d}" for d in range(D0, D0 + 20) if d * DAY < week + 7 * DAY]
    assert configs[0]["segmentName"] == ",".join(first_week)
    assert watermarks(store)["watermarkMs_7day"] == week


def test_lineage_replaced_and_held_segments_are_left_out(store):
    for day in (D0, D0 + 1):
        put_segment(store, f"flights_{day}", day, day)
    put_segment(store, "merged_new", D0, D0)
    put_segment(store, "held", D0 + 1, D0 + 1, custom={"shouldNotMerge": "true"})
    lineage = ZNRecord(id=TABLE, list_fields={
        "done": [f"flights_{D0}", "", "COMPLETED", "1"],
        "running": ["x", "merged_new", "IN_PROGRESS", "2"]})  # fmt: skip
    store.put_record(f"{store.paths.property_store}/SEGMENT_LINEAGE/{TABLE}", lineage)
    configs = generate(store, (D0 + 30) * DAY)
    assert [c["segmentName"] for c in configs] == [f"flights_{D0 + 1}"]


def test_partitioned_table_gets_a_subtask_per_partition(store):
    put_segment(store, "p0", D0, D0, partitions={"Carrier": [0]})
    put_segment(store, "p1", D0, D0, partitions={"Carrier": [1]})
    put_segment(store, "p1b", D0, D0, partitions={"Carrier": [1]})
    put_segment(store, "mixed", D0, D0, partitions={"Carrier": [0, 1]})
    indexing = {"segmentPartitionConfig": {"columnPartitionMap": {
        "Carrier": {"functionName": "Modulo", "numPartitions": 2}}}}  # fmt: skip
    now = (D0 + 30) * DAY
    configs = generate(store, now, config={**CONFIG, "1day.maxNumRecordsPerTask": "15"},
                       tableIndexConfig=indexing)  # fmt: skip
    assert [(c["segmentName"], c["segmentNamePrefix"]) for c in configs] == [
        ("p0", f"merged_1day_{now}_0_0_flights"),
        ("p1,p1b", f"merged_1day_{now}_1_0_flights"),
        ("mixed", f"merged_1day_{now}_0_flights"),
    ]  # fmt: skip
    split = generate(store, now, config={**CONFIG, "1day.maxNumRecordsPerTask": "10"},
                     tableIndexConfig=indexing)  # fmt: skip
    assert [c["segmentNamePrefix"] for c in split][1:3] == [
        f"merged_1day_{now}_1_0_flights", f"merged_1day_{now}_1_1_flights"]  # fmt: skip


def test_bad_tables_and_configs_are_refused(store):
    generator = MergeRollupTaskGenerator()
    refresh = table_config(ingestionConfig={"batchIngestionConfig": {
        "segmentIngestionType": "REFRESH"}})  # fmt: skip
    with pytest.raises(TaskConfigError, match="REFRESH"):
        generator.validate(refresh, CONFIG)
    upsert = {"tableName": "t_REALTIME", "tableType": "REALTIME",
              "upsertConfig": {"mode": "FULL"}}  # fmt: skip
    with pytest.raises(TaskConfigError, match="upsert"):
        generator.validate(upsert, CONFIG)
    with pytest.raises(TaskConfigError) as caught:
        generator.validate(table_config(), {**CONFIG, "1day.bucketTimePeriod": "daily"})
    assert caught.value.key == "MergeRollupTask.1day.bucketTimePeriod"


def test_realtime_tables_merge_only_completed_segments_before_the_consuming_ones(store):
    def put(name, day, status, docs=10):
        store.put_segment_metadata(SegmentZKMetadata(
            segment_name=name, table_name_with_type="rt_REALTIME", total_docs=docs,
            start_time=day, end_time=day, time_unit="DAYS", download_url=f"http://c/{name}",
            extra={"segment.realtime.status": status}))  # fmt: skip

    put("rt__0__0__x", D0, "DONE")
    put("rt__0__1__x", D0 + 1, "DONE")
    put("rt__1__0__x", D0 + 1, "IN_PROGRESS")  # consuming since day D0+1
    put("rt__0__2__x", D0 + 2, "DONE")
    put("rt__0__3__x", D0, "DONE", docs=0)  # empty
    ctx = GenerationContext(store, "rt_REALTIME", (D0 + 30) * DAY, TriggeredBy.MANUAL_TRIGGER,
                            "http://ctl:9000", lambda: [])  # fmt: skip
    config = {**CONFIG, "1day.maxNumParallelBuckets": "10"}
    realtime = {"tableName": "rt_REALTIME", "tableType": "REALTIME",
                "segmentsConfig": {"timeColumnName": "DaysSinceEpoch"}}  # fmt: skip
    configs = MergeRollupTaskGenerator().generate(ctx, realtime, config)
    assert [c["segmentName"] for c in configs] == ["rt__0__0__x"]

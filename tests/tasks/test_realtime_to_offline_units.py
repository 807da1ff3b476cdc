"""RealtimeToOfflineSegmentsTask's planning rules and its segment path: which window runs
(and when it waits), the config errors naming their key, the watermark's completion record,
and the window's rows rolled up on Spark into OFFLINE segments with deterministic names."""

from __future__ import annotations

import pyarrow as pa
import pytest

from engine.clusterstate import ZNRecord
from engine.segment import build_segment, load_segment
from engine.spi import Schema, TableConfig
from tasks.errors import SubtaskFailedError, TaskConfigError
from tasks.executors import realtime_to_offline as executor
from tasks.generators.realtime_to_offline import (
    check_bucket_fits_boundary,
    check_config,
    plan_window,
)

H = 3_600_000


def seg(partition, sequence, start, end):
    return (partition, sequence, start, end, f"t__{partition}__{sequence}__x", "url")


def test_plan_window_waits_for_every_partition_and_skips_gaps():
    segments = [seg(0, 0, 0, 2 * H), seg(0, 1, 2 * H, 5 * H), seg(1, 0, 0, 3 * H)]
    assert plan_window(segments, 0, H, 10 * H) == (0, [segments[0], segments[2]])
    assert plan_window(segments, 2 * H, H, 10 * H) == (2 * H, segments)  # ends are inclusive
    # partition 1's data past 3h may still be consuming
    assert plan_window(segments, 3 * H, H, 10 * H) is None
    # the buffer: the window must end by the limit
    assert plan_window(segments, 0, H, H - 1) is None
    gap = [seg(0, 0, 0, H - 1), seg(0, 1, 5 * H, 6 * H)]
    assert plan_window(gap, H, H, 10 * H) == (5 * H, [gap[1]])  # Pinot #6988: no stall


def test_completed_segments_are_the_committed_ones():
    """Pinot's generator reads DONE and UPLOADED LLC segments (Status.isCompleted); the copy
    here read DONE only, so an LLC segment pushed to the table was never moved."""
    from types import SimpleNamespace

    from engine.clusterstate import SegmentZKMetadata
    from tasks.generators.realtime_to_offline import completed_segments

    def meta(partition, status):
        name = f"t__{partition}__0__20140101T0000Z"
        extra = {"segment.realtime.status": status} if status else {}
        return SegmentZKMetadata(name, "t_REALTIME", total_docs=5, start_time=H, end_time=2 * H,
                                 time_unit="MILLISECONDS", download_url=name, extra=extra)  # fmt: skip

    metas = {m.segment_name: m for m in [meta(0, "DONE"), meta(1, None), meta(2, "UPLOADED"),
                                         meta(3, "IN_PROGRESS"), meta(4, "COMMITTING")]}  # fmt: skip
    store = SimpleNamespace(segment_names=lambda table: sorted(metas),
                            segment_metadata=lambda table, name: metas.get(name))  # fmt: skip
    got = completed_segments(SimpleNamespace(store=store, table_name="t_REALTIME"))
    assert [s[0] for s in got] == [0, 1, 2]


def test_config_errors_name_their_key():
    assert check_config({}) == (86_400_000, 2 * 86_400_000)
    for config, key in [({"bucketTimePeriod": "soon"}, "bucketTimePeriod"),
                        ({"bucketTimePeriod": "0d"}, "bucketTimePeriod"),
                        ({"mergeType": "squash"}, "mergeType"),
                        ({"collectorType": "squash"}, "mergeType"),
                        ({"n.aggregationType": "avg"}, "n.aggregationType"),
                        ({"maxNumRecordsPerSegment": "-1"}, "maxNumRecordsPerSegment"),
                        ({"splitByPartition": "yes"}, "splitByPartition")]:  # fmt: skip
        with pytest.raises(TaskConfigError) as caught:
            check_config(config)
        assert caught.value.key == f"RealtimeToOfflineSegmentsTask.{key}"
    offline = {"tableName": "t_OFFLINE", "tableType": "OFFLINE",
               "segmentsConfig": {"segmentPushFrequency": "HOURLY"}}  # fmt: skip
    check_bucket_fits_boundary(H, offline)
    with pytest.raises(TaskConfigError, match="push period"):
        check_bucket_fits_boundary(2 * H, offline)


class _Store:
    """The task metadata znode under ClusterStore.update's contract: ``change`` gets a fresh
    copy and may run again when a concurrent write wins (``race`` of them happen first, each
    another partition's subtask recording itself)."""

    paths = type("Paths", (), {"property_store": "/c/PROPERTYSTORE"})()

    def __init__(self, watermark, legacy=False):
        record = ZNRecord(id="t_REALTIME", simple_fields={"watermarkMs": str(watermark)})
        self.znodes = {("legacy" if legacy else "current"): record}
        self.race = 0
        self.calls = 0

    @property
    def record(self):
        return self.znodes["current"]

    def get_record(self, path):
        key = "legacy" if "/RealtimeToOfflineSegmentsTask/" in path else "current"
        record = self.znodes.get(key)
        return (ZNRecord.from_json(record.to_json()), 0) if record else (None, -1)

    def update(self, path, change):
        assert path.endswith("/MINION_TASK_METADATA/t_REALTIME/RealtimeToOfflineSegmentsTask")
        while True:
            self.calls += 1
            current = self.znodes.get("current")
            new = change(ZNRecord.from_json(current.to_json()) if current else None)
            if not self.race:
                self.znodes["current"] = new
                return new
            self.race -= 1  # another partition wrote first: this write is refused
            self.znodes["current"] = ZNRecord.from_json(new.to_json())
            self.znodes["current"].list_fields.setdefault("donePartitions_0", []).append("9")


def test_finish_window_moves_the_watermark_once_all_partitions_are_done():
    store = _Store(0)
    assert executor.finish_window(store, "t_REALTIME", 0, H, "0", ["0", "1"]) is False
    assert store.record.simple_fields["watermarkMs"] == "0"
    assert executor.finish_window(store, "t_REALTIME", 0, H, "0", ["0", "1"]) is False  # retry
    assert executor.finish_window(store, "t_REALTIME", 0, H, "1", ["0", "1"]) is True
    assert store.record.simple_fields["watermarkMs"] == str(H)
    assert store.record.list_fields == {}
    with pytest.raises(SubtaskFailedError, match="moved"):
        executor.finish_window(store, "t_REALTIME", 0, H, "1", ["0", "1"])
    # a window after empty ones the generator skipped: the watermark is before its start
    assert executor.finish_window(store, "t_REALTIME", 3 * H, 4 * H, "all", ["all"]) is True
    assert store.record.simple_fields["watermarkMs"] == str(4 * H)


def test_finish_window_reads_again_after_a_lost_write():
    store = _Store(0)
    store.race = 2  # partition "9" of a 3-partition window records itself twice meanwhile
    assert executor.finish_window(store, "t_REALTIME", 0, H, "0", ["0", "1", "9"]) is False
    assert store.calls == 3
    assert store.record.list_fields["donePartitions_0"] == ["0", "9"]
    # the last partition's write sees both and moves the watermark
    assert executor.finish_window(store, "t_REALTIME", 0, H, "1", ["0", "1", "9"]) is True
    assert store.record.simple_fields["watermarkMs"] == str(H)


def test_finish_window_starts_from_pinots_older_metadata_path():
    store = _Store(0, legacy=True)
    assert executor.finish_window(store, "t_REALTIME", 0, H, "all", ["all"]) is True
    assert store.record.simple_fields["watermarkMs"] == str(H)


def test_finish_window_gives_up_as_a_failed_subtask():
    from engine.clusterstate import ConcurrentUpdateError

    class Busy(_Store):
        def update(self, path, change):
            raise ConcurrentUpdateError(f"{path}: too many concurrent updates, giving up")

    with pytest.raises(SubtaskFailedError, match="too many concurrent updates"):
        executor.finish_window(Busy(0), "t_REALTIME", 0, H, "0", ["0"])


@pytest.mark.integration
def test_partitions_finishing_together_move_the_watermark_once(zookeeper):
    """Eight subtasks of one window record themselves at the same moment through the real
    ZooKeeper compare-and-set: every one is recorded, and exactly one moves the watermark."""
    import threading
    import uuid

    from kazoo.client import KazooClient

    from engine.clusterstate import ClusterStore
    from tasks.metadata import write_metadata

    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    try:
        store = ClusterStore(client, f"rto_{uuid.uuid4().hex[:8]}")
        store.ensure_cluster()
        write_metadata(store, "t_REALTIME", "RealtimeToOfflineSegmentsTask",
                       ZNRecord(id="t_REALTIME", simple_fields={"watermarkMs": "0"}))  # fmt: skip
        partitions = [str(p) for p in range(8)]
        start = threading.Barrier(len(partitions))
        moved = []

        def finish(partition):
            start.wait()
            moved.append(executor.finish_window(store, "t_REALTIME", 0, H, partition, partitions))

        threads = [threading.Thread(target=finish, args=(p,)) for p in partitions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(moved) == [False] * 7 + [True]
        record, _ = executor.read_metadata(store, "t_REALTIME", "RealtimeToOfflineSegmentsTask")
        assert record.simple_fields["watermarkMs"] == str(H) and record.list_fields == {}
    finally:
        client.stop()
        client.close()


SCHEMA = {
    "schemaName": "t",
    "dimensionFieldSpecs": [{"name": "user", "dataType": "STRING"}],
    "metricFieldSpecs": [{"name": "n", "dataType": "LONG"}],
    "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
                            "granularity": "1:MILLISECONDS"}],
}  # fmt: skip


@pytest.mark.integration
def test_window_rows_rolled_up_into_named_segments(spark, tmp_path):
    from spark_jobs.minion.merge_rollup import spec_for_table
    from spark_jobs.minion.realtime_to_offline import move_window, segment_name

    schema = Schema.from_json(SCHEMA)
    config = TableConfig.from_json({"tableName": "t", "tableType": "OFFLINE",
                                    "segmentsConfig": {"timeColumnName": "ts"}}, schema=schema)  # fmt: skip
    rows = [{"user": f"u{i % 3}", "n": i, "ts": i * 60_000} for i in range(200)]  # 0 .. 3h19m
    dirs = [build_segment(pa.Table.from_pylist(rows[k::2]), schema, config, tmp_path / f"s{k}",
                          segment_name=f"in{k}").path for k in range(2)]  # fmt: skip
    spec = spec_for_table(schema, config, merge_type="rollup", round_bucket_ms=H,
                          max_records_per_segment=2)  # fmt: skip
    built = move_window(spark, dirs, schema, config, spec, H, 2 * H, tmp_path / "out",
                        lambda i: segment_name("t", H, 2 * H, "all", i))  # fmt: skip
    assert [b.name for b in built] == [f"t_{H}_{2 * H}_all_0", f"t_{H}_{2 * H}_all_1"]
    out = []
    for result in built:
        segment = load_segment(result.path)
        out += segment.to_arrow().to_pylist()
        segment.close()
    expected = {}
    for r in rows:
        if H <= r["ts"] < 2 * H:
            expected[r["user"]] = expected.get(r["user"], 0) + r["n"]
    assert sorted((r["user"], r["n"], r["ts"]) for r in out) == sorted(
        (u, n, H) for u, n in expected.items())  # fmt: skip

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
    """The task metadata znode with its version, as tasks.metadata reads and writes it."""

    def __init__(self, watermark):
        self.record = ZNRecord(id="t_REALTIME", simple_fields={"watermarkMs": str(watermark)})
        self.version = 0
        self.race = 0  # how many writes lose to a concurrent one first


def test_finish_window_moves_the_watermark_once_all_partitions_are_done(monkeypatch):
    from kazoo.exceptions import BadVersionError

    store = _Store(0)

    def read(s, table, task):
        return ZNRecord.from_json(s.record.to_json()), s.version

    def write(s, table, task, record, expected_version=-1):
        if s.race:
            s.race -= 1
            s.version += 1
            raise BadVersionError()
        assert expected_version == s.version
        s.record, s.version = record, s.version + 1

    monkeypatch.setattr(executor, "read_metadata", read)
    monkeypatch.setattr(executor, "write_metadata", write)
    store.race = 2
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

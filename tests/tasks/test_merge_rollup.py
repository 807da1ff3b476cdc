"""MergeRollupTask end to end, all real: a controller, a server and a broker as processes on
ZooKeeper, a minion (Celery worker on Redis) with its own SparkSession.

- concat: the 31 day segments of Pinot's airlineStats merged into weekly segments leave all
  200 of Pinot's airline conformance queries with the right answers (checked against DuckDB
  before and after), while a query loop running through the swap never sees a row twice or
  misses one;
- rollup: flights rolled up per week keep SUM and COUNT (a count metric) and MAX per group;
- a refused upload fails the subtask, reverts its lineage entry and leaves every answer as
  it was; once uploads are accepted the same bucket merges.
"""

from __future__ import annotations

import collections
import threading
import time

import orjson
import pyarrow as pa
import pytest
import requests

from tasks.errors import SubtaskFailedError
from tests.engine.query import conformance
from tests.tasks.conftest import TaskCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TASK = "MergeRollupTask"
DAY = 86_400_000
WEEKLY_CONCAT = {
    "7day.mergeType": "concat", "7day.bucketTimePeriod": "7d", "7day.bufferTimePeriod": "1d",
    "7day.maxNumParallelBuckets": "10",
}  # fmt: skip


def day_tars(rows_by_day, schema_json, config_json, out):
    from engine.segment import build_segment, pack_segment
    from engine.spi import Schema, TableConfig

    schema = Schema.from_json(schema_json)
    config = TableConfig.from_json(config_json, schema=schema)
    tars = []
    for i, day in enumerate(rows_by_day):
        result = build_segment(pa.Table.from_pylist(day), schema, config, out / "b",
                               sequence_id=i)  # fmt: skip
        tars.append(pack_segment(result.path, out / f"{result.name}.tar.gz"))
    return tars


@pytest.fixture(scope="module")
def airline_days(pinot_examples):
    return [conformance.read_avro(p) for p in conformance.airline_avro_files(pinot_examples)]


@pytest.fixture(scope="module")
def airline_tars(pinot_examples, airline_days, tmp_path_factory):
    return day_tars(airline_days, conformance.airline_schema(pinot_examples),
                    conformance.airline_table_config(pinot_examples),
                    tmp_path_factory.mktemp("airline"))  # fmt: skip


def load_table(cluster: TaskCluster, schema: dict, config: dict, tars, task_config: dict) -> str:
    return cluster.create_table("merge", schema, config, tars, TASK, task_config)


def wait_answer(cluster: TaskCluster, sql: str, expected, timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = cluster.query(sql)
            if not last.get("exceptions") and last["resultTable"]["rows"] == expected:
                return last
        except (requests.RequestException, AssertionError, KeyError):
            pass
        time.sleep(0.3)
    raise AssertionError(f"{sql} did not answer {expected}: {last}")


def wait_route(cluster: TaskCluster, sql: str, expected, segments: int,
               timeout_s: float = 60) -> dict:  # fmt: skip
    """Every answer exact while the broker moves to a route of ``segments`` segments (a swap's
    outputs show in routing only once they are ONLINE in the external view)."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = cluster.query(sql)
        if not last.get("exceptions"):
            assert last["resultTable"]["rows"] == expected, last
            if last["numSegmentsQueried"] == segments:
                return last
        time.sleep(0.3)
    raise AssertionError(f"{sql} was not routed to {segments} segments: {last}")


def zk_custom_maps(cluster: TaskCluster, table: str) -> dict[str, dict]:
    metadata = cluster.call("GET", f"/segments/{table}/zkmetadata?type=OFFLINE").json()
    return {s: orjson.loads(f.get("custom.map") or "{}") for s, f in metadata.items()}


def lineage(cluster: TaskCluster, table: str) -> dict:
    return cluster.call("GET", f"/segments/{table}/lineage?type=OFFLINE").json()["lineageEntries"]


class CountLoop:
    """COUNT(*) and SUM over and over while a merge swaps segments: every answer must be
    the whole table's, never a row counted twice or missed."""

    def __init__(self, cluster: TaskCluster, sql: str):
        self.cluster, self.sql = cluster, sql
        self.answers: collections.Counter = collections.Counter()
        self.errors: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                answer = self.cluster.query(self.sql)
                if answer.get("exceptions"):
                    self.errors.append(answer["exceptions"])
                else:
                    self.answers[tuple(answer["resultTable"]["rows"][0])] += 1
            except requests.RequestException as exc:
                self.errors.append(str(exc))
            time.sleep(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=30)


def test_concat_keeps_every_airline_answer(task_cluster, pinot_examples, airline_days,
                                           airline_tars):  # fmt: skip
    table = load_table(task_cluster, conformance.airline_schema(pinot_examples),
                       conformance.airline_table_config(pinot_examples), airline_tars,
                       WEEKLY_CONCAT)  # fmt: skip
    rows = [r for day in airline_days for r in day]
    total = [[len(rows), float(sum(r["Distance"] for r in rows))]]
    sql = f"SELECT COUNT(*), SUM(Distance) FROM {table}"
    wait_answer(task_cluster, sql, total)
    con = conformance.duckdb_connection(conformance.reference_table(
        conformance.airline_schema(pinot_examples), rows))  # fmt: skip
    before = conformance.run_conformance(task_cluster.query, table, pinot_examples, con=con)
    assert len(before) == 200 and all(c.ok for c in before), [c for c in before if not c.ok][:3]
    inputs = sorted(zk_custom_maps(task_cluster, table))
    assert len(inputs) == len(airline_days)

    with CountLoop(task_cluster, sql) as loop:
        debug = task_cluster.run_task(TASK, f"{table}_OFFLINE", timeout_s=600)
        time.sleep(1)  # a few answers after the swap too
    infos = debug["subtaskInfos"]
    assert {i["state"] for i in infos} == {"COMPLETED"}, infos
    # 31 days from 2014-01-01 span 6 epoch weeks (buckets start on Thursdays): a subtask each
    weeks = {d // 7 for r in rows for d in [r["DaysSinceEpoch"]]}
    assert len(infos) == len(weeks) == 6
    assert not loop.errors, loop.errors[:3]
    assert set(loop.answers) == {tuple(total[0])}, loop.answers
    assert sum(loop.answers.values()) > 5

    # the outputs replaced the inputs: lineage COMPLETED, names as Pinot's, levels recorded
    entries = lineage(task_cluster, table)
    assert {e["state"] for e in entries.values()} == {"COMPLETED"}
    assert sorted(s for e in entries.values() for s in e["segmentsFrom"]) == inputs
    outputs = sorted(s for e in entries.values() for s in e["segmentsTo"])
    maps = zk_custom_maps(task_cluster, table)
    for name in outputs:
        assert name.startswith("merged_7day_") and f"_{table}_" in name, name
        assert maps[name]["MergeRollupTask.mergeLevel"] == "7day"
        assert int(maps[name]["MergeRollupTask.time"]) > 0
    assert len(outputs) < len(inputs)
    wait_route(task_cluster, sql, total, len(outputs))

    after = conformance.run_conformance(task_cluster.query, table, pinot_examples, con=con)
    failed = [c for c in after if not c.ok]
    assert len(after) == 200 and not failed, f"{len(failed)} of 200 differ:\n" + "\n".join(
        f"{c.sql}\n  -> {c.message}" for c in failed[:10])  # fmt: skip
    # every bucket is merged: the next run has nothing to do
    again = task_cluster.call("POST", f"/tasks/schedule?taskType={TASK}&tableName="
                                      f"{table}_OFFLINE").json()  # fmt: skip
    assert again[TASK] == "" and again["generationErrors"] == "", again


FLIGHTS_SCHEMA = {
    "schemaName": "flights",
    "dimensionFieldSpecs": [{"name": "Carrier", "dataType": "STRING"},
                            {"name": "Origin", "dataType": "STRING"}],
    "metricFieldSpecs": [{"name": "Distance", "dataType": "LONG"},
                         {"name": "NumFlights", "dataType": "LONG"},
                         {"name": "MaxArrDelay", "dataType": "INT"}],
    "dateTimeFieldSpecs": [{"name": "DaysSinceEpoch", "dataType": "INT",
                            "format": "1:DAYS:EPOCH", "granularity": "1:DAYS"}],
}  # fmt: skip
FLIGHTS_CONFIG = {"tableName": "flights", "tableType": "OFFLINE",
                  "segmentsConfig": {"timeColumnName": "DaysSinceEpoch", "replication": "1",
                                     "segmentPushType": "APPEND"}}  # fmt: skip


def test_rollup_keeps_sum_and_count_per_group(task_cluster, airline_days, tmp_path):
    days = [[{"Carrier": r["Carrier"], "Origin": r["Origin"], "Distance": r["Distance"],
              "NumFlights": 1, "MaxArrDelay": r["ArrDelay"] or 0, "DaysSinceEpoch": r["DaysSinceEpoch"]}
             for r in day] for day in airline_days[:10]]  # fmt: skip
    rows = [r for day in days for r in day]
    tars = day_tars(days, FLIGHTS_SCHEMA, FLIGHTS_CONFIG, tmp_path)
    config = {"7day.mergeType": "rollup", "7day.bucketTimePeriod": "7d",
              "7day.bufferTimePeriod": "1d", "7day.roundBucketTimePeriod": "7d",
              "7day.maxNumParallelBuckets": "5",
              "MaxArrDelay.aggregationType": "max"}  # fmt: skip
    table = load_table(task_cluster, FLIGHTS_SCHEMA, FLIGHTS_CONFIG, tars, config)
    per_group = (f"SELECT Carrier, SUM(Distance), SUM(NumFlights), MAX(MaxArrDelay), COUNT(*) "
                 f"FROM {table} GROUP BY Carrier ORDER BY Carrier LIMIT 100")  # fmt: skip
    sums, counts, worst = (collections.defaultdict(int), collections.Counter(),
                           collections.defaultdict(lambda: -(2**31)))  # fmt: skip
    for r in rows:
        sums[r["Carrier"]] += r["Distance"]
        counts[r["Carrier"]] += 1
        worst[r["Carrier"]] = max(worst[r["Carrier"]], r["MaxArrDelay"])
    expected = [[c, float(sums[c]), float(counts[c]), float(worst[c]), counts[c]]
                for c in sorted(counts)]  # fmt: skip
    wait_answer(task_cluster, per_group, expected)

    debug = task_cluster.run_task(TASK, f"{table}_OFFLINE", timeout_s=600)
    assert {i["state"] for i in debug["subtaskInfos"]} == {"COMPLETED"}, debug
    # one row per (Carrier, Origin, week): COUNT(*) shrinks, the sums and maxima stay
    week_rows = collections.Counter(
        (r["Carrier"], r["Origin"], r["DaysSinceEpoch"] // 7 * 7) for r in rows)  # fmt: skip
    groups = collections.Counter(carrier for carrier, _, _ in week_rows)
    rolled = [[c, float(sums[c]), float(counts[c]), float(worst[c]), groups[c]]
              for c in sorted(counts)]  # fmt: skip
    assert sum(groups.values()) < len(rows)
    wait_answer(task_cluster, per_group, rolled)
    days_left = task_cluster.rows(f"SELECT DISTINCT DaysSinceEpoch FROM {table} LIMIT 100")
    assert all(d % 7 == 0 for (d,) in days_left), days_left  # roundBucketTimePeriod 7d


def test_a_failed_upload_reverts_and_keeps_every_answer(task_cluster, airline_days, tmp_path):
    days = [[{"Carrier": r["Carrier"], "Origin": r["Origin"], "Distance": r["Distance"],
              "NumFlights": 1, "MaxArrDelay": r["ArrDelay"] or 0, "DaysSinceEpoch": r["DaysSinceEpoch"]}
             for r in day] for day in airline_days[:4]]  # fmt: skip
    rows = [r for day in days for r in day]
    tars = day_tars(days, FLIGHTS_SCHEMA, FLIGHTS_CONFIG, tmp_path)
    table = load_table(task_cluster, FLIGHTS_SCHEMA, FLIGHTS_CONFIG, tars, {
        "7day.mergeType": "concat", "7day.bucketTimePeriod": "7d", "7day.bufferTimePeriod": "1d",
    })  # fmt: skip
    sql = (f"SELECT Carrier, COUNT(*), SUM(Distance) FROM {table} GROUP BY Carrier "
           f"ORDER BY Carrier LIMIT 100")  # fmt: skip
    by_carrier = collections.Counter(r["Carrier"] for r in rows)
    distance = collections.defaultdict(int)
    for r in rows:
        distance[r["Carrier"]] += r["Distance"]
    expected = [[c, by_carrier[c], float(distance[c])] for c in sorted(by_carrier)]
    wait_answer(task_cluster, sql, expected)
    inputs = sorted(zk_custom_maps(task_cluster, table))
    config = task_cluster.call("GET", f"/tables/{table}?type=OFFLINE").json()["OFFLINE"]
    limited = {**config, "quota": {"storage": "1K"}}  # every upload is now over the quota
    assert task_cluster.call("PUT", f"/tables/{table}", json=limited).ok

    debug = task_cluster.run_task(TASK, f"{table}_OFFLINE", timeout_s=600)
    infos = debug["subtaskInfos"]
    assert [i["state"] for i in infos] == ["TASK_ERROR"], infos
    assert "upload" in infos[0]["info"], infos[0]["info"]
    # the first epoch week [16065, 16072) holds only 2014-01-01 (maxNumParallelBuckets 1)
    first_week = [n for n in inputs if n.startswith("flights_16071_")]
    (entry,) = lineage(task_cluster, table).values()
    assert entry["state"] == "REVERTED" and entry["segmentsFrom"] == first_week, entry
    assert sorted(zk_custom_maps(task_cluster, table)) == inputs  # no output is left behind
    wait_answer(task_cluster, sql, expected)
    assert task_cluster.rows(f"SELECT COUNT(*) FROM {table}") == [[len(rows)]]

    # uploads accepted again: the same bucket is planned again and merges
    assert task_cluster.call("PUT", f"/tables/{table}", json=config).ok
    debug = task_cluster.run_task(TASK, f"{table}_OFFLINE", timeout_s=600)
    assert {i["state"] for i in debug["subtaskInfos"]} == {"COMPLETED"}, debug
    configs = debug["subtaskInfos"][0]["taskConfig"]["configs"]
    assert configs["segmentName"].split(",") == first_week
    answer = wait_answer(task_cluster, sql, expected)
    assert answer["numSegmentsQueried"] == len(inputs)  # one merged segment for one input
    entries = lineage(task_cluster, table)
    assert sorted(e["state"] for e in entries.values()) == ["COMPLETED", "REVERTED"]


def test_a_retried_subtask_replaces_its_own_attempt(task_cluster, airline_days, tmp_path,
                                                    spark, monkeypatch):  # fmt: skip
    """The executor run in this process with a subtask config as the generator writes it: a
    first attempt that dies after its uploads (no end, no revert, as a killed minion) leaves
    an IN_PROGRESS entry; the retry's forceCleanup reverts it and deletes its uploads, so the
    table ends with one copy of every row; a third run after the swap is a no-op; a subtask
    whose inputs are gone fails without touching anything."""
    from tasks.executors import merge_rollup as executor
    from tasks.executors.base import SubtaskContext

    days = [[{"Carrier": r["Carrier"], "Origin": r["Origin"], "Distance": r["Distance"],
              "NumFlights": 1, "MaxArrDelay": r["ArrDelay"] or 0, "DaysSinceEpoch": r["DaysSinceEpoch"]}
             for r in day] for day in airline_days[1:4]]  # fmt: skip
    rows = [r for day in days for r in day]
    tars = day_tars(days, FLIGHTS_SCHEMA, FLIGHTS_CONFIG, tmp_path)
    table = load_table(task_cluster, FLIGHTS_SCHEMA, FLIGHTS_CONFIG, tars, WEEKLY_CONCAT)
    sql = f"SELECT COUNT(*), SUM(Distance) FROM {table}"
    total = [[len(rows), float(sum(r["Distance"] for r in rows))]]
    wait_answer(task_cluster, sql, total)
    metadata = task_cluster.call("GET", f"/segments/{table}/zkmetadata?type=OFFLINE").json()
    inputs = sorted(metadata)
    configs = {
        "tableName": f"{table}_OFFLINE", "segmentName": ",".join(inputs),
        "downloadURL": ",".join(metadata[s]["segment.download.url"] for s in inputs),
        "uploadURL": f"{task_cluster.controller_url}/segments", "enableReplaceSegments": "true",
        "mergeType": "concat", "mergeLevel": "7day", "partitionBucketTimePeriod": "7d",
        "roundBucketTimePeriod": "", "maxNumRecordsPerSegment": "5000000",
        "eraseDimensionValues": "", "segmentNamePrefix": f"merged_7day_1_0_{table}",
    }  # fmt: skip

    def run(attempt: int, **overrides) -> dict:
        ctx = SubtaskContext(TASK, "Task_MergeRollupTask_x_1_0", attempt,
                             {**configs, **overrides}, "test", lambda _message: None)  # fmt: skip
        return executor.MergeRollupTaskExecutor().execute(ctx)

    class Killed(Exception):
        pass

    def killed(*_args, **_kwargs):
        raise Killed()

    with monkeypatch.context() as patch:
        patch.setattr(executor, "end_replace_segments", killed)
        patch.setattr(executor, "revert_replace_segments", lambda *a, **k: None)
        with pytest.raises(Killed):
            run(1)
    (first,) = lineage(task_cluster, table).values()
    assert first["state"] == "IN_PROGRESS" and first["segmentsFrom"] == inputs
    outputs = first["segmentsTo"]
    assert sorted(zk_custom_maps(task_cluster, table)) == sorted(inputs + outputs)
    wait_answer(task_cluster, sql, total)  # the uploads are hidden while IN_PROGRESS

    result = run(2)
    assert result["segmentsTo"] == outputs  # the same names: the retry replaced its attempt
    states = sorted(e["state"] for e in lineage(task_cluster, table).values())
    assert states == ["COMPLETED", "REVERTED"]
    wait_route(task_cluster, sql, total, len(outputs))
    assert sorted(zk_custom_maps(task_cluster, table)) == sorted(inputs + outputs)

    assert run(3)["alreadyReplaced"] is True
    assert len(lineage(task_cluster, table)) == 2
    with pytest.raises(SubtaskFailedError, match="no longer has the segments"):
        run(4, segmentName=f"{inputs[0]},gone_segment")
    wait_answer(task_cluster, sql, total)

"""PurgeTask end to end, all real: a controller, a server and a broker as processes on
ZooKeeper, a minion (Celery worker on Redis) with its own SparkSession. airlineStats is loaded
as segments of Pinot's day files; a purge declared as a SQL predicate removes its records
from every query answer while every other record stays as it was (COUNT, SUM and GROUP BY
compared with a reference computed from the input files); each segment keeps its name and
records PurgeTask.time, so the next run finds nothing due; a refused upload fails the
subtask and leaves the segment as it was."""

from __future__ import annotations

import collections
import time

import orjson
import pyarrow as pa
import pytest
import requests

from tests.engine.query import conformance
from tests.tasks.conftest import TaskCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TASK = "PurgeTask"
DAYS = 3


@pytest.fixture(scope="module")
def airline_input(pinot_examples, tmp_path_factory):
    """DAYS segment tars of Pinot's airlineStats day files and their rows."""
    from engine.segment import build_segment, pack_segment
    from engine.spi import Schema, TableConfig

    schema = Schema.from_json(conformance.airline_schema(pinot_examples))
    config = TableConfig.from_json(conformance.airline_table_config(pinot_examples))
    out = tmp_path_factory.mktemp("purge-input")
    tars, rows = [], []
    for i, path in enumerate(conformance.airline_avro_files(pinot_examples)[:DAYS]):
        day = conformance.read_avro(path)
        result = build_segment(pa.Table.from_pylist(day), schema, config, out / "b",
                               sequence_id=i)  # fmt: skip
        tars.append(pack_segment(result.path, out / f"{result.name}.tar.gz"))
        rows.extend(day)
    return tars, rows


def load_table(cluster: TaskCluster, pinot_examples, tars, task_config: dict) -> str:
    schema = conformance.airline_schema(pinot_examples)
    config = conformance.airline_table_config(pinot_examples)
    return cluster.create_table("purge", schema, config, tars, TASK, task_config)


def wait_rows(cluster: TaskCluster, table: str, expected: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = cluster.query(f"SELECT COUNT(*) FROM {table}")
            if not last.get("exceptions") and last["resultTable"]["rows"][0][0] == expected:
                return
        except (requests.RequestException, AssertionError, KeyError, IndexError):
            pass
        time.sleep(0.3)
    raise AssertionError(f"{table} did not answer COUNT(*) = {expected}: {last}")


def custom_maps(cluster: TaskCluster, table: str) -> dict[str, dict]:
    metadata = cluster.call("GET", f"/segments/{table}/zkmetadata?type=OFFLINE").json()
    return {s: orjson.loads(f.get("custom.map") or "{}") for s, f in metadata.items()}


def test_purged_records_leave_every_answer(task_cluster, pinot_examples, airline_input):
    tars, rows = airline_input
    carriers = collections.Counter(r["Carrier"] for r in rows)
    gone = sorted(carriers)[:2]  # two carriers' records are purged (privacy request)
    kept = [r for r in rows if r["Carrier"] not in gone]
    assert 0 < len(kept) < len(rows)
    purge_filter = "Carrier IN (" + ", ".join(f"'{c}'" for c in gone) + ")"
    table = load_table(task_cluster, pinot_examples, tars, {"purgeFilter": purge_filter})
    wait_rows(task_cluster, table, len(rows))
    segments = sorted(custom_maps(task_cluster, table))

    debug = task_cluster.run_task(TASK, f"{table}_OFFLINE")
    infos = debug["subtaskInfos"]
    assert [i["state"] for i in infos] == ["COMPLETED"] * DAYS, infos
    assert sorted(i["taskConfig"]["configs"]["segmentName"] for i in infos) == segments

    wait_rows(task_cluster, table, len(kept))
    assert task_cluster.rows(f"SELECT COUNT(*) FROM {table} WHERE {purge_filter}") == [[0]]
    by_carrier = collections.Counter(r["Carrier"] for r in kept)
    delays = collections.defaultdict(int)
    for r in kept:
        delays[r["Carrier"]] += r["Distance"]
    answer = task_cluster.rows(f"SELECT Carrier, COUNT(*), SUM(Distance) FROM {table} "
                               f"GROUP BY Carrier ORDER BY Carrier LIMIT 100")  # fmt: skip
    assert answer == [[c, by_carrier[c], float(delays[c])] for c in sorted(by_carrier)]
    # the segments kept their names and know when they were purged
    maps = custom_maps(task_cluster, table)
    assert sorted(maps) == segments
    assert all(int(m["PurgeTask.time"]) > 0 for m in maps.values()), maps
    # not due again for 14 days
    again = task_cluster.call("POST", f"/tasks/schedule?taskType={TASK}&tableName="
                                      f"{table}_OFFLINE").json()  # fmt: skip
    assert again[TASK] == "" and again["generationErrors"] == "", again


def test_a_refused_upload_fails_the_subtask(task_cluster, pinot_examples, airline_input):
    tars, rows = airline_input
    table = load_table(task_cluster, pinot_examples, tars[:1],
                       {"purgeFilter": "ArrDelay > 0"})  # fmt: skip
    day = [r for r in rows if r["DaysSinceEpoch"] == rows[0]["DaysSinceEpoch"]]
    wait_rows(task_cluster, table, len(day))
    config = task_cluster.call("GET", f"/tables/{table}?type=OFFLINE").json()["OFFLINE"]
    config["quota"] = {"storage": "1K"}  # every upload is now over the quota
    response = task_cluster.call("PUT", f"/tables/{table}", json=config)
    assert response.ok, response.text
    debug = task_cluster.run_task(TASK, f"{table}_OFFLINE")
    (info,) = debug["subtaskInfos"]
    assert info["state"] == "TASK_ERROR" and "the upload of segment" in info["info"], info
    wait_rows(task_cluster, table, len(day))  # nothing purged
    assert all("PurgeTask.time" not in m for m in custom_maps(task_cluster, table).values())


def test_a_segment_left_empty_is_deleted(task_cluster, pinot_examples, airline_input):
    tars, rows = airline_input
    table = load_table(task_cluster, pinot_examples, tars[:2], {})
    days = sorted({r["DaysSinceEpoch"] for r in rows})[:2]
    wait_rows(task_cluster, table, sum(r["DaysSinceEpoch"] in days for r in rows))
    before = custom_maps(task_cluster, table)
    # an ad-hoc purge of the whole first day: its segment goes, the other is rewritten
    body = {"taskType": TASK, "tableName": f"{table}_OFFLINE",
            "taskConfigs": {"purgeFilter": f"DaysSinceEpoch = {days[0]}"}}  # fmt: skip
    response = task_cluster.call("POST", "/tasks/execute", json=body)
    assert response.ok, response.text
    name = response.json()[f"{table}_OFFLINE"]
    deadline = time.monotonic() + 300
    while task_cluster.call("GET", f"/tasks/task/{name}/state").json() != "COMPLETED":
        assert time.monotonic() < deadline, name
        time.sleep(0.5)
    debug = task_cluster.call("GET", f"/tasks/task/{name}/debug?verbosity=1").json()
    assert {i["state"] for i in debug["subtaskInfos"]} == {"COMPLETED"}, debug
    wait_rows(task_cluster, table, sum(r["DaysSinceEpoch"] == days[1] for r in rows))
    after = custom_maps(task_cluster, table)
    assert len(before) == 2 and len(after) == 1 and set(after) < set(before)

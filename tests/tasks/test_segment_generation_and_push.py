"""SegmentGenerationAndPushTask end to end, all real: a controller process (its lead loop
dispatches and tracks subtasks), a minion process building segments on its own long-lived
SparkSession, ZooKeeper and Redis. One input file becomes one subtask and one segment; an
APPEND table never ingests a file twice; a REFRESH table replaces its segments; an upload the
controller refuses is a failed subtask."""

from __future__ import annotations

import copy
import shutil
import time
import uuid

import orjson
import pytest
import requests

from sprig.stack.cluster import controller_process
from sprig.stack.process import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TASK = "SegmentGenerationAndPushTask"


@pytest.fixture(scope="module")
def controller(controller_zk, task_redis_url, minion_cluster, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("sgp_controller")
    port = free_port()
    env = {
        "SPRIG_ZK": controller_zk.address, "SPRIG_CLUSTER_NAME": minion_cluster,
        "SPRIG_DATA_DIR": str(workdir / "data"), "SPRIG_REDIS_URL": task_redis_url,
        "SPRIG_INPUT_ROOTS": str(tmp_path_factory.getbasetemp()),  # the tests' input folders
        "SPRIG_PERIODIC_TASK_INITIAL_DELAY_S": "3600", "SPRIG_CONTROLLER_THREADS": "4",
        "SPRIG_TASK_DRIVER_INTERVAL_S": "0.1", "SPRIG_LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
    }  # fmt: skip
    process = controller_process(workdir, port, env)
    process.start()
    try:
        process.wait_ready()
        yield f"http://127.0.0.1:{port}"
    finally:
        process.stop()


@pytest.fixture(scope="module")
def spark_minion(start_minion):
    return start_minion("sparky", "minion_untagged", SPRIG_MINION_SPARK_PREWARM="true",
                        SPRIG_SPARK_MASTER="local[1]", SPRIG_SPARK_DRIVER_MEMORY="1g")  # fmt: skip


def call(controller: str, method: str, path: str, **kwargs) -> requests.Response:
    return requests.request(method, f"{controller}{path}", timeout=60, **kwargs)


@pytest.fixture
def input_dir(tmp_path, airline_dir):
    """Two of airlineStats' daily Avro files (and a file the include pattern leaves out)."""
    directory = tmp_path / "input"
    (directory / "2014").mkdir(parents=True)
    for path in sorted((airline_dir / "rawdata").rglob("*.avro"))[:2]:
        shutil.copy(path, directory / "2014" / path.name)
    (directory / "README.txt").write_text("not data")
    return directory


def make_table(controller, airline_schema, airline_offline_config, input_dir, *,
               ingestion="APPEND", quota=None, tag=None) -> str:  # fmt: skip
    name = f"sgp{uuid.uuid4().hex[:6]}"
    schema = {**copy.deepcopy(airline_schema), "schemaName": name}
    assert call(controller, "POST", "/schemas", json=schema).status_code == 200
    if call(controller, "GET", "/instances/Server_127.0.0.1_8001").status_code == 404:
        body = {"host": "127.0.0.1", "port": 8001, "type": "SERVER"}
        assert call(controller, "POST", "/instances", json=body).status_code == 200
    config = copy.deepcopy(airline_offline_config)
    config["tableName"] = name
    config["ingestionConfig"] = {"batchIngestionConfig": {
        "segmentIngestionType": ingestion, "segmentIngestionFrequency": "DAILY",
        "batchConfigMaps": [{"inputDirURI": str(input_dir), "inputFormat": "avro",
                             "includeFileNamePattern": "glob:**/*.avro"}],
    }}  # fmt: skip
    config["segmentsConfig"]["segmentPushType"] = ingestion
    if quota:
        config["quota"] = {"storage": quota}
    config["task"] = {"taskTypeConfigsMap": {TASK: {"minionInstanceTag": tag} if tag else {}}}
    response = call(controller, "POST", "/tables", json=config)
    assert response.status_code == 200, response.text
    return f"{name}_OFFLINE"


def run_to_completion(controller, table: str, timeout_s: float = 240) -> dict:
    body = call(controller, "POST", f"/tasks/schedule?taskType={TASK}&tableName={table}").json()
    assert body["generationErrors"] == "" and body["schedulingErrors"] == "", body
    name = body[TASK]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if call(controller, "GET", f"/tasks/task/{name}/state").json() == "COMPLETED":
            return call(controller, "GET", f"/tasks/task/{name}/debug?verbosity=1").json()
        time.sleep(0.5)
    debug = call(controller, "GET", f"/tasks/task/{name}/debug?verbosity=1").json()
    raise AssertionError(f"{name} did not complete: {debug}")


def segment_inputs(controller, table: str) -> dict[str, str]:
    raw = table.removesuffix("_OFFLINE")
    metadata = call(controller, "GET", f"/segments/{raw}/zkmetadata").json()
    return {
        segment: orjson.loads(fields["custom.map"])["input.data.file.uri"]
        for segment, fields in metadata.items()
    }


def test_append_table_ingests_each_file_once(controller, spark_minion, airline_schema,
                                             airline_offline_config, input_dir,
                                             celery_link):  # fmt: skip
    table = make_table(controller, airline_schema, airline_offline_config, input_dir)
    debug = run_to_completion(controller, table)
    infos = debug["subtaskInfos"]
    assert [i["state"] for i in infos] == ["COMPLETED", "COMPLETED"], infos
    uris = sorted(i["taskConfig"]["configs"]["input.data.file.uri"] for i in infos)
    assert uris == sorted(p.as_uri() for p in (input_dir / "2014").glob("*.avro"))
    inputs = segment_inputs(controller, table)
    assert sorted(inputs.values()) == uris and len(inputs) == 2
    # a second run finds nothing new; a new file is ingested alone
    again = call(controller, "POST", f"/tasks/schedule?taskType={TASK}&tableName={table}").json()
    assert again[TASK] == "" and again["generationErrors"] == ""
    extra = input_dir / "2014" / "extra.avro"
    shutil.copy(sorted((input_dir / "2014").glob("*.avro"))[0], extra)
    debug = run_to_completion(controller, table)
    assert [i["taskConfig"]["configs"]["input.data.file.uri"] for i in debug["subtaskInfos"]
            ] == [extra.as_uri()]  # fmt: skip
    assert len(segment_inputs(controller, table)) == 3

    # an attempt that runs again after its push went through (its minion was killed before
    # it could report) finds the file's segment and pushes nothing
    from tasks.logic.celery_link import read_report, send_attempt

    config = debug["subtaskInfos"][0]["taskConfig"]["configs"]
    replay = f"Task_{TASK}_replay{uuid.uuid4().hex[:6]}_1_0"
    send_attempt(subtask=replay, task_type=TASK, attempt=2, configs=config,
                 queue="minion_untagged", timeout_ms=120_000, dispatched_ms=0)  # fmt: skip
    deadline = time.monotonic() + 120
    while (report := read_report(f"{replay}.2")).state != "SUCCESS":
        assert report.state in ("PENDING", "RUNNING"), report
        assert time.monotonic() < deadline, report
        time.sleep(0.5)
    assert report.meta["result"]["skipped"] is True
    assert len(segment_inputs(controller, table)) == 3


def test_refresh_table_replaces_its_segments(controller, spark_minion, airline_schema,
                                            airline_offline_config, input_dir, airline_dir):  # fmt: skip
    table = make_table(controller, airline_schema, airline_offline_config, input_dir,
                       ingestion="REFRESH")  # fmt: skip
    debug = run_to_completion(controller, table)
    assert {i["state"] for i in debug["subtaskInfos"]} == {"COMPLETED"}, debug
    first = segment_inputs(controller, table)
    # new content under the same file name: the file's segment is replaced, not added
    changed = sorted((input_dir / "2014").glob("*.avro"))[0]
    shutil.copy(sorted((airline_dir / "rawdata").rglob("*.avro"))[5], changed)
    run_to_completion(controller, table)
    assert segment_inputs(controller, table) == first and len(first) == 2
    raw = table.removesuffix("_OFFLINE")
    metadata = call(controller, "GET", f"/segments/{raw}/zkmetadata").json()
    refreshed = {s for s, fields in metadata.items() if int(fields["segment.refresh.time"])}
    assert refreshed == {s for s, uri in first.items() if uri == changed.as_uri()}


def test_a_refused_upload_is_a_failed_subtask(controller, spark_minion, airline_schema,
                                             airline_offline_config, input_dir):  # fmt: skip
    table = make_table(controller, airline_schema, airline_offline_config, input_dir,
                       quota="1K")  # fmt: skip
    debug = run_to_completion(controller, table)
    states = {i["state"] for i in debug["subtaskInfos"]}
    assert states == {"TASK_ERROR"}
    assert all("the upload of segment" in i["info"] for i in debug["subtaskInfos"])
    assert segment_inputs(controller, table) == {}

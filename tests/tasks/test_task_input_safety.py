"""Issue 28's task configs, sent as an attacker would to a real controller process and a real
minion: SegmentGenerationAndPushTask reading a file outside the input roots (plainly, by
``..``, through a symlink, by another scheme) or writing a URI push outside the output
roots, and PurgeTask's Spark SQL reading a file and calling Java. The controller refuses each
with a 400 naming the key and the setting; a subtask crafted past the controller (put on the
minion's queue directly) is refused by the minion before it opens anything or starts Spark.
Nothing is read or written outside the roots, and both processes stay healthy."""

from __future__ import annotations

import copy
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from sprig.stack.cluster import controller_process
from sprig.stack.probes import minion_answers
from sprig.stack.process import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SGP = "SegmentGenerationAndPushTask"
BATCH = "ingestionConfig.batchIngestionConfig.batchConfigMaps[0]"
# issue 28's payload: a host file's line and the minion's user name written into the table
PAYLOAD = ("concat((SELECT first(name) FROM text.`{secret}` AS t(name)), "
           "reflect('java.lang.System','getProperty','user.name'))")  # fmt: skip


@dataclass
class Site:
    url: str
    table: str  # with type
    incoming: Path
    outgoing: Path
    outside: Path

    def call(self, method: str, path: str, **kwargs) -> requests.Response:
        return requests.request(method, f"{self.url}{path}", timeout=60, **kwargs)

    def files_outside(self) -> list[Path]:
        return sorted(p for p in self.outside.rglob("*") if p.name != "secret.csv")


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> tuple[Path, Path, Path]:
    work = tmp_path_factory.mktemp("task_safety")
    incoming, outgoing, outside = work / "incoming", work / "outgoing", work / "outside"
    for folder in (incoming, outgoing, outside):
        folder.mkdir()
    (outside / "secret.csv").write_text("Carrier\nthe-secret\n")
    os.symlink(outside / "secret.csv", incoming / "innocent.csv")
    return incoming, outgoing, outside


@pytest.fixture(scope="module")
def site(controller_zk, task_redis_url, minion_cluster, start_minion, roots, airline_schema,
         airline_offline_config, tmp_path_factory) -> Iterator[Site]:  # fmt: skip
    incoming, outgoing, outside = roots
    env = {"SPRIG_INPUT_ROOTS": str(incoming), "SPRIG_OUTPUT_ROOTS": str(outgoing)}
    start_minion("guard", "minion_untagged", **env)  # no Spark: refusals come before it
    workdir = tmp_path_factory.mktemp("task_safety_controller")
    port = free_port()
    process = controller_process(workdir, port, {
        **env, "SPRIG_ZK": controller_zk.address, "SPRIG_CLUSTER_NAME": minion_cluster,
        "SPRIG_DATA_DIR": str(workdir / "data"), "SPRIG_REDIS_URL": task_redis_url,
        "SPRIG_PERIODIC_TASK_INITIAL_DELAY_S": "3600", "SPRIG_LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
    })  # fmt: skip
    process.start()
    try:
        process.wait_ready()
        url = f"http://127.0.0.1:{port}"
        name = f"safe{uuid.uuid4().hex[:6]}"
        assert requests.post(f"{url}/schemas", json={**airline_schema, "schemaName": name},
                             timeout=30).ok  # fmt: skip
        body = {"host": "127.0.0.1", "port": 8001, "type": "SERVER"}
        requests.post(f"{url}/instances", json=body, timeout=30)
        config = copy.deepcopy(airline_offline_config)
        config["tableName"] = name
        config["task"] = {"taskTypeConfigsMap": {SGP: {}, "PurgeTask": {}}}
        assert requests.post(f"{url}/tables", json=config, timeout=30).ok
        yield Site(url, f"{name}_OFFLINE", incoming, outgoing, outside)
    finally:
        process.stop()


def _with_batch_map(site: Site, airline_offline_config, batch_map: dict) -> None:
    config = copy.deepcopy(airline_offline_config)
    config["tableName"] = site.table.removesuffix("_OFFLINE")
    config["ingestionConfig"] = {"batchIngestionConfig": {
        "segmentIngestionType": "APPEND", "batchConfigMaps": [batch_map]}}  # fmt: skip
    config["task"] = {"taskTypeConfigsMap": {SGP: {}, "PurgeTask": {}}}
    response = site.call("PUT", f"/tables/{config['tableName']}", json=config)
    assert response.ok, response.text


def test_ingestion_outside_the_roots_is_refused_by_the_controller(site, airline_offline_config):
    outside = site.outside
    attacks = [
        ({"inputDirURI": outside.as_uri()}, "inputDirURI", "SPRIG_INPUT_ROOTS"),
        ({"inputDirURI": f"{site.incoming}/../outside"}, "inputDirURI", "SPRIG_INPUT_ROOTS"),
        ({"inputDirURI": str(site.incoming)}, "inputDirURI", "SPRIG_INPUT_ROOTS"),  # the link
        ({"inputDirURI": "s3://attacker-bucket/in/"}, "inputDirURI", "SPRIG_INPUT_ROOTS"),
        ({"inputDirURI": "/", "includeFileNamePattern": "glob:etc/passwd"}, "inputDirURI",
         "SPRIG_INPUT_ROOTS"),
        ({"inputDirURI": str(site.incoming), "push.mode": "URI",
          "outputDirURI": (outside / "written").as_uri()}, "outputDirURI",
         "SPRIG_OUTPUT_ROOTS"),
    ]  # fmt: skip
    for batch_map, key, setting in attacks:
        _with_batch_map(site, airline_offline_config, {"inputFormat": "csv", **batch_map})
        body = {"taskType": SGP, "tableName": site.table}
        response = site.call("POST", "/tasks/execute", json=body)
        assert response.status_code == 400, (batch_map, response.text)
        error = response.json()["error"]
        assert f"{BATCH}.{key}" in error and setting in error, error
        scheduled = site.call("POST", f"/tasks/schedule?taskType={SGP}&tableName={site.table}")
        assert scheduled.ok and setting in scheduled.json()["generationErrors"], scheduled.text
        assert SGP not in scheduled.json()  # Pinot's shape: a type that failed is absent
    assert site.call("GET", "/tasks/tasktypes").json() == []  # no task was ever recorded
    assert site.files_outside() == [] and list(site.outgoing.iterdir()) == []


def test_spark_sql_in_a_purge_task_is_refused_by_the_controller(site):
    secret = site.outside / "secret.csv"
    attacks = [
        ("modify.Carrier", PAYLOAD.format(secret=secret), ["subquery", "REFLECT"]),
        ("purgeFilter", "Carrier = java_method('java.lang.System', 'exit', 0)", ["JAVA_METHOD"]),
        ("modify.Carrier", "concat(Carrier, '${env:HOME}')", ["${"]),
        ("purgeFilter", "Carrier IN (SELECT value FROM text.`/etc/passwd`)", ["IN over a query"]),
    ]  # fmt: skip
    for key, sql, named in attacks:
        body = {"taskType": "PurgeTask", "tableName": site.table, "taskConfigs": {key: sql}}
        response = site.call("POST", "/tasks/execute", json=body)
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert f"PurgeTask.{key}" in error and all(n in error for n in named), error
    assert "PurgeTask" not in site.call("GET", "/tasks/tasktypes").json()


def _run_on_minion(task_type: str, configs: dict) -> dict:
    """Put a crafted subtask straight on the minion's queue (past the controller); its report."""
    from tasks.logic.celery_link import read_report, send_attempt

    subtask = f"Task_{task_type}_crafted{uuid.uuid4().hex[:6]}_1_0"
    send_attempt(subtask=subtask, task_type=task_type, attempt=1, configs=configs,
                 queue="minion_untagged", timeout_ms=120_000, dispatched_ms=0)  # fmt: skip
    deadline = time.monotonic() + 60
    while (report := read_report(f"{subtask}.1")).state in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline, report
        time.sleep(0.2)
    return {"state": report.state, "error": report.meta.get("error", "")}


def test_the_minion_refuses_crafted_subtasks(site, celery_link, task_redis_url):
    upload = f"{site.url}/segments"
    outside = site.outside
    written = outside / "written"
    read_secret = {"tableName": site.table, "input.data.file.uri": (outside / "secret.csv").as_uri(),
                   "inputFormat": "csv", "push.mode": "TAR", "uploadURL": upload}  # fmt: skip
    via_link = {**read_secret, "input.data.file.uri": (site.incoming / "innocent.csv").as_uri()}
    write_out = {**read_secret, "input.data.file.uri": (site.incoming / "new.csv").as_uri(),
                 "push.mode": "URI", "outputDirURI": written.as_uri()}  # fmt: skip
    for configs, setting in ((read_secret, "SPRIG_INPUT_ROOTS"), (via_link, "SPRIG_INPUT_ROOTS"),
                             (write_out, "SPRIG_OUTPUT_ROOTS")):  # fmt: skip
        report = _run_on_minion(SGP, configs)
        assert report["state"] == "TASK_ERROR", report
        assert "refused by this minion" in report["error"] and setting in report["error"]
    raw = site.table.removesuffix("_OFFLINE")
    purge = {"tableName": site.table, "segmentName": f"{raw}_0",
             "downloadURL": f"{site.url}/segments/{raw}/{raw}_0", "uploadURL": upload,
             "crc": "1", "modify.Carrier": PAYLOAD.format(secret=outside / "secret.csv")}  # fmt: skip
    report = _run_on_minion("PurgeTask", purge)
    assert report["state"] == "TASK_ERROR", report
    # refused before the (missing) segment was downloaded: the error is the SQL, not a 404
    last = report["error"].strip().splitlines()[-1]
    assert last.startswith("spark_jobs.minion.purge.PurgeSpecError"), report
    assert "modify.Carrier" in last and "subquery" in last and "REFLECT" in last, last

    assert not written.exists() and site.files_outside() == []
    assert list(site.outgoing.iterdir()) == []
    assert site.call("GET", f"/segments/{raw}").json() in ([], [{"OFFLINE": []}])
    assert site.call("GET", "/health").text == "OK"
    assert minion_answers(task_redis_url, "minion_untagged", timeout_s=10)

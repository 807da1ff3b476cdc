# ruff: noqa: F811 - fixtures imported from tests.cluster.conftest are requested by name
"""Fixtures for the task framework's integration tests: the controller in-process (Django
test client) on the shared ZooKeeper, real minions (``sprig minion`` Celery workers) on the
shared Redis, and a table whose config names the example TestTask.

The minions are started once per module on a cluster of their own; every test uses that
cluster name, so the minions' registrations are visible to it. Tests use their own table
names, since the cluster's ZooKeeper state outlives a test (its database does not).

The end-to-end task tests (purge, merge/rollup, realtime-to-offline) share one cluster of
processes, ``task_cluster``, for the whole package: each makes tables of its own.
"""

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

import tests.tasks.example  # noqa: F401 - registers TestTask in this (controller) process
from sprig.stack.cluster import broker_process, controller_process, minion_process, server_process
from sprig.stack.process import ServiceProcess, free_port
from tests.cluster.conftest import (  # noqa: F401 - fixtures shared with the controller tests
    airline_dir,
    airline_offline_config,
    airline_schema,
    controller_zk,
    register_servers,
)

PLUGINS = "tests.tasks.example"


@pytest.fixture(scope="session")
def task_redis_url(redis_server) -> str:
    """A Redis database of their own, so no other test's minion takes these tasks."""
    return redis_server.url.rsplit("/", 1)[0] + "/7"


@pytest.fixture(scope="session")
def celery_link(task_redis_url):
    """Points the controller's Celery app at the test Redis."""
    from tasks.celery_app import app

    app.conf.broker_url = task_redis_url
    app.conf.result_backend = task_redis_url
    yield app
    app.close()


@pytest.fixture(scope="module")
def minion_cluster() -> str:
    return f"tasks_{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def start_minion(controller_zk, task_redis_url, minion_cluster, tmp_path_factory):
    """start_minion(name, tags) -> a running minion process on the module's cluster."""
    started = []
    workdir = tmp_path_factory.mktemp("minions")

    def start(name: str = "minion", tags: str = "minion_untagged", **extra_env):
        env = {
            "SPRIG_REDIS_URL": task_redis_url,
            "SPRIG_ZK": controller_zk.address,
            "SPRIG_CLUSTER_NAME": minion_cluster,
            "SPRIG_DATA_DIR": str(workdir / name / "data"),
            "SPRIG_MINION_TASK_PLUGINS": PLUGINS,
            # the tests' input and output folders are under pytest's temporary directory
            "SPRIG_INPUT_ROOTS": str(tmp_path_factory.getbasetemp()),
            "SPRIG_OUTPUT_ROOTS": str(tmp_path_factory.getbasetemp()),
            "SPRIG_LOG_LEVEL": "INFO",
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "PYTHONPATH": os.getcwd(),
            **extra_env,
        }
        process = minion_process(workdir, env, name=name, tags=tags)
        started.append(process)
        process.start()
        process.wait_ready()
        return process

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def task_settings(settings, controller_zk, minion_cluster, celery_link, tmp_path):
    settings.ZK_ADDRESS = controller_zk.address
    settings.CLUSTER_NAME = minion_cluster
    settings.DEEP_STORE_URI = str(tmp_path / "deepstore")
    settings.CONTROLLER_HOST = "127.0.0.1"
    settings.CONTROLLER_PORT = 9000
    settings.CONTROLLER_URL = "http://127.0.0.1:9000"
    return settings


@pytest.fixture
def api(task_settings, db):
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def store(task_settings):
    from controller.zk import get_store

    return get_store()


@pytest.fixture
def make_table(api, store, airline_schema, airline_offline_config):
    """make_table(task_configs) -> the OFFLINE table name with type, under a fresh name."""
    if store.instance_config("Server_127.0.0.1_8001") is None:  # the cluster outlives tests
        register_servers(api, 1)
    api.post("/schemas", airline_schema, format="json")

    def make(task_configs: dict[str, dict], name: str | None = None) -> str:
        name = name or f"t{uuid.uuid4().hex[:8]}"
        schema = {**copy.deepcopy(airline_schema), "schemaName": name}
        assert api.post("/schemas", schema, format="json").status_code == 200
        config = copy.deepcopy(airline_offline_config)
        config["tableName"] = name
        config["task"] = {"taskTypeConfigsMap": task_configs}
        response = api.post("/tables", config, format="json")
        assert response.status_code == 200, response.content
        return f"{name}_OFFLINE"

    return make


def wait_task(api, store, name: str, states=("COMPLETED",), timeout_s: float = 60.0) -> dict:
    """Drive the task manager (as the lead controller's loop does) until the task reaches one
    of `states`; returns its debug info with every subtask."""
    from tasks.logic.driver import tick

    deadline = time.monotonic() + timeout_s
    state = None
    while time.monotonic() < deadline:
        tick(store)
        state = api.get(f"/tasks/task/{name}/state").json()
        if state in states:
            return api.get(f"/tasks/task/{name}/debug?verbosity=1").json()
        time.sleep(0.1)
    debug = api.get(f"/tasks/task/{name}/debug?verbosity=1").json()
    raise AssertionError(f"task {name} is {state}, not {states}, after {timeout_s}s: {debug}")


@dataclass
class TaskCluster:
    controller_url: str
    broker_url: str
    processes: list[ServiceProcess]
    cluster_name: str

    @property
    def redis_url(self) -> str:
        """The Redis its controller and minion exchange subtasks and reports through."""
        return self.processes[0].env["SPRIG_REDIS_URL"]

    def call(self, method: str, path: str, **kwargs) -> requests.Response:
        return requests.request(method, f"{self.controller_url}{path}", timeout=60, **kwargs)

    def query(self, sql: str) -> dict:
        response = requests.post(f"{self.broker_url}/query/sql", json={"sql": sql}, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def rows(self, sql: str) -> list:
        answer = self.query(sql)
        assert not answer.get("exceptions"), answer
        return answer["resultTable"]["rows"]

    def create_table(self, prefix: str, schema: dict, config: dict, tars,
                     task_type: str, task_config: dict) -> str:  # fmt: skip
        """An OFFLINE table named ``prefix`` plus a random suffix, from ``schema`` and
        ``config`` with ``task_config`` for ``task_type``, holding the segment ``tars``."""
        name = f"{prefix}{uuid.uuid4().hex[:6]}"
        schema = {**schema, "schemaName": name}
        config = copy.deepcopy(config)
        config["tableName"] = name
        config["task"] = {"taskTypeConfigsMap": {task_type: task_config}}
        for path, body in (("/schemas", schema), ("/tables", config)):
            response = self.call("POST", path, json=body)
            assert response.ok, f"POST {path}: {response.status_code} {response.text}"
        for tar in tars:
            with tar.open("rb") as handle:
                response = self.call("POST", "/segments",
                                     params={"tableName": name, "tableType": "OFFLINE"},
                                     files={"file": (tar.name, handle, "application/gzip")})  # fmt: skip
            assert response.ok, response.text
        return name

    def run_task(self, task_type: str, table: str, timeout_s: float = 300) -> dict:
        """Schedule the type on the table and wait until the task is finished; its debug."""
        body = self.call("POST", f"/tasks/schedule?taskType={task_type}&tableName={table}").json()
        assert body.get("generationErrors", "") == "", body
        name = body[task_type]
        assert name, body
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = self.call("GET", f"/tasks/task/{name}/state").json()
            if state in ("COMPLETED", "FAILED"):
                return self.call("GET", f"/tasks/task/{name}/debug?verbosity=1").json()
            time.sleep(0.5)
        debug = self.call("GET", f"/tasks/task/{name}/debug?verbosity=1").json()
        raise AssertionError(f"{name} did not finish: {debug}")


def start_task_cluster(zk_address: str, redis_url: str, workdir: Path,
                       **extra_env: str) -> TaskCluster:  # fmt: skip
    """A controller (its lead loop dispatching minion tasks), one server, a broker and one
    minion with a prewarmed local[1] SparkSession, on a cluster of their own."""
    env = {
        "SPRIG_ZK": zk_address, "SPRIG_CLUSTER_NAME": f"tc_{uuid.uuid4().hex[:8]}",
        "SPRIG_DATA_DIR": str(workdir / "data"), "SPRIG_REDIS_URL": redis_url,
        "SPRIG_EXTERNAL_VIEW_INTERVAL_S": "0.2", "SPRIG_PERIODIC_TASK_INITIAL_DELAY_S": "3600",
        "SPRIG_TASK_DRIVER_INTERVAL_S": "0.2", "SPRIG_LOG_LEVEL": "INFO",
        "DJANGO_SETTINGS_MODULE": "config.settings.local", **extra_env,
    }  # fmt: skip
    controller_port, broker_port, query_port = free_port(), free_port(), free_port()
    processes = [
        controller_process(workdir, controller_port, env),
        server_process(workdir, query_port, free_port(), env, host="127.0.0.1"),
        broker_process(workdir, broker_port, env, host="127.0.0.1"),
        minion_process(workdir, {**env, "SPRIG_DATA_DIR": str(workdir / "minion"),
                                 "SPRIG_MINION_SPARK_PREWARM": "true",
                                 "SPRIG_SPARK_MASTER": "local[1]",
                                 "SPRIG_SPARK_DRIVER_MEMORY": "1g"}),
    ]  # fmt: skip
    cluster = TaskCluster(f"http://127.0.0.1:{controller_port}",
                          f"http://127.0.0.1:{broker_port}", processes,
                          env["SPRIG_CLUSTER_NAME"])  # fmt: skip
    try:
        for process in processes:
            process.start()
        for process in processes:
            process.wait_ready()
    except BaseException:
        stop_task_cluster(cluster)
        raise
    return cluster


def stop_task_cluster(cluster: TaskCluster) -> None:
    for process in reversed(cluster.processes):
        process.stop()


# The shared task cluster's Redis database: not task_redis_url's, whose minions (start_minion,
# with the example task plugin) live while the shared cluster does and would take its subtasks.
TASK_CLUSTER_REDIS_DB = 8


@pytest.fixture(scope="package")
def task_cluster(zookeeper, redis_server, tmp_path_factory) -> Iterator[TaskCluster]:
    """One controller, server, broker and minion (with Spark) for the package's end-to-end
    task tests, started once instead of once per module; each test makes tables of its own."""
    redis_url = f"{redis_server.url.rsplit('/', 1)[0]}/{TASK_CLUSTER_REDIS_DB}"
    cluster = start_task_cluster(zookeeper.address, redis_url,
                                 tmp_path_factory.mktemp("task-cluster"))  # fmt: skip
    yield cluster
    stop_task_cluster(cluster)


@pytest.fixture
def task_cluster_celery(task_cluster, monkeypatch):
    """tasks.logic.celery_link (send_attempt, read_report) on the task cluster's Redis for one
    test, to hand its minion a subtask as its controller would."""
    from celery import Celery

    import tasks.logic.celery_link as link

    app = Celery("sprig")
    app.config_from_object("django.conf:settings", namespace="CELERY")
    app.conf.broker_url = app.conf.result_backend = task_cluster.redis_url
    monkeypatch.setattr(link, "app", app)
    yield app
    app.close()

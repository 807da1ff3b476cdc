"""Cron schedules in a real controller process: its lead loop fires a table's Quartz
`schedule` with no extra switch, a minion runs the tasks, and after the controller is
restarted the schedule fires again (schedules live in the table configs, not in memory)."""

from __future__ import annotations

import copy
import time
import uuid

import pytest
import requests

from sprig.stack.cluster import controller_process
from sprig.stack.process import free_port
from tests.tasks.conftest import PLUGINS

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def cron_tasks(url: str, table: str) -> dict[str, dict]:
    response = requests.get(f"{url}/tasks/TestTask/{table}/debug?verbosity=1", timeout=30)
    if response.status_code == 404:  # no TestTask queue yet
        return {}
    return {name: info for name, info in response.json().items()
            if info["triggeredBy"] == "CRON_TRIGGER"}  # fmt: skip


def wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_schedule_fires_in_the_controller_and_survives_a_restart(
    controller_zk, task_redis_url, minion_cluster, start_minion, tmp_path, airline_schema,
    airline_offline_config,
):  # fmt: skip
    start_minion("cronminion", "minion_untagged")
    port = free_port()
    env = {
        "SPRIG_ZK": controller_zk.address, "SPRIG_CLUSTER_NAME": minion_cluster,
        "SPRIG_DATA_DIR": str(tmp_path / "data"), "SPRIG_REDIS_URL": task_redis_url,
        "SPRIG_PERIODIC_TASK_INITIAL_DELAY_S": "3600", "SPRIG_CONTROLLER_THREADS": "4",
        "SPRIG_TASK_SCHEDULE_SYNC_S": "1", "SPRIG_MINION_TASK_PLUGINS": PLUGINS,
        "SPRIG_LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "config.settings.local",
    }  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    controller = controller_process(tmp_path / "c1", port, env)
    controller.start()
    try:
        controller.wait_ready()
        name = f"cron{uuid.uuid4().hex[:6]}"
        schema = {**copy.deepcopy(airline_schema), "schemaName": name}
        assert requests.post(f"{url}/schemas", json=schema, timeout=30).status_code == 200
        if requests.get(f"{url}/instances/Server_127.0.0.1_8001", timeout=30).status_code == 404:
            requests.post(f"{url}/instances", json={"host": "127.0.0.1", "port": 8001,
                                                    "type": "SERVER"}, timeout=30)  # fmt: skip
        config = copy.deepcopy(airline_offline_config)
        config["tableName"] = name
        config["task"] = {"taskTypeConfigsMap": {"TestTask": {
            "numSubtasks": "1", "schedule": "*/2 * * * * ?"}}}  # fmt: skip
        assert requests.post(f"{url}/tables", json=config, timeout=30).status_code == 200
        table = f"{name}_OFFLINE"
        first = wait_for(lambda: {n: i for n, i in cron_tasks(url, table).items()
                                  if i["taskState"] == "COMPLETED"}, 60, "a cron task")  # fmt: skip
        info = requests.get(f"{url}/tasks/scheduler/information", timeout=30).json()
        assert info["Started"] is True and info["NumberOfJobs"] >= 1
        details = requests.get(f"{url}/tasks/scheduler/jobDetails?tableName={table}"
                               "&taskType=TestTask", timeout=30).json()  # fmt: skip
        assert details["Triggers"][0]["PreviousFireTime"] is not None

        controller.stop()
        controller = controller_process(tmp_path / "c2", port, env)
        controller.start()
        controller.wait_ready()
        wait_for(lambda: set(cron_tasks(url, table)) - set(first), 60,
                 "a cron task after the restart")  # fmt: skip
    finally:
        controller.stop()

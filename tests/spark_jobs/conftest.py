"""Fixtures for the Spark job tests.

Spark starts its Python workers with $PYSPARK_PYTHON (default: `python3` on PATH, which may
not have the project's dependencies); point it at this interpreter before any test creates
the session-wide SparkSession.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from sprig.stack.process import ServiceProcess, free_port

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="module")
def controller(zookeeper, tmp_path_factory) -> Iterator[str]:
    """A real controller process (`sprig controller`, Django on gunicorn) on a free port, on
    its own cluster in the shared ZooKeeper, with one server instance registered so segments
    can be assigned. Yields its base URL."""
    work = tmp_path_factory.mktemp("controller")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = ServiceProcess(
        "controller",
        [sys.executable, "-m", "sprig", "controller", "--host", "127.0.0.1",
         "--port", str(port), "--settings", "config.settings.local"],
        log_path=work / "controller.log",
        ready=lambda: requests.get(f"{url}/health", timeout=2).status_code == 200,
        timeout_s=90,
        env={
            "SPRIG_ZK": zookeeper.address,
            "SPRIG_CLUSTER_NAME": f"ingest_{uuid.uuid4().hex[:8]}",
            "SPRIG_DATA_DIR": str(work / "data"),
            "SPRIG_DEEP_STORE_URI": str(work / "deepstore"),
            "SPRIG_CONTROLLER_HOST": "127.0.0.1",
            # a URI push names segment archives the tests wrote under their own folders
            "SPRIG_INPUT_ROOTS": str(tmp_path_factory.getbasetemp()),
            "SPRIG_OUTPUT_ROOTS": str(tmp_path_factory.getbasetemp()),
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
        },
    )  # fmt: skip
    process.start()
    try:
        process.wait_ready()
        server = {"host": "127.0.0.1", "port": free_port(), "type": "SERVER"}
        response = requests.post(f"{url}/instances", json=server, timeout=30)
        assert response.status_code == 200, response.text
        yield url
    finally:
        process.stop()


def create_table(controller: str, pinot_examples: Path, name: str) -> None:
    """The airlineStats schema and OFFLINE table config, renamed to `name`."""
    example = pinot_examples / "batch/airlineStats"
    schema = json.loads((example / "airlineStats_schema.json").read_text())
    config = json.loads((example / "airlineStats_offline_table_config.json").read_text())
    schema["schemaName"] = config["tableName"] = name
    for path, body in (("schemas", schema), ("tables", config)):
        response = requests.post(f"{controller}/{path}", json=body, timeout=30)
        assert response.status_code == 200, response.text


def listed_segments(controller: str, table: str) -> list[str]:
    response = requests.get(f"{controller}/segments/{table}", timeout=30)
    assert response.status_code == 200, response.text
    return sorted(name for entry in response.json() for name in entry.get("OFFLINE", []))

# ruff: noqa: F811 - fixtures imported from the SegmentGenerationAndPushTask tests
"""A minion on a standalone Spark cluster, the way a user with more data than one machine
scales out: a Spark master and a worker started from the pyspark package's own jars, and a
minion whose SPRIG_SPARK_MASTER points at them builds SegmentGenerationAndPushTask segments
in the worker's executor."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
import requests

from sprig.stack.process import ServiceProcess, free_port
from tests.tasks.test_segment_generation_and_push import (  # noqa: F401 - shared fixtures
    call,
    controller,
    input_dir,
    make_table,
    run_to_completion,
    segment_inputs,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _spark_class() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _workers_alive(webui_port: int) -> bool:
    state = requests.get(f"http://127.0.0.1:{webui_port}/json/", timeout=2).json()
    return state.get("aliveworkers", 0) >= 1


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("spark_standalone")
    port, webui = free_port(), free_port()
    env = {"SPARK_LOG_DIR": str(workdir / "logs"), "SPARK_WORKER_DIR": str(workdir / "work"),
           "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": os.getcwd()}  # fmt: skip
    master = ServiceProcess(
        "spark-master",
        [
            _spark_class(),
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(webui),
        ],
        log_path=workdir / "master.log",
        ready=lambda: _listening(port),
        timeout_s=90,
        env=env,
    )
    worker = ServiceProcess(
        "spark-worker",
        [
            _spark_class(),
            "org.apache.spark.deploy.worker.Worker",
            f"spark://127.0.0.1:{port}",
            "--host",
            "127.0.0.1",
            "--cores",
            "1",
            "--memory",
            "1g",
            "--webui-port",
            str(free_port()),
        ],
        log_path=workdir / "worker.log",
        ready=lambda: _workers_alive(webui),
        timeout_s=90,
        env=env,
    )
    try:
        master.start()
        master.wait_ready()
        worker.start()
        worker.wait_ready()
        yield f"spark://127.0.0.1:{port}"
    finally:
        worker.stop()
        master.stop()


def test_a_minion_builds_segments_on_a_standalone_spark_cluster(
    controller, spark_cluster, start_minion, airline_schema, airline_offline_config, input_dir
):
    start_minion("scaled", "spark_cluster", SPRIG_SPARK_MASTER=spark_cluster,
                 SPRIG_MINION_SPARK_PREWARM="true", SPRIG_SPARK_DRIVER_MEMORY="1g")  # fmt: skip
    table = make_table(controller, airline_schema, airline_offline_config, input_dir,
                       tag="spark_cluster")  # fmt: skip
    debug = run_to_completion(controller, table)
    assert {i["state"] for i in debug["subtaskInfos"]} == {"COMPLETED"}, debug
    assert {i["participant"] for i in debug["subtaskInfos"]} == {
        f"Minion_{socket.gethostname()}_scaled"}  # fmt: skip
    assert len(segment_inputs(controller, table)) == 2

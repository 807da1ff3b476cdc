"""The cluster of bench.minion, and the SparkSession probe it installs in the minion.

``Stack`` starts ZooKeeper, Redis and Apache Kafka, a controller, a server, a
broker and one minion (a Celery worker with ``MINION_POOL`` pool processes, each with its
SparkSession started at worker start). The minion imports this module as a task plugin
(``SPRIG_MINION_TASK_PLUGINS=bench.minion_stack`` with ``SPRIG_BENCH_SPARK_LOG`` set), which
installs the probe: every call that creates a SparkContext, and every merge_tables call, is
logged to that file. Kept apart from bench.minion so that its parts (bench.minion_realtime)
import the cluster without importing the benchmark that imports them.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from engine.common.clock import now_ms

SPARK_LOG_ENV = "SPRIG_BENCH_SPARK_LOG"
MINION_POOL = 2  # the minion's pool processes, each with a SparkSession


# --- the SparkSession probe, installed in the minion ----------------------------------------


def install_spark_probe(log_path: str) -> None:
    """Wrap spark_jobs.session.spark_session so each call that creates a SparkContext appends
    {kind: spark_start, pid, thread, ms} to ``log_path``, and the Spark part of MergeRollup and
    RealtimeToOffline (merge_rollup.merge_tables) so each call appends {kind: merge_tables,
    start, ms, rows}: how much of a subtask Spark takes."""
    import spark_jobs.minion.merge_rollup as merge_rollup
    import spark_jobs.minion.realtime_to_offline as realtime_to_offline
    import spark_jobs.session as session

    def log(line: dict) -> None:
        with open(log_path, "a") as handle:
            handle.write(json.dumps(line) + "\n")

    start_session = session.spark_session

    def counted(*args, **kwargs):
        from pyspark import SparkContext

        new = SparkContext._active_spark_context is None
        result = start_session(*args, **kwargs)
        if new:
            log({"kind": "spark_start", "pid": os.getpid(),
                 "thread": threading.current_thread().name, "ms": now_ms()})  # fmt: skip
        return result

    merge_tables = merge_rollup.merge_tables

    def timed(spark, tables, *args, **kwargs):
        started = time.time()
        try:
            return merge_tables(spark, tables, *args, **kwargs)
        finally:
            log({"kind": "merge_tables", "start": int(started * 1000),
                 "ms": int((time.time() - started) * 1000),
                 "rows": sum(t.num_rows for t in tables)})  # fmt: skip

    session.spark_session = counted
    merge_rollup.merge_tables = timed
    realtime_to_offline.merge_tables = timed  # imported by name there


if os.environ.get(SPARK_LOG_ENV):  # imported by the minion as a task plugin
    install_spark_probe(os.environ[SPARK_LOG_ENV])


# --- the cluster ------------------------------------------------------------------------------


class Stack:
    def __init__(self, workdir: Path, spark_master: str):
        from sprig.stack import KafkaService, RedisService, ZooKeeperService

        self.workdir = workdir
        self.spark_log = workdir / "spark_starts.jsonl"
        self.services = [ZooKeeperService(workdir), RedisService(workdir), KafkaService(workdir)]
        self.spark_master = spark_master
        self.processes = []

    def start(self) -> None:
        from sprig.stack.cluster import (
            broker_process,
            controller_process,
            minion_process,
            server_process,
        )
        from sprig.stack.process import free_port

        for service in self.services:
            service.start()
        for service in self.services:
            service.wait_ready()
        zk, redis, kafka = self.services
        self.bootstrap = kafka.bootstrap_servers
        env = {"SPRIG_ZK": zk.address, "SPRIG_CLUSTER_NAME": "bench_minion",
               "SPRIG_DATA_DIR": str(self.workdir / "data"), "SPRIG_REDIS_URL": redis.url,
               # bench.minion's dispatch run ingests CSV files it writes under the workdir
               "SPRIG_INPUT_ROOTS": str(self.workdir),
               "SPRIG_PERIODIC_TASK_INITIAL_DELAY_S": "3600", "SPRIG_LOG_LEVEL": "WARNING",
               "DJANGO_SETTINGS_MODULE": "config.settings.local"}  # fmt: skip
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        minion_env = {**env, "SPRIG_DATA_DIR": str(self.workdir / "minion"),
                      "SPRIG_MINION_SPARK_PREWARM": "true", "SPRIG_MINION_CONCURRENCY": str(MINION_POOL),
                      "SPRIG_SPARK_MASTER": self.spark_master, "SPRIG_LOG_LEVEL": "INFO",
                      "SPRIG_MINION_TASK_PLUGINS": "bench.minion_stack",
                      SPARK_LOG_ENV: str(self.spark_log)}  # fmt: skip
        self.processes = [
            controller_process(self.workdir, port, env),
            server_process(self.workdir, free_port(), free_port(), env),
            broker_process(self.workdir, free_port(), env),
            minion_process(self.workdir, minion_env),
        ]
        for process in self.processes:
            process.start()
        for process in self.processes:
            process.wait_ready()
        # measure nothing while the pool processes' SparkSessions are still starting
        deadline = time.monotonic() + 900
        while len(self.spark_starts()) < MINION_POOL:
            if time.monotonic() > deadline:
                raise RuntimeError("the minion's SparkSessions did not start in 900 s")
            time.sleep(1)

    def probe(self, kind: str) -> list[dict]:
        if not self.spark_log.exists():
            return []
        lines = [json.loads(line) for line in self.spark_log.read_text().splitlines()]
        return [line for line in lines if line["kind"] == kind]

    def spark_starts(self) -> list[dict]:
        return self.probe("spark_start")

    def spark_seconds(self, spans: list[tuple[int, int]]) -> float:
        """Seconds spent in merge_tables (the Spark part) by calls begun within ``spans``."""
        return sum(c["ms"] for c in self.probe("merge_tables")
                   if any(s <= c["start"] <= e for s, e in spans)) / 1000  # fmt: skip

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        for service in reversed(self.services):
            service.stop()

    def call(self, method: str, path: str, **kwargs):
        import requests

        response = requests.request(method, f"{self.url}{path}", timeout=600, **kwargs)
        if response.status_code >= 300:
            raise RuntimeError(f"{method} {path}: HTTP {response.status_code} {response.text}")
        return response.json() if response.content else None

    def schedule(self, task_type: str, table: str) -> str:
        body = self.call("POST", "/tasks/schedule", params={"taskType": task_type,
                                                             "tableName": table})  # fmt: skip
        if body.get("generationErrors") or body.get("schedulingErrors") or not body[task_type]:
            raise RuntimeError(f"no {task_type} task for {table}: {body}")
        return body[task_type]

    def wait_task(self, name: str, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.call("GET", f"/tasks/task/{name}/state") == "COMPLETED":
                debug = self.call("GET", f"/tasks/task/{name}/debug", params={"verbosity": 1})
                failed = [i for i in debug["subtaskInfos"] if i.get("state") != "COMPLETED"]
                if failed:
                    raise RuntimeError(f"{name}: failed subtasks {failed}")
                return debug
            time.sleep(0.05)
        raise RuntimeError(f"{name} did not complete in {timeout_s} s")

    def spans(self, task: str) -> list[tuple[int, int]]:
        """(startTs, endTs) in epoch ms of each subtask of ``task``, as the minions report."""
        progress = self.call("GET", "/tasks/subtask/workers/progress")
        return [(p["startTs"], p.get("endTs") or p["startTs"]) for subtasks in progress.values()
                for name, p in subtasks.items() if name.startswith(f"{task}_")]  # fmt: skip

    def offline_rows(self, table: str) -> tuple[int, int]:
        metadata = self.call("GET", f"/segments/{table}/zkmetadata", params={"type": "OFFLINE"})
        return len(metadata), sum(int(m.get("segment.total.docs", 0)) for m in metadata.values())


def most_at_once(spans: list[tuple[int, int]]) -> int:
    """The most subtasks running at the same moment."""
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak

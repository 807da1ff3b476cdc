"""The cluster and the events of bench.realtime: ZooKeeper, Apache Kafka, a controller, one server and a broker as separate processes (``sprig.stack``), with the
server's CPU and RSS read through psutil; and githubEvents-shaped events (Pinot's sample,
each with a unique id and a fresh ``created_at``) for tables made from Pinot's githubEvents
REALTIME config.
"""

from __future__ import annotations

import http.client
import time
import uuid
from pathlib import Path

import numpy as np
import orjson
import psutil
from kazoo.client import KazooClient

from engine.clusterstate.realtime_metadata import STATUS
from engine.clusterstate.store import ClusterStore
from sprig.stack import LocalStack
from sprig.stack.cluster import broker_process, controller_process, server_process
from sprig.stack.process import free_port

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "pinot" / "stream" / "githubEvents"
SAMPLE = EXAMPLES / "rawdata" / "2021-07-21-few-hours.json"
# lz4 as most Kafka producers of JSON use; the server's Kafka client decompresses, and that
# CPU is counted.
PRODUCER = {"compression.type": "lz4", "queue.buffering.max.kbytes": 1 << 20}


class EventSource:
    """githubEvents payloads: the sample's events in a loop, each serialised once with
    placeholders so a new event (unique id, created_at of its send time) is one join."""

    def __init__(self, path: Path = SAMPLE):
        self._parts = []
        self._ids = []
        for line in path.read_bytes().splitlines():
            if not line.strip():
                continue
            record = orjson.loads(line)
            self._ids.append(record["id"].encode())
            record["id"], record["created_at"] = "\x00ID\x00", "\x00TS\x00"
            head, rest = orjson.dumps(record).split(b"\\u0000ID\\u0000")
            middle, tail = rest.split(b"\\u0000TS\\u0000")
            self._parts.append((head, middle, tail))
        self.mean_bytes = int(np.mean([sum(map(len, p)) + 30 for p in self._parts]))

    def event(self, i: int, now_s: float) -> bytes:
        head, middle, tail = self._parts[i % len(self._parts)]
        loop = i // len(self._parts)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now_s)).encode()
        return b"".join((head, self._ids[i % len(self._ids)], b"-%d" % loop, middle, stamp, tail))


def schema_json(table: str) -> dict:
    schema = orjson.loads((EXAMPLES / "githubEvents_schema.json").read_bytes())
    schema["schemaName"] = table
    return schema


def table_json(table: str, topic: str, bootstrap: str, flush_rows: int) -> dict:
    """Pinot's githubEvents REALTIME config, on ``topic`` of the local Kafka."""
    config = orjson.loads((EXAMPLES / "githubEvents_realtime_table_config.json").read_bytes())
    config["tableName"] = table
    config["segmentsConfig"]["schemaName"] = table
    stream = config["ingestionConfig"]["streamIngestionConfig"]["streamConfigMaps"][0]
    stream.update({
        "stream.kafka.topic.name": topic,
        "stream.kafka.broker.list": bootstrap,
        "realtime.segment.flush.threshold.rows": str(flush_rows),
        "realtime.segment.flush.threshold.time": "6h",
    })  # fmt: skip
    stream.pop("realtime.segment.flush.threshold.size", None)
    return config


class Cluster:
    def __init__(self, workdir: Path):
        self.stack = LocalStack(workdir, ("zookeeper", "kafka")).start()
        self.bootstrap = self.stack.kafka.bootstrap_servers
        self.cluster_name = f"bench_{uuid.uuid4().hex[:6]}"
        env = {
            **self.stack.env(),
            "SPRIG_CLUSTER_NAME": self.cluster_name,
            "SPRIG_DATA_DIR": str(workdir / "data"),
            "SPRIG_EXTERNAL_VIEW_INTERVAL_S": "0.2",
            "SPRIG_LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
        }
        server_env = {**env, "SPRIG_DATA_DIR": str(workdir / "server")}
        controller_port, self.broker_port = free_port(), free_port()
        self.controller = f"http://127.0.0.1:{controller_port}"
        self.server = server_process(workdir, free_port(), free_port(), server_env)
        self.processes = [controller_process(workdir, controller_port, env), self.server,
                          broker_process(workdir, self.broker_port, env)]  # fmt: skip
        self.zk = KazooClient(hosts=self.stack.zookeeper.address)
        try:
            for process in self.processes:
                process.start()
            for process in self.processes:
                process.wait_ready()
            self.zk.start(timeout=30)
        except BaseException:
            self.stop()
            raise
        self.store = ClusterStore(self.zk, self.cluster_name)
        self.server_ps = psutil.Process(self.server.pid)
        self._broker = http.client.HTTPConnection("127.0.0.1", self.broker_port, timeout=30)

    def stop(self) -> None:
        self.zk.stop()
        for process in reversed(self.processes):
            process.stop()
        self.stack.stop()

    def create_table(self, table: str, topic: str, flush_rows: int) -> None:
        import requests

        for path, body in (("/schemas", schema_json(table)),
                           ("/tables", table_json(table, topic, self.bootstrap, flush_rows))):  # fmt: skip
            response = requests.post(f"{self.controller}{path}", json=body, timeout=60)
            if not response.ok:
                raise RuntimeError(f"POST {path}: {response.status_code} {response.text[:300]}")

    def count(self, table: str, conn: http.client.HTTPConnection | None = None) -> int | None:
        """COUNT(*) through the broker; None while it answers with exceptions (no segment
        is routable yet)."""
        conn = conn or self._broker
        conn.request("POST", "/query/sql", orjson.dumps({"sql": f"SELECT COUNT(*) FROM {table}"}),
                     {"Content-Type": "application/json"})  # fmt: skip
        answer = orjson.loads(conn.getresponse().read())
        if answer.get("exceptions") or not answer.get("resultTable"):
            return None
        return int(answer["resultTable"]["rows"][0][0])

    def server_cpu_s(self) -> float:
        times = self.server_ps.cpu_times()
        return times.user + times.system

    def server_rss(self) -> int:
        return self.server_ps.memory_info().rss

    def segment_status(self, table: str, segment: str) -> str | None:
        meta = self.store.segment_metadata(f"{table}_REALTIME", segment)
        return None if meta is None else meta.extra.get(STATUS)

    def consuming_segments(self, table: str, count: int, timeout_s: float = 60) -> list[str]:
        """Once the table has ``count`` segments (one per partition), their names."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ideal = self.store.ideal_state(f"{table}_REALTIME")
            if ideal and len(ideal.segments) >= count:
                return sorted(ideal.segments)
            time.sleep(0.1)
        raise RuntimeError(f"{table} has not {count} consuming segments after {timeout_s:.0f} s")

    def first_segment(self, table: str, timeout_s: float = 60) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ideal = self.store.ideal_state(f"{table}_REALTIME")
            if ideal and ideal.segments:
                return sorted(ideal.segments)[0]
            time.sleep(0.1)
        raise RuntimeError(f"no consuming segment of {table} after {timeout_s:.0f} s")

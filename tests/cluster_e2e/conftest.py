"""Real multi-process clusters for the server and broker: a controller (`sprig controller`),
servers (`sprig server`) and a broker (`sprig broker`) as separate processes on a real
ZooKeeper, holding the airlineStats table with one real segment per day of Pinot's data.

Every process is a ServiceProcess (own process group, parent-death signal) and is stopped
when its fixture ends."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
import requests

from sprig.stack.cluster import broker_process, controller_process, server_process
from sprig.stack.process import ServiceProcess, free_port
from tests.engine.query import conformance

TABLE = "airlineStats"


@dataclass
class Cluster:
    workdir: Path
    env: dict[str, str]
    controller_url: str
    controller_port: int
    broker: ServiceProcess
    broker_port: int
    servers: dict[str, ServiceProcess] = field(default_factory=dict)
    total_rows: int = 0
    segments: list[str] = field(default_factory=list)
    controller_process: ServiceProcess | None = None
    headers: dict[str, str] = field(default_factory=dict)  # credentials, with access control on

    @property
    def broker_url(self) -> str:
        return f"http://127.0.0.1:{self.broker_port}"

    def query(self, sql: str, timeout: float = 30, **options) -> dict:
        body = {"sql": sql}
        if options:
            body["queryOptions"] = ";".join(f"{k}={v}" for k, v in options.items())
        response = requests.post(
            f"{self.broker_url}/query/sql", json=body, timeout=timeout, headers=self.headers
        )
        assert response.status_code == 200, response.text
        return response.json()

    def controller(self, method: str, path: str, **kwargs) -> requests.Response:
        kwargs["headers"] = {**self.headers, **kwargs.get("headers", {})}
        return requests.request(method, f"{self.controller_url}{path}", timeout=30, **kwargs)

    def wait_all_online(self, timeout_s: float = 60, replicas: int | None = None) -> None:
        """Until the external view shows every segment ONLINE (on ``replicas`` servers)."""
        deadline = time.monotonic() + timeout_s
        view = None
        while time.monotonic() < deadline:
            view = self.controller("GET", f"/tables/{TABLE}/externalview").json()
            offline = (view or {}).get("OFFLINE") or {}
            if len(offline) == len(self.segments) and all(
                (replicas is None or len(m) == replicas) and set(m.values()) == {"ONLINE"}
                for m in offline.values()
            ):
                return
            time.sleep(0.2)
        raise AssertionError(f"segments did not all come ONLINE: {view}")

    def wait_broker_sees(self, expected_rows: int, timeout_s: float = 30) -> dict:
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.query(f"SELECT COUNT(*) FROM {TABLE}")
                rows = last.get("resultTable", {}).get("rows")
                if rows and rows[0][0] == expected_rows and not last["exceptions"]:
                    return last
            except (requests.RequestException, AssertionError):
                pass
            time.sleep(0.2)
        raise AssertionError(f"the broker did not return {expected_rows} rows: {last}")


def _ready(url: str) -> bool:
    return requests.get(url, timeout=2).status_code == 200


@pytest.fixture(scope="session")
def airline_tars(pinot_examples, tmp_path_factory) -> list[tuple[str, Path, int]]:
    """One segment tar.gz per day of the airline data (31): [(name, path, rows)]."""
    from engine.segment import build_segment, pack_segment
    from engine.spi.schema import Schema
    from engine.spi.table_config import TableConfig

    schema = Schema.from_json(conformance.airline_schema(pinot_examples))
    config = TableConfig.from_json(conformance.airline_table_config(pinot_examples))
    out = tmp_path_factory.mktemp("e2e-airline")
    built = []
    for i, path in enumerate(conformance.airline_avro_files(pinot_examples)):
        rows = pa.Table.from_pylist(conformance.read_avro(path))
        result = build_segment(rows, schema, config, out / "built", sequence_id=i)
        tar = pack_segment(result.path, out / f"{result.name}.tar.gz")
        built.append((result.name, tar, rows.num_rows))
    return built


def start_cluster(
    zk_address: str,
    workdir: Path,
    *,
    servers: int = 2,
    session_timeout_s: float = 6.0,
    extra_env: dict[str, str] | None = None,
) -> Cluster:
    env = {
        **(extra_env or {}),
        "SPRIG_ZK": zk_address,
        "SPRIG_CLUSTER_NAME": f"e2e_{uuid.uuid4().hex[:8]}",
        "SPRIG_DATA_DIR": str(workdir / "data"),
        "SPRIG_EXTERNAL_VIEW_INTERVAL_S": "0.2",
        "SPRIG_ZK_SESSION_TIMEOUT_S": str(session_timeout_s),
        "SPRIG_LOG_LEVEL": "INFO",
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        **(extra_env or {}),
    }
    controller_port = free_port()
    controller = controller_process(workdir, controller_port, env)
    broker_port = free_port()
    cluster = Cluster(
        workdir, env, f"http://127.0.0.1:{controller_port}", controller_port,
        broker_process(workdir, broker_port, env, host="127.0.0.1"), broker_port,
    )  # fmt: skip
    for _ in range(servers):
        query_port = free_port()
        process = server_process(workdir, query_port, free_port(), env, host="127.0.0.1")
        cluster.servers[f"Server_127.0.0.1_{query_port}"] = process
    cluster.controller_process = controller
    try:
        for process in [controller, *cluster.servers.values(), cluster.broker]:
            process.start()
        for process in [controller, *cluster.servers.values(), cluster.broker]:
            process.wait_ready()
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


def stop_cluster(cluster: Cluster) -> None:
    for process in [cluster.broker, *cluster.servers.values(), cluster.controller_process]:
        process.stop()


def upload_tar(cluster: Cluster, table: str, tar: Path) -> None:
    """One segment tar.gz into ``table``'s OFFLINE half through ``POST /segments``."""
    with tar.open("rb") as handle:
        response = cluster.controller(
            "POST", "/segments", params={"tableName": table, "tableType": "OFFLINE"},
            files={"file": (tar.name, handle, "application/gzip")},
        )  # fmt: skip
    assert response.ok, f"upload {tar.name}: {response.status_code} {response.text}"


def wait_rows(cluster: Cluster, table: str, expected: int, timeout_s: float = 60) -> None:
    """Until the broker counts ``expected`` rows in ``table`` with no exception."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = cluster.query(f"SELECT COUNT(*) FROM {table}")
        if last.get("resultTable", {}).get("rows") == [[expected]] and not last["exceptions"]:
            return
        time.sleep(0.2)
    raise AssertionError(f"{table}: the broker did not return {expected} rows: {last}")


def load_airline(cluster: Cluster, pinot_examples: Path, tars, *, replication: int) -> None:
    schema = conformance.airline_schema(pinot_examples)
    config = conformance.airline_table_config(pinot_examples)
    config["segmentsConfig"]["replication"] = str(replication)
    for path, body in (("/schemas", schema), ("/tables", config)):
        response = cluster.controller("POST", path, json=body)
        assert response.ok, f"POST {path}: {response.status_code} {response.text}"
    for name, tar, rows in tars:
        upload_tar(cluster, TABLE, tar)
        cluster.segments.append(name)
        cluster.total_rows += rows


@pytest.fixture(scope="module")
def cluster(zookeeper, pinot_examples, airline_tars, tmp_path_factory) -> Iterator[Cluster]:
    """Controller, two servers and a broker; airlineStats with replication 2 (31 segments)."""
    running = start_cluster(zookeeper.address, tmp_path_factory.mktemp("e2e"))
    try:
        load_airline(running, pinot_examples, airline_tars, replication=2)
        running.wait_all_online(replicas=2)
        running.wait_broker_sees(running.total_rows)
        yield running
    finally:
        stop_cluster(running)


def response_json(response: requests.Response) -> dict:
    return orjson.loads(response.content)


@pytest.fixture
def realtime_cluster(zookeeper, kafka, tmp_path) -> Iterator[Cluster]:
    """Controller, two servers and a broker of its own, for a test that consumes from the
    session's Kafka; no table."""
    running = start_cluster(zookeeper.address, tmp_path, servers=2)
    try:
        yield running
    finally:
        stop_cluster(running)

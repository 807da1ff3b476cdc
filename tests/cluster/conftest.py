"""Fixtures for the controller tests: a unique cluster per test in the shared ZooKeeper, a
deep store in a temp dir, the Pinot example configs, real segments built from a small slice
of the airlineStats data, and FakeServer: a server *instance* that does what a server process
does in ZooKeeper (live instance, current states following the ideal state)."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import fastavro
import orjson
import pyarrow as pa
import pytest
from kazoo.client import KazooClient
from rest_framework.test import APIClient

from engine.clusterstate import ClusterStore, CurrentState, SegmentState, session_id_of
from engine.clusterstate.tags import InstanceType, instance_id


@pytest.fixture(scope="session")
def controller_zk(zookeeper):
    """The shared ZooKeeper; the controller's client to it is closed before it stops."""
    yield zookeeper
    from controller.zk import close_zk

    close_zk()


@pytest.fixture
def cluster_settings(settings, controller_zk, tmp_path):
    zookeeper = controller_zk
    settings.ZK_ADDRESS = zookeeper.address
    settings.CLUSTER_NAME = f"test_{uuid.uuid4().hex[:10]}"
    settings.DEEP_STORE_URI = str(tmp_path / "deepstore")
    settings.CONTROLLER_HOST = "127.0.0.1"
    settings.CONTROLLER_PORT = 9000
    settings.CONTROLLER_URL = "http://127.0.0.1:9000"
    return settings


@pytest.fixture
def api(cluster_settings, db) -> APIClient:
    return APIClient()


@pytest.fixture
def store(cluster_settings) -> ClusterStore:
    from controller.zk import get_store

    return get_store()


@pytest.fixture(scope="session")
def airline_dir(pinot_examples) -> Path:
    return pinot_examples / "batch" / "airlineStats"


@pytest.fixture(scope="session")
def airline_schema(airline_dir) -> dict:
    return orjson.loads((airline_dir / "airlineStats_schema.json").read_bytes())


@pytest.fixture(scope="session")
def airline_offline_config(airline_dir) -> dict:
    return orjson.loads((airline_dir / "airlineStats_offline_table_config.json").read_bytes())


@pytest.fixture(scope="session")
def airline_realtime_config(pinot_examples) -> dict:
    path = pinot_examples / "stream" / "airlineStats" / "airlineStats_realtime_table_config.json"
    return orjson.loads(path.read_bytes())


@pytest.fixture(scope="session")
def airline_segments(airline_dir, airline_schema, airline_offline_config, tmp_path_factory):
    """Four real segment tar.gz files, one per day file, 30 rows each: [(name, path), ...]."""
    from engine.segment import build_segment, pack_segment
    from engine.spi import Schema, TableConfig

    schema = Schema.from_json(airline_schema)
    config = TableConfig.from_json(airline_offline_config, schema=schema)
    out = tmp_path_factory.mktemp("airline_segments")
    built = []
    for path in sorted((airline_dir / "rawdata").rglob("*.avro"))[:4]:
        with path.open("rb") as handle:
            # the whole day file, so Arrow infers the list columns' item types, then 30 rows
            rows = pa.Table.from_pylist(list(fastavro.reader(handle))).slice(0, 30)
        result = build_segment(rows, schema, config, out / path.stem)
        built.append((result.name, pack_segment(result.path, out / f"{result.name}.tar.gz")))
    return built


def register_servers(api: APIClient, count: int, *, first_port: int = 8001, tags=None) -> list[str]:
    ids = []
    for port in range(first_port, first_port + count):
        body = {"host": "127.0.0.1", "port": port, "type": "SERVER"}
        if tags is not None:
            body["tags"] = tags
        response = api.post("/instances", body, format="json")
        assert response.status_code == 200, response.content
        ids.append(instance_id(InstanceType.SERVER, "127.0.0.1", port))
    return ids


def upload(api: APIClient, tar_path: Path, table: str = "airlineStats", table_type="OFFLINE"):
    with tar_path.open("rb") as handle:
        return api.post(
            f"/segments?tableName={table}&tableType={table_type}",
            {tar_path.name: handle},
            format="multipart",
        )


class FakeServer:
    """A server instance's ZooKeeper side, on its own session: it goes live and mirrors the
    ideal state into its current states (assigned -> ONLINE, or ``states`` overrides;
    unassigned -> dropped), as a real server does after loading or dropping segments."""

    def __init__(self, zk_address: str, cluster_name: str, ident: str):
        self.ident = ident
        self.client = KazooClient(hosts=zk_address, timeout=10.0)
        self.client.start(timeout=10)
        self.store = ClusterStore(self.client, cluster_name)
        self.session = session_id_of(self.client)
        self.overrides: dict[tuple[str, str], str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def go_live(self) -> FakeServer:
        self.store.register_live_instance(self.ident)
        return self

    def sync(self) -> None:
        held = self.store.current_states(self.ident, self.session)
        for resource in sorted(set(self.store.resources()) | set(held)):
            if resource == "brokerResource":
                continue
            ideal = self.store.ideal_state(resource)
            mine = {
                segment: self.overrides.get((resource, segment), SegmentState.ONLINE.value)
                for segment, replicas in (ideal.segments if ideal else {}).items()
                if self.ident in replicas
            }
            path = self.store.paths.current_state(self.ident, self.session, resource)
            current = self.store.current_states(self.ident, self.session).get(resource)
            if current is None and not mine:
                continue
            if current is None or current.segments != mine:
                self.store.put_record(path, CurrentState(resource, self.session, mine).to_record())

    def follow(self, interval_s: float = 0.1) -> FakeServer:
        def loop():
            while not self._stop.is_set():
                self.sync()
                self._stop.wait(interval_s)

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.client.stop()
        self.client.close()


@pytest.fixture
def fake_servers(cluster_settings):
    started: list[FakeServer] = []

    def make(ident: str) -> FakeServer:
        server = FakeServer(cluster_settings.ZK_ADDRESS, cluster_settings.CLUSTER_NAME, ident)
        started.append(server)
        return server.go_live()

    yield make
    for server in started:
        server.stop()

"""A live cluster for the console's browser tests: a controller, two servers and a broker as
real processes (`sprig controller`, `sprig server`, `sprig broker`) on the shared ZooKeeper,
holding the airlineStats table (and a copy, `flights`, for destructive tests) with real
segments; and a headless Debian Chromium driven by Playwright."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import fastavro
import orjson
import pyarrow as pa
import pytest
import requests

from sprig.runtime import REPO_ROOT
from sprig.stack.cluster import broker_process, controller_process, server_process
from sprig.stack.process import free_port

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = REPO_ROOT / "test-artifacts" / "screenshots"
ROWS_PER_SEGMENT = 40


@dataclass
class ConsoleCluster:
    url: str
    cluster_name: str
    servers: list[str]
    env: dict[str, str]
    # table name -> segment names uploaded to it
    segments: dict[str, list[str]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        return requests.request(method, f"{self.url}{path}", timeout=30, **kwargs)


def build_segments(pinot_examples: Path, schema: dict, config: dict, out: Path, days: int):
    """One real segment per day file of the airline data, ROWS_PER_SEGMENT rows each."""
    from engine.segment import build_segment, pack_segment
    from engine.spi import Schema, TableConfig

    parsed_schema = Schema.from_json(schema)
    parsed_config = TableConfig.from_json(config, schema=parsed_schema)
    raw = pinot_examples / "batch" / "airlineStats" / "rawdata"
    built = []
    for path in sorted(raw.rglob("*.avro"))[:days]:
        with path.open("rb") as handle:
            rows = [
                r for _, r in zip(range(ROWS_PER_SEGMENT), fastavro.reader(handle), strict=False)
            ]
        result = build_segment(
            pa.Table.from_pylist(rows), parsed_schema, parsed_config, out / path.stem
        )
        built.append((result.name, pack_segment(result.path, out / f"{result.name}.tar.gz")))
    return built


def add_table(cluster: ConsoleCluster, schema: dict, config: dict, tars) -> None:
    for method, path, body in (("POST", "/schemas", schema), ("POST", "/tables", config)):
        response = cluster.api(method, path, json=body)
        assert response.ok, f"{method} {path}: {response.status_code} {response.text}"
    table = config["tableName"]
    for name, tar in tars:
        with tar.open("rb") as handle:
            response = cluster.api(
                "POST",
                "/segments",
                params={"tableName": table, "tableType": "OFFLINE"},
                files={"file": (tar.name, handle, "application/gzip")},
            )
        assert response.ok, f"upload {name}: {response.status_code} {response.text}"
    cluster.segments[table] = [name for name, _ in tars]
    cluster.rows[table] = ROWS_PER_SEGMENT * len(tars)


def drop_realtime_table(cluster: ConsoleCluster, table: str) -> None:
    """Delete a REALTIME table and its schema, waiting until the table is gone (the session's
    other tests count the cluster's tables)."""
    cluster.api("DELETE", f"/tables/{table}", params={"type": "REALTIME"})
    deadline = time.monotonic() + 30
    while cluster.api("GET", f"/tables/{table}").ok and time.monotonic() < deadline:
        time.sleep(0.3)
    cluster.api("DELETE", f"/schemas/{table}")


def wait_online(cluster: ConsoleCluster, table: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = cluster.api("GET", f"/tables/{table}/segmentsStatus").json()
        if status and all(s["segmentStatus"] == "GOOD" for s in status):
            return
        time.sleep(0.3)
    raise AssertionError(f"segments of {table} did not come ONLINE: {status}")


def wait_queryable(cluster: ConsoleCluster, table: str, timeout_s: float = 60) -> None:
    """Until the controller's /sql (through the broker) counts every row of the table."""
    deadline = time.monotonic() + timeout_s
    body = None
    while time.monotonic() < deadline:
        response = cluster.api("POST", "/sql", json={"sql": f"select count(*) from {table}"})
        body = response.json() if response.ok else response.text
        table_ok = response.ok and not body.get("exceptions") and body.get("resultTable")
        if table_ok and body["resultTable"]["rows"][0][0] == cluster.rows[table]:
            return
        time.sleep(0.3)
    raise AssertionError(f"{table} is not fully queryable through /sql: {body}")


@pytest.fixture(scope="session")
def console_cluster(zookeeper, pinot_examples, tmp_path_factory) -> Iterator[ConsoleCluster]:
    workdir = tmp_path_factory.mktemp("console_cluster")
    name = f"console_{uuid.uuid4().hex[:8]}"
    env = {
        "SPRIG_ZK": zookeeper.address,
        "SPRIG_CLUSTER_NAME": name,
        "SPRIG_DATA_DIR": str(workdir / "data"),
        "SPRIG_EXTERNAL_VIEW_INTERVAL_S": "0.2",
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
    }
    port = free_port()
    processes = [controller_process(workdir, port, env)]
    query_ports = [free_port() for _ in range(2)]
    processes += [server_process(workdir, qp, free_port(), env) for qp in query_ports]
    processes.append(broker_process(workdir, free_port(), env))
    try:
        for process in processes:
            process.start()
            process.wait_ready()
        cluster = ConsoleCluster(
            url=f"http://127.0.0.1:{port}",
            cluster_name=name,
            servers=[f"Server_127.0.0.1_{qp}" for qp in query_ports],
            env=env,
        )
        batch = pinot_examples / "batch" / "airlineStats"
        schema = orjson.loads((batch / "airlineStats_schema.json").read_bytes())
        config = orjson.loads((batch / "airlineStats_offline_table_config.json").read_bytes())
        out = workdir / "segments"
        add_table(
            cluster, schema, config, build_segments(pinot_examples, schema, config, out / "a", 4)
        )
        # a second table for the destructive tests, so airlineStats keeps all its rows
        flights_schema = {**schema, "schemaName": "flights"}
        flights_config = {**config, "tableName": "flights"}
        flights = build_segments(pinot_examples, flights_schema, flights_config, out / "f", 3)
        add_table(cluster, flights_schema, flights_config, flights)
        for table in cluster.segments:
            wait_online(cluster, table)
            wait_queryable(cluster, table)
        yield cluster
    finally:
        for process in reversed(processes):
            process.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator:
    if not os.path.exists(CHROMIUM):
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests drive Debian's chromium. Install it with "
            "`apt-get install chromium` as root (`sprig test` does so when run as root), or "
            "leave these tests out with `-m 'not browser'`.",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, console_cluster) -> Iterator:
    """A fresh browser context (its own cookies and localStorage) at 1280x900. Fails the test
    on any uncaught script error."""
    context = browser.new_context(
        base_url=console_cluster.url, viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"uncaught script errors: {errors}"


def screenshot(page, name: str) -> None:
    """Full-page screenshots at 1280 and 800 px wide, for a person to look at."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(150)
        page.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})

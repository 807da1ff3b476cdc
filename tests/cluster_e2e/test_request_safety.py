"""Issue 28's requests against a real controller process (gunicorn), sent as an attacker
would: URI pushes of files and internal URLs, lag-alert webhooks at internal addresses,
cross-site form and multipart posts, a foreign Host. Each is refused with a 4xx naming the
setting to change, nothing lands on disk or reaches the internal address, and the controller
stays healthy; the legitimate forms of the same requests still work."""

# ruff: noqa: F811 - fixtures imported from tests.cluster.conftest are requested by name
from __future__ import annotations

import copy
import shutil
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
import requests

from sprig.stack.cluster import controller_process
from sprig.stack.process import free_port
from tests.cluster.conftest import (  # noqa: F401 - fixtures
    airline_dir,
    airline_offline_config,
    airline_schema,
    airline_segments,
)

pytestmark = pytest.mark.integration

EVIL = "http://evil.example"


class Listener:
    """A TCP port on loopback that counts the connections made to it (the probe target)."""

    def __init__(self):
        self.accepted = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self):
        self.sock.close()


@dataclass
class Controller:
    url: str
    port: int
    incoming: Path
    deep_store: Path
    outside: Path  # where an attacker points: a secret, a place to write

    def call(self, method: str, path: str, **kwargs) -> requests.Response:
        return requests.request(method, f"{self.url}{path}", timeout=30, **kwargs)

    def healthy(self) -> bool:
        return self.call("GET", "/health").text == "OK"


@pytest.fixture(scope="module")
def controller(zookeeper, tmp_path_factory, airline_schema, airline_offline_config,
               airline_segments) -> Iterator[Controller]:  # fmt: skip
    workdir = tmp_path_factory.mktemp("request_safety")
    incoming, outside = workdir / "incoming", workdir / "outside"
    incoming.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("the secret\n")
    shutil.copy(airline_segments[0][1], outside / "segment.tar.gz")
    port = free_port()
    env = {"SPRIG_ZK": zookeeper.address, "SPRIG_CLUSTER_NAME": f"safe_{uuid.uuid4().hex[:8]}",
           "SPRIG_DATA_DIR": str(workdir / "data"), "SPRIG_INPUT_ROOTS": str(incoming),
           "SPRIG_PERIODIC_TASK_INITIAL_DELAY_S": "3600", "SPRIG_LOG_LEVEL": "WARNING",
           "DJANGO_SETTINGS_MODULE": "config.settings.local"}  # fmt: skip
    process = controller_process(workdir, port, env)
    process.start()
    try:
        process.wait_ready()
        ctl = Controller(f"http://127.0.0.1:{port}", port, incoming,
                         workdir / "data" / "deepstore", outside)  # fmt: skip
        assert ctl.call("POST", "/schemas", json=airline_schema).ok
        body = {"host": "127.0.0.1", "port": 8001, "type": "SERVER"}
        assert ctl.call("POST", "/instances", json=body).ok
        assert ctl.call("POST", "/tables", json=airline_offline_config).ok
        yield ctl
    finally:
        process.stop()


@pytest.fixture
def listener() -> Iterator[Listener]:
    probe = Listener()
    yield probe
    probe.close()


def _deep_store_files(ctl: Controller) -> list[Path]:
    return [p for p in ctl.deep_store.rglob("*") if p.is_file()]


def test_uri_pushes_read_only_under_the_roots(controller, listener, airline_segments):
    ctl = controller
    push = {"tableName": "airlineStats", "tableType": "OFFLINE", "uploadType": "URI"}
    attacks = [
        (ctl.outside / "segment.tar.gz").as_uri(),  # a file elsewhere on the host
        (ctl.outside / "secret.txt").as_uri(),  # an existence test
        "file:///etc/passwd",
        f"{ctl.incoming}/../outside/segment.tar.gz",  # out of the root by ..
        f"webhdfs://127.0.0.1:{listener.port}/webhdfs/v1/x",  # an HTTP GET inside
        f"ftp://127.0.0.1:{listener.port}/x",  # a port probe
        f"http://127.0.0.1:{listener.port}/x",
        "http://169.254.169.254/latest/meta-data/",
        f"zip://segment.tar.gz::file://{ctl.outside}/segment.tar.gz",
    ]
    for uri in attacks:
        response = ctl.call("POST", "/v2/segments", params=push, headers={"DOWNLOAD_URI": uri})
        assert response.status_code == 400, (uri, response.text)
        assert "SPRIG_INPUT_ROOTS" in response.json()["error"], response.text
    assert listener.accepted == 0
    assert _deep_store_files(ctl) == []
    assert ctl.call("GET", "/segments/airlineStats").json() in ([], [{"OFFLINE": []}])

    name, tar = airline_segments[0]
    shutil.copy(tar, ctl.incoming / tar.name)  # under the root: pushed as before
    response = ctl.call("POST", "/v2/segments", params=push,
                        headers={"DOWNLOAD_URI": (ctl.incoming / tar.name).as_uri()})  # fmt: skip
    assert response.ok, response.text
    assert ctl.call("GET", "/segments/airlineStats").json() == [{"OFFLINE": [name]}]
    assert ctl.healthy()


def test_lag_alert_webhooks_never_reach_internal_addresses(controller, listener):
    ctl = controller
    internal = "SPRIG_OUTBOUND_ALLOWED_HOSTS"
    attacks = [
        ("http://169.254.169.254/latest/meta-data/iam/security-credentials/", internal),
        (f"http://127.0.0.1:{listener.port}/hook", internal),
        (f"http://localhost:{listener.port}/hook", internal),
        (f"http://[::1]:{listener.port}/hook", internal),
        (f"http://2130706433:{listener.port}/hook", "Enter a valid URL"),  # 127.0.0.1 as a number
        (f"http://0.0.0.0:{ctl.port}/tasks/execute", internal),
        ("http://10.0.0.1/hook", internal),
        (f"ftp://127.0.0.1:{listener.port}/", "http or https URL"),
        ("file:///etc/passwd", "Enter a valid URL"),  # the serializer's own refusal
    ]
    for url, named in attacks:
        rule = {"name": f"r{uuid.uuid4().hex[:6]}", "groupPattern": "*",
                "condition": "lag > 1", "webhookUrl": url}  # fmt: skip
        response = ctl.call("POST", "/consumerLagAlerts/rules", json=rule)
        assert response.status_code == 400, (url, response.text)
        error = response.json()["error"]
        assert error.startswith("webhookUrl") and named in error, error
    assert listener.accepted == 0
    assert ctl.call("GET", "/consumerLagAlerts/rules").json() == {"rules": []}
    assert ctl.healthy()


def _table_config_with_purge(airline_offline_config, name: str) -> dict:
    config = copy.deepcopy(airline_offline_config)
    config["tableName"] = name
    config["task"] = {"taskTypeConfigsMap": {"PurgeTask": {"purgeFilter": "ArrDelay > 0"}}}
    return config


def test_cross_site_requests_are_refused(controller, airline_schema, airline_offline_config):
    ctl = controller
    table = f"xs{uuid.uuid4().hex[:6]}"
    schema = {**airline_schema, "schemaName": table}
    config = _table_config_with_purge(airline_offline_config, table)
    execute = {"taskType": "SegmentGenerationAndPushTask", "tableName": "airlineStats"}
    # what a page on evil.example can make a visitor's browser send, and the answer
    refused = [
        ("POST", "/tasks/execute", {"json": execute, "headers": {"Origin": EVIL}}, 403),
        ("POST", "/tasks/schedule", {"headers": {"Origin": EVIL}}, 403),
        ("POST", "/tasks/schedule", {"headers": {"Sec-Fetch-Site": "cross-site"}}, 403),
        ("DELETE", "/tables/airlineStats", {"headers": {"Origin": "null"}}, 403),
        ("POST", "/tables", {"files": {"file": ("t.json", orjson.dumps(config))},
                             "headers": {"Origin": EVIL}}, 403),
        # the same bodies without an Origin (curl): JSON sent as a file or as text is refused
        ("POST", "/tables", {"files": {"file": ("t.json", orjson.dumps(config))}}, 415),
        ("POST", "/tables", {"data": orjson.dumps(config),
                             "headers": {"Content-Type": "text/plain"}}, 415),
        ("POST", "/tasks/execute", {"files": {"file": ("e.json", orjson.dumps(execute))}}, 415),
        ("POST", "/consumerLagAlerts/rules", {"data": {"name": "r", "groupPattern": "*",
                                                       "condition": "lag > 1"}}, 415),
        ("POST", "/cluster/configs", {"files": {"file": ("c.json", b'{"a": "1"}')}}, 415),
        # a DNS-rebinding page reaches the controller under its own name
        ("GET", "/tables", {"headers": {"Host": "evil.example"}}, 400),
        ("POST", "/schemas", {"json": schema, "headers": {"Host": "evil.example:9000"}}, 400),
    ]  # fmt: skip
    for method, path, kwargs, status in refused:
        response = ctl.call(method, path, **kwargs)
        assert response.status_code == status, (method, path, kwargs, response.text)
    assert table not in ctl.call("GET", "/tables").json()["tables"]
    assert "airlineStats" in ctl.call("GET", "/tables").json()["tables"]
    assert ctl.call("GET", "/tasks/tasktypes").json() == []

    # the console's own requests and non-browser clients still work
    own = {"Origin": ctl.url, "Sec-Fetch-Site": "same-origin"}
    assert ctl.call("POST", "/schemas", json=schema, headers=own).ok
    assert ctl.call("POST", "/tables", json=config, headers={"Origin": ctl.url}).ok
    assert ctl.call("GET", "/tables", headers={"Host": f"localhost:{ctl.port}"}).ok
    upload = {"file": ("s.json", orjson.dumps({**schema, "schemaName": f"{table}_b"}))}
    assert ctl.call("POST", "/schemas", files=upload).ok  # Pinot's documented file upload
    assert ctl.healthy()


def test_spark_sql_in_a_table_config_is_refused_when_submitted(controller, airline_offline_config):
    ctl = controller
    payload = ("concat((SELECT first(name) FROM text.`/tmp/secret.txt` AS t(name)), "
               "reflect('java.lang.System','getProperty','user.name'))")  # fmt: skip
    exit_call = "Carrier = java_method('java.lang.System', 'exit', 0)"
    new_table = f"sq{uuid.uuid4().hex[:6]}"
    for key, sql in (("modify.Carrier", payload), ("purgeFilter", exit_call)):
        for method, path, name in (("POST", "/tables", new_table),
                                   ("PUT", "/tables/airlineStats", "airlineStats")):  # fmt: skip
            config = copy.deepcopy(airline_offline_config)
            config["tableName"] = name
            config["segmentsConfig"]["schemaName"] = "airlineStats"
            config["task"] = {"taskTypeConfigsMap": {"PurgeTask": {key: sql}}}
            response = ctl.call(method, path, json=config)
            assert response.status_code == 400, response.text
            error = response.json()["error"]
            assert f"task.taskTypeConfigsMap.PurgeTask.{key}" in error, error
    assert "subquery" in error or "JAVA_METHOD" in error
    assert new_table not in ctl.call("GET", "/tables").json()["tables"]
    stored = ctl.call("GET", "/tables/airlineStats").json()["OFFLINE"]
    assert "PurgeTask" not in orjson.dumps(stored).decode()
    assert ctl.healthy()

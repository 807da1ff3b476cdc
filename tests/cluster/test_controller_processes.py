"""Two real `sprig controller` processes (gunicorn, shared database and deep store) with a real
server and broker: the second serves the API and forwards /sql while the first leads, takes
over when the first stops, and a restarted controller has lost nothing. pinotdb's SQLAlchemy
dialect reads the tables and columns from the controller unchanged."""

from __future__ import annotations

import copy
import time
import uuid

import pytest
import requests

from sprig.stack.cluster import broker_process, controller_process, server_process
from sprig.stack.process import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = predicate()
        except requests.RequestException as exc:
            last = exc
        if last is True or (last and not isinstance(last, Exception)):
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")


def test_two_controllers_failover_restart_and_sql(zookeeper, tmp_path, airline_schema,
                                                  airline_offline_config, airline_segments):  # fmt: skip
    env = {
        "SPRIG_ZK": zookeeper.address,
        "SPRIG_CLUSTER_NAME": f"proc_{uuid.uuid4().hex[:8]}",
        "SPRIG_DATA_DIR": str(tmp_path / "data"),
        # the URI push below reads the built segments where they are
        "SPRIG_INPUT_ROOTS": str(airline_segments[3][1].parent),
        "SPRIG_EXTERNAL_VIEW_INTERVAL_S": "0.2",
        "SPRIG_ZK_SESSION_TIMEOUT_S": "4",
        "SPRIG_PERIODIC_TASK_INITIAL_DELAY_S": "1",
        "SPRIG_CONTROLLER_THREADS": "4",
        "SPRIG_LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
    }
    port_a, port_b, broker_port = free_port(), free_port(), free_port()
    url_a, url_b = f"http://127.0.0.1:{port_a}", f"http://127.0.0.1:{port_b}"
    processes = []

    def run(process):
        processes.append(process)
        process.start()
        process.wait_ready()
        return process

    try:
        controller_a = run(controller_process(tmp_path / "a", port_a, env))
        run(server_process(tmp_path, free_port(), free_port(), env))
        run(broker_process(tmp_path, broker_port, env))
        run(controller_process(tmp_path / "b", port_b, env))
        leader = wait_for(
            lambda: requests.get(f"{url_b}/cluster/info", timeout=5).json()["leaderController"]
        )
        assert leader == f"Controller_127.0.0.1_{port_a}"

        assert requests.post(f"{url_a}/schemas", json=airline_schema, timeout=10).ok
        config = copy.deepcopy(airline_offline_config)
        assert requests.post(f"{url_b}/tables", json=config, timeout=10).ok
        for name, tar in airline_segments[:2]:
            with tar.open("rb") as handle:
                response = requests.post(f"{url_a}/segments",
                                         params={"tableName": "airlineStats", "tableType": "OFFLINE"},
                                         files={name: (tar.name, handle)}, timeout=30)  # fmt: skip
            assert response.ok, response.text

        def online(url: str, count: int) -> bool:
            status = requests.get(f"{url}/tables/airlineStats/segmentsStatus", timeout=5).json()
            return len(status) == count and all(s["segmentStatus"] == "GOOD" for s in status)

        wait_for(lambda: online(url_b, 2))

        def count(url: str) -> int | None:
            response = requests.post(f"{url}/sql", json={"sql": "SELECT COUNT(*) FROM airlineStats"},
                                     timeout=30)  # fmt: skip
            body = response.json()
            if response.status_code != 200 or body.get("exceptions"):
                return None
            return body["resultTable"]["rows"][0][0]

        assert wait_for(lambda: count(url_b) == 60)  # the non-leader forwards to the broker

        from sqlalchemy import create_engine, inspect

        engine = create_engine(
            f"pinot://127.0.0.1:{broker_port}/query/sql?controller={url_b}/"
        )  # pinotdb's dialect reads /tables and /tables/{t}/schema from the controller
        inspector = inspect(engine)
        assert inspector.get_table_names() == ["airlineStats"]
        columns = {c["name"] for c in inspector.get_columns("airlineStats")}
        assert {"Carrier", "Origin", "DaysSinceEpoch"} <= columns

        before = {
            path: requests.get(f"{url_a}{path}", timeout=5).json()
            for path in ("/tables/airlineStats", "/schemas/airlineStats", "/segments/airlineStats",
                         "/tables/airlineStats/idealstate")
        }  # fmt: skip

        controller_a.stop()
        leader = wait_for(lambda: requests.get(f"{url_b}/cluster/info", timeout=5).json()
                          ["leaderController"] == f"Controller_127.0.0.1_{port_b}")  # fmt: skip
        name, tar = airline_segments[2]
        with tar.open("rb") as handle:
            response = requests.post(f"{url_b}/segments",
                                     params={"tableName": "airlineStats", "tableType": "OFFLINE"},
                                     files={name: (tar.name, handle)}, timeout=30)  # fmt: skip
        assert response.ok, response.text
        wait_for(lambda: online(url_b, 3))  # the new leader aggregates the external view

        run(controller_process(tmp_path / "a2", port_a, env))
        for path, body in before.items():
            after = requests.get(f"{url_a}{path}", timeout=5).json()
            if path == "/segments/airlineStats":
                assert after == [{"OFFLINE": sorted([*body[0]["OFFLINE"], name])}]
            elif path == "/tables/airlineStats/idealstate":
                assert set(body["OFFLINE"]) < set(after["OFFLINE"])
            else:
                assert after == body, path
        info = requests.get(f"{url_a}/cluster/info", timeout=5).json()
        assert info["leaderController"] == f"Controller_127.0.0.1_{port_b}"
        assert wait_for(lambda: count(url_a) == 90)

        # a URI push through gunicorn: Pinot's DOWNLOAD_URI header (with an underscore) arrives
        name, tar = airline_segments[3]
        response = requests.post(f"{url_a}/v2/segments",
                                 params={"tableName": "airlineStats", "tableType": "OFFLINE",
                                         "uploadType": "URI"},
                                 headers={"DOWNLOAD_URI": tar.as_uri(), "UPLOAD_TYPE": "URI"},
                                 timeout=30)  # fmt: skip
        assert response.ok, response.text
        assert wait_for(lambda: count(url_a) == 120)
    finally:
        for process in reversed(processes):
            process.stop()

"""Access control with Pinot's keys through real processes (issue 26, item 1): a controller,
two servers and a broker read one Pinot properties file (SPRIG_PINOT_CONFIG) with Basic-auth
principals for the controller, the broker and the servers' admin API, and the service tokens
servers and the controller send. Servers download their segments from the authenticating
controller with their fetcher token; pinotdb queries with a user name and a password whose
bcrypt hash alone is configured."""

from __future__ import annotations

from collections.abc import Iterator

import argon2
import bcrypt
import pytest
import requests
from pinotdb import connect
from pinotdb.exceptions import DatabaseError

from engine.runtime.access import basic_token
from tests.cluster_e2e.conftest import TABLE, Cluster, load_airline, start_cluster, stop_cluster
from tests.secured_controller import BASIC_FACTORY, principal_keys, write_properties

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PW = {"admin": "admin-pw-1", "svc": "svc-pw-2", "analyst": "analyst-pw-3",
      "billing": "billing-pw-4", "ctl": "ctl-pw-5"}  # fmt: skip
UNAUTHORIZED = {"code": 401, "error": "HTTP 401 Unauthorized"}


def token(user: str) -> str:
    return basic_token(user, PW[user])


def auth(user: str) -> dict[str, str]:
    return {"Authorization": token(user)}


@pytest.fixture(scope="module")
def secured(zookeeper, pinot_examples, airline_tars, tmp_path_factory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("access")
    analyst_hash = bcrypt.hashpw(PW["analyst"].encode(), bcrypt.gensalt(rounds=6)).decode()
    billing_hash = argon2.PasswordHasher(time_cost=1, memory_cost=8192).hash(PW["billing"])
    keys = {
        "controller.admin.access.control.factory.class": BASIC_FACTORY,
        **principal_keys("controller.admin.access.control", {
            "admin": {"password": PW["admin"]},
            "svc": {"password": PW["svc"]},
            "analyst": {"password": analyst_hash, "tables": TABLE, "permissions": "READ"},
        }),
        "pinot.broker.access.control.class":
            "org.apache.pinot.broker.broker.BasicAuthAccessControlFactory",
        **principal_keys("pinot.broker.access.control", {
            "admin": {"password": PW["admin"]},
            "analyst": {"password": analyst_hash, "tables": TABLE},
            "billing": {"password": billing_hash, "tables": "billing"},
        }),
        "pinot.server.admin.access.control.factory.class":
            "org.apache.pinot.server.access.BasicAuthAccessFactory",
        **principal_keys("pinot.server.admin.access.control", {
            "ctl": {"password": PW["ctl"], "permissions": "admin,read"},
        }),
        "pinot.server.segment.fetcher.auth.token": token("svc").removeprefix("Basic "),
        "pinot.server.segment.uploader.auth.token": token("svc"),
        "controller.broker.auth.token": token("admin"),
        "controller.server.admin.auth.token": token("ctl"),
    }  # fmt: skip
    conf = write_properties(workdir / "pinot.conf", keys)
    running = start_cluster(zookeeper.address, workdir,
                            extra_env={"SPRIG_PINOT_CONFIG": str(conf)})  # fmt: skip
    running.headers = auth("admin")
    try:
        load_airline(running, pinot_examples, airline_tars, replication=2)
        running.wait_all_online(replicas=2)  # the servers fetched every segment with svc's token
        running.wait_broker_sees(running.total_rows)
        yield running
    finally:
        stop_cluster(running)


def test_controller_401_and_403_in_pinots_shapes(secured):
    url = secured.controller_url
    for headers in ({}, {"Authorization": basic_token("admin", "wrong")},
                    {"Authorization": "Bearer abc"}):  # fmt: skip
        response = requests.get(f"{url}/tables", headers=headers, timeout=10)
        assert response.status_code == 401 and response.json() == UNAUTHORIZED
    assert requests.get(f"{url}/health", timeout=10).text == "OK"  # open, as Pinot's
    assert requests.get(f"{url}/auth/info", timeout=10).json() == {"workflow": "BASIC"}
    analyst = auth("analyst")
    assert requests.get(f"{url}/tables/{TABLE}", headers=analyst, timeout=10).status_code == 200
    assert requests.get(f"{url}/tables", headers=analyst, timeout=10).status_code == 200
    for path in ("/tables/billing", "/segments/billing", "/tables/billing/idealstate",
                 "/schemas/billing", "/segments/billing/lineage?type=OFFLINE"):  # fmt: skip
        response = requests.get(f"{url}{path}", headers=analyst, timeout=10)
        assert response.status_code == 403, path
        assert response.json()["error"] == (
            f"Permission is denied for READ '{path.partition('?')[0]}' for table 'billing'"
        )
    # READ only: no change to its own table either; the body's table checked (POST /schemas)
    denied = requests.put(f"{url}/tables/{TABLE}", json={}, headers=analyst, timeout=10)
    assert denied.status_code == 403 and "UPDATE" in denied.json()["error"]
    schema = {"schemaName": "other", "dimensionFieldSpecs": [{"name": "a", "dataType": "INT"}]}
    denied = requests.post(f"{url}/schemas", json=schema, headers=analyst, timeout=10)
    assert denied.json() == {
        "code": 403,
        "error": "Permission is denied for CREATE '/schemas' for table 'other'",
    }
    assert (
        requests.get(f"{url}/schemas/other", headers=auth("admin"), timeout=10).status_code == 404
    )
    # a segment download needs credentials too (servers send pinot.server.segment.fetcher.auth)
    segment = secured.segments[0]
    assert requests.get(f"{url}/segments/{TABLE}/{segment}", timeout=10).status_code == 401


def test_broker_401_403_and_pinotdb_with_a_hashed_password(secured):
    url = f"{secured.broker_url}/query/sql"
    sql = {"sql": f"SELECT COUNT(*) FROM {TABLE}"}
    for headers in ({}, {"Authorization": basic_token("analyst", "wrong")}):
        response = requests.post(url, json=sql, headers=headers, timeout=10)
        assert response.status_code == 401 and response.json() == UNAUTHORIZED
    rows = requests.post(url, json=sql, headers=auth("analyst"), timeout=30).json()
    assert rows["resultTable"]["rows"] == [[secured.total_rows]]
    denied = requests.post(url, json=sql, headers=auth("billing"), timeout=10)  # argon2 hash
    assert denied.status_code == 403
    assert denied.json() == {
        "code": 403,
        "error": f"Permission denied.Reason: Authorization Failed for tables: [{TABLE}]",
    }
    # the multi-stage endpoint checks every table the query reads
    join = {"sql": f"SELECT COUNT(*) FROM {TABLE} a JOIN billing b ON a.Carrier = b.city"}
    denied = requests.post(f"{secured.broker_url}/query", json=join, headers=auth("analyst"),
                           timeout=10)  # fmt: skip
    assert denied.status_code == 403 and denied.json()["error"].endswith("tables: [billing]")
    debug = requests.get(f"{secured.broker_url}/debug/routingTable/{TABLE}",
                         headers=auth("billing"), timeout=10)  # fmt: skip
    assert debug.status_code == 403 and "Failed access check" in debug.json()["error"]

    cursor = connect(host="127.0.0.1", port=secured.broker_port, path="/query/sql",
                     scheme="http", username="analyst", password=PW["analyst"]).cursor()  # fmt: skip
    cursor.execute(
        f"SELECT Carrier, COUNT(*) FROM {TABLE} GROUP BY Carrier ORDER BY 2 DESC LIMIT 100"
    )
    assert sum(count for _, count in cursor.fetchall()) == secured.total_rows
    wrong = connect(host="127.0.0.1", port=secured.broker_port, path="/query/sql",
                    scheme="http", username="analyst", password="nope").cursor()  # fmt: skip
    with pytest.raises(DatabaseError):
        wrong.execute(f"SELECT COUNT(*) FROM {TABLE}")


def test_controller_sql_proxy_and_server_admin_api(secured):
    url = secured.controller_url
    sql = {"sql": f"SELECT COUNT(*) FROM {TABLE}"}
    # forwarded with controller.broker.auth.token, after the controller's own table check
    answer = requests.post(f"{url}/sql", json=sql, headers=auth("analyst"), timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["resultTable"]["rows"] == [[secured.total_rows]]
    other = requests.post(f"{url}/sql", json={"sql": "SELECT COUNT(*) FROM billing"},
                          headers=auth("analyst"), timeout=30)  # fmt: skip
    assert other.status_code == 403
    # the servers' admin API: open health, the rest for the configured principals only
    instance = secured.controller("GET", f"/instances/{next(iter(secured.servers))}").json()
    admin = f"http://127.0.0.1:{instance['adminPort']}"
    assert requests.get(f"{admin}/health", timeout=10).text == "OK"
    refused = requests.get(f"{admin}/segments", timeout=10)
    assert refused.status_code == 403 and refused.text == "Forbidden"
    assert requests.get(f"{admin}/segments", headers=auth("ctl"), timeout=10).status_code == 200
    listing = requests.get(f"{admin}/tables/{TABLE}_OFFLINE/segments", headers=auth("ctl"),
                           timeout=10)  # fmt: skip
    assert listing.status_code == 200


def test_running_queries_reload_checks_and_upsert_endpoints_need_credentials(secured):
    """The endpoints beside access control: the brokers' running queries and cancels, the
    servers' needReload, cancel and upsert endpoints; the controller reaches them with its
    service tokens (controller.broker.auth, controller.server.admin.auth)."""
    broker = secured.broker_url
    for method, path in (("GET", "/queries"), ("DELETE", "/query/1")):
        refused = requests.request(method, f"{broker}{path}", timeout=10)
        assert refused.status_code == 403 and "Failed access check" in refused.json()["error"]
    assert requests.get(f"{broker}/queries", headers=auth("admin"), timeout=10).json() == {}
    gone = requests.delete(f"{broker}/query/1", headers=auth("admin"), timeout=10)
    assert gone.status_code == 404  # admitted: no such query
    listing = secured.controller("GET", "/queries")
    assert listing.status_code == 200 and list(listing.json().values()) == [{}], listing.text

    instance = secured.controller("GET", f"/instances/{next(iter(secured.servers))}").json()
    admin = f"http://127.0.0.1:{instance['adminPort']}"
    for method, path in (("GET", f"/tables/{TABLE}_OFFLINE/segments/needReload"),
                         ("DELETE", "/query/Broker_x_1"), ("GET", "/instance/primaryKeyCount"),
                         ("GET", f"/tables/{TABLE}_OFFLINE/metadata")):  # fmt: skip
        refused = requests.request(method, f"{admin}{path}", timeout=10)
        assert (refused.status_code, refused.text) == (403, "Forbidden"), path
        allowed = requests.request(method, f"{admin}{path}", headers=auth("ctl"), timeout=10)
        assert allowed.status_code != 403, path
    need = secured.controller("GET", f"/segments/{TABLE}_OFFLINE/needReload",
                              params={"verbose": "true"})  # fmt: skip
    answers = need.json()["serverToSegmentsCheckReloadList"]
    assert answers and all("error" not in a for a in answers.values()), need.text


def test_minion_clients_send_task_auth(secured, monkeypatch, tmp_path):
    """The minions' controller client (tasks.lineage_client, as the executors call it) with
    Pinot's task.auth.token from the minion's own properties."""
    from engine.runtime.properties import process_properties
    from tasks import lineage_client

    url = secured.controller_url
    with pytest.raises(lineage_client.LineageRequestError) as refused:
        lineage_client.segment_lineage(url, TABLE, "OFFLINE")
    assert refused.value.status == 401
    conf = write_properties(tmp_path / "minion.conf", {"task.auth.token": token("svc")})
    monkeypatch.setenv("SPRIG_PINOT_CONFIG", str(conf))
    process_properties.cache_clear()
    try:
        lineage = lineage_client.segment_lineage(url, TABLE, "OFFLINE")
    finally:
        monkeypatch.delenv("SPRIG_PINOT_CONFIG")
        process_properties.cache_clear()
    assert lineage["tableNameWithType"] == f"{TABLE}_OFFLINE"


def test_lag_table_init_sends_its_auth_token(secured, kafka, capsys):
    """`sprig consumer-offsets init` against an authenticating controller: refused with a
    clear error without credentials, and creates the table with --auth-token (a bare
    token gets Pinot's Basic prefix)."""
    from sprig.cli import main

    init = ["consumer-offsets", "init", "--controller", secured.controller_url,
            "--bootstrap-server", kafka.bootstrap_servers,
            "--topic", f"lag-{secured.env['SPRIG_CLUSTER_NAME']}"]  # fmt: skip
    assert main(init) != 0
    err = capsys.readouterr().err
    assert "refused GET /tables/consumer_offsets: HTTP 401" in err and "--auth-token" in err
    bare = token("admin").removeprefix("Basic ")
    assert main([*init, "--auth-token", bare]) == 0
    assert "Created the consumer_offsets REALTIME table" in capsys.readouterr().out
    found = requests.get(f"{secured.controller_url}/tables/consumer_offsets", headers=auth("admin"),
                         timeout=10)  # fmt: skip
    assert found.status_code == 200

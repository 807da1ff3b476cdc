"""`sprig quickstart` as a person runs it: a cluster with Pinot's example tables loaded
through the Spark ingestion job, the example queries answered by the broker, the githubEvents
and airlineStats REALTIME tables growing from the quickstart's producers, the upsert tables of
Pinot's upsertMeetupRsvp answering one row per key (without the deleted ones where deletes
are honoured) while their producer updates and deletes keys, the printed
SegmentGenerationAndPushTask recipe working, and Ctrl-C stopping every process, producers
included. `--external` uses a given ZooKeeper and deep store."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import fastavro
import orjson
import pytest
import requests
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from sprig.stack.process import free_port
from sprig.stack.quickstart_summary import EXAMPLE_QUERIES

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _start(tmp_path: Path, *args: str, env_extra: dict | None = None):
    env = {**os.environ, "SPRIG_RUN_DIR": str(tmp_path / "run"), "PYTHONUNBUFFERED": "1",
           **(env_extra or {})}  # fmt: skip
    # as a person runs it: pytest-django's test settings (in-memory database) must not leak in
    env.pop("DJANGO_SETTINGS_MODULE", None)
    for var in ("SPRIG_ZK", "SPRIG_REDIS_URL", "SPRIG_KAFKA_BROKERS", "SPRIG_DEEP_STORE_URI"):
        if var not in (env_extra or {}):
            env.pop(var, None)
    log = tmp_path / "quickstart.out"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sprig", "quickstart", "--port", str(free_port()),
             "--data-dir", str(tmp_path / "data"), *args],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    return proc, log


def _wait_ready(proc, log: Path, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = log.read_text()
        if "Press Ctrl-C" in text:
            return text
        if proc.poll() is not None:
            pytest.fail(f"quickstart exited with {proc.returncode}:\n{text}")
        time.sleep(1)
    pytest.fail(f"quickstart not ready in {timeout_s} s:\n{log.read_text()}")


def _stop(proc, log: Path, pids: list[int]) -> None:
    proc.send_signal(signal.SIGINT)
    assert proc.wait(90) == 0, log.read_text()[-3000:]
    assert "Everything is stopped." in log.read_text()
    deadline = time.monotonic() + 20
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        time.sleep(0.3)
    assert not alive, f"still running: {alive}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def _pids(text: str) -> list[int]:
    return [int(p) for p in re.findall(r"^  \S+\s+.+?\s(\d+)\s+/\S+\.log$", text, re.M)]


def test_quickstart_loads_the_examples_and_answers_the_example_queries(tmp_path):
    proc, log = _start(tmp_path)
    try:
        text = _wait_ready(proc, log, 600)
        assert "airlineStats: 9746 rows in 31 segments" in text
        assert "billing: 694 rows in 1 segments" in text
        assert "clientSalaryNulls: 100 rows in 1 segments" in text
        pids = _pids(text)
        assert len(pids) == 8, (
            text
        )  # zookeeper, redis, kafka, controller, broker, 2 servers, minion
        broker = re.search(r"Broker: (http://localhost:\d+)/query/sql", text).group(1)
        for sql in EXAMPLE_QUERIES:
            assert sql in text
            response = requests.post(f"{broker}/query/sql", json={"sql": sql}, timeout=30).json()
            assert response["exceptions"] == [], sql
            assert response["resultTable"]["rows"], sql
        _check_null_handling(broker)
        console = re.search(r"Console: (http://localhost:\d+)", text).group(1)
        _check_streams(broker, console, text)
        _check_upsert(broker, text)
        _check_kafka(console, tmp_path)
        _check_airline_push_task(broker, console, text)
        _stop(proc, log, pids)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _answer(broker: str, sql: str):
    response = requests.post(f"{broker}/query/sql", json={"sql": sql}, timeout=60).json()
    assert response["exceptions"] == [], (sql, response)
    return response["resultTable"]["rows"][0][0]


def _wait_answer(broker: str, sql: str, predicate, timeout_s: float = 120):
    deadline = time.monotonic() + timeout_s
    value = None
    while time.monotonic() < deadline:
        value = _answer(broker, sql)
        if predicate(value):
            return value
        time.sleep(1)
    pytest.fail(f"{sql}: last answer {value} after {timeout_s} s")


def _check_streams(broker: str, console: str, text: str) -> None:
    """The producers stream the githubEvents and airlineStats samples at 10 records/s: the
    REALTIME counts grow, and a hybrid airlineStats query counts the OFFLINE rows up to the
    broker's time boundary (the batch data's last day minus one) plus every streamed flight
    (today's)."""
    assert "SELECT COUNT(*) FROM githubEvents" in text
    assert f"{console}/console/minion-task-manager" in text
    assert f"{console}/tasks/schedule?taskType=RealtimeToOfflineSegmentsTask" in text
    # the hybrid githubEvents of Pinot's minion quickstart, its RealtimeToOffline on a cron
    assert requests.get(f"{console}/tables/githubEvents_OFFLINE", timeout=30).ok
    jobs = requests.get(f"{console}/tasks/scheduler/jobKeys", timeout=30).json()
    assert {"name": "githubEvents_REALTIME", "group": "RealtimeToOfflineSegmentsTask"} in jobs
    first = _wait_answer(broker, "SELECT COUNT(*) FROM githubEvents_REALTIME", lambda n: n > 0)
    grown = _wait_answer(broker, "SELECT COUNT(*) FROM githubEvents_REALTIME",
                         lambda n: n >= first + 20, timeout_s=30)  # fmt: skip
    # Two replicas consume each partition independently, so back-to-back answers may come from
    # replicas a few rows apart: counts are compared once the slower one has caught up.
    _wait_answer(broker, "SELECT COUNT(*) FROM githubEvents", lambda n: n >= grown)  # hybrid
    before = _wait_answer(broker, "SELECT COUNT(*) FROM airlineStats_REALTIME", lambda n: n > 0)
    boundary = requests.get(f"{broker}/debug/timeBoundary/airlineStats", timeout=30).json()
    assert boundary == {"timeColumn": "DaysSinceEpoch", "timeValue": "16100"}
    offline_part = 9746 - 354  # Pinot's data without its last day (16101: 354 flights)
    hybrid = _wait_answer(broker, "SELECT COUNT(*) FROM airlineStats",
                          lambda n: n >= offline_part + before)  # fmt: skip
    after = _wait_answer(broker, "SELECT COUNT(*) FROM airlineStats_REALTIME",
                         lambda n: n >= hybrid - offline_part)  # fmt: skip
    assert offline_part + before <= hybrid <= offline_part + after, (before, hybrid, after)
    assert _answer(broker, "SELECT COUNT(*) FROM airlineStats WHERE DaysSinceEpoch <= 16100") == (
        offline_part
    )


def _rows(broker: str, sql: str, options: str = "") -> list:
    body = {"sql": sql, **({"queryOptions": options} if options else {})}
    response = requests.post(f"{broker}/query/sql", json=body, timeout=60).json()
    assert response["exceptions"] == [], (sql, response)
    return response["resultTable"]["rows"]


def _check_upsert(broker: str, text: str) -> None:
    """upsertMeetupRsvp (Pinot's example) holds one row per event, its newest version, while
    the producer changes each event every 10 s; skipUpsert shows every version; the twin
    table with deleteRecordColumn leaves the cancelled events out."""
    table, deletes = "upsertMeetupRsvp", "upsertMeetupRsvpWithDeletes"
    assert f"SELECT COUNT(*) FROM {table}" in text and deletes in text
    every = f"SELECT COUNT(*) FROM {table}"
    _wait_answer(broker, every, lambda n: n == 100)  # all 100 events seen
    _wait_answer(broker, f"SET skipUpsert=true; {every}", lambda n: n >= 250, timeout_s=60)
    assert _rows(broker, f"SELECT COUNT(*), COUNT(DISTINCT event_id) FROM {table}") == [[100, 100]]
    # a key's row is its newest version (the producer may change it between the two queries)
    for _ in range(5):
        latest = _rows(broker, f"SELECT rsvp_count, mtime FROM {table} WHERE event_id = 'e-0007'")
        versions = _rows(broker, f"SELECT rsvp_count, mtime FROM {table} WHERE event_id = "
                         "'e-0007' ORDER BY mtime DESC LIMIT 1", "skipUpsert=true")  # fmt: skip
        if latest == versions:
            break
    assert latest == versions and len(latest) == 1
    # deletes: the live events are those whose newest version is not a cancellation
    for _ in range(5):
        kept = _rows(broker, f"SELECT COUNT(*), COUNT(DISTINCT event_id) FROM {deletes}")[0]
        tombstones = _rows(broker, f"SELECT COUNT(*) FROM {deletes} WHERE deleted = true",
                           "skipUpsert=true")[0][0]  # fmt: skip
        if tombstones and kept[0] < 100:
            break
        time.sleep(2)
    assert tombstones > 0 and kept[0] == kept[1] < 100, (kept, tombstones)


def _check_kafka(console: str, tmp_path: Path) -> None:
    """`sprig stack status` lists Apache Kafka with its log, and the Kafka consumers page has
    a real group without anyone doing anything: the demo group reading githubEvents."""
    result = subprocess.run(
        [sys.executable, "-m", "sprig", "stack", "status", "--json"], cwd=REPO,
        env={**os.environ, "SPRIG_RUN_DIR": str(tmp_path / "run")}, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    rows = {row["name"]: row for row in orjson.loads(result.stdout)["quickstart"]["processes"]}
    kafka = rows["kafka"]
    assert kafka["state"] == "running", kafka
    log = Path(kafka["log"])
    assert "Kafka Server started" in log.read_text()  # Apache Kafka's own start-up line

    def demo_group():
        groups = requests.get(f"{console}/consumerGroups", timeout=30).json()["groups"]
        found = [g for g in groups if g["group"] == "quickstart-demo"]
        return found and found[0]["members"] == 1 and found[0]

    deadline = time.monotonic() + 60
    while not (found := demo_group()) and time.monotonic() < deadline:
        time.sleep(1)
    assert found, requests.get(f"{console}/consumerGroups", timeout=30).text
    assert found["state"] == "Stable" and found["partitionCount"] >= 1


def _check_airline_push_task(broker: str, console: str, text: str) -> None:
    """The printed SegmentGenerationAndPushTask recipe: an Avro file copied into the incoming
    folder becomes one more airlineStats segment when the task is scheduled."""
    copy = re.search(r"^    cp (\S+\.avro) (\S+)/$", text, re.M)
    assert copy, text
    source, incoming = Path(copy.group(1)), Path(copy.group(2))
    rows = sum(1 for _ in fastavro.reader(source.open("rb")))
    shutil.copy(source, incoming / source.name)
    offline = _answer(broker, "SELECT COUNT(*) FROM airlineStats_OFFLINE")
    schedule = re.search(r"curl -s -X POST '(\S+taskType=SegmentGenerationAndPushTask\S+)'", text)
    response = requests.post(schedule.group(1), timeout=60)
    assert response.ok, response.text
    body = response.json()
    assert body.get("SegmentGenerationAndPushTask"), body
    _wait_answer(broker, "SELECT COUNT(*) FROM airlineStats_OFFLINE",
                 lambda n: n == offline + rows, timeout_s=300)  # fmt: skip


def _check_null_handling(broker: str) -> None:
    """Pinot's NullHandlingQuickstart queries, answered as Pinot answers them over the same
    Avro file (100 clients, 56 without a salary, 46 with a description)."""
    on = {"queryOptions": "enableNullHandling=true"}

    def answer(sql: str, options: dict | None = None):
        response = requests.post(
            f"{broker}/query/sql", json={"sql": sql, **(options or {})}, timeout=30
        ).json()
        assert response["exceptions"] == [], (sql, response)
        return response["resultTable"]["rows"][0][0]

    table = "clientSalaryNulls"
    assert answer(f"SELECT COUNT(*) FROM {table}", on) == 100
    assert answer(f"SELECT COUNT(*) FROM {table} WHERE salary IS NULL", on) == 56
    assert answer(f"SELECT COUNT(*) FROM {table} WHERE description IS NOT NULL", on) == 46
    assert answer(f"SELECT MIN(salary) FROM {table}", on) == 46314.0
    assert answer(f"SELECT MIN(salary) FROM {table}") == -2147483648.0  # nulls as stored
    assert answer(f"SELECT COUNT(*) FROM {table} WHERE salary < 80000", on) == 2
    assert answer(f"SELECT COUNT(*) FROM {table} WHERE salary < 80000") == 58
    assert answer(f"SELECT COUNT(salary) FROM {table}", on) == 44  # issue 29: nulls skipped
    assert answer(f"SELECT COUNT(salary) FROM {table}") == 100  # COUNT(col) is COUNT(*)
    sql = f"SELECT COUNT(*) FROM {table} WHERE NOT (salary < 80000)"
    assert answer(sql, on) == 42  # a NULL salary is on neither side of NOT


def test_a_stream_rate_below_one_record_is_refused(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "sprig", "quickstart", "--stream-rate", "0"], cwd=REPO,
        env={**os.environ, "SPRIG_RUN_DIR": str(tmp_path)}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--stream-rate must be above 0, got 0" in result.stderr
    assert not (tmp_path / "quickstart.lock").exists()


def test_external_needs_zookeeper_and_deep_store(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "sprig", "quickstart", "--external"], cwd=REPO,
        env={k: v for k, v in os.environ.items() if k not in ("SPRIG_ZK", "SPRIG_DEEP_STORE_URI")}
        | {"SPRIG_RUN_DIR": str(tmp_path)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--external needs SPRIG_ZK and SPRIG_DEEP_STORE_URI" in result.stderr


def test_a_lag_sample_interval_that_is_not_a_positive_number_is_refused(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "sprig", "quickstart"], cwd=REPO,
        env={**os.environ, "SPRIG_RUN_DIR": str(tmp_path), "SPRIG_QUICKSTART_LAG_SAMPLE_S": "0"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "SPRIG_QUICKSTART_LAG_SAMPLE_S: must be above 0 seconds, got '0'" in result.stderr
    assert not (tmp_path / "quickstart.lock").exists()


def test_external_runs_on_the_given_zookeeper_and_deep_store(tmp_path, zookeeper):
    """One `--external --no-data` run serves two stories: the cluster lives on the given
    ZooKeeper and deep store, and the quickstart samples its own Kafka's consumer lag."""
    cluster = f"qs_{uuid.uuid4().hex[:8]}"
    deep_store = tmp_path / "shared-deepstore"
    proc, log = _start(tmp_path, "--external", "--no-data", env_extra={
        "SPRIG_ZK": zookeeper.address, "SPRIG_DEEP_STORE_URI": str(deep_store),
        "SPRIG_CLUSTER_NAME": cluster, "SPRIG_QUICKSTART_LAG_SAMPLE_S": "2",
    })  # fmt: skip
    try:
        text = _wait_ready(proc, log, 300)
        assert f"{zookeeper.address} (external)" in text
        _check_samples_its_own_kafka(text)
        pids = _pids(text)
        assert len(pids) == 7, text  # redis, kafka + the five Sprig processes
        client = KazooClient(hosts=zookeeper.address)
        client.start(timeout=10)
        try:
            deadline = time.monotonic() + 30  # the minion joins once its worker is up
            live = client.get_children(f"/{cluster}/LIVEINSTANCES")
            while not any(i.startswith("Minion_") for i in live) and time.monotonic() < deadline:
                time.sleep(0.3)
                live = client.get_children(f"/{cluster}/LIVEINSTANCES")
        finally:
            client.stop()
            client.close()
        assert sum(i.startswith("Server_") for i in live) == 2
        assert sum(i.startswith("Broker_") for i in live) == 1
        assert sum(i.startswith("Minion_") for i in live) == 1
        _stop(proc, log, pids)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _check_samples_its_own_kafka(text: str) -> None:
    """`sprig quickstart` samples its own Kafka's consumer lag into the consumer_offsets
    table, so the console's consumer-lag page has data: a group that commits in the
    quickstart's Kafka is listed with its lag, and its samples reach the table through the
    broker."""
    kafka = re.search(r"Sampling consumer lag of (\S+) every 2 s", text).group(1)
    console = re.search(r"Console: (http://localhost:\d+)", text).group(1)
    # one partition, created up front: an auto-created topic has several
    admin = AdminClient({"bootstrap.servers": kafka})
    admin.create_topics([NewTopic("qs-orders", num_partitions=1)])["qs-orders"].result(10)
    producer = Producer({"bootstrap.servers": kafka})
    for n in range(3):
        producer.produce("qs-orders", value=b"%d" % n)
        assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": kafka, "group.id": "qs-readers",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.commit(offsets=[TopicPartition("qs-orders", 0, 1)], asynchronous=False)
    consumer.close()

    described = requests.get(f"{console}/consumerGroups/qs-readers", timeout=30).json()
    assert [(p["committed"], p["endOffset"], p["lag"]) for p in described["partitions"]] == [
        (1, 3, 2)
    ]
    deadline = time.monotonic() + 90  # the next sampling round, then consumption
    series = {}
    while not series and time.monotonic() < deadline:
        time.sleep(1)
        series = (
            requests.get(f"{console}/consumerGroups/qs-readers/lagHistory", timeout=30)
            .json()
            .get("series", {})
        )
    assert [p["lag"] for p in series["qs-orders/0"]][-1:] == [2], series

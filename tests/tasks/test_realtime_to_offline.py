"""RealtimeToOfflineSegmentsTask end to end, all real: a hybrid table consuming a 2-partition
topic on the session's Kafka, a controller, a server, a broker and a minion with Spark.

Windows of completed REALTIME segments move into the OFFLINE table (one subtask per window,
or one per partition) while a query loop asks COUNT(*) and SUM through the broker: every
answer is exact (no row counted twice or missing). The watermark stops where a partition's committed data
ends; a subtask retried after its uploads went through replaces its own segments."""

from __future__ import annotations

import threading
import time
import uuid

import orjson
import pytest
import requests
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TASK = "RealtimeToOfflineSegmentsTask"
BASE_MS = 1_699_999_200_000  # a multiple of the 1h bucket
STEP_MS = 60_000
ROWS = 600  # 10 hours of rows, 300 per partition: three 100-row segments each
HOUR = 3_600_000


def schema(name: str) -> dict:
    return {
        "schemaName": name,
        "dimensionFieldSpecs": [{"name": "user", "dataType": "STRING"}],
        "metricFieldSpecs": [{"name": "n", "dataType": "LONG"}],
        "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
                                "granularity": "1:MILLISECONDS"}],
    }  # fmt: skip


def configs(name: str, bootstrap: str, topic: str, split: bool) -> tuple[dict, dict]:
    realtime = {
        "tableName": name, "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "replicasPerPartition": "1", "schemaName": name},
        "tenants": {}, "metadata": {},
        "tableIndexConfig": {"streamConfigs": {
            "streamType": "kafka", "stream.kafka.topic.name": topic,
            "stream.kafka.broker.list": bootstrap, "stream.kafka.consumer.type": "lowlevel",
            "stream.kafka.decoder.class.name":
                "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
            "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
            "realtime.segment.flush.threshold.rows": "200",  # per server: 100 per partition
        }},
        "task": {"taskTypeConfigsMap": {TASK: {
            "bucketTimePeriod": "1h", "bufferTimePeriod": "1d", "splitByPartition": str(split).lower(),
        }}},
    }  # fmt: skip
    offline = {
        "tableName": name, "tableType": "OFFLINE",
        # the broker's time boundary: OFFLINE answers up to its newest end minus one hour
        "segmentsConfig": {"timeColumnName": "ts", "replication": "1", "schemaName": name,
                           "segmentPushFrequency": "HOURLY", "segmentPushType": "APPEND"},
        "tenants": {}, "metadata": {}, "tableIndexConfig": {},
    }  # fmt: skip
    return realtime, offline


def produce(bootstrap: str, topic: str) -> tuple[int, int, int]:
    """(rows, SUM(n), rows before 9h: what the nine complete windows hold)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    total = early = 0
    for i in range(ROWS):
        record = {"user": f"u{i % 7}", "n": i * 3 + 1, "ts": BASE_MS + i * STEP_MS}
        producer.produce(topic, orjson.dumps(record), partition=i % 2)
        total += record["n"]
        early += record["ts"] < BASE_MS + 9 * HOUR
    assert producer.flush(15) == 0
    return ROWS, total, early


class QueryLoop(threading.Thread):
    """Asks COUNT(*) and SUM(n) until stopped; keeps every answer."""

    def __init__(self, cluster, table: str):
        super().__init__(daemon=True)
        self.cluster, self.table = cluster, table
        self.answers: list = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                answer = self.cluster.query(f"SELECT COUNT(*), SUM(n) FROM {self.table}")
                self.answers.append(answer.get("exceptions") or answer["resultTable"]["rows"][0])
            except (requests.RequestException, AssertionError) as exc:
                self.answers.append(repr(exc))
            time.sleep(0.05)


def wait_answer(cluster, sql: str, expected: list, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = cluster.query(sql)
            if not last.get("exceptions") and last["resultTable"]["rows"][0] == expected:
                return
        except (requests.RequestException, AssertionError, KeyError, IndexError) as exc:
            last = exc
        time.sleep(0.3)
    raise AssertionError(f"{sql} did not answer {expected}: {last}")


def watermark(cluster, table: str) -> int | None:
    record = cluster.call("GET", f"/tasks/{TASK}/{table}/metadata").json()
    value = (record.get("simpleFields") or {}).get("watermarkMs")
    return int(value) if value is not None else None


def completed_segments(cluster, raw: str) -> int:
    metadata = cluster.call("GET", f"/segments/{raw}/zkmetadata?type=REALTIME").json()
    return sum(f.get("segment.realtime.status") == "DONE" for f in metadata.values())


@pytest.mark.parametrize("split", [True, False], ids=["per-partition", "one-subtask"])
def test_windows_move_with_exact_hybrid_answers(task_cluster, kafka, task_cluster_celery, split):
    name = f"rto{uuid.uuid4().hex[:6]}"
    topic = f"{name}_events"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(10)
    realtime, offline = configs(name, kafka.bootstrap_servers, topic, split)
    for path, body in (("/schemas", schema(name)), ("/tables", realtime), ("/tables", offline)):
        response = task_cluster.call("POST", path, json=body)
        assert response.ok, f"POST {path}: {response.text}"
    count, total, early = produce(kafka.bootstrap_servers, topic)
    wait_answer(task_cluster, f"SELECT COUNT(*), SUM(n) FROM {name}", [count, float(total)])
    deadline = time.monotonic() + 60
    while completed_segments(task_cluster, name) < 6:
        assert time.monotonic() < deadline, "the six segments did not commit"
        time.sleep(0.3)

    loop = QueryLoop(task_cluster, name)
    loop.start()
    windows = []
    try:
        if split:  # a refused upload fails its subtask; the watermark and answers stay
            refused_upload_moves_nothing(task_cluster, name)
        while True:
            body = task_cluster.call("POST", f"/tasks/schedule?taskType={TASK}"
                                             f"&tableName={name}_REALTIME").json()  # fmt: skip
            assert body.get("generationErrors", "") == "", body
            if not body[TASK]:
                break
            debug = wait_done(task_cluster, body[TASK])
            infos = debug["subtaskInfos"]
            partitions = sorted(i["taskConfig"]["configs"]["partition"] for i in infos)
            assert partitions == (["0", "1"] if split else ["all"])
            assert {i["state"] for i in infos} == {"COMPLETED"}, [i.get("info") for i in infos]
            windows.append(int(infos[0]["taskConfig"]["configs"]["windowStartMs"]))
            assert len(windows) <= 10, windows
        time.sleep(2)  # answers after the last window's segments came online
    finally:
        loop.stop.set()
        loop.join(30)
    # nine 1h windows; the tenth waits for the partitions' consuming segments
    assert windows == [BASE_MS + k * HOUR for k in range(9)]
    assert watermark(task_cluster, f"{name}_REALTIME") == BASE_MS + 9 * HOUR
    wrong = [a for a in loop.answers if a != [count, float(total)]]
    assert len(loop.answers) > 20 and not wrong, (len(loop.answers), wrong[:5])
    wait_answer(task_cluster, f"SELECT COUNT(*) FROM {name}_OFFLINE", [early])

    # a subtask retried after its uploads went through (its report was lost): with the
    # watermark back at the window's start it rebuilds the same segments, and the
    # watermark moves again only when both partitions are done
    from kazoo.client import KazooClient

    from engine.clusterstate import ClusterStore
    from tasks.logic.celery_link import read_report, send_attempt
    from tasks.metadata import read_metadata, write_metadata

    offline_segments = task_cluster.call("GET", f"/segments/{name}?type=OFFLINE").json()
    client = KazooClient(hosts=task_cluster_zk(task_cluster))
    client.start()
    try:
        store = ClusterStore(client, task_cluster.cluster_name)
        record, _ = read_metadata(store, f"{name}_REALTIME", TASK)
        record.simple_fields["watermarkMs"] = str(windows[-1])
        write_metadata(store, f"{name}_REALTIME", TASK, record)
        for config in sorted((i["taskConfig"]["configs"] for i in infos),
                             key=lambda c: c["partition"]):  # fmt: skip
            replay = f"Task_{TASK}_replay{uuid.uuid4().hex[:6]}_1_0"
            send_attempt(subtask=replay, task_type=TASK, attempt=2, configs=config,
                         queue="minion_untagged", timeout_ms=120_000, dispatched_ms=0)  # fmt: skip
            report = wait_report(read_report, f"{replay}.2")
            moved = report.meta["result"]["watermarkMoved"]
            assert moved is (config["partition"] == partitions[-1]), report.meta
        # the window was already moved: a third replay uploads nothing and fails
        replay = f"Task_{TASK}_replay{uuid.uuid4().hex[:6]}_1_0"
        send_attempt(subtask=replay, task_type=TASK, attempt=2, configs=infos[0]["taskConfig"]
                     ["configs"], queue="minion_untagged", timeout_ms=120_000,
                     dispatched_ms=0)  # fmt: skip
        report = wait_report(read_report, f"{replay}.2", ok=False)
        assert "was moved already" in f"{report.meta} {report.traceback}", report
    finally:
        client.stop()
        client.close()
    assert watermark(task_cluster, f"{name}_REALTIME") == BASE_MS + 9 * HOUR
    assert task_cluster.call("GET", f"/segments/{name}?type=OFFLINE").json() == offline_segments
    wait_answer(task_cluster, f"SELECT COUNT(*) FROM {name}_OFFLINE", [early])
    wait_answer(task_cluster, f"SELECT COUNT(*), SUM(n) FROM {name}", [count, float(total)])


def refused_upload_moves_nothing(cluster, name: str) -> None:
    config = cluster.call("GET", f"/tables/{name}?type=OFFLINE").json()["OFFLINE"]
    response = cluster.call("PUT", f"/tables/{name}", json={**config, "quota": {"storage": "1K"}})
    assert response.ok, response.text
    body = cluster.call("POST", f"/tasks/schedule?taskType={TASK}&tableName={name}_REALTIME")
    debug = wait_done(cluster, body.json()[TASK])
    infos = debug["subtaskInfos"]
    assert {i["state"] for i in infos} == {"TASK_ERROR"}, infos
    assert all("the upload of segment" in i["info"] for i in infos), infos
    assert watermark(cluster, f"{name}_REALTIME") == BASE_MS
    assert cluster.call("GET", f"/segments/{name}/zkmetadata?type=OFFLINE").json() == {}
    response = cluster.call("PUT", f"/tables/{name}", json=config)
    assert response.ok, response.text


def task_cluster_zk(cluster) -> str:
    return cluster.processes[0].env["SPRIG_ZK"]


def wait_done(cluster, task: str, timeout_s: float = 300) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = cluster.call("GET", f"/tasks/task/{task}/state").json()
        if state in ("COMPLETED", "FAILED"):
            return cluster.call("GET", f"/tasks/task/{task}/debug?verbosity=1").json()
        time.sleep(0.3)
    raise AssertionError(f"{task} did not finish")


def wait_report(read_report, task_id: str, ok: bool = True, timeout_s: float = 180):
    deadline = time.monotonic() + timeout_s
    while (report := read_report(task_id)).state in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline, report
        time.sleep(0.5)
    assert (report.state == "SUCCESS") is ok, report
    return report

"""UpsertCompactionTask end to end, all real: an upsert table over a 4-partition change stream
consumed by a server, a controller, a broker and a minion with Spark. The generator reads the
servers' validDocIdsMetadata, the minion takes each segment's bitmap and rebuilds it with only
its valid docs under the same name; every answer equals the reference model before, during
(a query loop runs through the swaps) and after, while the committed segments shrink."""

from __future__ import annotations

import threading
import uuid

import pytest

from tests.cluster_e2e.realtime_helpers import create_topic, wait_until
from tests.cluster_e2e.upsert_stream import (
    ChangeStream,
    check_full,
    events,
    full_models,
    live,
    rows_of,
    schema,
    stored,
    table,
    wait_consumed,
)
from tests.tasks.conftest import start_task_cluster, stop_task_cluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TASK = "UpsertCompactionTask"
SEGMENT_ROWS = 2_500


@pytest.fixture(scope="module")
def task_cluster(zookeeper, kafka, task_redis_url, tmp_path_factory):
    cluster = start_task_cluster(zookeeper.address, task_redis_url,
                                 tmp_path_factory.mktemp("upsert-compaction"))  # fmt: skip
    yield cluster
    stop_task_cluster(cluster)


def committed_docs(cluster, name: str) -> dict[str, int]:
    fields = cluster.call("GET", f"/segments/{name}/zkmetadata?type=REALTIME").json()
    return {s: int(m["segment.total.docs"]) for s, m in fields.items()
            if m.get("segment.realtime.status") == "DONE"}  # fmt: skip


def test_compaction_keeps_every_answer(task_cluster, kafka):
    name = f"upc{uuid.uuid4().hex[:6]}"
    bootstrap = kafka.bootstrap_servers
    topic = create_topic(bootstrap, f"{name}_changes", partitions=4)
    models = full_models(SEGMENT_ROWS, 0)
    stream = ChangeStream(bootstrap, topic, {"full": models})
    config = table(name, bootstrap, topic, SEGMENT_ROWS, 1,
                   upsertConfig={"mode": "FULL", "deleteRecordColumn": "deleted", "snapshot": "ENABLE"},
                   task={"taskTypeConfigsMap": {TASK: {"bufferTimePeriod": "0d",
                                                       "invalidRecordsThresholdCount": "1"}}})  # fmt: skip
    for path, body in (("/schemas", schema(name)), ("/tables", config)):
        response = task_cluster.call("POST", path, json=body)
        assert response.ok, f"POST {path}: {response.text}"
    url = task_cluster.broker_url
    stream.produce(events(30_000, 1_500, seed=77))  # about 7,500 a partition: 3 commits each
    wait_consumed(url, name, len(stored(models)))
    commits = sum(offset // SEGMENT_ROWS for offset in stream.offsets)
    assert commits >= 8
    wait_until(lambda: len(committed_docs(task_cluster, name)) == commits, "the commits", 120)
    check_full(url, name, models, repeat=1)
    before = committed_docs(task_cluster, name)

    answers, stop = [], threading.Event()
    expected = [[len(live(models)), sum(r["amount"] for r in live(models))]]

    def ask() -> None:  # through every swap: always the model's answer
        while not stop.is_set():
            answers.append(rows_of(url, f"SELECT COUNT(*), SUM(amount) FROM {name}"))

    loop = threading.Thread(target=ask)
    loop.start()
    try:
        debug = task_cluster.run_task(TASK, f"{name}_REALTIME")
    finally:
        stop.set()
        loop.join(60)
    infos = debug["subtaskInfos"]
    assert infos and all(i["state"] == "COMPLETED" for i in infos), [i.get("info") for i in infos]
    assert answers and all(a == expected for a in answers), [a for a in answers if a != expected][
        :3
    ]
    after = committed_docs(task_cluster, name)
    wait_until(lambda: all(rows_of(url, f"SELECT COUNT(*) FROM {name}") == [[expected[0][0]]]
                           for _ in range(2)), "answers after the swap", 30)  # fmt: skip
    check_full(url, name, models, repeat=1)
    compacted = {i["taskConfig"]["configs"]["segmentName"] for i in infos}
    assert compacted and all(after.get(s, 0) < before[s] for s in compacted), (before, after)
    assert sum(after.values()) < sum(before.values())
    # the skipped versions are gone from the compacted segments
    assert rows_of(url, f"SELECT COUNT(*) FROM {name}", skipUpsert="true")[0][0] < len(
        stored(models)
    )

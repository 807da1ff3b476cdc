"""UpsertCompactionTask end to end, all real: an upsert table (deletes, out-of-order values,
ties) over a 4-partition Kafka topic consumed by a server, a controller, a broker and a minion
with Spark. Every answer equals the reference model before, during (queries run through the
swaps) and after compaction, with skipUpsert showing exactly the versions compaction kept;
each partition's first segment, all of whose docs are superseded, is deleted.

The faults: a server asked for a segment it does not hold, a bitmap of another copy than
ZooKeeper's (CRC), a subtask made for a copy that changed, and a minion whose download of one
segment fails (its deep-store file damaged): the segment keeps serving unchanged, nothing is
lost, and the next run compacts it."""

from __future__ import annotations

import threading
import types
import uuid
from pathlib import Path

import orjson
import pytest
import requests

from engine.realtime.llc_name import LLCSegmentName
from tasks.errors import SubtaskFailedError
from tasks.executors.base import SubtaskContext
from tasks.executors.upsert_compaction import UpsertCompactionTaskExecutor, replica_bitmaps
from tests.cluster_e2e.realtime_helpers import create_topic, wait_until
from tests.cluster_e2e.upsert_stream import (
    PARTITIONS,
    ChangeStream,
    check_full,
    drop_compacted,
    events,
    full_models,
    live,
    rows_of,
    schema,
    table,
    wait_consumed,
)
from tests.engine.upsert.test_compaction_replace import CompactedModel
from tests.tasks.conftest import start_task_cluster, stop_task_cluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TASK = "UpsertCompactionTask"
SEGMENT_ROWS = 2_500
FIRST_KEYS = 100  # per partition: segment 0 holds only these, all superseded later


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("upsert-compaction")


@pytest.fixture(scope="module")
def task_cluster(zookeeper, kafka, task_redis_url, workdir):
    cluster = start_task_cluster(zookeeper.address, task_redis_url, workdir)
    yield cluster
    stop_task_cluster(cluster)


def first_rows() -> list[dict]:
    """Per partition 2,500 rows over its 100 first keys (segment 0), then one newer row per
    key (segment 1): every doc of segment 0 ends superseded."""
    rows = []
    for i in range(SEGMENT_ROWS):
        for p in range(PARTITIONS):
            rows.append({"id": p + PARTITIONS * (i % FIRST_KEYS), "ts": 500_000 + i,
                         "amount": i % 97, "city": "ams", "deleted": False})  # fmt: skip
    for k in range(FIRST_KEYS * PARTITIONS):
        rows.append({"id": k, "ts": 900_000 + k, "amount": k, "city": "ber", "deleted": False})
    return rows


def zk_segments(cluster, name: str) -> dict[str, dict]:
    return cluster.call("GET", f"/segments/{name}/zkmetadata?type=REALTIME").json()


def committed(cluster, name: str) -> dict[str, dict]:
    return {s: m for s, m in zk_segments(cluster, name).items()
            if m.get("segment.realtime.status") == "DONE"}  # fmt: skip


def server_admin(cluster) -> dict[str, str]:
    """instance -> admin URL of the cluster's server."""
    for instance in cluster.call("GET", "/instances").json()["instances"]:
        if instance.startswith("Server_"):
            config = cluster.call("GET", f"/instances/{instance}").json()
            return {instance: f"http://{config['hostName']}:{config['adminPort']}"}
    raise AssertionError("no server registered")


class Table:
    """The table under test, its stream and models (compaction-aware)."""

    def __init__(self, cluster, kafka) -> None:
        self.name = f"upc{uuid.uuid4().hex[:6]}"
        self.cluster, self.url = cluster, cluster.broker_url
        topic = create_topic(kafka.bootstrap_servers, f"{self.name}_changes", PARTITIONS)
        self.models = full_models(SEGMENT_ROWS, 0)
        self.compacted = [CompactedModel(m.model) for m in self.models]
        self.stream = ChangeStream(kafka.bootstrap_servers, topic, {"full": self.models})
        config = table(self.name, kafka.bootstrap_servers, topic, SEGMENT_ROWS, 1,
                       upsertConfig={"mode": "FULL", "deleteRecordColumn": "deleted",
                                     "snapshot": "ENABLE"},
                       task={"taskTypeConfigsMap": {TASK: {
                           "bufferTimePeriod": "0d", "invalidRecordsThresholdCount": "1",
                           "validDocIdsType": "IN_MEMORY"}}})  # fmt: skip
        for path, body in (("/schemas", schema(self.name)), ("/tables", config)):
            response = cluster.call("POST", path, json=body)
            assert response.ok, f"POST {path}: {response.text}"

    @property
    def resource(self) -> str:
        return f"{self.name}_REALTIME"

    def produce(self, rows: list[dict]) -> None:
        self.stream.produce(rows)
        wait_consumed(self.url, self.name, sum(len(c.skip_upsert()) for c in self.compacted))
        # each partition's last flush point committed (compaction deleted some earlier ones)
        last = {(p, o // SEGMENT_ROWS - 1) for p, o in enumerate(self.stream.offsets)
                if o >= SEGMENT_ROWS}  # fmt: skip

        def done() -> bool:
            names = [LLCSegmentName.parse(s) for s in committed(self.cluster, self.name)]
            return last <= {(n.partition, n.sequence) for n in names}

        wait_until(done, "the commits", 120)

    def check(self) -> None:
        """Every answer equals the model's, skipUpsert the versions compaction left."""
        check_full(self.url, self.name, [types.SimpleNamespace(model=c) for c in self.compacted],
                   repeat=1)  # fmt: skip

    def expected_answers(self) -> dict[str, list]:
        """Queries asked while the task runs -> the model's answers: totals, a GROUP BY and
        per-key lookups (keys whose versions lie in committed segments)."""
        rows = live(self.models)
        groups: dict = {}
        for r in rows:
            count, total = groups.get(r["city"], (0, 0))
            groups[r["city"]] = (count + 1, total + r["amount"])
        keys = sorted(r["id"] for r in rows)[:: max(1, len(rows) // 40)]
        by_key = sorted([r["id"], r["ts"], r["amount"]] for r in rows if r["id"] in set(keys))
        t = self.name
        return {
            f"SELECT COUNT(*), SUM(amount) FROM {t}": [[len(rows), sum(r["amount"] for r in rows)]],
            f"SELECT city, COUNT(*), SUM(amount) FROM {t} GROUP BY city ORDER BY city":
                [[c, n, a] for c, (n, a) in sorted(groups.items())],
            f"SELECT id, ts, amount FROM {t} WHERE id IN ({', '.join(map(str, keys))}) "
            "ORDER BY id LIMIT 1000": by_key,
        }  # fmt: skip

    def run_compaction(self) -> list[dict]:
        """Schedules the task while a loop asks totals, a GROUP BY and per-key lookups; each
        answer must be the model's."""
        current = [m.current() for m in self.compacted]
        expected = self.expected_answers()
        wrong, asked, stop = [], [0], threading.Event()

        def ask() -> None:
            while not stop.is_set():
                for sql, want in expected.items():
                    got = rows_of(self.url, sql)
                    asked[0] += 1
                    if got != want:
                        wrong.append((sql, got, want))
                stop.wait(0.05)  # leave the minion's Spark job some CPU

        loop = threading.Thread(target=ask)
        loop.start()
        try:
            # the first Spark job is slow on a loaded machine (minutes at load 30 on 2 cores)
            infos = self.cluster.run_task(TASK, self.resource, timeout_s=900)["subtaskInfos"]
        finally:
            stop.set()
            loop.join(60)
        assert asked[0] >= len(expected) and not wrong, (asked, wrong[:2])
        drop_compacted(self.compacted, infos, current, SEGMENT_ROWS)
        return infos


def test_compaction_keeps_every_answer(task_cluster, kafka, workdir):
    t = Table(task_cluster, kafka)
    t.produce(first_rows())
    t.produce(events(22_000, 8_000, seed=77))
    assert len(committed(task_cluster, t.name)) >= 2 * PARTITIONS
    t.check()
    before = committed(task_cluster, t.name)
    firsts = {s for s in before if LLCSegmentName.parse(s).sequence == 0}

    # faults first: nothing they touch may change
    urls = server_admin(task_cluster)
    victim = partly_valid(urls, t.resource, sorted(before.keys() - firsts))[0]
    with pytest.raises(SubtaskFailedError, match="has no IN_MEMORY valid docs of segment"):
        replica_bitmaps(urls, t.resource, f"{t.name}__0__99__20260101T0000Z", "IN_MEMORY", "1")
    with pytest.raises(SubtaskFailedError, match=f"CRC mismatch for segment {victim}"):
        replica_bitmaps(urls, t.resource, victim, "IN_MEMORY", "12345")
    configs = {"tableName": t.resource, "segmentName": victim, "crc": "12345",
               "downloadURL": before[victim]["segment.download.url"],
               "uploadURL": f"{task_cluster.controller_url}/segments"}  # fmt: skip
    with pytest.raises(SubtaskFailedError, match="ZooKeeper now has CRC"):
        UpsertCompactionTaskExecutor().execute(
            SubtaskContext(TASK, "t_0", 1, configs, "test", lambda _m: None)
        )
    damaged = damage_deep_store_copy(workdir, victim)

    infos = t.run_compaction()
    states = {i["taskConfig"]["configs"]["segmentName"]: i["state"] for i in infos}
    assert states.pop(victim) != "COMPLETED", infos
    assert set(states.values()) == {"COMPLETED"}, infos
    assert firsts <= states.keys()  # all invalid: deleted
    after = committed(task_cluster, t.name)
    assert not firsts & after.keys()
    assert after[victim] == before[victim]  # the failed one: untouched
    shrunk = [s for s in states if s in after]
    assert shrunk and all(
        int(after[s]["segment.total.docs"]) < int(before[s]["segment.total.docs"]) for s in shrunk
    )
    assert all(after[s]["segment.realtime.endOffset"] == before[s]["segment.realtime.endOffset"]
               for s in shrunk)  # fmt: skip
    assert all(int(orjson.loads(after[s]["custom.map"])[f"{TASK}.time"]) > 0 for s in shrunk)
    t.check()

    damaged.restore()
    infos = t.run_compaction()  # the failed segment now; the rest have no invalid doc left
    assert [i["taskConfig"]["configs"]["segmentName"] for i in infos] == [victim], infos
    assert infos[0]["state"] == "COMPLETED", infos
    t.check()
    # updates, deletes and late rows for keys whose versions now live in compacted copies
    late = [{**r, "ts": r["ts"] - 300} for r in events(6_000, 8_000, seed=78)]
    t.produce(late)
    t.check()


def partly_valid(urls: dict[str, str], table: str, segments: list[str]) -> list[str]:
    """The ``segments`` that hold both valid and invalid docs (compacted, not deleted)."""
    url = next(iter(urls.values()))
    entries = requests.post(f"{url}/tables/{table}/validDocIdsMetadata?validDocIdsType=IN_MEMORY",
                            json={"segments": segments}, timeout=30).json()  # fmt: skip
    return sorted(e["segmentName"] for e in entries if 0 < e["totalValidDocs"] < e["totalDocs"])


class DamagedFile:
    def __init__(self, path: Path) -> None:
        self.path, self.saved = path, path.read_bytes()
        path.write_bytes(b"not a segment")

    def restore(self) -> None:
        self.path.write_bytes(self.saved)


def damage_deep_store_copy(workdir: Path, segment: str) -> DamagedFile:
    """Overwrite the controller's deep-store file of ``segment`` (kept to restore)."""
    found = [p for p in workdir.rglob(f"{segment}*") if p.is_file() and "minion" not in p.parts]
    found = [p for p in found if p.suffix in (".gz", ".tar") or p.name == segment]
    assert len(found) == 1, found
    return DamagedFile(found[0])


def test_a_bad_task_config_is_refused_with_the_key(task_cluster, kafka):
    name = f"upb{uuid.uuid4().hex[:6]}"
    bootstrap = kafka.bootstrap_servers
    assert task_cluster.call("POST", "/schemas", json=schema(name)).ok
    base = table(name, bootstrap, f"{name}_t", SEGMENT_ROWS, 1, upsertConfig={"mode": "FULL"})
    for task_config, message in (
        ({"invalidRecordsThresholdPercent": "101"}, "must be >= 0 and <= 100"),
        ({"bufferTimePeriod": "1d"}, "or both must be provided"),
    ):
        config = {**base, "task": {"taskTypeConfigsMap": {TASK: task_config}}}
        response = task_cluster.call("POST", "/tables", json=config)
        assert response.status_code == 400, response.text
        assert f"task.taskTypeConfigsMap.{TASK}" in response.text and message in response.text
    no_upsert = {k: v for k, v in base.items() if k != "upsertConfig"}
    no_upsert["task"] = {"taskTypeConfigsMap": {TASK: {"invalidRecordsThresholdCount": "5"}}}
    response = task_cluster.call("POST", "/tables", json=no_upsert)
    assert response.status_code == 400 and "Upsert must be enabled" in response.text, response.text

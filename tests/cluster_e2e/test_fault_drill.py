"""The fault drill: on one running `sprig quickstart` (ZooKeeper, Redis, Kafka, the controller, a broker, two servers and a minion, airlineStats with replication 2),
SIGKILL one process of each kind while a query loop runs, and check that:

- every query gets a full answer or a partial one flagged as such (or, while the only broker
  is down, a refused connection), never a 500 and never a wait past the query timeout;
- the quickstart's supervisor brings the process back by itself, and no other process restarts
  (for ZooKeeper: the others reconnect and re-register on their own);
- within 30 s of the kill the answers are full again.

Each kind's figures (time to full answers again, answers partial or failed during the gap)
are printed (run with `-s` to see them) and written to test-artifacts/fault-drill.json.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
from kazoo.client import KazooClient

from sprig.commands.quickstart import EXAMPLES_DIR, REPLICATION, example_config
from sprig.stack.probes import minion_answers
from sprig.stack.process import free_port
from tests.cluster_e2e.conftest import TABLE

REPO = Path(__file__).resolve().parents[2]
FIGURES = REPO / "test-artifacts" / "fault-drill.json"
COUNT = f"SELECT COUNT(*) FROM {TABLE}"
QUERY_TIMEOUT_MS = 5000
# an answer must come back within the query timeout, plus this for HTTP and scheduling
MARGIN_S = 2.0
FULL_AGAIN_WITHIN_S = 30.0
# the order keeps the most disruptive kill (ZooKeeper) last
KINDS = ("server-1", "broker", "controller", "minion", "redis", "kafka", "zookeeper")

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@dataclass
class Quickstart:
    proc: subprocess.Popen
    log: Path
    env: dict[str, str]
    controller: str
    broker: str
    total_rows: int = 0
    segments: list[str] = field(default_factory=list)
    # uploaded after ZooKeeper's restart, to show that watches work again
    held_back: list = field(default_factory=list)
    figures: dict[str, dict] = field(default_factory=dict)

    def status(self) -> dict[str, dict]:
        """`sprig stack status --json`, the quickstart's processes by name."""
        result = subprocess.run(
            [sys.executable, "-m", "sprig", "stack", "status", "--json"], cwd=REPO,
            env=self.env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        body = json.loads(result.stdout)
        assert body["running"] and body["quickstart"], result.stdout
        return {row["name"]: row for row in body["quickstart"]["processes"]}


def _wait(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except (requests.RequestException, OSError, ValueError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}; last: {last}")


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory, airline_tars) -> Quickstart:
    tmp = tmp_path_factory.mktemp("drill")
    env = {**os.environ, "SPRIG_RUN_DIR": str(tmp / "run"), "PYTHONUNBUFFERED": "1"}
    # as a person runs it: no test settings and no outside services leak in
    for var in ("DJANGO_SETTINGS_MODULE", "SPRIG_ZK", "SPRIG_REDIS_URL", "SPRIG_KAFKA_BROKERS",
                "SPRIG_DEEP_STORE_URI"):  # fmt: skip
        env.pop(var, None)
    port = free_port()
    log = tmp / "quickstart.out"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sprig", "quickstart", "--no-data", "--port", str(port),
             "--data-dir", str(tmp / "data")],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    pids: list[int] = []
    running = None
    try:
        _wait(lambda: "Press Ctrl-C" in log.read_text() or proc.poll() is not None, 300,
              "the quickstart to start")  # fmt: skip
        assert proc.poll() is None, log.read_text()
        running = Quickstart(proc, log, env, f"http://127.0.0.1:{port}", "")
        rows = running.status()
        pids = [row["pid"] for row in rows.values()]
        running.broker = next(
            line.split()[1].removesuffix("/query/sql")
            for line in log.read_text().splitlines()
            if line.startswith("Broker: ")
        )
        running.held_back = airline_tars[-1:]
        _load_airline(running, airline_tars[:-1])
        yield running
    finally:
        if running is not None and running.figures:
            FIGURES.parent.mkdir(parents=True, exist_ok=True)
            FIGURES.write_text(json.dumps(running.figures, indent=2))
        if running is not None and proc.poll() is None:
            # the restarted ones must go too
            pids += [row["pid"] for row in running.status().values() if row["pid"]]
        _stop(proc, log, pids)


def _load_airline(qs: Quickstart, tars) -> None:
    """The quickstart's own airlineStats configs (replication 2); the segments are built
    once per test session instead of by the Spark job, to keep the drill short."""
    folder = EXAMPLES_DIR / "batch" / TABLE
    for path, name in (("/schemas", f"{TABLE}_schema.json"),
                       ("/tables", f"{TABLE}_offline_table_config.json")):  # fmt: skip
        response = requests.post(f"{qs.controller}{path}", json=example_config(folder / name),
                                 timeout=60)  # fmt: skip
        assert response.ok, f"POST {path}: {response.status_code} {response.text}"
    _upload(qs, tars)
    ideal = requests.get(f"{qs.controller}/tables/{TABLE}/idealstate", timeout=30).json()
    assert len(ideal["OFFLINE"]) == len(tars)
    assert all(len(replicas) == REPLICATION for replicas in ideal["OFFLINE"].values())
    _wait(lambda: _fully_replicated(qs, len(tars)), 120, "every segment ONLINE on both servers")
    _wait(lambda: _full(qs), 60, "full answers")


def _upload(qs: Quickstart, tars, retry_503_s: float = 0.0) -> None:
    """Push segments; a 503 (the controller reconnecting to ZooKeeper) is retried for
    `retry_503_s` seconds, as its message asks."""
    for name, tar, rows in tars:
        deadline = time.monotonic() + retry_503_s
        while True:
            with tar.open("rb") as handle:
                response = requests.post(
                    f"{qs.controller}/segments",
                    params={"tableName": TABLE, "tableType": "OFFLINE"},
                    files={"file": (tar.name, handle, "application/gzip")}, timeout=60,
                )  # fmt: skip
            if response.status_code != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert response.ok, response.text
        qs.segments.append(name)
        qs.total_rows += rows


def _fully_replicated(qs: Quickstart, segments: int) -> bool:
    view = requests.get(f"{qs.controller}/tables/{TABLE}/externalview", timeout=10).json()
    offline = (view or {}).get("OFFLINE") or {}
    return len(offline) == segments and all(
        list(replicas.values()) == ["ONLINE"] * REPLICATION for replicas in offline.values()
    )


def _stop(proc: subprocess.Popen, log: Path, pids: list[int]) -> None:
    """Ctrl-C, as a person stops it: every process, restarted ones included, is gone."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            assert proc.wait(120) == 0, log.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert "Everything is stopped." in log.read_text()
    deadline = time.monotonic() + 20
    alive = [p for p in pids if _alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.3)
        alive = [p for p in alive if _alive(p)]
    assert not alive, f"still running after Ctrl-C: {alive}"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _ask(qs: Quickstart) -> tuple[str, dict | str]:
    """One query: ('full'|'partial'|'unflagged'|'http <code>'|'refused', detail)."""
    body = {"sql": COUNT, "queryOptions": f"timeoutMs={QUERY_TIMEOUT_MS}"}
    try:
        response = requests.post(f"{qs.broker}/query/sql", json=body,
                                 timeout=QUERY_TIMEOUT_MS / 1000 + 10)  # fmt: skip
    except requests.ConnectionError as exc:
        return "refused", str(exc)
    if response.status_code != 200:
        return f"http {response.status_code}", response.text[:300]
    answer = response.json()
    rows = (answer.get("resultTable") or {}).get("rows") or [[None]]
    if not answer["exceptions"] and rows[0][0] == qs.total_rows:
        return "full", answer
    if answer.get("partialResult") and answer["exceptions"]:
        return "partial", answer
    return "unflagged", answer


def _full(qs: Quickstart) -> bool:
    return _ask(qs)[0] == "full"


class QueryLoop:
    """Queries the broker about ten times a second on a thread; keeps (sent, took, outcome)."""

    def __init__(self, qs: Quickstart) -> None:
        self.qs = qs
        self.results: list[tuple[float, float, str, object]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="query-loop")

    def _run(self) -> None:
        while not self.stop.is_set():
            sent = time.monotonic()
            outcome, detail = _ask(self.qs)
            self.results.append((sent, time.monotonic() - sent, outcome, detail))
            self.stop.wait(0.1)

    def full_since(self, since: float, min_answers: int = 10) -> bool:
        """True when the last `min_answers` answers sent after `since` were all full."""
        after = [r for r in self.results if r[0] > since]
        return len(after) >= min_answers and all(r[2] == "full" for r in after[-min_answers:])


@pytest.mark.parametrize("kind", KINDS)
def test_a_killed_process_comes_back_and_answers_are_full_again(quickstart, kind):
    qs = quickstart
    before = _wait(lambda: _all_running(qs), 60, "every process running before the kill")
    victim = before[kind]
    loop = QueryLoop(qs)
    loop.thread.start()
    try:
        if kind == "kafka":
            _kafka_commit(before)
        time.sleep(1.5)
        killed_at = time.monotonic()
        os.kill(victim["pid"], signal.SIGKILL)
        after = _wait(
            lambda: (rows := _all_running(qs)) and rows[kind]["restarts"] == victim["restarts"] + 1
            and rows,
            60, f"{kind} to be restarted and running",
        )  # fmt: skip
        back_s = time.monotonic() - killed_at
        _wait(lambda: loop.full_since(killed_at), 60, "full answers again")
    finally:
        loop.stop.set()
        loop.thread.join(QUERY_TIMEOUT_MS / 1000 + 15)
    assert not loop.thread.is_alive(), "a query hung"

    gap = [r for r in loop.results if r[0] >= killed_at]
    not_full = [r for r in gap if r[2] != "full"]
    full_again_s = (
        max(sent + took for sent, took, _, _ in not_full) - killed_at if not_full else 0.0
    )
    outcomes = {o: sum(1 for r in gap if r[2] == o) for o in {r[2] for r in gap}}
    figures = {
        "back_after_s": round(back_s, 1),
        "full_again_after_s": round(full_again_s, 1),
        "answers_after_kill": len(gap),
        "partial": outcomes.get("partial", 0),
        "failed": len(not_full) - outcomes.get("partial", 0),
        "outcomes": outcomes,
        "slowest_s": round(max(took for _, took, _, _ in loop.results), 2),
        "partial_because": sorted(
            {r[3]["exceptions"][0]["message"][:160] for r in gap if r[2] == "partial"}
        ),
    }
    qs.figures[kind] = figures
    print(f"\nfault drill {kind}: {json.dumps(figures)}")

    assert assert_no_bad_answer(loop.results, kind)
    assert full_again_s <= FULL_AGAIN_WITHIN_S, figures
    new = after[kind]
    assert new["pid"] != victim["pid"] and new["last_exit"] == "killed by SIGKILL"
    others = {n: (r["pid"], r["restarts"]) for n, r in after.items() if n != kind}
    assert others == {n: (r["pid"], r["restarts"]) for n, r in before.items() if n != kind}, (
        "only the killed process restarts"
    )
    CHECK_AFTER[kind](qs, after)


def _all_running(qs: Quickstart) -> dict[str, dict] | None:
    rows = qs.status()
    return rows if all(r["state"] == "running" for r in rows.values()) else None


def assert_no_bad_answer(results, kind: str) -> bool:
    for _sent, took, outcome, detail in results:
        assert took < QUERY_TIMEOUT_MS / 1000 + MARGIN_S, f"{kind}: a query took {took:.1f} s"
        # with one broker, its own death refuses connections, and the restarted broker answers
        # a retryable 503 until its routing table is built; nothing else may
        allowed = {"full", "partial"} | ({"refused", "http 503"} if kind == "broker" else set())
        assert outcome in allowed, f"{kind}: {outcome}: {detail}"
        if outcome == "http 503":
            assert "no routing table yet" in detail, detail
        if outcome == "partial":
            assert detail["exceptions"][0]["message"], detail
    return True


def _servers_host_everything(qs: Quickstart, rows) -> None:
    """The restarted server loaded every segment again (from its data dir)."""
    _wait(lambda: _fully_replicated(qs, len(qs.segments)), 60, "both replicas ONLINE again")
    admin = rows["server-1"]["address"].split("admin :")[1]
    hosted = requests.get(f"http://127.0.0.1:{admin}/segments", timeout=10).json()
    loaded = [s for s in hosted["tables"][f"{TABLE}_OFFLINE"] if s["state"] == "ONLINE"]
    assert len(loaded) == len(qs.segments), hosted
    # and the broker sends it queries again
    query_port = rows["server-1"]["address"].split("query :")[1].split(",")[0]
    instance = f"Server_127.0.0.1_{query_port}"

    def traced() -> bool:
        body = {"sql": COUNT, "trace": True}
        answer = requests.post(f"{qs.broker}/query/sql", json=body, timeout=10).json()
        return instance in answer.get("traceInfo", {}) and not answer["exceptions"]

    _wait(traced, 30, f"the broker to route to {instance} again")


def _controller_serves(qs: Quickstart, rows) -> None:
    _wait(lambda: requests.get(f"{qs.controller}/health", timeout=5).text == "OK", 60,
          "the controller's health")  # fmt: skip
    tables = requests.get(f"{qs.controller}/tables", timeout=30).json()
    assert TABLE in tables["tables"]


def _minion_answers(qs: Quickstart, rows) -> None:
    redis_url = rows["redis"]["address"]
    _wait(lambda: minion_answers(redis_url, "minion_untagged"), 60, "the minion to run a task")


DRILL_GROUP = "fault-drill"
LAG_TOPIC = "consumer_offsets_json"  # made by the quickstart for its lag history


def _kafka_commit(rows) -> None:
    """Before Kafka is killed: a committed offset, which the restarted Kafka must still have."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": rows["kafka"]["address"], "group.id": DRILL_GROUP,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.commit(offsets=[TopicPartition(LAG_TOPIC, 0, 0)], asynchronous=False)
    consumer.close()


def _kafka_answers(qs: Quickstart, rows) -> None:
    """Kafka keeps its log directories in the data dir: the restarted broker has the topic and
    the committed offset it had before the SIGKILL."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": rows["kafka"]["address"]})
    _wait(lambda: admin.list_topics(timeout=5).brokers, 30, "the Kafka broker's metadata")
    assert LAG_TOPIC in admin.list_topics(timeout=5).topics

    def committed():
        request = [ConsumerGroupTopicPartitions(DRILL_GROUP, [TopicPartition(LAG_TOPIC, 0)])]
        try:
            found = admin.list_consumer_group_offsets(request)[DRILL_GROUP].result(10)
        except Exception:  # the coordinator loads its partitions after a restart
            return False
        return [tp.offset for tp in found.topic_partitions] == [0]

    _wait(committed, 30, "the offset committed before the kill")


def _everyone_registered_again(qs: Quickstart, rows) -> None:
    """ZooKeeper came back with its data: every instance is live again in a session of its
    own process, none of which restarted (checked by the caller)."""
    client = KazooClient(hosts=rows["zookeeper"]["address"])
    client.start(timeout=15)
    try:
        cluster = next(c for c in client.get_children("/") if c != "zookeeper")
        path = f"/{cluster}/LIVEINSTANCES"

        def live() -> set[str]:
            kinds = {i.split("_")[0] for i in client.get_children(path)}
            servers = sum(i.startswith("Server_") for i in client.get_children(path))
            return servers == 2 and {"Broker", "Controller", "Minion", "Server"} <= kinds

        _wait(live, 60, "every instance live again")
    finally:
        client.stop()
        client.close()
    _minion_answers(qs, rows)
    _controller_serves(qs, rows)
    # the controller, the servers and the broker follow changes again (watches re-set)
    started = time.monotonic()
    _upload(qs, qs.held_back, retry_503_s=30)
    print(f"fault drill zookeeper: the controller took a push again after "
          f"{time.monotonic() - started:.1f} s more")  # fmt: skip
    _wait(lambda: _full(qs), 60, "the segment pushed after the restart to be served")
    _wait(lambda: _fully_replicated(qs, len(qs.segments)), 60, "the new segment on both servers")


CHECK_AFTER = {
    "server-1": _servers_host_everything,
    "broker": lambda qs, rows: None,  # full answers again is the check
    "controller": _controller_serves,
    "minion": _minion_answers,
    "redis": _minion_answers,
    "kafka": _kafka_answers,
    "zookeeper": _everyone_registered_again,
}

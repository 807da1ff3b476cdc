"""Upsert benchmark (issue 24.11): the real stack (ZooKeeper, Apache Kafka, a controller, one
server and a broker as processes, ``bench.realtime_stack``) and the primary-key map in process.

    python -m bench.upsert [--events 300000] [--keys 100000] [--restart-keys 1000000]
                           [--dir var/bench]

1. **Ingestion per core.** ``--events`` change events over ``--keys`` LONG keys (times mostly
   rising, 5% late) are produced to one 1-partition topic; a plain table and a FULL upsert
   table read it one after the other (never both at once, so the server's CPU belongs to one
   of them). Events per server CPU-second (user + system, /proc through psutil) between the
   first sample that sees rows and the last one before all are in, as bench.realtime does;
   the upsert figure is given as a ratio to the plain one of the same run.
2. **Memory per primary key.** 1M keys consumed in 10,000-row batches through the real path
   (``engine.upsert.ingest.index_batch``) into one partition's map, for a LONG key with
   ``hashFunction`` NONE and with MD5: the Python heap the map holds afterwards
   (``tracemalloc``, which numpy reports its arrays to: key index, entries, spare capacity,
   free lists) plus the valid-doc bitmaps (pyroaring's C heap, counted by their serialized
   size), per key.
3. **Restart to queryable** with ``--restart-keys`` keys committed in 4 segments: the server
   SIGKILLed and started again; the time from the start until the broker answers
   ``COUNT(*)`` with every key. Once on a table without snapshots (every segment replayed),
   once on a table with ``snapshot``/``preload`` ENABLE (the first table deleted before, so
   the server loads one table each time); three restarts each, the target on the median.
4. **Selective query**: ``SELECT id, v FROM t WHERE id = <k>`` on the upsert table of step 1
   against the plain one, interleaved; the median round trip through the broker per table.

The machine is small and shared: CPU figures are what to compare across runs.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import orjson
import psutil
import pyarrow as pa
import requests

from bench.realtime import produce_all
from bench.realtime_stack import Cluster
from engine.spi import Schema, TableConfig
from engine.upsert.context import UpsertContext
from engine.upsert.ingest import index_batch
from engine.upsert.partition import PartitionMetadata
from sprig.stack.kafka import kafka_version
from sprig.stack.producer import ensure_topic

TARGET_INGEST_RATIO = 0.5
TARGET_BYTES_PER_KEY = 100
TARGET_RESTART_S = 10.0
TARGET_QUERY_RATIO = 1.2
SEGMENTS = 4
NO_COMMIT = 50_000_000
RESTARTS = 3  # per table; the target is on the median


def _times(runs: list[tuple[float, float]]) -> str:
    return ", ".join(f"{wall:.2f} ({cpu:.2f} CPU)" for wall, cpu in runs)


def _median_wall(runs: list[tuple[float, float]]) -> float:
    return statistics.median(wall for wall, _ in runs)


def schema(name: str) -> dict:
    return {
        "schemaName": name, "primaryKeyColumns": ["id"],
        "dimensionFieldSpecs": [{"name": "id", "dataType": "LONG"},
                                {"name": "cat", "dataType": "STRING"}],
        "metricFieldSpecs": [{"name": "v", "dataType": "LONG"}],
        "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
                                "granularity": "1:MILLISECONDS"}],
    }  # fmt: skip


def table(name: str, topic: str, bootstrap: str, flush_rows: int, upsert: dict | None) -> dict:
    config = {
        "tableName": name, "tableType": "REALTIME",
        "segmentsConfig": {"timeColumnName": "ts", "schemaName": name,
                           "replicasPerPartition": "1"},
        "tableIndexConfig": {"loadMode": "MMAP", "streamConfigs": {
            "streamType": "kafka", "stream.kafka.topic.name": topic,
            "stream.kafka.broker.list": bootstrap,
            "stream.kafka.decoder.class.name":
                "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
            "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
            "realtime.segment.flush.threshold.rows": str(flush_rows),
            "realtime.segment.flush.threshold.time": "6h"}},
        "routing": {"instanceSelectorType": "strictReplicaGroup"},
        "tenants": {}, "metadata": {},
    }  # fmt: skip
    if upsert is not None:
        config["upsertConfig"] = upsert
    return config


def change_events(n: int, keys: int, seed: int) -> list[bytes]:
    """``n`` events over ``keys`` keys (each key at least once when n >= keys), times rising
    with 5% late ones."""
    rnd = random.Random(seed)
    ids = list(range(keys)) + [rnd.randrange(keys) for _ in range(max(0, n - keys))]
    rnd.shuffle(ids)
    out, clock = [], 1_700_000_000_000
    for i, key in enumerate(ids[:n]):
        clock += 1
        ts = clock - (rnd.randint(1, 5_000) if rnd.random() < 0.05 else 0)
        out.append(orjson.dumps({"id": key, "v": i, "cat": f"c{key % 50}", "ts": ts}))
    return out


class Payloads:
    """Pre-serialised events in the shape ``bench.realtime.produce_all`` reads."""

    def __init__(self, payloads: list[bytes]) -> None:
        self.payloads = payloads

    def event(self, i: int, _now_s: float) -> bytes:
        return self.payloads[i]


def produce(bootstrap: str, topic: str, payloads: list[bytes]) -> None:
    produce_all(bootstrap, topic, Payloads(payloads), len(payloads))


class Bench:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.broker = f"http://127.0.0.1:{cluster.broker_port}/query/sql"
        self.http = requests.Session()

    def create(self, name: str, topic: str, flush_rows: int, upsert: dict | None) -> None:
        for path, body in (("/schemas", schema(name)),
                           ("/tables", table(name, topic, self.cluster.bootstrap, flush_rows,
                                             upsert))):  # fmt: skip
            response = requests.post(f"{self.cluster.controller}{path}", json=body, timeout=60)
            if not response.ok:
                raise RuntimeError(f"POST {path}: {response.status_code} {response.text[:300]}")

    def drop(self, name: str) -> None:
        response = requests.delete(f"{self.cluster.controller}/tables/{name}", timeout=60)
        if not response.ok:
            raise RuntimeError(f"DELETE {name}: {response.status_code} {response.text[:300]}")

    def query(self, sql: str) -> dict | None:
        try:
            answer = self.http.post(self.broker, json={"sql": sql}, timeout=30).json()
        except requests.RequestException:
            return None
        if answer.get("exceptions") or not answer.get("resultTable"):
            return None
        return answer

    def count(self, name: str, *, every_row: bool = False) -> int | None:
        prefix = "SET skipUpsert=true; " if every_row else ""
        answer = self.query(f"{prefix}SELECT COUNT(*) FROM {name}")
        return None if answer is None else int(answer["resultTable"]["rows"][0][0])

    def consume_rate(self, name: str, events: int, upsert: dict | None, topic: str) -> float:
        """Events per server CPU-second while ``name`` consumes the ``events`` of ``topic``."""
        self.create(name, topic, NO_COMMIT, upsert)
        samples = []  # (server cpu s, rows)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            rows = self.count(name, every_row=upsert is not None) or 0
            samples.append((self.cluster.server_cpu_s(), rows))
            if rows >= events:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"{name}: {samples[-1][1]} of {events} rows after 600 s")
        seen = [s for s in samples if 0 < s[1] < events] or samples
        first, last = seen[0], seen[-1]
        return (last[1] - first[1]) / max(last[0] - first[0], 1e-9)

    def wait(self, what: str, check, timeout_s: float = 600) -> None:
        deadline = time.monotonic() + timeout_s
        while not check():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: not after {timeout_s:.0f} s")
            time.sleep(0.2)

    def online(self, name: str) -> int:
        ideal = self.cluster.store.ideal_state(f"{name}_REALTIME")
        if ideal is None:
            return 0
        return sum(1 for m in ideal.segments.values() if set(m.values()) == {"ONLINE"})

    def restart_s(self, name: str, keys: int) -> tuple[float, float]:
        """SIGKILL the server, start it; seconds from the start until COUNT(*) is ``keys``,
        and the server's CPU seconds meanwhile (what the load of the machine does not inflate)."""
        server = self.cluster.server
        server.popen.send_signal(signal.SIGKILL)
        server.popen.wait(10)
        started = time.perf_counter()
        server.start()
        while self.count(name) != keys:
            if time.perf_counter() - started > 600:
                raise RuntimeError(f"{name} not queryable 600 s after the restart")
            time.sleep(0.05)
        took = time.perf_counter() - started
        self.cluster.server_ps = psutil.Process(server.pid)
        return took, self.cluster.server_cpu_s()

    def committed_table(self, name: str, topic: str, keys: int, upsert: dict) -> None:
        self.create(name, topic, keys // SEGMENTS, upsert)
        self.wait(f"{name}: {SEGMENTS} commits", lambda: self.online(name) >= SEGMENTS)
        self.wait(f"{name}: {keys} keys", lambda: self.count(name) == keys)
        time.sleep(2)  # the next consuming segment's start writes the snapshots

    def query_ms(self, names: list[str], keys: int, rounds: int = 300) -> dict[str, float]:
        rnd = random.Random(7)
        took: dict[str, list[float]] = {n: [] for n in names}
        for _ in range(rounds):
            key = rnd.randrange(keys)
            for name in names:
                started = time.perf_counter()
                answer = self.query(f"SELECT id, v FROM {name} WHERE id = {key} LIMIT 10")
                took[name].append((time.perf_counter() - started) * 1000)
                if answer is None:
                    raise RuntimeError(f"{name}: the selective query failed")
        return {n: statistics.median(t) for n, t in took.items()}


def memory_per_key(hash_function: str, keys: int = 1_000_000, batch: int = 10_000) -> dict:
    """Bytes the map of one partition holds per key after ``keys`` keys were consumed."""
    body = table("mem", "mem", "localhost:9092", NO_COMMIT,
                 {"mode": "FULL", "hashFunction": hash_function})  # fmt: skip
    spec = Schema.from_json(schema("mem"))
    context = UpsertContext.of(TableConfig.from_json(body, spec), spec)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    part = PartitionMetadata(context, 0)
    tracked = part.track("mem__0__0__20260101T0000Z", None, mutable=True, sequence=0,
                         creation_ms=1)  # fmt: skip
    docs = [0]

    def append(rows: pa.Table, _errors) -> int:
        first = docs[0]
        docs[0] += rows.num_rows
        return first

    for start in range(0, keys, batch):
        ids = np.arange(start, min(keys, start + batch), dtype=np.int64)
        rows = pa.table({"id": ids, "ts": ids + 1_700_000_000_000})
        index_batch(part, tracked, rows, append)
    heap = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    bitmaps = sum(len(t.valid.serialize()) for t in part.segments.values())
    if part.num_keys != keys:
        raise RuntimeError(f"{part.num_keys} keys in the map, {keys} consumed")
    return {"per_key": (heap + bitmaps) / keys, "heap": heap, "bitmaps": bitmaps,
            "reported": part.memory_bytes / keys}  # fmt: skip


def target(name: str, value: float, goal: float, *, at_least: bool, unit: str) -> str:
    ok = value >= goal if at_least else value <= goal
    sign = ">=" if at_least else "<="
    return f"target  {name:<44} {sign} {goal:>6,g} {unit:<6} got {value:>9,.2f}  " + (
        "ok" if ok else "MISS"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--restart-keys", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=Path("var/bench"))
    args = parser.parse_args(argv)
    if args.keys < 1000 or args.events < args.keys or args.restart_keys % SEGMENTS:
        parser.error(f"need --events >= --keys >= 1000, --restart-keys a multiple of {SEGMENTS}")
    load_before = os.getloadavg()[0]
    memory = {h: memory_per_key(h) for h in ("NONE", "MD5")}
    args.dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sprig-bench-upsert-", dir=args.dir) as tmp:
        cluster = Cluster(Path(tmp))
        bench = Bench(cluster)
        try:
            for topic in ("changes", "restart"):
                ensure_topic(cluster.bootstrap, topic)
            produce(cluster.bootstrap, "changes", change_events(args.events, args.keys, 1))
            plain = bench.consume_rate("plainT", args.events, None, "changes")
            full = bench.consume_rate("upsertT", args.events, {"mode": "FULL"}, "changes")
            if bench.count("upsertT") != args.keys:
                raise RuntimeError(f"upsertT counts {bench.count('upsertT')}, not {args.keys}")
            query = bench.query_ms(["plainT", "upsertT"], args.keys)
            produce(cluster.bootstrap, "restart",
                    change_events(args.restart_keys, args.restart_keys, 2))  # fmt: skip
            bench.committed_table("noSnap", "restart", args.restart_keys,
                                  {"mode": "FULL", "snapshot": "DISABLE"})  # fmt: skip
            cold = [bench.restart_s("noSnap", args.restart_keys) for _ in range(RESTARTS)]
            bench.drop("noSnap")
            snapshot = {"mode": "FULL", "snapshot": "ENABLE", "preload": "ENABLE"}
            bench.committed_table("withSnap", "restart", args.restart_keys, snapshot)
            warm = [bench.restart_s("withSnap", args.restart_keys) for _ in range(RESTARTS)]
        finally:
            cluster.stop()

    print(f"\nbench.upsert: 1 partition, 1 server, Apache Kafka {kafka_version()}; "
          f"{args.events:,} events over {args.keys:,} LONG keys; 1-minute load average "
          f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, on "
          f"{os.cpu_count()} cores\n")  # fmt: skip
    print(f"plain append        {plain:>10,.0f} events per server CPU-second")
    print(f"FULL upsert         {full:>10,.0f} events per server CPU-second")
    for h, m in memory.items():
        print(f"map, hash {h:<5}    {m['per_key']:>10.1f} B/key  (heap {m['heap'] / 1e6:.1f} MB "
              f"+ bitmaps {m['bitmaps'] / 1e6:.2f} MB for 1M keys; the map's own count "
              f"{m['reported']:.1f} B/key)")  # fmt: skip
    print(
        f"restart, no snapshot       {_times(cold)} s; snapshot+preload {_times(warm)} s "
        f"({args.restart_keys:,} keys in {SEGMENTS} committed segments)"
    )
    print(f"selective query     plain {query['plainT']:.2f} ms, upsert {query['upsertT']:.2f} ms "
          "(round trip through the broker, median of 300 each, interleaved)\n")  # fmt: skip
    print(target("FULL upsert ingestion per core / plain", full / plain, TARGET_INGEST_RATIO,
                 at_least=True, unit="x"))  # fmt: skip
    print(target("memory per primary key, LONG, hash NONE", memory["NONE"]["per_key"],
                 TARGET_BYTES_PER_KEY, at_least=False, unit="B"))  # fmt: skip
    print(target("memory per primary key, LONG, hash MD5", memory["MD5"]["per_key"],
                 TARGET_BYTES_PER_KEY, at_least=False, unit="B"))  # fmt: skip
    print(target("restart to queryable, 1M keys, snapshot", _median_wall(warm),
                 TARGET_RESTART_S, at_least=False, unit="s"))  # fmt: skip
    print(f"        {'restart to queryable, 1M keys, no snapshot':<44} (no target)"
          f"{'':>10}got {_median_wall(cold):>9,.2f}")  # fmt: skip
    print(target("selective query, upsert / plain", query["upsertT"] / query["plainT"],
                 TARGET_QUERY_RATIO, at_least=False, unit="x"))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Real-time ingestion benchmark: githubEvents-shaped JSON from the local Kafka into ONE server.

    python -m bench.realtime [--events 1000000] [--rate 20000] [--duration 20] [--idle-s 30]
                             [--dir var/bench]

Starts ZooKeeper, Apache Kafka, a controller, one server and a broker as separate processes
(``sprig.stack``; the cluster and the events are ``bench.realtime_stack``), and measures five
things:

0. **Idle cost.** A table on an empty 4-partition topic, alone on the server: the server's CPU
   time over ``--idle-s`` seconds while its 4 consumers wait for records (long polls held at
   Kafka), as a share of one core.
1. **Consumption rate.** ``--events`` events (Pinot's githubEvents sample, each with a unique
   id and a fresh ``created_at``, lz4-compressed by the producer) are produced to a
   1-partition topic first; then a REALTIME table like Pinot's githubEvents example (id
   inverted, ``created_at_timestamp`` derived by a transform) is created with a flush
   threshold of ``--events`` rows. While the server consumes, the bench samples the server process's CPU time (user + system, /proc through
   psutil) and ``SELECT COUNT(*)`` through the broker. Events per CPU-second (decode,
   transform, coercion and indexing, plus the Kafka client's own threads) and wall events/s
   are taken between the first sample that sees rows and the last one before the threshold,
   so table creation and the commit are left out.
2. **RSS per 1M rows** held in the mutable segment: the slope of the server's RSS over the
   rows held (least squares over the samples past a tenth of the rows), scaled to 1M rows.
   It counts everything the rows cost the process (column buffers, dictionaries, the
   inverted index, what the allocator kept) but not fixed costs such as the Kafka client's
   prefetch queue; the total RSS growth since before the table existed is printed beside it.
3. **Commit time** of that ``--events``-row segment: from the first sample that counts all
   the rows (the threshold is hit; sampled every 20 ms near it) to the segment's ZK metadata
   turning DONE (polled every 20 ms): the completion protocol, the build with every index,
   the tar, the upload and commitEnd.
4. **Freshness** at a fixed offered rate: a producer thread sends ``--rate`` events/s to a
   second table's topic for ``--duration`` s (in 2 ms ticks), stamping each event's send
   time, while a poller sends ``SELECT COUNT(*)`` to the broker every ``--poll-ms`` (20 ms;
   back to back it would take the CPU the server consumes with). An event is
   visible when the first answer whose count covers it arrives (one partition, so a count
   of c covers the first c events); freshness is that arrival minus the send time. p50, p99
   and max over the events after the first second.

The machine is small (2 cores) and shared; the producer, the poller, the broker and the
server all compete for it, so wall figures are noisy: compare CPU figures across runs.
"""

from __future__ import annotations

import argparse
import http.client
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from confluent_kafka import Producer

from bench.realtime_stack import PRODUCER, Cluster, EventSource
from engine.clusterstate.realtime_metadata import DONE
from sprig.stack.kafka import kafka_version
from sprig.stack.producer import ensure_topic

TARGET_IDLE_CORE_SHARE = 0.01
IDLE_PARTITIONS = 4
TARGET_PER_CORE = 50_000
TARGET_FRESH_P99_S = 1.0
TARGET_COMMIT_S = 10.0


def produce_all(bootstrap: str, topic: str, source: EventSource, events: int) -> float:
    """Produce ``events`` events as fast as the broker takes them; returns the seconds."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, **PRODUCER})
    started = time.perf_counter()
    now = time.time()
    for i in range(events):
        payload = source.event(i, now)
        while True:
            try:
                producer.produce(topic, payload, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
            now = time.time()
    if producer.flush(300) != 0:
        raise RuntimeError(f"could not produce {events} events to {topic}")
    return time.perf_counter() - started


def idle_cost(cluster: Cluster, table: str, seconds: float) -> dict:
    """Phase 0: the server's CPU over ``seconds`` with IDLE_PARTITIONS consuming segments and
    no record to read, after a short settling time."""
    ensure_topic(cluster.bootstrap, table, IDLE_PARTITIONS)
    cluster.create_table(table, table, 1_000_000)
    cluster.consuming_segments(table, IDLE_PARTITIONS)
    time.sleep(5)  # the consumers' first fetches, the segments' first metadata round
    cpu, wall = cluster.server_cpu_s(), time.perf_counter()
    time.sleep(seconds)
    used = cluster.server_cpu_s() - cpu
    return {"core_share": used / (time.perf_counter() - wall), "cpu_s": used}


def consumption(cluster: Cluster, table: str, events: int) -> dict:
    """Phases 1-3: consume ``events`` pre-produced events, then commit them."""
    rss_before = cluster.server_rss()
    cluster.create_table(table, table, events)
    segment = cluster.first_segment(table)
    samples = []  # (wall, server cpu s, rss, count)
    deadline = time.monotonic() + max(600, events / 1000)
    while time.monotonic() < deadline:
        count = cluster.count(table) or 0
        samples.append((time.perf_counter(), cluster.server_cpu_s(), cluster.server_rss(), count))
        if count >= events:
            break
        time.sleep(0.02 if count > 0.97 * events else 0.25)
    else:
        raise RuntimeError(f"{table}: only {samples[-1][3]} of {events} rows after the deadline")
    threshold_at, threshold_cpu = samples[-1][0], samples[-1][1]
    # a small segment may commit between two samples: then only a bound is known
    done_before = cluster.segment_status(table, segment) == DONE and len(samples) > 1
    if done_before:
        threshold_at, threshold_cpu = samples[-2][0], samples[-2][1]
    while cluster.segment_status(table, segment) != DONE:
        if time.perf_counter() - threshold_at > 600:
            raise RuntimeError(f"{segment} not DONE 600 s after its threshold")
        time.sleep(0.02)
    commit_s = time.perf_counter() - threshold_at
    commit_cpu_s = cluster.server_cpu_s() - threshold_cpu
    seen = [s for s in samples if 0 < s[3] < events]
    # a small run may be consumed between two samples: then from the first sample (a bound)
    first, last = (seen[0], seen[-1]) if len(seen) > 1 else (samples[0], samples[-1])
    rows = last[3] - first[3]
    # RSS per row: the slope of RSS over the rows held (least squares over the samples past
    # a tenth of the rows), so fixed costs (the Kafka client's prefetch queue, the allocator's
    # first arenas) are not charged to the rows; the total growth is reported too
    later = [s for s in seen if s[3] > events // 10]
    slope = (
        float(np.polyfit([s[3] for s in later], [s[2] for s in later], 1)[0])
        if len(later) >= 3 else float("nan")
    )  # fmt: skip
    return {
        "per_cpu_s": rows / max(last[1] - first[1], 1e-9),
        "wall_per_s": rows / max(last[0] - first[0], 1e-9),
        "rss_per_1m": slope * 1_000_000,
        "rss_growth": last[2] - rss_before,
        "rss_rows": last[3],
        "rows_measured": rows,
        "commit_s": commit_s,
        "commit_cpu_s": commit_cpu_s,
        "commit_bound": done_before,
        "segment": segment,
    }


def freshness(cluster: Cluster, table: str, source: EventSource, rate: float,
              duration_s: float, poll_s: float) -> dict:  # fmt: skip
    """Phase 4: produce at ``rate`` events/s for ``duration_s``, poll COUNT(*) meanwhile."""
    cluster.create_table(table, table, 50_000_000)
    cluster.first_segment(table)
    deadline = time.monotonic() + 60
    while cluster.count(table) is None:  # until the consuming segment is routable
        if time.monotonic() > deadline:
            raise RuntimeError(f"{table} never became queryable")
        time.sleep(0.1)
    total = int(rate * duration_s)
    sent_at = np.zeros(total)
    visible_at = np.full(total, np.nan)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 2, **PRODUCER})
    done = threading.Event()
    produced = [0]

    def produce() -> None:
        tick = 0.002
        start = time.perf_counter()
        i = 0
        while i < total:
            due = min(total, int((time.perf_counter() - start) * rate))
            now = time.time()
            while i < due:
                sent_at[i] = time.perf_counter()
                try:
                    producer.produce(table, source.event(i, now), partition=0)
                except BufferError:
                    producer.poll(0.01)
                    continue
                i += 1
            produced[0] = i
            producer.poll(0)
            time.sleep(max(0.0, start + (i / rate) + tick - time.perf_counter()))
        producer.flush(60)
        done.set()

    def poll() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", cluster.broker_port, timeout=30)
        covered = 0
        drain_until = None
        next_at = time.perf_counter()
        while covered < total:
            # paced, not back to back: on 2 shared cores a poller flat out would take the CPU
            # the server consumes with; the pacing bounds the added latency to poll_s
            next_at += poll_s
            time.sleep(max(0.0, next_at - time.perf_counter()))
            count = cluster.count(table, conn) or 0
            arrived = time.perf_counter()
            if count > covered:
                visible_at[covered : min(count, total)] = arrived
                covered = min(count, total)
            if done.is_set():
                drain_until = drain_until or arrived + 30
                if arrived > drain_until:
                    break

    threads = [threading.Thread(target=poll), threading.Thread(target=produce)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    warm = int(rate)  # leave the first second out: connections and first fetches
    latency = (visible_at - sent_at)[warm:]
    seen = latency[~np.isnan(latency)]
    achieved = produced[0] / max(duration_s, 1e-9)
    return {
        "p50": float(np.percentile(seen, 50)) if len(seen) else float("nan"),
        "p99": float(np.percentile(seen, 99)) if len(seen) else float("nan"),
        "max": float(seen.max()) if len(seen) else float("nan"),
        "missing": int(np.isnan(latency).sum()),
        "events": total,
        "offered": achieved,
    }


def target(name: str, value: float, goal: float, *, at_least: bool, unit: str) -> str:
    ok = value >= goal if at_least else value < goal
    sign = ">=" if at_least else "<"
    return f"target  {name:<34} {sign} {goal:>10,g} {unit:<8} got {value:>12,.2f}  " + (
        "ok" if ok else "MISSED"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000,
                        help="events consumed and committed as one segment")  # fmt: skip
    parser.add_argument("--rate", type=float, default=20_000, help="offered events/s (freshness)")
    parser.add_argument("--duration", type=float, default=20.0, help="freshness run, seconds")
    parser.add_argument("--idle-s", type=float, default=30.0,
                        help="how long the idle server's CPU is measured")  # fmt: skip
    parser.add_argument("--poll-ms", type=float, default=20.0,
                        help="the freshness poller's COUNT(*) interval")  # fmt: skip
    parser.add_argument("--dir", type=Path, default=Path("var/bench"))
    args = parser.parse_args(argv)
    if args.events < 10_000 or args.rate <= 0 or args.duration < 2:
        parser.error("--events must be >= 10000, --rate > 0 and --duration >= 2")
    if not 1 <= args.poll_ms <= 1000:
        parser.error("--poll-ms must be in 1..1000 (it bounds the freshness resolution)")

    source = EventSource()
    load_before = os.getloadavg()[0]
    args.dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sprig-bench-rt-", dir=args.dir) as tmp:
        cluster = Cluster(Path(tmp))
        try:
            idle = idle_cost(cluster, "ghIdle", args.idle_s)
            ensure_topic(cluster.bootstrap, "ghBulk")
            ensure_topic(cluster.bootstrap, "ghFresh")
            produce_s = produce_all(cluster.bootstrap, "ghBulk", source, args.events)
            bulk = consumption(cluster, "ghBulk", args.events)
            fresh = freshness(cluster, "ghFresh", source, args.rate, args.duration,
                              args.poll_ms / 1000)  # fmt: skip
        finally:
            cluster.stop()

    print(f"\nbench.realtime: githubEvents-shaped JSON (~{source.mean_bytes:,} B/event), 1 "
          f"partition, 1 server, Apache Kafka {kafka_version()}; {args.events:,} events produced "
          f"up front in {produce_s:.1f} s; 1-minute load average {load_before:.1f} at the "
          f"start, {os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} cores\n")  # fmt: skip
    rows = [
        (f"idle server, {IDLE_PARTITIONS} partitions (% core)", f"{idle['core_share'] * 100:.2f}",
         f"{idle['cpu_s']:.2f} CPU s over {args.idle_s:g} s, consumers waiting on long polls"),
        ("events/s per server core (CPU)", f"{bulk['per_cpu_s']:,.0f}",
         f"over {bulk['rows_measured']:,} rows, decode+transform+index+Kafka client"),
        ("events/s wall (1 server)", f"{bulk['wall_per_s']:,.0f}", "same interval"),
        ("RSS per 1M rows (MB)", f"{bulk['rss_per_1m'] / 1e6:,.0f}",
         f"slope of server RSS over rows held; total growth {bulk['rss_growth'] / 1e6:,.0f} MB "
         f"at {bulk['rss_rows']:,} rows"),
        (f"commit of {args.events:,} rows (s)",
         ("<= " if bulk["commit_bound"] else "") + f"{bulk['commit_s']:.2f}",
         f"threshold hit -> segment DONE in ZK; server CPU meanwhile "
         f"{bulk['commit_cpu_s']:.2f} s (build, tar, protocol)"),
        (f"freshness p50 (s) @ {args.rate:,.0f}/s", f"{fresh['p50']:.3f}",
         f"{fresh['events']:,} events over {args.duration:g} s, offered "
         f"{fresh['offered']:,.0f}/s, COUNT(*) every {args.poll_ms:g} ms"),
        (f"freshness p99 (s) @ {args.rate:,.0f}/s", f"{fresh['p99']:.3f}",
         f"max {fresh['max']:.3f} s, {fresh['missing']} never seen"),
    ]  # fmt: skip
    print(f"{'measure':<38} {'value':>12}  note")
    print("-" * 100)
    for name, value, note in rows:
        print(f"{name:<38} {value:>12}  {note}")
    print()
    print(target(f"idle server, {IDLE_PARTITIONS} partitions", idle["core_share"] * 100,
                 TARGET_IDLE_CORE_SHARE * 100, at_least=False, unit="% core"))  # fmt: skip
    print(target("events/s per server core", bulk["per_cpu_s"], TARGET_PER_CORE,
                 at_least=True, unit="ev/s"))  # fmt: skip
    print(target("freshness p99", fresh["p99"], TARGET_FRESH_P99_S, at_least=False, unit="s"))
    print(target(f"commit of {args.events:,} rows", bulk["commit_s"], TARGET_COMMIT_S,
                 at_least=False, unit="s"))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

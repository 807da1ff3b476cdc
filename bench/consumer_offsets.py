"""Consumer-offset monitoring benchmark: the `__consumer_offsets` decoder and the lag collector.

    .venv/bin/python -m bench.consumer_offsets [--records 1000000] [--groups 1000] [--passes 5]
                                               [--partitions 50] [--real-groups 1000]

1. **Decoder, every value version.** `--records` encoded offset commits (key type 1; values
   v3 70%, v0, v1 and the flexible v4 10% each, as Kafka 2.1 to 4.1 write them) are built
   first; then the time of `ConsumerOffsetsDecoder.decode` over all of them (records/s), and of
   decode plus the seed JSON (`orjson.dumps(record.to_json())`, what the stream job produces).
2. **Collector, recorded answer.** `--groups` x `--partitions` group partitions (1000 x 50 =
   50k): the AdminClient is replaced by one that answers instantly with the confluent-kafka
   result objects a broker's answer becomes (ListGroups, DescribeGroups with one member owning
   the partitions, OffsetFetch, Metadata, ListOffsets), so this measures the collector's own
   processing of a 50k-partition poll: `KafkaGroupReader.group_offsets` (futures, rows,
   lag), the sampler's JSON records, and the Prometheus series (observe + lines). Target: a
   50k-partition poll under 5 s.
3. **Live, on Apache Kafka (started here).** `--real-groups` groups each commit every partition
   of one `--partitions`-partition topic, twice (made first, not timed). Then:
   - the decoder over the records read back from Kafka's own `__consumer_offsets` (all its
     partitions: the commits, group metadata and whatever else Kafka wrote), decoded
     `--passes` times (records/s; target >= 200k/s);
   - one collector poll (list, describe, offsets, end offsets) timed end to end (target
     < 5 s). The client asks OffsetFetch one group per request, so this includes 1,000
     round trips.
"""

from __future__ import annotations

import argparse
import random
import struct
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path

import orjson
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    Node,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    ConsumerGroupDescription,
    ConsumerGroupListing,
    ListConsumerGroupsResult,
    ListOffsetsResultInfo,
    MemberAssignment,
    MemberDescription,
    NewTopic,
)

from engine.common.clock import now_ms
from monitoring.consumer_offsets import ConsumerOffsetsDecoder
from monitoring.exporter import LagExporter
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.sampler import sample_records
from sprig.stack import LocalStack
from sprig.stack.kafka import kafka_version

TARGET_DECODE_PER_S = 200_000
TARGET_POLL_S = 5.0


def target(name: str, value: float, goal: float, *, at_least: bool, unit: str) -> str:
    ok = value >= goal if at_least else value < goal
    sign = ">=" if at_least else "<"
    return f"target  {name:<44} {sign} {goal:>10,g} {unit:<10} got {value:>12,.2f}  " + (
        "ok" if ok else "MISSED"
    )


# -- 1. decoder ---------------------------------------------------------------------------------
def _str16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def encoded_commits(count: int, seed: int = 7) -> list[tuple[bytes, bytes]]:
    rng = random.Random(seed)
    keys = [
        struct.pack(">h", 1) + _str16(f"app-{g}") + _str16(f"topic-{g % 40}") + struct.pack(">i", p)
        for g in range(200)
        for p in range(50)
    ]
    out = []
    for n in range(count):
        offset, ts, meta = rng.randrange(1 << 40), 1_700_000_000_000 + n, b"\x00\x00"
        kind = n % 10
        if kind < 7:  # v3: offset, leaderEpoch, metadata, commitTimestamp
            value = struct.pack(">hqi", 3, offset, 5) + meta + struct.pack(">q", ts)
        elif kind == 7:
            value = struct.pack(">hq", 0, offset) + meta + struct.pack(">q", ts)
        elif kind == 8:  # v1 adds expireTimestamp
            value = struct.pack(">hq", 1, offset) + meta + struct.pack(">qq", ts, -1)
        else:  # v4: compact metadata (1 = empty) and an empty tagged-field section
            value = struct.pack(">hqi", 4, offset, 5) + b"\x01" + struct.pack(">q", ts) + b"\x00"
        out.append((keys[n % len(keys)], value))
    return out


def bench_decoder(records: int) -> None:
    data = encoded_commits(records)
    decoder = ConsumerOffsetsDecoder()
    decode = decoder.decode
    started = time.perf_counter()
    for key, value in data:
        decode(key, value)
    decode_s = time.perf_counter() - started
    assert decoder.stats.offset_commits == records and not decoder.stats.skipped
    dumps = orjson.dumps
    started = time.perf_counter()
    for key, value in data:
        dumps(decode(key, value).to_json())
    json_s = time.perf_counter() - started
    print(f"decoder (built records, value versions 0-4): {records:,} commit records decoded "
          f"in {decode_s:.2f} s = {records / decode_s:,.0f} records/s")  # fmt: skip
    print(f"decoder + seed JSON (orjson): {json_s:.2f} s = {records / json_s:,.0f} records/s")


# -- 2. collector over a recorded answer --------------------------------------------------------
def _done(value) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


class _Partition:
    def __init__(self) -> None:
        self.leader, self.error = 1, None


class _Topic:
    def __init__(self, partitions: int) -> None:
        self.error = None
        self.partitions = {p: _Partition() for p in range(partitions)}


class _Metadata:
    def __init__(self, topics: dict) -> None:
        self.topics = topics


class RecordedAdmin:
    """Answers the collector's admin calls at once with the result objects confluent-kafka
    builds from a broker's answer: `groups` groups, each with one member owning `partitions`
    partitions of its own topic, committed 1,000 behind an end offset of 1,000,000. Every
    answer is built up front, so the timed poll is the collector's own work."""

    def __init__(self, groups: int, partitions: int) -> None:
        node = Node(1, "127.0.0.1", 9092)
        self.groups = [f"app-{g:04d}" for g in range(groups)]
        tps = {
            g: [TopicPartition(f"events-{g}", p) for p in range(partitions)] for g in self.groups
        }
        self._listing = ListConsumerGroupsResult(
            valid=[ConsumerGroupListing(g, False, ConsumerGroupState.STABLE) for g in self.groups]
        )
        self._descriptions = {
            g: ConsumerGroupDescription(
                g, False,
                [MemberDescription(f"{g}-member", "client", "/10.0.0.1", MemberAssignment(tps[g]))],
                "range", ConsumerGroupState.STABLE, node,
            )
            for g in self.groups
        }  # fmt: skip
        self._offsets = {
            g: ConsumerGroupTopicPartitions(
                g, [TopicPartition(tp.topic, tp.partition, 999_000) for tp in tps[g]]
            )
            for g in self.groups
        }
        self._metadata = _Metadata({f"events-{g}": _Topic(partitions) for g in self.groups})
        self._ends = {
            (tp.topic, tp.partition): _done(ListOffsetsResultInfo(1_000_000, -1, -1))
            for g in self.groups
            for tp in tps[g]
        }
        self._described = {g: _done(d) for g, d in self._descriptions.items()}
        self._fetched = {g: _done(o) for g, o in self._offsets.items()}

    def list_consumer_groups(self, **_):
        return _done(self._listing)

    def describe_consumer_groups(self, group_ids, **_):
        return {g: self._described[g] for g in group_ids}

    def list_consumer_group_offsets(self, request, **_):
        group = request[0].group_id
        return {group: self._fetched[group]}

    def list_topics(self, **_):
        return self._metadata

    def list_offsets(self, request, **_):
        return {tp: self._ends[(tp.topic, tp.partition)] for tp in request}


def _time_poll(reader: KafkaGroupReader) -> tuple[float, list]:
    started = time.perf_counter()
    offsets = reader.group_offsets(listing.group_id for listing in reader.list_groups())
    return time.perf_counter() - started, offsets


def _time_outputs(offsets: list, label: str) -> None:
    started = time.perf_counter()
    records = sample_records(offsets, now_ms())
    payloads = [orjson.dumps(r) for r in records]
    sample_s = time.perf_counter() - started
    exporter = LagExporter("bench")
    started = time.perf_counter()
    exporter.observe(offsets, now_ms(), 0.0)
    lines = exporter.lines()
    metrics_s = time.perf_counter() - started
    print(f"  {label}: {len(payloads):,} sampler JSON records in {sample_s:.2f} s; "
          f"{len(lines):,} Prometheus lines (observe + render) in {metrics_s:.2f} s")  # fmt: skip


def bench_recorded(groups: int, partitions: int) -> None:
    reader = KafkaGroupReader("recorded:0")
    reader._admin = RecordedAdmin(groups, partitions)  # the bench's stand-in for the broker
    poll_s, offsets = _time_poll(reader)
    rows = sum(len(entry.rows) for entry in offsets)
    assert rows == groups * partitions and offsets[0].rows[0].lag == 1_000
    print(
        f"collector (recorded AdminClient answer, processing only): {groups:,} groups x "
        f"{partitions} partitions = {rows:,} partition rows polled in {poll_s:.2f} s"
    )
    print(target("recorded poll of 50k partitions", poll_s, TARGET_POLL_S, at_least=False,
                 unit="s"))  # fmt: skip
    _time_outputs(offsets, "recorded")


# -- 3. live, on Apache Kafka ------------------------------------------------------------------
def read_offsets_topic(bootstrap: str) -> list[tuple[bytes, bytes | None]]:
    """Every (key, value) of Kafka's own __consumer_offsets, all partitions to their end."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-reader",
                       "enable.auto.commit": False, "enable.partition.eof": True})  # fmt: skip
    meta = reader.list_topics("__consumer_offsets", timeout=30).topics["__consumer_offsets"]
    reader.assign([TopicPartition("__consumer_offsets", p, 0) for p in meta.partitions])
    records, done = [], set()
    while len(done) < len(meta.partitions):
        for message in reader.consume(10_000, timeout=5):
            if message.error() is None:
                records.append((message.key(), message.value()))
            else:
                done.add(message.partition())
    reader.close()
    return records


def bench_real_records(bootstrap: str, passes: int) -> None:
    records = read_offsets_topic(bootstrap)
    decoder = ConsumerOffsetsDecoder()
    decode = decoder.decode
    started = time.perf_counter()
    for _ in range(passes):
        for key, value in records:
            decode(key, value)
    decode_s = time.perf_counter() - started
    stats = decoder.stats
    kinds = (f"{stats.offset_commits // passes:,} commits, {stats.group_metadata // passes:,} "
             f"group metadata, {stats.skipped_total // passes:,} other")  # fmt: skip
    total = len(records) * passes
    print(f"decoder (read back from Kafka {kafka_version()}'s own __consumer_offsets): "
          f"{len(records):,} records ({kinds}) x {passes} passes in {decode_s:.2f} s = "
          f"{total / decode_s:,.0f} records/s")  # fmt: skip
    print(target("decoder on real __consumer_offsets records", total / decode_s,
                 TARGET_DECODE_PER_S, at_least=True, unit="records/s"))  # fmt: skip


def bench_live(groups: int, partitions: int, passes: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-offsets-") as workdir:
        stack = LocalStack(Path(workdir), ("kafka",)).start()
        try:
            bootstrap = stack.kafka.bootstrap_servers
            topic = "bench-events"
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(30)
            producer = Producer({"bootstrap.servers": bootstrap})
            for p in range(partitions):
                for _ in range(2):
                    producer.produce(topic, value=b"x", partition=p)
            producer.flush(30)
            started = time.perf_counter()
            for g in range(groups):
                consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"app-{g:04d}",
                                     "enable.auto.commit": False})  # fmt: skip
                for offset in (1, 2):
                    request = [TopicPartition(topic, p, offset) for p in range(partitions)]
                    consumer.commit(offsets=request, asynchronous=False)
                consumer.close()
            setup_s = time.perf_counter() - started
            print(f"live: {groups:,} groups committed {partitions} partitions twice in "
                  f"{setup_s:.1f} s (not timed below)")  # fmt: skip
            bench_real_records(bootstrap, passes)
            reader = KafkaGroupReader(bootstrap, timeout_s=60)
            poll_s, offsets = _time_poll(reader)
            rows = sum(len(entry.rows) for entry in offsets)
            print(f"collector (live Apache Kafka {kafka_version()}): {len(offsets):,} groups, "
                  f"{rows:,} partition rows polled in {poll_s:.2f} s end to end")  # fmt: skip
            print(target("live poll of every group", poll_s, TARGET_POLL_S, at_least=False,
                         unit="s"))  # fmt: skip
            _time_outputs(offsets, "live")
        finally:
            stack.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.consumer_offsets",
                                     description=__doc__.split("\n\n")[0])  # fmt: skip
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--real-groups", type=int, default=1_000,
                        help="groups committed on a live broker (0: skip that part)")  # fmt: skip
    parser.add_argument("--passes", type=int, default=5,
                        help="decoding passes over the records read back from Kafka")  # fmt: skip
    args = parser.parse_args(argv)
    bench_decoder(args.records)
    bench_recorded(args.groups, args.partitions)
    if args.real_groups:
        bench_live(args.real_groups, args.partitions, args.passes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

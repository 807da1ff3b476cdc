"""The `__consumer_offsets` stream job: consumes a topic holding `__consumer_offsets` records
(Kafka's own, or any topic with those bytes), decodes them and produces each offset commit as
the seed JSON to a topic the `consumer_offsets` REALTIME table consumes.

Delivery. Kafka's exactly-once recipe (a transactional producer that commits the input offsets
in its transaction) is not enough on the local broker: Tansu 0.6 takes transactions, but a
producer that dies inside one leaves its records visible to read_committed readers after the
next producer with the same transactional id starts (checked by hand). So the job is
at-least-once with a deterministic de-duplication instead:

- input offsets are committed only after every record of the batch is flushed to the output;
- each output record carries the position it came from (header `sprig-source`:
  `topic/partition/offset`) and goes to an output partition chosen from its key;
- on start the job reads the tail (the last `dedupe_scan` records) of each output partition and
  skips input records that partition already holds. Records of one output partition are
  produced in order by an idempotent producer, so what a crash left behind is a prefix.

A duplicate is therefore possible only when more than `dedupe_scan` other records were written
to the same output partition between the crash and the restart.

The job reads its input with assign() (one instance per consumer group id; the group stores the
offsets, it has no members) and skips commits of its own group, so it never feeds on itself.
Tombstones and group metadata are counted, not produced: the table stores offset commits.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import orjson
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from monitoring.consumer_offsets import ConsumerOffsetsDecoder, OffsetCommit
from monitoring.errors import KafkaUnavailableError, OffsetsDecodeError
from monitoring.tables import DEFAULT_TOPIC

log = logging.getLogger(__name__)

DEFAULT_INPUT = "__consumer_offsets"
DEFAULT_GROUP = "sprig-consumer-offsets-stream"
SOURCE_HEADER = "sprig-source"


@dataclass
class StreamStats:
    consumed: int = 0
    produced: int = 0
    own_group: int = 0  # commits of the job's own group, skipped
    duplicates: int = 0  # already in the output before a restart, skipped
    not_commits: Counter = field(default_factory=Counter)  # tombstones, group metadata, ...
    undecodable: int = 0


def source_id(topic: str, partition: int, offset: int) -> str:
    return f"{topic}/{partition}/{offset}"


def parse_source_id(text: str) -> tuple[str, int, int]:
    topic, partition, offset = text.rsplit("/", 2)
    return topic, int(partition), int(offset)


def output_partition(key: bytes, partitions: int) -> int:
    """Deterministic, so a re-read input record goes where its first copy went."""
    return zlib.crc32(key) % partitions


class OffsetsStream:
    """`bootstrap` is read from and written to unless `output_bootstrap` names another cluster.
    `batch` bounds the records between two input commits; `dedupe_scan` is how many records of
    each output partition's tail are read at start to find what a crash left behind."""

    def __init__(
        self,
        bootstrap: str,
        input_topic: str = DEFAULT_INPUT,
        output_topic: str = DEFAULT_TOPIC,
        group_id: str = DEFAULT_GROUP,
        output_bootstrap: str | None = None,
        batch: int = 500,
        dedupe_scan: int = 10_000,
        client_config: Mapping | None = None,
    ) -> None:
        if batch < 1 or dedupe_scan < batch:
            raise ValueError(f"batch must be >= 1 and dedupe_scan >= batch, got {batch}, "
                             f"{dedupe_scan}")  # fmt: skip
        self.input_topic, self.output_topic, self.group_id = input_topic, output_topic, group_id
        self.batch, self.dedupe_scan = batch, dedupe_scan
        self.stats = StreamStats()
        self.decoder = ConsumerOffsetsDecoder()
        extra = dict(client_config or {})
        self._bootstrap = bootstrap
        self._out_bootstrap = output_bootstrap or bootstrap
        self._extra = extra
        self._consumer = Consumer({
            "log_level": 2, **extra, "bootstrap.servers": bootstrap, "group.id": group_id,
            "enable.auto.commit": False, "enable.partition.eof": True,
            # transactional offset commits come with control batches: read committed data only
            "isolation.level": "read_committed", "fetch.wait.max.ms": 50,
        })  # fmt: skip
        self._producer = Producer({
            "log_level": 2, **extra, "bootstrap.servers": self._out_bootstrap,
            "enable.idempotence": True, "linger.ms": 20,
        })  # fmt: skip
        self._out_partitions = 0
        self._seen: dict[tuple[int, str, int], int] = {}  # (out p, in topic, in p) -> offset
        self._failures: list[str] = []

    # -- start ----------------------------------------------------------------------------------
    def start(self, timeout_s: float = 10.0) -> None:
        """Assigns every input partition at the group's committed offset (the earliest when
        none) and reads the output's tail for de-duplication."""
        self._out_partitions = self._partition_count(
            self._producer, self._out_bootstrap, self.output_topic, timeout_s
        )
        count = self._partition_count(self._consumer, self._bootstrap, self.input_topic, timeout_s)
        wanted = [TopicPartition(self.input_topic, p) for p in range(count)]
        try:
            committed = self._consumer.committed(wanted, timeout=timeout_s)
        except KafkaException as exc:
            raise KafkaUnavailableError(
                f"cannot read the committed offsets of group '{self.group_id}': {exc}"
            ) from exc
        for tp in committed:
            if tp.offset < 0:
                tp.offset = OFFSET_BEGINNING
        self._seen = self._scan_output(timeout_s)
        self._consumer.assign(committed)

    def _partition_count(self, client, bootstrap: str, topic: str, timeout_s: float) -> int:
        try:
            meta = client.list_topics(topic, timeout=timeout_s).topics.get(topic)
        except KafkaException as exc:
            raise KafkaUnavailableError(
                f"cannot read the metadata of topic '{topic}' from {bootstrap}: {exc}"
            ) from exc
        if meta is None or meta.error is not None or not meta.partitions:
            reason = meta.error.str() if meta is not None and meta.error else "no partitions"
            raise KafkaUnavailableError(f"topic '{topic}' on {bootstrap} cannot be used: {reason}")
        return len(meta.partitions)

    def _scan_output(self, timeout_s: float) -> dict[tuple[int, str, int], int]:
        """The newest input offset each output partition already holds, per input partition,
        from the last `dedupe_scan` records of each output partition."""
        reader = Consumer({
            "log_level": 2, **self._extra, "bootstrap.servers": self._out_bootstrap,
            "group.id": f"{self.group_id}-dedupe", "enable.auto.commit": False,
            "enable.partition.eof": True, "fetch.wait.max.ms": 10,
        })  # fmt: skip
        seen: dict[tuple[int, str, int], int] = {}
        try:
            for p in range(self._out_partitions):
                tp = TopicPartition(self.output_topic, p)
                low, high = reader.get_watermark_offsets(tp, timeout=timeout_s)
                if high <= low:
                    continue
                reader.assign(
                    [TopicPartition(self.output_topic, p, max(low, high - self.dedupe_scan))]
                )
                deadline = time.monotonic() + timeout_s
                while time.monotonic() < deadline:
                    message = reader.poll(0.2)
                    if message is None:
                        continue
                    if message.error() is not None:
                        if message.error().code() == KafkaError._PARTITION_EOF:
                            break
                        raise KafkaException(message.error())
                    for name, value in message.headers() or ():
                        if name == SOURCE_HEADER and value:
                            topic, partition, offset = parse_source_id(value.decode())
                            slot = (p, topic, partition)
                            seen[slot] = max(seen.get(slot, -1), offset)
                else:
                    raise KafkaUnavailableError(
                        f"reading the tail of '{self.output_topic}' partition {p} took more "
                        f"than {timeout_s} s"
                    )
        except KafkaException as exc:
            raise KafkaUnavailableError(f"cannot read '{self.output_topic}': {exc}") from exc
        finally:
            reader.close()
        return seen

    # -- run ------------------------------------------------------------------------------------
    def step(self, timeout_s: float = 0.5) -> int:
        """One batch: consume, decode, produce, flush, then commit the input offsets. Returns
        the number of input records handled."""
        try:
            messages = self._consumer.consume(self.batch, timeout=timeout_s)
        except KafkaException as exc:
            raise KafkaUnavailableError(f"cannot consume '{self.input_topic}': {exc}") from exc
        positions: dict[tuple[str, int], int] = {}
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaUnavailableError(f"consuming '{self.input_topic}': {error.str()}")
            self._handle(message)
            positions[(message.topic(), message.partition())] = message.offset() + 1
        if positions:
            self._flush()
            offsets = [TopicPartition(t, p, o) for (t, p), o in positions.items()]
            try:
                self._consumer.commit(offsets=offsets, asynchronous=False)
            except KafkaException as exc:
                raise KafkaUnavailableError(f"cannot commit the input offsets: {exc}") from exc
        return sum(1 for m in messages if m.error() is None)

    def _handle(self, message) -> None:
        self.stats.consumed += 1
        try:
            record = self.decoder.decode(message.key() or b"", message.value())
        except OffsetsDecodeError as exc:
            # one broken record must not stop the history of every other group
            self.stats.undecodable += 1
            log.warning("%s/%d@%d not decoded: %s", message.topic(), message.partition(),
                        message.offset(), exc)  # fmt: skip
            return
        if not isinstance(record, OffsetCommit):
            self.stats.not_commits[type(record).__name__ if record else "skipped type"] += 1
            return
        if record.group == self.group_id:
            self.stats.own_group += 1
            return
        key = f"{record.group}/{record.topic}/{record.partition}".encode()
        partition = output_partition(key, self._out_partitions)
        slot = (partition, message.topic(), message.partition())
        if message.offset() <= self._seen.get(slot, -1):
            self.stats.duplicates += 1
            return
        source = source_id(message.topic(), message.partition(), message.offset())
        while True:
            try:
                self._producer.produce(
                    self.output_topic, orjson.dumps(record.to_json()), key, partition=partition,
                    headers=[(SOURCE_HEADER, source.encode())], on_delivery=self._delivered,
                )  # fmt: skip
                break
            except BufferError:
                self._producer.poll(0.1)
        self.stats.produced += 1

    def _delivered(self, err, _message) -> None:
        if err is not None:
            self._failures.append(err.str())

    def _flush(self, timeout_s: float = 30.0) -> None:
        remaining = self._producer.flush(timeout_s)
        if remaining or self._failures:
            reason = self._failures[0] if self._failures else f"{remaining} not delivered"
            raise KafkaUnavailableError(
                f"could not produce to '{self.output_topic}': {reason}; the input offsets were "
                "not committed, the batch is read again on restart"
            )

    def close(self) -> None:
        self._producer.flush(10)
        self._consumer.close()

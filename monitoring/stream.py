"""The `__consumer_offsets` stream job: consumes Kafka's own `__consumer_offsets` (all its
partitions; or any topic holding those bytes), decodes each record and produces the offset
commits as the seed JSON to a topic the `consumer_offsets` REALTIME table consumes.

Delivery is Kafka's exactly-once recipe: each batch is produced in one transaction of a
transactional producer, and the input offsets are committed inside that transaction
(`send_offsets_to_transaction`), so a crash aborts the whole batch and a restart, which fences
the dead instance's producer, reads it again. The table's consumer reads with
isolation.level=read_committed (the default), so it never sees an aborted batch.

What goes out: every offset commit (the seed JSON), and every offset tombstone (a deleted
group's or an expired commit) as a row with a null offset at the tombstone's time, so the
latest row of a deleted group's partition says "no commit". Group metadata, the new consumer
protocol's records (KIP-848, key types 3+) and the job's own group's commits are counted, not
produced. A record that cannot be decoded (an unknown key type or value version, a value cut
short) is counted by reason, logged and skipped: one broken record never stops the history of
every other group. The counts are Prometheus counters (`--metrics-port` serves them).

Each output record carries the position it came from (header `sprig-source`:
`topic/partition/offset`) and is keyed `group/topic/partition`, so one partition's commits stay
in order in one output partition.
"""

from __future__ import annotations

import logging
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
from prometheus_client import Counter as PromCounter

from monitoring.consumer_offsets import ConsumerOffsetsDecoder, OffsetCommit, OffsetDeleted
from monitoring.errors import KafkaUnavailableError, OffsetsDecodeError
from monitoring.tables import DEFAULT_TOPIC

log = logging.getLogger(__name__)

DEFAULT_INPUT = "__consumer_offsets"
DEFAULT_GROUP = "sprig-consumer-offsets-stream"
SOURCE_HEADER = "sprig-source"

PRODUCED = PromCounter(
    "sprig_consumer_offsets_produced", "Offset commits and tombstones produced as JSON", ["kind"]
)
SKIPPED = PromCounter(
    "sprig_consumer_offsets_skipped",
    "__consumer_offsets records not produced, by reason (record type, or why it did not decode)",
    ["reason"],
)


@dataclass
class StreamStats:
    consumed: int = 0
    produced: int = 0
    tombstones: int = 0  # offset tombstones produced as null-offset rows
    own_group: int = 0  # commits of the job's own group, skipped
    not_commits: Counter = field(default_factory=Counter)  # group metadata, KIP-848 records, ...
    undecodable: Counter = field(default_factory=Counter)  # by record type


def source_id(topic: str, partition: int, offset: int) -> str:
    return f"{topic}/{partition}/{offset}"


class OffsetsStream:
    """`bootstrap` is read from and written to unless `output_bootstrap` names another cluster.
    `batch` bounds the records of one transaction. `transactional_id` must be unique per running
    job: a second instance with the same id fences the first (default: `<group>-<input>`)."""

    def __init__(
        self,
        bootstrap: str,
        input_topic: str = DEFAULT_INPUT,
        output_topic: str = DEFAULT_TOPIC,
        group_id: str = DEFAULT_GROUP,
        output_bootstrap: str | None = None,
        batch: int = 500,
        client_config: Mapping | None = None,
        transactional_id: str | None = None,
    ) -> None:
        if batch < 1:
            raise ValueError(f"batch must be at least 1, got {batch}")
        self.input_topic, self.output_topic, self.group_id = input_topic, output_topic, group_id
        self.batch = batch
        self.stats = StreamStats()
        self.decoder = ConsumerOffsetsDecoder()
        extra = dict(client_config or {})
        self._bootstrap = bootstrap
        self._out_bootstrap = output_bootstrap or bootstrap
        self._consumer = Consumer({
            "log_level": 2, **extra, "bootstrap.servers": bootstrap, "group.id": group_id,
            "enable.auto.commit": False, "enable.partition.eof": False,
            # transactional offset commits come with control batches: read committed data only
            "isolation.level": "read_committed",
        })  # fmt: skip
        self._producer = Producer({
            "log_level": 2, **extra, "bootstrap.servers": self._out_bootstrap,
            "transactional.id": transactional_id or f"{group_id}-{input_topic}",
            "linger.ms": 20,
        })  # fmt: skip
        self._assigned: list[TopicPartition] = []
        self._own_group_bytes = group_id.encode()

    # -- start ----------------------------------------------------------------------------------
    def start(self, timeout_s: float = 30.0) -> None:
        """Fences an earlier instance (aborting its open transaction) and assigns every input
        partition at the group's committed offset (the earliest when none)."""
        try:
            self._producer.init_transactions(timeout_s)
        except KafkaException as exc:
            raise KafkaUnavailableError(
                f"cannot start the transactional producer on {self._out_bootstrap}: {exc}"
            ) from exc
        count = self._partition_count(timeout_s)
        wanted = [TopicPartition(self.input_topic, p) for p in range(count)]
        self._assigned = self._committed(wanted, timeout_s)
        self._consumer.assign(self._assigned)

    def _partition_count(self, timeout_s: float) -> int:
        topic = self.input_topic
        try:
            meta = self._consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        except KafkaException as exc:
            raise KafkaUnavailableError(
                f"cannot read the metadata of topic '{topic}' from {self._bootstrap}: {exc}"
            ) from exc
        if meta is None or meta.error is not None or not meta.partitions:
            reason = meta.error.str() if meta is not None and meta.error else "no partitions"
            raise KafkaUnavailableError(
                f"topic '{topic}' on {self._bootstrap} cannot be used: {reason}"
            )
        return len(meta.partitions)

    def _committed(self, partitions: list[TopicPartition], timeout_s: float) -> list:
        try:
            committed = self._consumer.committed(partitions, timeout=timeout_s)
        except KafkaException as exc:
            raise KafkaUnavailableError(
                f"cannot read the committed offsets of group '{self.group_id}': {exc}"
            ) from exc
        for tp in committed:
            if tp.offset < 0:
                tp.offset = OFFSET_BEGINNING
        return committed

    # -- run ------------------------------------------------------------------------------------
    def step(self, timeout_s: float = 0.5) -> int:
        """One batch in one transaction: consume, decode, produce, and commit the input
        offsets with the output. Returns the number of input records handled, not counting
        the job's own commits: committing its offsets writes one of those, so a batch of
        nothing else is passed over without a commit (a restart reads it again and skips it
        again), or the job would feed on itself forever."""
        try:
            messages = self._consumer.consume(self.batch, timeout=timeout_s)
        except KafkaException as exc:
            raise KafkaUnavailableError(f"cannot consume '{self.input_topic}': {exc}") from exc
        records = [m for m in messages if not self._failed(m)]
        own = sum(1 for m in records if self._own_commit(m))
        self.stats.own_group += own
        SKIPPED.labels("own group").inc(own)
        if own == len(records):
            self.stats.consumed += own
            return 0
        positions: dict[tuple[str, int], int] = {}
        try:
            self._producer.begin_transaction()
            for message in records:
                self._handle(message)
                positions[(message.topic(), message.partition())] = message.offset() + 1
            offsets = [TopicPartition(t, p, o) for (t, p), o in positions.items()]
            self._producer.send_offsets_to_transaction(
                offsets, self._consumer.consumer_group_metadata(), 30
            )
            self._producer.commit_transaction(30)
        except KafkaException as exc:
            self._abort(exc)
        return len(records) - own

    def _own_commit(self, message) -> bool:
        """An offset commit (or tombstone) of the job's own group, told from its key alone."""
        key = message.key() or b""
        if len(key) < 4 or key[1] > 1 or key[0] != 0:
            return False
        length = int.from_bytes(key[2:4], "big", signed=True)
        return key[4 : 4 + length] == self._own_group_bytes

    def _failed(self, message) -> bool:
        error = message.error()
        if error is None:
            return False
        if error.code() == KafkaError._PARTITION_EOF:
            return True
        raise KafkaUnavailableError(f"consuming '{self.input_topic}': {error.str()}")

    def _abort(self, exc: KafkaException) -> None:
        """A failed transaction is aborted and its input read again from the last committed
        offsets; a fatal error (another instance fenced this one) stops the job."""
        error = exc.args[0]
        if error.fatal() or not error.txn_requires_abort():
            raise KafkaUnavailableError(f"the output transaction failed: {error.str()}") from exc
        self._producer.abort_transaction(30)
        for tp in self._committed(list(self._assigned), 30):
            self._consumer.seek(tp)
        raise KafkaUnavailableError(
            f"the output transaction was aborted ({error.str()}); its input is read again"
        ) from exc

    def _handle(self, message) -> None:
        self.stats.consumed += 1
        key = message.key() or b""
        try:
            record = self.decoder.decode(key, message.value())
        except OffsetsDecodeError as exc:
            kind = f"key type {int.from_bytes(key[:2], 'big', signed=True)}" if len(key) >= 2 \
                else "no key type"  # fmt: skip
            self.stats.undecodable[kind] += 1
            SKIPPED.labels(f"undecodable {kind}").inc()
            log.warning("%s/%d@%d not decoded: %s", message.topic(), message.partition(),
                        message.offset(), exc)  # fmt: skip
            return
        if isinstance(record, OffsetCommit | OffsetDeleted) and record.group == self.group_id:
            return  # counted by step()
        if isinstance(record, OffsetCommit):
            row = record.to_json()
            self.stats.produced += 1
            PRODUCED.labels("commit").inc()
        elif isinstance(record, OffsetDeleted):
            row = {**record.to_json(), "offset": None, "commitTimestamp": message.timestamp()[1]}
            self.stats.tombstones += 1
            PRODUCED.labels("tombstone").inc()
        else:
            reason = type(record).__name__ if record else self._skip_reason()
            self.stats.not_commits[reason] += 1
            SKIPPED.labels(reason).inc()
            return
        self._produce(f"{record.group}/{record.topic}/{record.partition}".encode(), row, message)

    def _skip_reason(self) -> str:
        """The decoder's reason for the record it just skipped (a type or version it does not
        read, e.g. `key type 5`)."""
        return self.decoder.last_skipped or "skipped"

    def _produce(self, key: bytes, row: dict, message) -> None:
        source = source_id(message.topic(), message.partition(), message.offset())
        while True:
            try:
                self._producer.produce(self.output_topic, orjson.dumps(row), key,
                                       headers=[(SOURCE_HEADER, source.encode())])  # fmt: skip
                return
            except BufferError:
                self._producer.poll(0.1)

    def close(self) -> None:
        self._consumer.close()
        self._producer.flush(10)

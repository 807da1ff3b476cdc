"""Real consumer groups on the session's Kafka, for the tests that read what Kafka itself wrote
to `__consumer_offsets`: a classic group that joined with subscribe(), a group on the new
consumer protocol (KIP-848, `group.protocol=consumer`), a classic group with a non-ASCII name,
and a group that committed once and was deleted with `delete_consumer_groups`. The members stay
in their groups until `close()`."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

OFFSETS_TOPIC = "__consumer_offsets"
PARTITIONS = 3
RECORDS = 30  # 10 per partition


@dataclass
class RealGroups:
    bootstrap: str
    topic: str
    classic: str
    kip848: str
    non_ascii: str
    deleted: str
    members: list[Consumer] = field(default_factory=list)
    committed: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)

    @classmethod
    def start(cls, bootstrap: str) -> RealGroups:
        suffix = uuid.uuid4().hex[:6]
        groups = cls(bootstrap, f"orders-{suffix}", f"classic-{suffix}", f"kip848-{suffix}",
                     f"grüppe-日本-{suffix}", f"deleted-{suffix}")  # fmt: skip
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(groups.topic, PARTITIONS)])[groups.topic].result(10)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for n in range(RECORDS):
            producer.produce(groups.topic, b"%d" % n, partition=n % PARTITIONS)
        assert producer.flush(10) == 0
        try:
            groups._join(groups.classic, "classic", read=20, commit_every=4)
            groups._join(groups.kip848, "consumer", read=12, commit_every=3)
            groups._join(groups.non_ascii, "classic", read=8, commit_every=8)
            once = Consumer({"bootstrap.servers": bootstrap, "group.id": groups.deleted,
                             "enable.auto.commit": False})  # fmt: skip
            once.commit(offsets=[TopicPartition(groups.topic, 0, 5)], asynchronous=False)
            once.close()
            admin.delete_consumer_groups([groups.deleted])[groups.deleted].result(10)
        except BaseException:
            groups.close()
            raise
        return groups

    def _join(self, group: str, protocol: str, read: int, commit_every: int) -> None:
        """A member that subscribes, reads `read` records and commits its position after every
        `commit_every` of them, then stays in the group."""
        config = {"bootstrap.servers": self.bootstrap, "group.id": group,
                  "client.id": f"client-{group}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "group.protocol": protocol}  # fmt: skip
        consumer = Consumer(config)
        self.members.append(consumer)
        consumer.subscribe([self.topic])
        seen, deadline = 0, time.monotonic() + 60
        while seen < read:
            assert time.monotonic() < deadline, f"{group} read {seen} of {read} records"
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            seen += 1
            if seen % commit_every == 0:
                consumer.commit(asynchronous=False)
        assigned = [TopicPartition(self.topic, p) for p in range(PARTITIONS)]
        self.committed[group] = {
            (tp.topic, tp.partition): tp.offset
            for tp in consumer.committed(assigned, timeout=10)
            if tp.offset >= 0
        }

    @property
    def live(self) -> list[str]:
        return [self.classic, self.kip848, self.non_ascii]

    def close(self) -> None:
        for consumer in self.members:
            consumer.close()
        self.members.clear()


def read_offsets_topic(bootstrap: str, timeout_s: float = 60) -> tuple[list, int]:
    """Every record of Kafka's `__consumer_offsets`, all partitions read to their end, and the
    number of partitions."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex}",
                       "enable.auto.commit": False, "enable.partition.eof": True})  # fmt: skip
    try:
        meta = reader.list_topics(OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC]
        partitions = len(meta.partitions)
        reader.assign([TopicPartition(OFFSETS_TOPIC, p, 0) for p in meta.partitions])
        records, at_end, deadline = [], set(), time.monotonic() + timeout_s
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"{len(at_end)} of {partitions} partitions read"
            message = reader.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            records.append(message)
    finally:
        reader.close()
    return records, partitions

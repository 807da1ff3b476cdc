"""Kafka over confluent-kafka, in the shape of Pinot's stream SPI.

``KafkaPartitionConsumer`` reads one partition from explicit offsets with ``assign()`` (no
consumer-group membership or rebalancing: which server reads which partition is the
controller's decision, and the offsets live in segment metadata). ``KafkaMetadataProvider``
answers the controller's and the server's questions about a topic: its partitions and the
offset that an offset criteria (smallest, largest, a period, a timestamp) points at.

Errors follow Pinot's split: ``TransientStreamError`` (retry), ``PermanentStreamError`` (stop),
``OffsetOutOfRangeError`` (the offset was deleted by retention or is past the end).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re

import pyarrow as pa
from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from engine.common.clock import now_ms
from engine.common.errors import ConfigError
from engine.stream.config import OffsetCriteria, StreamConfig
from engine.stream.errors import (
    OffsetOutOfRangeError,
    PermanentStreamError,
    StreamError,
    TransientStreamError,
)

MAX_BATCH_MESSAGES = 10_000
READ_COMMITTED = "read_committed"

# Keys Pinot hands to the Kafka client straight from the top level of the stream config map.
_TOP_LEVEL_CLIENT_KEYS = (
    "security.protocol",
    "sasl.mechanism",
    "sasl.mechanisms",
    "sasl.username",
    "sasl.password",
    "sasl.jaas.config",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.key.password",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.endpoint.identification.algorithm",
)
# Java client settings with no librdkafka meaning: the Java deserializers and poll sizing.
_JAVA_ONLY_KEYS = frozenset(
    {"key.deserializer", "value.deserializer", "max.poll.records", "max.poll.interval.ms"}
)
_JAAS = re.compile(r'(username|password)\s*=\s*"([^"]*)"')
_PERMANENT_CODES = frozenset(
    {
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.SASL_AUTHENTICATION_FAILED,
        KafkaError._AUTHENTICATION,
        KafkaError._INVALID_ARG,
        KafkaError.INVALID_CONFIG,
    }
)


def client_config(stream: StreamConfig, client_id: str) -> dict:
    """The librdkafka settings for ``stream``: the broker list, the security keys Pinot passes
    through from the map's top level, and every ``stream.kafka.consumer.prop.*``. A Java JAAS
    line is turned into librdkafka's ``sasl.username``/``sasl.password``."""
    if not stream.broker_list:
        raise ConfigError(f"{stream.path}.stream.kafka.broker.list", "the stream needs brokers")
    config = {"bootstrap.servers": stream.broker_list, "client.id": client_id}
    props = {k: stream.raw[k] for k in _TOP_LEVEL_CLIENT_KEYS if stream.raw.get(k)}
    props.update(stream.consumer_props)
    for key, value in props.items():
        if key in _JAVA_ONLY_KEYS:
            continue
        if key == "sasl.jaas.config":
            config.update({f"sasl.{k}": v for k, v in _JAAS.findall(str(value))})
            continue
        config["sasl.mechanisms" if key == "sasl.mechanism" else key] = str(value)
    return config


def _config_error(stream: StreamConfig, err: KafkaException) -> ConfigError:
    text = str(err.args[0].str() if err.args else err)
    match = re.search(r'property: "([^"]+)"', text)
    key = match.group(1) if match else "?"
    field = f"{stream.path}.stream.kafka.consumer.prop.{key}" if match else stream.path
    return ConfigError(field, f"the Kafka client refused the setting {key}: {text}")


def _raise_for(err: KafkaError, what: str) -> None:
    message = f"{what}: {err.str()} ({err.name()})"
    if err.fatal() or err.code() in _PERMANENT_CODES:
        raise PermanentStreamError(message)
    raise TransientStreamError(message)


@dataclasses.dataclass
class MessageBatch:
    """Messages of one fetch, in offset order, as parallel lists. ``next_offset`` is where the
    next fetch starts: one past the last message returned (offsets may have gaps, e.g. after
    compaction or transaction markers), or the start offset when nothing came back.
    ``timestamps_ms`` are the messages' Kafka timestamps (-1 when absent)."""

    values: list[bytes | None]
    offsets: list[int]
    timestamps_ms: list[int]
    keys: list[bytes | None]
    next_offset: int

    def __len__(self) -> int:
        return len(self.offsets)


METADATA_COLUMNS = ("__key", "__metadata$offset", "__metadata$partition",
                    "__metadata$recordTimestamp")  # fmt: skip


def with_message_metadata(rows, batch: MessageBatch, positions: list[int], partition: int,
                          columns: list[str]):  # fmt: skip
    """Pinot's ``stream.kafka.metadata.populate``: add the message key and record metadata
    to decoded ``rows`` (``positions[i]`` is row i's message in ``batch``) as the string
    columns ``__key``, ``__metadata$offset``, ``__metadata$partition`` and
    ``__metadata$recordTimestamp``, those of them named in ``columns``."""
    values = {
        "__key": lambda i: (
            None if batch.keys[i] is None else batch.keys[i].decode("utf-8", "replace")
        ),
        "__metadata$offset": lambda i: str(batch.offsets[i]),
        "__metadata$partition": lambda i: str(partition),
        "__metadata$recordTimestamp": lambda i: str(batch.timestamps_ms[i]),
    }
    for name in columns:
        column = pa.array([values[name](i) for i in positions], pa.string())
        if name in rows.schema.names:  # the decoder's (absent) field of that name
            rows = rows.set_column(rows.schema.get_field_index(name), name, column)
        elif rows.num_columns:
            rows = rows.append_column(name, column)
        else:
            rows = pa.RecordBatch.from_arrays([column], names=[name])
    return rows


class KafkaPartitionConsumer:
    """Reads one partition from explicit offsets: ``start(offset)`` then repeated
    ``fetch(start, end, timeout_ms)``."""

    def __init__(self, stream: StreamConfig, partition: int, client_id: str = "sprig"):
        self.stream = stream
        self.topic = stream.topic
        self.partition = int(partition)
        # Long polls: librdkafka's fetch.wait.max.ms (500 ms) is how long Kafka may hold a fetch
        # while the partition has nothing new; a produced message answers it at once.
        config = client_config(stream, client_id)
        config.update(
            {
                # offsets are kept in segment metadata, never in a consumer group
                "group.id": config.get("group.id", f"{client_id}-{self.topic}-{partition}"),
                "enable.auto.commit": "false",
                "enable.auto.offset.store": "false",
                # an offset Kafka no longer has must surface here, so the consuming loop
                # can apply the table's auto.offset.reset and count it
                "auto.offset.reset": "error",
                "enable.partition.eof": "false",
            }
        )
        # Pinot's default: aborted transactions are never read, open ones hold the reader
        # back at the last stable offset
        config["isolation.level"] = stream.isolation_level or READ_COMMITTED
        try:
            self._consumer = Consumer(config)
        except KafkaException as err:
            raise _config_error(stream, err) from err
        self._position: int | None = None

    def start(self, offset: int) -> None:
        """Position the consumer at ``offset`` (the next message to read)."""
        self._consumer.assign([TopicPartition(self.topic, self.partition, int(offset))])
        self._position = int(offset)

    def fetch(self, start: int, end: int | None = None, timeout_ms: int = 5000) -> MessageBatch:
        """Messages from ``start`` (inclusive) up to ``end`` (exclusive; None = no bound),
        waiting at most ``timeout_ms`` for the first one; an empty batch on timeout. Returns
        at once with whatever is already buffered."""
        if self._position != start:
            self.start(start)
        first = self._consumer.consume(MAX_BATCH_MESSAGES, 0)
        if not first:
            message = self._consumer.poll(timeout_ms / 1000.0)
            first = [message] if message is not None else []
            if first:
                first += self._consumer.consume(MAX_BATCH_MESSAGES - 1, 0)
        values, offsets, stamps, keys = [], [], [], []
        next_offset = start
        for message in first:
            err = message.error()
            if err is not None:
                self._position = None  # librdkafka stops the partition; re-assign next time
                if offsets:
                    break  # hand over what came before; the next fetch meets the error again
                self._raise(err, next_offset)
            offset = message.offset()
            if offset < next_offset:
                continue  # a re-delivery from before a seek
            if end is not None and offset >= end:
                self.start(end)
                next_offset = end
                break
            values.append(message.value())
            offsets.append(offset)
            kind, stamp = message.timestamp()
            stamps.append(stamp if kind else -1)
            keys.append(message.key())
            next_offset = offset + 1
        if self._position is not None and next_offset != start:
            self._position = next_offset
        return MessageBatch(values, offsets, stamps, keys, next_offset)

    def _raise(self, err: KafkaError, offset: int) -> None:
        if err.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
            try:
                low, high = self._consumer.get_watermark_offsets(
                    TopicPartition(self.topic, self.partition), timeout=5.0
                )
            except KafkaException:
                low = high = None
            raise OffsetOutOfRangeError(
                f"offset {offset} of {self.topic}/{self.partition} is out of range "
                f"[{low}, {high}): {err.str()}",
                offset=offset,
                earliest=low,
                latest=high,
            )
        _raise_for(err, f"fetching {self.topic}/{self.partition} at {offset}")

    def position(self) -> int | None:
        """The client's own position: the next offset it will hand over, past the commit and
        abort markers of transactions (which hold no message); None when it has none."""
        try:
            (tp,) = self._consumer.position([TopicPartition(self.topic, self.partition)])
        except (KafkaException, RuntimeError):
            return None
        return tp.offset if tp.offset >= 0 else None

    def close(self) -> None:
        with contextlib.suppress(KafkaException, RuntimeError):  # already closed
            self._consumer.close()

    def __enter__(self) -> KafkaPartitionConsumer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class KafkaMetadataProvider:
    """A topic's partitions and offsets, through the admin API."""

    def __init__(self, stream: StreamConfig, client_id: str = "sprig-metadata"):
        self.stream = stream
        self.topic = stream.topic
        config = client_config(stream, client_id)
        config = {k: v for k, v in config.items() if not k.startswith(("fetch.", "isolation."))}
        self._config = config
        try:
            self._admin = AdminClient(config)
        except KafkaException as err:
            raise _config_error(stream, err) from err

    def reconnect(self) -> None:
        """A new admin client: one whose connection hangs on a frozen broker keeps asking it
        (its metadata still names it), a new one bootstraps afresh."""
        self._admin = AdminClient(self._config)

    def partition_ids(self, timeout_ms: int | None = None) -> list[int]:
        """The topic's partition ids, sorted (restricted to ``stream.kafka.partition.ids`` when
        set). PermanentStreamError if the topic does not exist."""
        timeout = (timeout_ms or self.stream.connection_timeout_ms) / 1000.0
        try:
            # All topics, not just ours: a metadata request naming a topic may create it on
            # brokers with auto-creation on, and then a mistyped topic would "exist".
            metadata = self._admin.list_topics(timeout=timeout)
        except KafkaException as err:
            _raise_for(err.args[0], f"listing partitions of {self.topic}")
        topic = metadata.topics.get(self.topic)
        if topic is None or topic.error is not None:
            if topic is not None and topic.error.code() not in _PERMANENT_CODES:
                _raise_for(topic.error, f"listing partitions of {self.topic}")
            raise PermanentStreamError(f"topic {self.topic!r} does not exist")
        ids = sorted(topic.partitions)
        if self.stream.partition_ids is not None:
            ids = [p for p in ids if p in self.stream.partition_ids]
        return ids

    def _list_offsets(self, partition: int, spec: OffsetSpec, timeout_ms: int | None,
                      isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED) -> int:  # fmt: skip
        tp = TopicPartition(self.topic, int(partition))
        timeout = (timeout_ms or self.stream.fetch_timeout_ms) / 1000.0
        try:
            futures = self._admin.list_offsets({tp: spec}, isolation_level=isolation,
                                               request_timeout=timeout)  # fmt: skip
            return int(futures[tp].result(timeout=timeout + 1).offset)
        except KafkaException as err:
            _raise_for(err.args[0], f"listing offsets of {self.topic}/{partition}")
        except TimeoutError as err:
            raise TransientStreamError(
                f"listing offsets of {self.topic}/{partition} timed out"
            ) from err
        raise StreamError("unreachable")  # _raise_for always raises

    def _bound(self, partition: int, spec: OffsetSpec, timeout_ms: int | None,
               isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED) -> int:  # fmt: skip
        """An end of the log, which always exists: confluent-kafka hands back OFFSET_INVALID
        instead of raising when the request times out (a frozen leader), so that is a
        transient error here."""
        offset = self._list_offsets(partition, spec, timeout_ms, isolation)
        if offset < 0:
            raise TransientStreamError(f"listing offsets of {self.topic}/{partition} got no "
                                       "answer from the partition's leader")  # fmt: skip
        return offset

    def earliest_offset(self, partition: int, timeout_ms: int | None = None) -> int:
        return self._bound(partition, OffsetSpec.earliest(), timeout_ms)

    def latest_offset(self, partition: int, timeout_ms: int | None = None) -> int:
        """One past the last message (the high watermark)."""
        return self._bound(partition, OffsetSpec.latest(), timeout_ms)

    def readable_end(self, partition: int, timeout_ms: int | None = None) -> int:
        """One past the last offset this stream's consumer can read now: the last stable
        offset under read_committed (the default; an open transaction holds it back), the
        high watermark under read_uncommitted."""
        level = IsolationLevel.READ_UNCOMMITTED
        if (self.stream.isolation_level or READ_COMMITTED) == READ_COMMITTED:
            level = IsolationLevel.READ_COMMITTED
        return self._bound(partition, OffsetSpec.latest(), timeout_ms, level)

    def offset_for(
        self, partition: int, criteria: OffsetCriteria | None = None, timeout_ms: int | None = None
    ) -> int:
        """The offset ``criteria`` (default: the stream's ``auto.offset.reset``) points at:
        smallest, largest, or the first message at or after a time (now minus a period, or a
        timestamp); the latest offset when no message is that recent, as in Pinot."""
        criteria = criteria or self.stream.offset_criteria
        if criteria.kind == "smallest":
            return self.earliest_offset(partition, timeout_ms)
        if criteria.kind == "largest":
            return self.latest_offset(partition, timeout_ms)
        if criteria.kind == "period":
            at_ms = now_ms() - int(criteria.period_ms)
        else:
            at_ms = int(criteria.timestamp_ms)
        offset = self._list_offsets(partition, OffsetSpec.for_timestamp(at_ms), timeout_ms)
        return offset if offset >= 0 else self.latest_offset(partition, timeout_ms)

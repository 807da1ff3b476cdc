"""Pinot's stream config maps, read unchanged.

A REALTIME table names its stream in ``ingestionConfig.streamIngestionConfig.streamConfigMaps``
(a list) or, the legacy place, ``tableIndexConfig.streamConfigs``. Keys and defaults are
Pinot's (``StreamConfigProperties``, ``StreamConfig``). Java plugin class names (decoders,
consumer factories of every Pinot Kafka version) are mapped to ours; a config that names
something we cannot consume or decode is refused with a ``ConfigError`` whose ``field`` is the
JSON path of the key, e.g.
``ingestionConfig.streamIngestionConfig.streamConfigMaps[0].stream.kafka.decoder.class.name``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

from engine.common.errors import ConfigError
from engine.spi.periods import data_size_bytes, period_ms

STREAM_TYPE = "streamType"
FLUSH_ROWS_KEYS = (
    "realtime.segment.flush.threshold.rows",
    "realtime.segment.flush.threshold.size",  # the older names of the same setting
    "realtime.segment.flush.threshold.size.llc",
)
FLUSH_SEGMENT_ROWS = "realtime.segment.flush.threshold.segment.rows"
FLUSH_TIME = "realtime.segment.flush.threshold.time"
FLUSH_SEGMENT_SIZE_KEYS = (
    "realtime.segment.flush.threshold.segment.size",
    "realtime.segment.flush.desired.size",
)
FLUSH_AUTOTUNE_INITIAL_ROWS = "realtime.segment.flush.autotune.initialRows"
FLUSH_VARIANCE = "realtime.segment.flush.threshold.variance.fraction"
COMMIT_TIMEOUT = "realtime.segment.commit.timeoutSeconds"
SERVER_UPLOAD = "realtime.segment.serverUploadToDeepStore"

DEFAULT_FLUSH_ROWS = 5_000_000
DEFAULT_FLUSH_TIME_MS = 6 * 3_600_000
DEFAULT_SEGMENT_SIZE_BYTES = 200 * 1024 * 1024
DEFAULT_AUTOTUNE_INITIAL_ROWS = 100_000
DEFAULT_FETCH_TIMEOUT_MS = 5_000
DEFAULT_CONNECTION_TIMEOUT_MS = 30_000
DEFAULT_IDLE_TIMEOUT_MS = 180_000

# Pinot's decoder classes, across its package renames (com.linkedin -> org.apache.pinot.core
# -> org.apache.pinot.plugin), mapped to the decoders in engine.stream.decoders.
DECODER_CLASSES = {
    "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder": "json",
    "org.apache.pinot.plugin.inputformat.json.JSONMessageDecoder": "json",
    "org.apache.pinot.core.realtime.impl.kafka.KafkaJSONMessageDecoder": "json",
    "com.linkedin.pinot.core.realtime.impl.kafka.KafkaJSONMessageDecoder": "json",
    "org.apache.pinot.plugin.inputformat.avro.SimpleAvroMessageDecoder": "avro",
    "org.apache.pinot.core.realtime.impl.kafka.SimpleAvroMessageDecoder": "avro",
    "com.linkedin.pinot.core.realtime.impl.kafka.SimpleAvroMessageDecoder": "avro",
    "org.apache.pinot.plugin.inputformat.csv.CSVMessageDecoder": "csv",
}
# Decoders that need a service or generated classes we do not have: refused with the reason.
UNSUPPORTED_DECODERS = {
    "KafkaConfluentSchemaRegistryAvroMessageDecoder": "needs a Confluent schema registry",
    "KafkaConfluentSchemaRegistryJsonMessageDecoder": "needs a Confluent schema registry",
    "KafkaConfluentSchemaRegistryProtoBufMessageDecoder": "needs a Confluent schema registry",
    "KafkaAvroMessageDecoder": "reads its schemas from a schema repository",
    "ProtoBufMessageDecoder": "needs compiled protobuf descriptors",
    "ProtoBufCodeGenMessageDecoder": "needs compiled protobuf descriptors",
    "ThriftMessageDecoder": "needs compiled Thrift classes",
    "CLPLogMessageDecoder": "CLP log encoding is not supported",
}
# Every Kafka consumer factory Pinot has shipped; all are served by our confluent-kafka
# consumer. With no factory key, Pinot 1.5 uses kafka30 (1.0-1.4: kafka20).
KAFKA_CONSUMER_FACTORIES = frozenset(
    {
        "org.apache.pinot.plugin.stream.kafka40.KafkaConsumerFactory",
        "org.apache.pinot.plugin.stream.kafka30.KafkaConsumerFactory",
        "org.apache.pinot.plugin.stream.kafka20.KafkaConsumerFactory",
        "org.apache.pinot.plugin.stream.kafka09.KafkaConsumerFactory",
        "org.apache.pinot.core.realtime.impl.kafka2.KafkaConsumerFactory",
        "org.apache.pinot.core.realtime.impl.kafka.KafkaConsumerFactory",
        "org.apache.pinot.core.realtime.impl.kafka.SimpleConsumerFactory",
        "com.linkedin.pinot.core.realtime.impl.kafka.SimpleConsumerFactory",
        "com.linkedin.pinot.core.realtime.impl.kafka.KafkaConsumerFactory",
    }
)
DEFAULT_CONSUMER_FACTORY = "org.apache.pinot.plugin.stream.kafka30.KafkaConsumerFactory"


@dataclasses.dataclass(frozen=True)
class OffsetCriteria:
    """Where a new partition starts: ``kind`` is smallest, largest, period (start at the first
    message newer than now - ``period_ms``) or timestamp (the first message at or after
    ``timestamp_ms``). ``text`` is the value as configured."""

    kind: str
    text: str
    period_ms: int | None = None
    timestamp_ms: int | None = None

    @classmethod
    def parse(cls, text: str, field: str = "auto.offset.reset") -> OffsetCriteria:
        value = str(text).strip()
        low = value.lower()
        if low in ("smallest", "earliest"):  # librdkafka's spellings of the same two
            return cls("smallest", value)
        if low in ("largest", "latest"):
            return cls("largest", value)
        try:
            return cls("period", value, period_ms=period_ms(value))
        except ValueError:
            pass
        try:
            stamp = dt.datetime.strptime(value.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
            return cls("timestamp", value, timestamp_ms=int(stamp.timestamp() * 1000))
        except ValueError:
            pass
        # Pinot would take this as a CUSTOM criteria, which its Kafka consumer cannot resolve.
        raise ConfigError(
            field,
            f"cannot start consuming from {value!r}: expected smallest, largest, a period such "
            "as 2d or 4h30m, or a timestamp yyyy-MM-dd'T'HH:mm:ss.SSSZ",
        )


@dataclasses.dataclass(frozen=True)
class FlushThreshold:
    """When a consuming segment completes. ``rows`` is Pinot's per-server row budget
    (``realtime.segment.flush.threshold.rows``; the controller divides it by the partitions a
    server consumes; 0 = autotune on ``segment_size_bytes``); ``segment_rows`` a fixed count per
    segment when set; ``time_ms`` the longest a segment consumes."""

    rows: int
    segment_rows: int | None
    time_ms: int
    segment_size_bytes: int
    autotune_initial_rows: int
    variance_fraction: float


@dataclasses.dataclass(frozen=True)
class StreamConfig:
    """One parsed stream config map. ``raw`` is the map as given; ``path`` its JSON path."""

    raw: dict
    path: str
    stream_type: str
    topic: str
    decoder_class: str
    decoder: str  # json | avro | csv
    decoder_props: dict
    consumer_factory: str
    broker_list: str | None
    offset_criteria: OffsetCriteria
    consumer_props: dict
    isolation_level: str | None
    partition_ids: tuple[int, ...] | None
    fetch_timeout_ms: int
    connection_timeout_ms: int
    idle_timeout_ms: int
    flush: FlushThreshold
    commit_timeout_seconds: int | None
    server_upload_to_deep_store: bool
    populate_metadata: bool

    def key(self, suffix: str) -> str:
        """``stream.<type>.<suffix>``, the key name Pinot uses for this stream type."""
        return f"stream.{self.stream_type}.{suffix}"


def _get(raw: dict, key: str):
    value = raw.get(key)
    return None if value is None or (isinstance(value, str) and not value.strip()) else value


def _int(raw: dict, key: str, path: str, default, minimum: int = 0):
    value = _get(raw, key)
    if value is None:
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ConfigError(f"{path}.{key}", f"expected a whole number, got {value!r}") from None
    if number < minimum:
        raise ConfigError(f"{path}.{key}", f"must be at least {minimum}, got {number}")
    return number


def _bool(raw: dict, key: str, path: str, default: bool) -> bool:
    value = _get(raw, key)
    if value is None:
        return default
    if str(value).strip().lower() in ("true", "false"):
        return str(value).strip().lower() == "true"
    raise ConfigError(f"{path}.{key}", f"expected true or false, got {value!r}")


def _flush(raw: dict, path: str) -> FlushThreshold:
    rows_key = next((k for k in FLUSH_ROWS_KEYS if _get(raw, k) is not None), FLUSH_ROWS_KEYS[0])
    size_key = next(
        (k for k in FLUSH_SEGMENT_SIZE_KEYS if _get(raw, k) is not None), FLUSH_SEGMENT_SIZE_KEYS[0]
    )
    size_text = _get(raw, size_key)
    try:
        size = DEFAULT_SEGMENT_SIZE_BYTES if size_text is None else data_size_bytes(size_text)
    except ValueError as err:
        raise ConfigError(f"{path}.{size_key}", str(err)) from None
    # Unset rows: autotune when a target segment size is given, else 5M rows per server.
    default_rows = 0 if size_text is not None else DEFAULT_FLUSH_ROWS
    rows = _int(raw, rows_key, path, default_rows)
    time_text = _get(raw, FLUSH_TIME)
    if time_text is None:
        time_ms = DEFAULT_FLUSH_TIME_MS
    elif re.fullmatch(r"\s*\d+\s*", str(time_text)):
        time_ms = int(str(time_text))  # legacy: plain milliseconds
    else:
        try:
            time_ms = period_ms(time_text)
        except ValueError as err:
            raise ConfigError(f"{path}.{FLUSH_TIME}", str(err)) from None
    if time_ms <= 0:
        raise ConfigError(f"{path}.{FLUSH_TIME}", "must be longer than 0")
    variance_text = _get(raw, FLUSH_VARIANCE)
    try:
        variance = 0.0 if variance_text is None else float(variance_text)
    except ValueError:
        variance = -1.0
    if not 0.0 <= variance < 0.5:
        raise ConfigError(f"{path}.{FLUSH_VARIANCE}", "expected a fraction in [0, 0.5)")
    return FlushThreshold(
        rows=rows,
        segment_rows=_int(raw, FLUSH_SEGMENT_ROWS, path, None, minimum=1),
        time_ms=time_ms,
        segment_size_bytes=size,
        autotune_initial_rows=_int(
            raw, FLUSH_AUTOTUNE_INITIAL_ROWS, path, DEFAULT_AUTOTUNE_INITIAL_ROWS, minimum=1
        ),
        variance_fraction=variance,
    )


def _decoder(raw: dict, prefix: str, path: str) -> tuple[str, str, dict]:
    key = f"{prefix}.decoder.class.name"
    name = _get(raw, key)
    if name is None:
        raise ConfigError(f"{path}.{key}", "a stream needs a decoder class")
    name = str(name).strip()
    kind = DECODER_CLASSES.get(name)
    if kind is None:
        short = name.rsplit(".", 1)[-1]
        reason = UNSUPPORTED_DECODERS.get(short, "it is not a decoder we know")
        raise ConfigError(
            f"{path}.{key}",
            f"cannot decode messages with {name} ({reason}); use one of "
            + ", ".join(sorted({n.rsplit(".", 1)[-1] for n in DECODER_CLASSES})),
        )
    props_prefix = f"{prefix}.decoder.prop."
    props = {k[len(props_prefix) :]: str(v) for k, v in raw.items() if k.startswith(props_prefix)}
    from engine.stream.decoders import check_decoder_props

    check_decoder_props(kind, props, f"{path}.{props_prefix}")
    return name, kind, props


def parse_stream_config(raw: dict, path: str = "streamConfigs") -> StreamConfig:
    """Parse one stream config map; ConfigError (``field`` = JSON path of the key) when it
    names something we cannot consume or decode, or a value is malformed."""
    if not isinstance(raw, dict):
        raise ConfigError(path, "a stream config must be a JSON object")
    stream_type = str(_get(raw, STREAM_TYPE) or "").strip().lower()
    if stream_type != "kafka":
        raise ConfigError(
            f"{path}.{STREAM_TYPE}",
            f"cannot consume stream type {raw.get(STREAM_TYPE)!r}: only kafka is supported",
        )
    prefix = "stream.kafka"
    topic = _get(raw, f"{prefix}.topic.name")
    if topic is None:
        raise ConfigError(f"{path}.{prefix}.topic.name", "a stream needs a topic name")
    factory_key = f"{prefix}.consumer.factory.class.name"
    factory = str(_get(raw, factory_key) or DEFAULT_CONSUMER_FACTORY).strip()
    if factory not in KAFKA_CONSUMER_FACTORIES:
        raise ConfigError(
            f"{path}.{factory_key}",
            f"unknown consumer factory {factory}; expected a Pinot Kafka consumer factory "
            "such as " + DEFAULT_CONSUMER_FACTORY,
        )
    decoder_class, decoder, decoder_props = _decoder(raw, prefix, path)
    consumer_prefix = f"{prefix}.consumer.prop."
    consumer_props = {
        k[len(consumer_prefix) :]: str(v) for k, v in raw.items() if k.startswith(consumer_prefix)
    }
    reset_key = consumer_prefix + "auto.offset.reset"
    offset_criteria = OffsetCriteria.parse(
        consumer_props.pop("auto.offset.reset", "largest"), f"{path}.{reset_key}"
    )
    partition_key = f"{prefix}.partition.ids"
    partition_text = _get(raw, partition_key)
    partition_ids = None
    if partition_text is not None:
        try:
            partition_ids = tuple(
                sorted({int(p) for p in str(partition_text).split(",") if p.strip()})
            )
        except ValueError:
            raise ConfigError(
                f"{path}.{partition_key}",
                f"expected comma-separated partition ids, got {partition_text!r}",
            ) from None
    isolation = _get(raw, f"{prefix}.isolation.level")
    if isolation is not None and str(isolation) not in ("read_committed", "read_uncommitted"):
        raise ConfigError(
            f"{path}.{prefix}.isolation.level",
            f"expected read_committed or read_uncommitted, got {isolation!r}",
        )
    broker_list = _get(raw, f"{prefix}.broker.list")
    return StreamConfig(
        raw=dict(raw),
        path=path,
        stream_type=stream_type,
        topic=str(topic).strip(),
        decoder_class=decoder_class,
        decoder=decoder,
        decoder_props=decoder_props,
        consumer_factory=factory,
        broker_list=None if broker_list is None else str(broker_list).strip(),
        offset_criteria=offset_criteria,
        consumer_props=consumer_props,
        isolation_level=None if isolation is None else str(isolation),
        partition_ids=partition_ids,
        fetch_timeout_ms=_int(
            raw, f"{prefix}.fetch.timeout.millis", path, DEFAULT_FETCH_TIMEOUT_MS
        ),
        connection_timeout_ms=_int(
            raw, f"{prefix}.connection.timeout.millis", path, DEFAULT_CONNECTION_TIMEOUT_MS
        ),
        idle_timeout_ms=_int(raw, f"{prefix}.idle.timeout.millis", path, DEFAULT_IDLE_TIMEOUT_MS),
        flush=_flush(raw, path),
        commit_timeout_seconds=_int(raw, COMMIT_TIMEOUT, path, None, minimum=1),
        server_upload_to_deep_store=_bool(raw, SERVER_UPLOAD, path, False),
        populate_metadata=_bool(raw, f"{prefix}.metadata.populate", path, False),
    )


def stream_config_maps(table_config) -> list[tuple[str, dict]]:
    """(JSON path, map) of every stream config of a table config: all of
    ``ingestionConfig.streamIngestionConfig.streamConfigMaps``, else the legacy
    ``tableIndexConfig.streamConfigs``."""
    maps = table_config.ingestion_config.stream_config_maps
    if maps:
        base = "ingestionConfig.streamIngestionConfig.streamConfigMaps"
        return [(f"{base}[{i}]", m) for i, m in enumerate(maps)]
    legacy = table_config.index_config.stream_configs
    return [("tableIndexConfig.streamConfigs", legacy)] if legacy else []


def table_stream_configs(table_config) -> list[StreamConfig]:
    """Every stream of a REALTIME ``engine.spi.TableConfig``, parsed; [] for OFFLINE tables.
    Raises ConfigError naming the first bad key."""
    if table_config.table_type != "REALTIME":
        return []
    return [parse_stream_config(raw, path) for path, raw in stream_config_maps(table_config)]

"""Stream config maps: Pinot's keys and defaults, every example loads, bad ones are refused
with the key named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.common.errors import ConfigError
from engine.spi import TableConfig
from engine.stream.config import (
    DEFAULT_FLUSH_ROWS,
    KAFKA_CONSUMER_FACTORIES,
    OffsetCriteria,
    parse_stream_config,
    table_stream_configs,
)

BASE = {
    "streamType": "kafka",
    "stream.kafka.topic.name": "events",
    "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
}


def _table(streams: dict, legacy: bool = False) -> TableConfig:
    raw = {"tableName": "events", "tableType": "REALTIME", "segmentsConfig": {}}
    if legacy:
        raw["tableIndexConfig"] = {"streamConfigs": streams}
    else:
        raw["ingestionConfig"] = {"streamIngestionConfig": {"streamConfigMaps": [streams]}}
    return TableConfig.from_json(raw)


def test_every_example_stream_config_loads(pinot_examples: Path) -> None:
    paths = sorted(pinot_examples.glob("stream/**/*realtime_table_config.json")) + sorted(
        pinot_examples.glob("minions/stream/**/*realtime_table_config.json")
    )
    assert len(paths) >= 6
    for path in paths:
        config = TableConfig.from_json(path.read_text())
        streams = table_stream_configs(config)
        assert len(streams) == 1, path
        stream = streams[0]
        raw = config.stream_configs
        assert stream.topic == raw["stream.kafka.topic.name"]
        assert stream.decoder == "json"
        assert stream.raw == raw
    github = TableConfig.from_json(
        (pinot_examples / "stream/githubEvents/githubEvents_realtime_table_config.json").read_text()
    )
    stream = table_stream_configs(github)[0]
    assert stream.offset_criteria.kind == "smallest"
    assert stream.flush.rows == 100  # the legacy .threshold.size key
    assert stream.flush.time_ms == 3_600_000
    assert stream.broker_list == "localhost:19092"
    airline = TableConfig.from_json(
        (pinot_examples / "stream/airlineStats/airlineStats_realtime_table_config.json").read_text()
    )
    flush = table_stream_configs(airline)[0].flush
    assert (flush.rows, flush.time_ms) == (50_000, 3_600_000)  # time in legacy plain ms


def test_both_locations_give_the_same_config() -> None:
    new = table_stream_configs(_table(BASE))[0]
    old = table_stream_configs(_table(BASE, legacy=True))[0]
    assert new.path == "ingestionConfig.streamIngestionConfig.streamConfigMaps[0]"
    assert old.path == "tableIndexConfig.streamConfigs"
    assert dataclass_fields(new) == dataclass_fields(old)


def dataclass_fields(stream) -> dict:
    return {k: v for k, v in vars(stream).items() if k != "path"}


def test_defaults_follow_pinot() -> None:
    stream = parse_stream_config(BASE)
    assert stream.offset_criteria.kind == "largest"  # no auto.offset.reset -> largest
    assert stream.consumer_factory == "org.apache.pinot.plugin.stream.kafka30.KafkaConsumerFactory"
    assert stream.flush.rows == DEFAULT_FLUSH_ROWS
    assert stream.flush.segment_rows is None
    assert stream.flush.time_ms == 6 * 3_600_000
    assert stream.flush.segment_size_bytes == 200 * 1024 * 1024
    assert stream.flush.autotune_initial_rows == 100_000
    assert (stream.fetch_timeout_ms, stream.connection_timeout_ms, stream.idle_timeout_ms) == (
        5000,
        30000,
        180000,
    )
    # a segment size with no row count means autotune (rows 0)
    sized = parse_stream_config({**BASE, "realtime.segment.flush.threshold.segment.size": "150M"})
    assert (sized.flush.rows, sized.flush.segment_size_bytes) == (0, 150 * 1024 * 1024)
    fixed = parse_stream_config(
        {
            **BASE,
            "realtime.segment.flush.threshold.rows": "1000",
            "realtime.segment.flush.threshold.segment.rows": "300",
            "realtime.segment.flush.threshold.time": "4h30m",
        }
    )
    assert (fixed.flush.rows, fixed.flush.segment_rows, fixed.flush.time_ms) == (
        1000,
        300,
        4.5 * 3_600_000,
    )


def test_consumer_props_and_every_kafka_factory() -> None:
    for factory in KAFKA_CONSUMER_FACTORIES:
        stream = parse_stream_config(
            {
                **BASE,
                "stream.kafka.consumer.factory.class.name": factory,
                "stream.kafka.consumer.prop.auto.offset.reset": "2d",
                "stream.kafka.consumer.prop.security.protocol": "PLAINTEXT",
                "stream.kafka.partition.ids": "2,0",
            }
        )
        assert stream.consumer_factory == factory
        assert stream.offset_criteria == OffsetCriteria("period", "2d", period_ms=172_800_000)
        assert stream.consumer_props == {"security.protocol": "PLAINTEXT"}
        assert stream.partition_ids == (0, 2)


def test_offset_criteria_forms() -> None:
    assert OffsetCriteria.parse("SMALLEST").kind == "smallest"
    assert OffsetCriteria.parse("largest").kind == "largest"
    assert OffsetCriteria.parse("10m").period_ms == 600_000
    stamp = OffsetCriteria.parse("2022-08-09T12:31:38.222Z")
    assert (stamp.kind, stamp.timestamp_ms) == ("timestamp", 1660048298222)
    assert OffsetCriteria.parse("2022-08-09T12:31:38.222+0200").timestamp_ms == 1660041098222
    with pytest.raises(ConfigError, match="cannot start consuming from 'yesterday'"):
        OffsetCriteria.parse("yesterday")


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"streamType": "kinesis"}, "streamType", "only kafka"),
        ({"stream.kafka.topic.name": ""}, "stream.kafka.topic.name", "topic"),
        (
            {"stream.kafka.decoder.class.name": "com.acme.MyDecoder"},
            "stream.kafka.decoder.class.name",
            "cannot decode messages with com.acme.MyDecoder",
        ),
        (
            {
                "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.inputformat.protobuf."
                "ProtoBufMessageDecoder"
            },
            "stream.kafka.decoder.class.name",
            "protobuf",
        ),
        (
            {"stream.kafka.consumer.factory.class.name": "org.apache.pinot.plugin.stream."
             "kinesis.KinesisConsumerFactory"},
            "stream.kafka.consumer.factory.class.name",
            "unknown consumer factory",
        ),
        (
            {"stream.kafka.consumer.prop.auto.offset.reset": "whenever"},
            "stream.kafka.consumer.prop.auto.offset.reset",
            "cannot start consuming",
        ),
        ({"realtime.segment.flush.threshold.rows": "many"}, "realtime.segment.flush.threshold.rows",
         "whole number"),
        ({"realtime.segment.flush.threshold.time": "soon"}, "realtime.segment.flush.threshold.time",
         "invalid period"),
        ({"realtime.segment.flush.threshold.segment.size": "big"},
         "realtime.segment.flush.threshold.segment.size", "invalid data size"),
        ({"stream.kafka.partition.ids": "0,x"}, "stream.kafka.partition.ids", "partition ids"),
        (
            {"stream.kafka.decoder.class.name":
             "org.apache.pinot.plugin.inputformat.avro.SimpleAvroMessageDecoder"},
            "stream.kafka.decoder.prop.schema",
            "writer schema",
        ),
        (
            {"stream.kafka.decoder.class.name":
             "org.apache.pinot.plugin.inputformat.avro.SimpleAvroMessageDecoder",
             "stream.kafka.decoder.prop.schema": "{\"type\": \"nope\"}"},
            "stream.kafka.decoder.prop.schema",
            "not a valid Avro schema",
        ),
        (
            {"stream.kafka.decoder.class.name":
             "org.apache.pinot.plugin.inputformat.csv.CSVMessageDecoder"},
            "stream.kafka.decoder.prop.header",
            "column names",
        ),
    ],
)  # fmt: skip
def test_unusable_configs_are_refused_naming_the_key(change, field, message) -> None:
    with pytest.raises(ConfigError) as caught:
        table_stream_configs(_table({**BASE, **change}))
    assert (
        caught.value.field == f"ingestionConfig.streamIngestionConfig.streamConfigMaps[0].{field}"
    )
    assert message.lower() in caught.value.message.lower()


def test_offline_tables_have_no_streams(pinot_examples: Path) -> None:
    path = pinot_examples / "batch/airlineStats/airlineStats_offline_table_config.json"
    assert table_stream_configs(TableConfig.from_json(json.loads(path.read_text()))) == []


def test_client_config_passes_kafka_settings_through_and_maps_java_ones():
    from engine.stream.kafka import client_config

    stream = parse_stream_config(
        {
            **BASE,
            "stream.kafka.broker.list": "k1:9092,k2:9092",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            'required username="alice" password="s3cret";',
            "stream.kafka.consumer.prop.key.deserializer": "org.apache.kafka.common."
            "serialization.StringDeserializer",
            "stream.kafka.consumer.prop.fetch.wait.max.ms": "50",
            "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
        }
    )
    assert client_config(stream, "srv") == {
        "bootstrap.servers": "k1:9092,k2:9092",
        "client.id": "srv",
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "s3cret",
        "fetch.wait.max.ms": "50",
    }
    with pytest.raises(ConfigError) as caught:
        client_config(parse_stream_config(BASE), "srv")
    assert caught.value.field == "streamConfigs.stream.kafka.broker.list"

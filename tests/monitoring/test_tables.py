"""The shipped `consumer_offsets` schema and table config load as Pinot configs and agree."""

from engine.spi.schema import Schema
from engine.spi.schema_validation import validate_schema
from engine.spi.table_config import TableConfig
from engine.spi.table_config_validation import validate_against_schema
from monitoring import tables


def test_schema_and_table_config_are_valid_pinot_configs():
    schema = Schema.from_json(tables.schema())
    validate_schema(schema)
    config = TableConfig.from_json(tables.table_config(), schema)
    validate_against_schema(config, schema)
    assert schema.name == tables.TABLE_NAME


def test_schema_has_the_dimensions_metrics_and_minute_time_of_the_lag_history():
    raw = tables.schema()
    assert [f["name"] for f in raw["dimensionFieldSpecs"]] == ["group", "topic", "partition"]
    assert [f["name"] for f in raw["metricFieldSpecs"]] == ["offset", "logEndOffset", "lag"]
    (time_spec,) = raw["dateTimeFieldSpecs"]
    assert (time_spec["name"], time_spec["granularity"]) == ("commitTimestamp", "1:MINUTES")


def test_table_config_points_the_stream_at_the_given_cluster_and_topic():
    config = tables.table_config("kafka-1:9092", "lag_samples")
    stream = config["ingestionConfig"]["streamIngestionConfig"]["streamConfigMaps"][0]
    assert stream["stream.kafka.broker.list"] == "kafka-1:9092"
    assert stream["stream.kafka.topic.name"] == "lag_samples"
    default = tables.table_config()["ingestionConfig"]["streamIngestionConfig"]
    assert default["streamConfigMaps"][0]["stream.kafka.topic.name"] == tables.DEFAULT_TOPIC


def test_replicas_set_replicas_per_partition_and_the_config_stays_valid():
    schema = Schema.from_json(tables.schema())
    raw = tables.table_config("k:9092", "t", replicas=2)
    assert raw["segmentsConfig"]["replicasPerPartition"] == "2"
    config = TableConfig.from_json(raw, schema)
    assert config.segments_config.replicas_per_partition == 2
    assert "replicasPerPartition" not in tables.table_config()["segmentsConfig"]

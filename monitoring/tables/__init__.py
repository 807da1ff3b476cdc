"""The `consumer_offsets` REALTIME table that keeps lag history: its Pinot schema and table
config, shipped as JSON. `table_config()` points the stream at a cluster and topic."""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import resources

TABLE_NAME = "consumer_offsets"
DEFAULT_TOPIC = "consumer_offsets_json"


@cache
def _load(name: str) -> dict:
    return json.loads(resources.files(__package__).joinpath(name).read_text())


def schema() -> dict:
    return copy.deepcopy(_load("consumer_offsets_schema.json"))


def table_config(
    broker_list: str | None = None, topic: str | None = None, replicas: int | None = None
) -> dict:
    """The shipped REALTIME table config, with the stream's broker list, topic and
    replicasPerPartition replaced when given."""
    config = copy.deepcopy(_load("consumer_offsets_realtime_table_config.json"))
    if replicas:
        config["segmentsConfig"]["replicasPerPartition"] = str(replicas)
    stream = config["ingestionConfig"]["streamIngestionConfig"]["streamConfigMaps"][0]
    if broker_list:
        stream["stream.kafka.broker.list"] = broker_list
    if topic:
        stream["stream.kafka.topic.name"] = topic
    return config

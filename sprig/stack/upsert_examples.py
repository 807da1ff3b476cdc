"""The quickstart's upsert tables, from Apache Pinot's stream/upsertMeetupRsvp example (in
examples/pinot), fed by a change stream of meetup RSVPs (``sprig.stack.producer``):

- ``upsertMeetupRsvp``: Pinot's schema and table config as shipped (FULL upsert on
  ``event_id``, the newest ``mtime`` wins, snapshots and preload on), except for what a local
  demo needs: the local Kafka as broker list, and segments completing each minute instead of
  Pinot's 6 hours, so committed segments and their invalid docs show while a person watches;
- ``upsertMeetupRsvpWithDeletes``: the same on the same topic, plus a BOOLEAN ``deleted``
  column as ``deleteRecordColumn``, since the example has none: a cancelled event disappears
  from it until its next change (in ``upsertMeetupRsvp`` the cancelling record is just the
  event's latest version).

The producer sends each record to the partition Pinot's config names for its ``event_id``
(``segmentPartitionConfig``: Hashcode over 2 partitions), so all versions of a key are in
one partition, as upsert needs. Talks to the controller over REST only.
"""

from __future__ import annotations

import copy
from pathlib import Path

from engine.spi.partition import partition_function
from sprig.stack.example_streams import exists, post, read_config
from sprig.stack.producer import SampleStream, ensure_topic, meetup_events, rsvp_change

UPSERT_TABLE = "upsertMeetupRsvp"
DELETES_TABLE = "upsertMeetupRsvpWithDeletes"
DELETE_COLUMN = "deleted"
EVENTS = 100  # primary keys: each is updated about every EVENTS / rate seconds
FLUSH = {"realtime.segment.flush.threshold.time": "1m",
         "realtime.segment.flush.threshold.size": "100000"}  # fmt: skip


def _folder(examples: Path) -> Path:
    return examples / "stream" / UPSERT_TABLE


def example_configs(examples: Path) -> tuple[dict, dict]:
    folder = _folder(examples)
    return (read_config(folder / f"{UPSERT_TABLE}_schema.json"),
            read_config(folder / f"{UPSERT_TABLE}_realtime_table_config.json"))  # fmt: skip


def _stream_map(config: dict) -> dict:
    return config["ingestionConfig"]["streamIngestionConfig"]["streamConfigMaps"][0]


def with_deletes(schema: dict, config: dict) -> tuple[dict, dict]:
    """The example's schema and table config as ``upsertMeetupRsvpWithDeletes``: one more
    column, ``deleted``, which is the ``deleteRecordColumn``."""
    schema, config = copy.deepcopy(schema), copy.deepcopy(config)
    schema["schemaName"] = config["tableName"] = DELETES_TABLE
    schema["dimensionFieldSpecs"].append({"name": DELETE_COLUMN, "dataType": "BOOLEAN"})
    config["upsertConfig"]["deleteRecordColumn"] = DELETE_COLUMN
    return schema, config


def create_upsert_tables(controller: str, bootstrap: str, examples: Path) -> list[str]:
    """The topic (with the example's partition count), then both schemas and tables; a table
    that exists is left as it is. Returns what was created."""
    schema, config = example_configs(examples)
    stream = _stream_map(config)
    stream["stream.kafka.broker.list"] = bootstrap
    stream.update(FLUSH)
    ensure_topic(bootstrap, stream["stream.kafka.topic.name"], partitions=_partitions(config))
    created = []
    for s, c in ((schema, config), with_deletes(schema, config)):
        if not exists(controller, f"{c['tableName']}_REALTIME"):
            post(controller, "/schemas", s)
            post(controller, "/tables", c)
            created.append(f"{c['tableName']}_REALTIME")
    return created


def _partitions(config: dict) -> int:
    partitioning = config["tableIndexConfig"]["segmentPartitionConfig"]["columnPartitionMap"]
    return int(partitioning["event_id"]["numPartitions"])


def start_rsvp_stream(bootstrap: str, examples: Path, rate_per_s: float) -> SampleStream:
    """RSVP changes of EVENTS meetup events, ``rate_per_s`` a second, each to its key's
    partition by the example's partition function."""
    _schema, config = example_configs(examples)
    column = config["tableIndexConfig"]["segmentPartitionConfig"]["columnPartitionMap"]["event_id"]
    function = partition_function(column["functionName"], int(column["numPartitions"]))
    return SampleStream(
        bootstrap, _stream_map(config)["stream.kafka.topic.name"], meetup_events(EVENTS),
        rsvp_change, rate_per_s, partition_of=lambda record: function.partition(
            record["event_id"]),
    ).start()  # fmt: skip


def guide(console: str, rate_per_s: float) -> list[str]:
    """The printed part of the quickstart summary about the upsert tables."""
    every = EVENTS / rate_per_s
    return [
        f"Upsert (Pinot's upsertMeetupRsvp): RSVP changes of {EVENTS} meetup events, one a "
        f"{1 / rate_per_s:g} s, so each event changes about every {every:g} s; one change in "
        "twenty cancels its event:",
        f"  {UPSERT_TABLE}: one row per event_id, its newest version (mtime wins)",
        f"  {DELETES_TABLE}: the same with deleteRecordColumn '{DELETE_COLUMN}': cancelled "
        "events are gone until their next change",
        f"  SELECT COUNT(*) FROM {UPSERT_TABLE}                 -- {EVENTS}, however many changes",
        f"  SELECT event_id, rsvp_count, mtime FROM {UPSERT_TABLE} WHERE event_id = 'e-0007'",
        f"  SET skipUpsert=true; SELECT COUNT(*) FROM {UPSERT_TABLE}   -- every version",
        f"  SELECT COUNT(*) FROM {DELETES_TABLE}      -- fewer: the cancelled ones",
        f"  Primary keys and segments due for compaction: {console}/console/tables/{UPSERT_TABLE}",
        "",
    ]

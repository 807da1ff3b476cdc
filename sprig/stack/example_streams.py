"""The quickstart's streaming half, from Apache Pinot's example configs in examples/pinot:

- githubEvents, hybrid as in Pinot's "realtime quickstart with minion"
  (minions/stream/githubEvents): a REALTIME table on the topic ``githubEvents`` whose
  RealtimeToOfflineSegmentsTask moves finished time windows into the OFFLINE githubEvents
  table every minute;
- airlineStats, hybrid as in Pinot's hybrid quickstart: the batch OFFLINE table plus a
  REALTIME table on the topic ``flights-realtime`` (stream/airlineStats);
- a SampleStream per topic, producing the example's raw data with fresh times.

The configs are posted as Pinot ships them except for what a local demo needs, each said
where it is done: the local Kafka as broker list, the quickstart's replica count, and time
thresholds of minutes instead of hours, so segments complete and windows move while a person
watches. Talks to the controller over REST only.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import orjson
import requests

from sprig.errors import CommandError
from sprig.stack.producer import (
    SampleStream,
    airline_flights,
    ensure_topic,
    fresh_flight,
    fresh_github_event,
    github_events,
)

GITHUB_TABLE = "githubEvents"
AIRLINE_TABLE = "airlineStats"
# githubEvents: a segment completes each minute (Pinot's example: 100 rows or 1 hour), and
# RealtimeToOffline moves 2-minute windows once they are a minute old (example: 1h and 1h).
# A window longer than the schedule's minute lets the task catch up after a slow run.
GITHUB_FLUSH = {"realtime.segment.flush.threshold.time": "1m",
                "realtime.segment.flush.threshold.size": "100000"}  # fmt: skip
GITHUB_REALTIME_TO_OFFLINE = {"bucketTimePeriod": "2m", "bufferTimePeriod": "1m"}
# airlineStats OFFLINE can merge its day segments into weekly ones (githubEvents OFFLINE keeps
# Pinot's example MergeRollupTask, 1d buckets each minute, unchanged). No cron: the user runs it
# from the printed command once the batch data is in (a day that arrives in a bucket already
# merged past is not merged later), and it does not compete with the push task for the minion.
AIRLINE_MERGE_ROLLUP = {
    "7days.mergeType": "concat",
    "7days.bucketTimePeriod": "7d",
    "7days.bufferTimePeriod": "1d",
    "7days.maxNumParallelBuckets": "10",
}


def read_config(path: Path) -> dict:
    return orjson.loads(path.read_bytes())


def airline_task_dirs(data_dir: Path) -> tuple[Path, Path]:
    """Where airlineStats' SegmentGenerationAndPushTask reads new Avro files and writes
    segments. Not the loaded rawdata folder: the batch job's segments do not record their
    input files, so the task would ingest those files a second time."""
    return data_dir / "incoming" / AIRLINE_TABLE, data_dir / "segments" / f"{AIRLINE_TABLE}-minion"


def data_root_env(data_dir: Path) -> dict[str, str]:
    """The data roots of a quickstart's processes: airlineStats' task reads under
    ``<data-dir>/incoming`` and pushes by metadata from ``<data-dir>/segments``. Roots the
    caller set already are kept."""
    env = {}
    for name, root in (("SPRIG_INPUT_ROOTS", data_dir / "incoming"),
                       ("SPRIG_OUTPUT_ROOTS", data_dir / "segments")):  # fmt: skip
        given = os.environ.get(name, "").strip()
        env[name] = f"{given},{root}" if given else str(root)
    return env


def airline_minion_tasks(config: dict, examples: Path, data_dir: Path) -> dict:
    """The airlineStats OFFLINE config with the task and batch-ingestion settings of Pinot's
    minion example (minions/batch/airlineStats), reading Avro files from a local folder
    (created here) instead of S3; see airline_task_dirs."""
    input_dir, output_dir = airline_task_dirs(data_dir)
    input_dir.mkdir(parents=True, exist_ok=True)
    example = read_config(examples / "minions" / "batch" / AIRLINE_TABLE /
                          f"{AIRLINE_TABLE}_offline_table_config.json")  # fmt: skip
    config = copy.deepcopy(config)
    batch = copy.deepcopy(example["ingestionConfig"]["batchIngestionConfig"])
    for batch_map in batch["batchConfigMaps"]:
        for key in [k for k in batch_map if k.startswith("input.fs.")]:
            del batch_map[key]  # the S3 filesystem and its region: the input is local
        batch_map["inputDirURI"] = input_dir.as_uri()
        batch_map["outputDirURI"] = output_dir.as_uri()
    config.setdefault("ingestionConfig", {})["batchIngestionConfig"] = batch
    config["task"] = copy.deepcopy(example["task"])
    config["task"].setdefault("taskTypeConfigsMap", {})["MergeRollupTask"] = dict(
        AIRLINE_MERGE_ROLLUP
    )
    return config


def create_stream_tables(
    controller: str, bootstrap: str, examples: Path, replicas: int
) -> list[str]:
    """Creates the topics, then the githubEvents schema and OFFLINE and REALTIME tables and the
    airlineStats REALTIME table (its schema and OFFLINE table come with the batch examples).
    A table that exists is left as it is. Returns what was created, for the summary."""
    ensure_topic(bootstrap, GITHUB_TABLE)
    created = []
    folder = examples / "minions" / "stream" / GITHUB_TABLE
    if not exists(controller, f"{GITHUB_TABLE}_OFFLINE"):
        post(controller, "/schemas", read_config(folder / f"{GITHUB_TABLE}_schema.json"))
        offline = read_config(folder / f"{GITHUB_TABLE}_offline_table_config.json")
        offline["segmentsConfig"]["replication"] = str(replicas)
        post(controller, "/tables", offline)
        created.append(f"{GITHUB_TABLE}_OFFLINE")
    if not exists(controller, f"{GITHUB_TABLE}_REALTIME"):
        realtime = read_config(folder / f"{GITHUB_TABLE}_realtime_table_config.json")
        _local_stream(realtime, realtime["tableIndexConfig"]["streamConfigs"], bootstrap, replicas)
        realtime["tableIndexConfig"]["streamConfigs"].update(GITHUB_FLUSH)
        realtime["task"]["taskTypeConfigsMap"]["RealtimeToOfflineSegmentsTask"].update(
            GITHUB_REALTIME_TO_OFFLINE
        )
        post(controller, "/tables", realtime)
        created.append(f"{GITHUB_TABLE}_REALTIME")

    airline = read_config(examples / "stream" / AIRLINE_TABLE /
                          f"{AIRLINE_TABLE}_realtime_table_config.json")  # fmt: skip
    stream_map = airline["ingestionConfig"]["streamIngestionConfig"]["streamConfigMaps"][0]
    ensure_topic(bootstrap, stream_map["stream.kafka.topic.name"])
    if not exists(controller, f"{AIRLINE_TABLE}_REALTIME"):
        _local_stream(airline, stream_map, bootstrap, replicas)
        post(controller, "/tables", airline)
        created.append(f"{AIRLINE_TABLE}_REALTIME")
    return created


def airline_topic(examples: Path) -> str:
    airline = read_config(examples / "stream" / AIRLINE_TABLE /
                          f"{AIRLINE_TABLE}_realtime_table_config.json")  # fmt: skip
    maps = airline["ingestionConfig"]["streamIngestionConfig"]["streamConfigMaps"]
    return maps[0]["stream.kafka.topic.name"]


def start_sample_streams(bootstrap: str, examples: Path, rate_per_s: float) -> list[SampleStream]:
    """One producer per example topic, ``rate_per_s`` records a second each, started."""
    github = SampleStream(
        bootstrap, GITHUB_TABLE,
        github_events(examples / "stream" / GITHUB_TABLE / "rawdata" / "2021-07-21-few-hours.json"),
        fresh_github_event, rate_per_s,
    )  # fmt: skip
    flights = SampleStream(
        bootstrap, airline_topic(examples),
        airline_flights(examples / "stream" / AIRLINE_TABLE / "rawdata" / "airlineStats_data.avro"),
        fresh_flight, rate_per_s,
    )  # fmt: skip
    return [github.start(), flights.start()]


def _local_stream(config: dict, stream_map: dict, bootstrap: str, replicas: int) -> None:
    """The example's stream pointed at the local Kafka (examples say localhost:19092), with a
    replica of each partition on ``replicas`` servers like the quickstart's OFFLINE tables."""
    stream_map["stream.kafka.broker.list"] = bootstrap
    config["segmentsConfig"]["replication"] = str(replicas)
    config["segmentsConfig"]["replicasPerPartition"] = str(replicas)


def exists(controller: str, table_with_type: str) -> bool:
    return requests.get(f"{controller}/tables/{table_with_type}", timeout=30).status_code == 200


def post(controller: str, path: str, body: dict) -> None:
    response = requests.post(f"{controller}{path}", json=body, timeout=60)
    if not response.ok:
        name = body.get("tableName") or body.get("schemaName")
        raise CommandError(
            f"creating {name} (POST {path}) failed: HTTP {response.status_code} "
            f"{response.text[:300]}"
        )


def guide(
    console: str, broker: str, bootstrap: str, rate_per_s: float, examples: Path, data_dir: Path
) -> list[str]:
    """The printed part of the quickstart summary about the streams and the minion tasks."""
    incoming = airline_task_dirs(data_dir)[0]
    one_day = next((examples / "batch" / AIRLINE_TABLE / "rawdata").glob("*/*/01/*.avro"))
    schedule = f"curl -s -X POST '{console}/tasks/schedule?taskType="
    return [
        f"Streams: {rate_per_s:g} records/s into each topic of the local Kafka at {bootstrap}, "
        "with fresh times, until Ctrl-C:",
        f"  {GITHUB_TABLE} (hybrid): topic {GITHUB_TABLE} -> {GITHUB_TABLE}_REALTIME (a segment "
        "completes each minute); RealtimeToOfflineSegmentsTask moves 2-minute windows into "
        f"{GITHUB_TABLE}_OFFLINE every minute, the first after about 4 minutes",
        f"  {AIRLINE_TABLE} (hybrid): topic {airline_topic(examples)} -> {AIRLINE_TABLE}_REALTIME "
        f"(today's flights), next to {AIRLINE_TABLE}_OFFLINE (January 2014); the broker's time "
        "boundary splits a query between them",
        "",
        "Watch them grow (run again and again in the Query Console):",
        f"  SELECT COUNT(*) FROM {GITHUB_TABLE}",
        f"  SELECT type, COUNT(*) AS events FROM {GITHUB_TABLE} GROUP BY type "
        "ORDER BY events DESC LIMIT 10",
        f"  SELECT COUNT(*) FROM {GITHUB_TABLE}_OFFLINE          -- rows the minion has moved",
        f"  SELECT COUNT(*) FROM {AIRLINE_TABLE}_REALTIME",
        f"  SELECT COUNT(*) FROM {AIRLINE_TABLE}                 -- offline + real-time",
        f"  curl -s -X POST {broker}/query/sql -H 'Content-Type: application/json' "
        f'-d \'{{"sql": "SELECT COUNT(*) FROM {GITHUB_TABLE}"}}\'',
        f"  Real-time ingestion per partition: {console}/console/tables/{GITHUB_TABLE}",
        "",
        f"Kafka consumers: {console}/console/consumers shows the groups of the local Kafka; "
        f"the demo group quickstart-demo reads {GITHUB_TABLE} and falls behind every other "
        "2.5 minutes (its lag history and Burrow status change), as",
        f"  kafka-consumer-groups shows: bin/sprig kafka-consumer-groups --bootstrap-server "
        f"{bootstrap} --describe --group quickstart-demo",
        "",
        f"Minion tasks (watch them at {console}/console/minion-task-manager):",
        "  RealtimeToOfflineSegmentsTask on githubEvents runs by itself each minute "
        "(schedule '0 * * * * ?'); to run it now:",
        f"    {schedule}RealtimeToOfflineSegmentsTask&tableName={GITHUB_TABLE}_REALTIME'",
        f"  SegmentGenerationAndPushTask on {AIRLINE_TABLE} (Pinot's minion example config) "
        f"ingests new Avro files from {incoming}, one segment a file:",
        f"    cp {one_day} {incoming}/",
        f"    {schedule}SegmentGenerationAndPushTask&tableName={AIRLINE_TABLE}_OFFLINE'",
        f"  MergeRollupTask on {AIRLINE_TABLE} merges its 31 day segments into weekly ones "
        "(answers stay the same; numSegmentsQueried drops):",
        f"    {schedule}MergeRollupTask&tableName={AIRLINE_TABLE}_OFFLINE'",
        f"  Cron schedules: {console}/tasks/scheduler/jobKeys",
        "",
    ]

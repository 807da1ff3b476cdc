"""The RealtimeToOfflineSegmentsTask part of bench.minion: rows produced into a partitioned
topic and consumed into completed segments, then one window moved to the OFFLINE table as one
subtask and again, reset, as one subtask per partition (``splitByPartition``)."""

from __future__ import annotations

import json
import time

from bench.minion_stack import Stack, most_at_once

R2O_TASK = "RealtimeToOfflineSegmentsTask"
R2O_BASE_MS = 1_699_999_200_000  # a multiple of the 1h bucket
HOUR_MS = 3_600_000


def r2o_configs(topic: str, bootstrap: str, rows: int, partitions: int, split: bool):
    # a server consuming all partitions splits the threshold among them: 4 segments each
    threshold = rows // partitions // 4 * partitions
    realtime = {
        "tableName": "r2o", "tableType": "REALTIME", "tenants": {}, "metadata": {},
        "segmentsConfig": {"timeColumnName": "ts", "replicasPerPartition": "1",
                           "schemaName": "r2o"},
        "tableIndexConfig": {"streamConfigs": {
            "streamType": "kafka", "stream.kafka.topic.name": topic,
            "stream.kafka.broker.list": bootstrap,
            "stream.kafka.decoder.class.name":
                "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
            "stream.kafka.consumer.prop.auto.offset.reset": "smallest",
            "realtime.segment.flush.threshold.rows": str(threshold),
        }},
        "task": {"taskTypeConfigsMap": {R2O_TASK: {
            "bucketTimePeriod": "1h", "bufferTimePeriod": "1d",
            "splitByPartition": str(split).lower()}}},
    }  # fmt: skip
    offline = {
        "tableName": "r2o", "tableType": "OFFLINE", "tenants": {}, "metadata": {},
        "segmentsConfig": {"timeColumnName": "ts", "replication": "1", "schemaName": "r2o",
                           "segmentPushFrequency": "HOURLY", "segmentPushType": "APPEND"},
        "tableIndexConfig": {},
    }  # fmt: skip
    return realtime, offline


def produce_r2o(bootstrap: str, topic: str, rows: int, partitions: int) -> None:
    """Per partition, rows in the first hour from R2O_BASE_MS, and its last 10 rows past it,
    so each partition's last segment reaches the window's end."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                         "queue.buffering.max.messages": 1_000_000})  # fmt: skip
    per = rows // partitions
    for p in range(partitions):
        for i in range(per):
            ts = R2O_BASE_MS + (i * HOUR_MS // per if i < per - 10 else HOUR_MS + i)
            value = json.dumps({"user": f"u{i % 1000}", "n": i, "ts": ts}).encode()
            while True:
                try:
                    producer.produce(topic, value, partition=p)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.flush(120)


def r2o_run(stack: Stack, split: bool) -> tuple[float, int, int]:
    name = stack.schedule(R2O_TASK, "r2o_REALTIME")
    debug = stack.wait_task(name, 3600)
    spans = stack.spans(name)
    span_s = (max(e for _, e in spans) - min(s for s, _ in spans)) / 1000
    segments, rows = stack.offline_rows("r2o")
    kind = "one subtask per partition" if split else "one subtask"
    print(
        f"  {kind} ({len(debug['subtaskInfos'])} subtask(s), at most {most_at_once(spans)} "
        f"at once): {span_s:.1f} s (Spark merge_tables {stack.spark_seconds(spans):.1f} s "
        f"summed over subtasks), "
        f"{rows:,} rows into {segments} OFFLINE segment(s), {rows / span_s:,.0f} rows/s"
    )
    return span_s, rows, segments


def bench_r2o(stack: Stack, rows: int, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = "r2o_events"
    admin = AdminClient({"bootstrap.servers": stack.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)
    schema = {"schemaName": "r2o",
              "dimensionFieldSpecs": [{"name": "user", "dataType": "STRING"}],
              "metricFieldSpecs": [{"name": "n", "dataType": "LONG"}],
              "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG",
                                      "format": "1:MILLISECONDS:EPOCH",
                                      "granularity": "1:MILLISECONDS"}]}  # fmt: skip
    realtime, offline = r2o_configs(topic, stack.bootstrap, rows, partitions, split=False)
    stack.call("POST", "/schemas", json=schema)
    stack.call("POST", "/tables", json=realtime)
    stack.call("POST", "/tables", json=offline)
    # two subtasks at a time on the one minion, whose two pool processes have a Spark each
    stack.call("POST", "/cluster/configs",
               json={f"{R2O_TASK}.numConcurrentTasksPerInstance": "2"})  # fmt: skip
    started = time.monotonic()
    produce_r2o(stack.bootstrap, topic, rows, partitions)
    produced = time.monotonic() - started
    want = 4 * partitions
    while True:
        metadata = stack.call("GET", "/segments/r2o/zkmetadata", params={"type": "REALTIME"})
        done = sum(m.get("segment.realtime.status") == "DONE" for m in metadata.values())
        if done >= want:
            break
        if time.monotonic() - started > 1800:
            raise RuntimeError(f"only {done} of {want} segments committed")
        time.sleep(1)
    print(f"realtime-to-offline: {rows:,} rows in {partitions} partitions, {want} completed "
          f"segments (produced in {produced:.0f} s, consumed and committed in "
          f"{time.monotonic() - started:.0f} s)")  # fmt: skip
    one_s, one_rows, _ = r2o_run(stack, split=False)
    # the same window again, one subtask per partition
    stack.call("DELETE", f"/tasks/{R2O_TASK}/r2o_REALTIME/metadata")
    stack.call("DELETE", "/segments/r2o", params={"type": "OFFLINE"})
    while stack.offline_rows("r2o")[0]:
        time.sleep(0.5)
    split_config, _ = r2o_configs(topic, stack.bootstrap, rows, partitions, split=True)
    stack.call("PUT", "/tables/r2o", json=split_config)
    split_s, split_rows, _ = r2o_run(stack, split=True)
    if split_rows != one_rows:
        print(f"  WARNING: the runs moved different row counts ({one_rows} vs {split_rows})")
    print(f"  speed-up of one subtask per partition: {one_s / split_s:.2f}x")

"""The quickstart's sample producer: fresh times on Pinot's sample records, the airlineStats
minion task config made local, and a SampleStream producing at its rate into the real local
Kafka, looping over its sample, until stopped."""

from __future__ import annotations

import datetime as dt
import time
import uuid

import orjson
import pytest
from confluent_kafka import Consumer, TopicPartition

from sprig.commands.quickstart import EXAMPLES_DIR
from sprig.stack import example_streams
from sprig.stack.process import ServiceError
from sprig.stack.producer import (
    SampleStream,
    airline_flights,
    ensure_topic,
    fresh_flight,
    fresh_github_event,
    github_events,
)

NOW = dt.datetime(2026, 11, 23, 22, 59, 30, tzinfo=dt.UTC).timestamp()
GITHUB_SAMPLE = EXAMPLES_DIR / "stream" / "githubEvents" / "rawdata" / "2021-07-21-few-hours.json"


def test_github_events_get_the_send_time_and_unique_ids_after_the_first_pass():
    events = github_events(GITHUB_SAMPLE)
    assert len(events) == 800
    first = fresh_github_event(dict(events[0]), NOW, 0)
    assert first["created_at"] == "2026-11-23T22:59:30Z"
    assert first["id"] == events[0]["id"]
    again = fresh_github_event(dict(events[0]), NOW, 3)
    assert again["id"] == f"{events[0]['id']}-3"
    assert again["type"] == events[0]["type"]


def test_flights_move_to_the_send_day_with_consistent_calendar_columns():
    flights = airline_flights(EXAMPLES_DIR / "stream" / "airlineStats" / "rawdata" /
                              "airlineStats_data.avro")  # fmt: skip
    assert len(flights) == 9746
    flight = fresh_flight(dict(flights[0]), NOW, 0)
    assert flight["DaysSinceEpoch"] == (dt.date(2026, 11, 23) - dt.date(1970, 1, 1)).days
    assert (flight["FlightDate"], flight["Year"], flight["Quarter"], flight["Month"],
            flight["DayofMonth"], flight["DayOfWeek"]) == ("2026-11-23", 2026, 4, 11, 23, 1)  # fmt: skip
    assert flight["Carrier"] == flights[0]["Carrier"]


def test_airline_task_config_reads_a_local_folder(tmp_path):
    config = orjson.loads((EXAMPLES_DIR / "batch" / "airlineStats" /
                           "airlineStats_offline_table_config.json").read_bytes())  # fmt: skip
    out = example_streams.airline_minion_tasks(config, EXAMPLES_DIR, tmp_path)
    batch = out["ingestionConfig"]["batchIngestionConfig"]
    (batch_map,) = batch["batchConfigMaps"]
    incoming, segments = example_streams.airline_task_dirs(tmp_path)
    assert incoming.is_dir()
    assert batch_map["inputDirURI"] == incoming.as_uri()
    assert batch_map["outputDirURI"] == segments.as_uri()
    assert not [k for k in batch_map if k.startswith("input.fs.")]  # no S3 left
    assert out["task"] == {"taskTypeConfigsMap": {
        "SegmentGenerationAndPushTask": {},
        "MergeRollupTask": example_streams.AIRLINE_MERGE_ROLLUP,
    }}  # fmt: skip
    assert out["tableIndexConfig"] == config["tableIndexConfig"]  # the batch config is kept
    assert "batchIngestionConfig" not in config.get("ingestionConfig", {})  # not mutated


def test_bad_rates_and_empty_samples_are_refused():
    with pytest.raises(ServiceError, match="rate must be > 0"):
        SampleStream("127.0.0.1:1", "t", [{"a": 1}], fresh_github_event, 0)
    with pytest.raises(ServiceError, match="has no records"):
        SampleStream("127.0.0.1:1", "t", [], fresh_github_event, 10)


@pytest.mark.integration
def test_a_sample_stream_loops_at_its_rate_until_stopped(kafka):
    topic = f"sample_{uuid.uuid4().hex[:8]}"
    ensure_topic(kafka.bootstrap_servers, topic)
    ensure_topic(kafka.bootstrap_servers, topic)  # a second call leaves the topic alone
    sample = github_events(GITHUB_SAMPLE)[:7]
    stream = SampleStream(kafka.bootstrap_servers, topic, sample, fresh_github_event, 50)
    started = time.time()
    stream.start()
    time.sleep(2.0)
    stream.stop()
    elapsed = time.time() - started
    assert 60 <= stream.produced <= 50 * elapsed + 1, (stream.produced, elapsed)
    assert stream.failed == 0

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": topic,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    records = []
    deadline = time.monotonic() + 30
    while len(records) < stream.produced and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            records.append(orjson.loads(message.value()))
    consumer.close()
    assert len(records) == stream.produced
    ids = [r["id"] for r in records]
    assert len(set(ids)) == len(ids)  # looped over 7 records, every event still unique
    assert ids[:8] == [e["id"] for e in sample] + [f"{sample[0]['id']}-1"]
    sent = [dt.datetime.strptime(r["created_at"], "%Y-%m-%dT%H:%M:%S%z").timestamp()
            for r in records]  # fmt: skip
    assert all(started - 1 <= t <= started + elapsed + 1 for t in sent)

"""The quickstart's upsert tables: Pinot's upsertMeetupRsvp example with only the local
stream changed, its twin with a deleteRecordColumn, and the RSVP change stream producing every
version of an event into the partition the example's partition function names."""

from __future__ import annotations

import time
import uuid

import orjson
import pytest
from confluent_kafka import Consumer, TopicPartition

from engine.spi import Schema, TableConfig
from engine.spi.partition import partition_function
from engine.spi.upsert_config import UpsertConfig
from sprig.commands.quickstart import EXAMPLES_DIR
from sprig.stack import upsert_examples
from sprig.stack.producer import SampleStream, ensure_topic, meetup_events, rsvp_change


def test_the_deletes_twin_adds_only_its_delete_column():
    schema, config = upsert_examples.example_configs(EXAMPLES_DIR)
    twin_schema, twin_config = upsert_examples.with_deletes(schema, config)
    assert twin_schema["dimensionFieldSpecs"][:-1] == schema["dimensionFieldSpecs"]
    assert twin_schema["dimensionFieldSpecs"][-1] == {"name": "deleted", "dataType": "BOOLEAN"}
    parsed = TableConfig.from_json(twin_config, Schema.from_json(twin_schema))
    upsert = UpsertConfig.of(parsed)
    assert upsert.delete_record_column == "deleted" and upsert.mode.value == "FULL"
    assert "deleteRecordColumn" not in config["upsertConfig"]  # the example itself unchanged


def test_rsvp_changes_update_the_same_events():
    events = meetup_events(upsert_examples.EVENTS)
    assert len({e["event_id"] for e in events}) == 100
    first = rsvp_change(dict(events[7]), 1_800_000_000.0, 0)
    later = rsvp_change(dict(events[7]), 1_800_000_010.5, 1)
    assert first["event_id"] == later["event_id"] == "e-0007"
    assert (first["mtime"], later["mtime"]) == (1_800_000_000_000, 1_800_000_010_500)
    assert isinstance(later["deleted"], bool)


@pytest.mark.integration
def test_every_version_of_an_event_goes_to_its_partition(kafka):
    topic = f"rsvp_{uuid.uuid4().hex[:8]}"
    ensure_topic(kafka.bootstrap_servers, topic, partitions=2)
    function = partition_function("Hashcode", 2)
    stream = SampleStream(kafka.bootstrap_servers, topic, meetup_events(10), rsvp_change, 100,
                          partition_of=lambda r: function.partition(r["event_id"]))  # fmt: skip
    stream.start()
    time.sleep(1.0)
    stream.stop()
    assert stream.produced >= 20 and stream.failed == 0
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": topic,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    seen: dict[str, set[int]] = {}
    deadline, count = time.monotonic() + 30, 0
    while count < stream.produced and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            count += 1
            key = orjson.loads(message.value())["event_id"]
            seen.setdefault(key, set()).add(message.partition())
    consumer.close()
    assert count == stream.produced
    assert seen == {
        k: {function.partition(k)} for k in seen
    }  # every version of a key in one partition, the example's
    assert {p for parts in seen.values() for p in parts} == {0, 1}

"""A steady stream of sample records into a Kafka topic, for the quickstart's REALTIME tables.

``SampleStream`` loops over a sample file's records on a thread, gives each one fresh time
values (so the records are "now", inside any retention and time window), and produces it as
JSON at a fixed rate until ``stop()``. Two samples from Apache Pinot's examples are known:
``github_events`` (stream/githubEvents: JSON lines) and ``airline_flights``
(stream/airlineStats: Avro, produced as JSON as Pinot's hybrid quickstart does). A third,
``meetup_events`` with ``rsvp_change``, is a change stream for the upsertMeetupRsvp tables: the
same events updated again and again, some cancelled (deleted) and later back.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import fastavro
import orjson
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from sprig.stack.process import ServiceError

log = logging.getLogger(__name__)

DAY_S = 86_400
TICKS_PER_S = 10  # the rate is kept per tenth of a second, so a record's wait is < 100 ms

Refresh = Callable[[dict, float, int], dict]  # (record, now in epoch seconds, loop) -> record
PartitionOf = Callable[[dict], int]  # record -> the topic partition it must go to


class SampleStream:
    """Produces ``records`` to ``topic`` on ``bootstrap``, ``rate_per_s`` a second, starting
    over at the end, each passed through ``refresh`` with the send time and the loop number
    (0 on the first pass). ``partition_of``, when given, names each record's partition (an
    upsert table needs every record of a key in one partition); else Kafka picks.
    ``produced`` counts records the broker acknowledged."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        records: list[dict],
        refresh: Refresh,
        rate_per_s: float,
        partition_of: PartitionOf | None = None,
    ) -> None:
        if not records:
            raise ServiceError(f"producer for topic '{topic}': the sample has no records")
        if rate_per_s <= 0:
            raise ServiceError(f"producer for topic '{topic}': rate must be > 0, got {rate_per_s}")
        self.topic = topic
        self.records = records
        self.refresh = refresh
        self.rate_per_s = rate_per_s
        self.partition_of = partition_of
        self.produced = 0
        self.failed = 0
        # linger lets one tick's records go out as one batch; acks=all is the Kafka default
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                                   "client.id": f"sprig-sample-{topic}"})  # fmt: skip
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{topic}", daemon=True)

    def start(self) -> SampleStream:
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stops producing, waits (up to ``timeout_s``) for records in flight, and closes the
        client, so it does not go on reconnecting once Kafka stops."""
        self._stop.set()
        self._thread.join(timeout=timeout_s)
        self._producer.flush(timeout_s)
        self._producer.purge()  # what could not go out in time: close() must not wait for it
        self._producer.close()

    def _delivered(self, err, _msg) -> None:
        if err is None:
            self.produced += 1
        else:
            self.failed += 1
            if self.failed == 1 or self.failed % 1000 == 0:
                log.warning("producing to %s failed (%d so far): %s", self.topic, self.failed, err)

    def _run(self) -> None:
        index = loop = 0
        sent = 0.0  # records due so far, fractional for rates below one per tick
        started = time.monotonic()
        while not self._stop.is_set():
            due = (time.monotonic() - started) * self.rate_per_s
            while sent + 1 <= due and not self._stop.is_set():
                record = self.refresh(dict(self.records[index]), time.time(), loop)
                where = {} if self.partition_of is None else {
                    "partition": self.partition_of(record)}  # fmt: skip
                try:
                    self._producer.produce(self.topic, orjson.dumps(record),
                                           on_delivery=self._delivered, **where)  # fmt: skip
                except BufferError:  # the broker is away and the local queue is full
                    self._producer.poll(0.5)
                    continue
                sent += 1
                index += 1
                if index == len(self.records):
                    index, loop = 0, loop + 1
            self._producer.poll(0)
            self._stop.wait(1 / TICKS_PER_S)


def ensure_topic(bootstrap: str, topic: str, partitions: int = 1, timeout_s: float = 10.0) -> None:
    """Creates ``topic`` unless it exists. Created up front, not by the first produce, so it
    has the partitions asked for before a table reads it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        if topic in admin.list_topics(timeout=timeout_s).topics:
            return
        admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(timeout_s)
    except KafkaException as exc:
        raise ServiceError(f"cannot create topic '{topic}' on {bootstrap}: {exc}") from exc


# --- the samples -------------------------------------------------------------------------------
def github_events(path: Path) -> list[dict]:
    """The GitHub events of Pinot's stream/githubEvents sample, one JSON object a line."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def fresh_github_event(record: dict, now_s: float, loop: int) -> dict:
    """``created_at`` becomes the send time (the table's time column is derived from it);
    ids get the loop number after the first pass, so every event stays unique."""
    record["created_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now_s))
    if loop:
        record["id"] = f"{record['id']}-{loop}"
    return record


def airline_flights(path: Path) -> list[dict]:
    """The flights of Pinot's stream/airlineStats sample (Avro records)."""
    with path.open("rb") as handle:
        return list(fastavro.reader(handle))


def fresh_flight(record: dict, now_s: float, loop: int) -> dict:
    """The flight moved to today (UTC): DaysSinceEpoch, the table's time column, and the
    calendar columns that go with it, so the row stays consistent."""
    day = dt.datetime.fromtimestamp(now_s, dt.UTC).date()
    record.update(
        DaysSinceEpoch=int(now_s // DAY_S),
        FlightDate=day.isoformat(),
        Year=day.year,
        Quarter=(day.month - 1) // 3 + 1,
        Month=day.month,
        DayofMonth=day.day,
        DayOfWeek=day.isoweekday(),  # the sample counts Monday as 1
    )
    return record


# The meetup events the RSVP change stream updates: Pinot's upsertMeetupRsvp example ships a
# schema and table config but no data (its quickstart reads a live feed that is gone).
MEETUP_GROUPS = (
    ("Amsterdam Python", "Amsterdam", "nl", 52.37, 4.89, "De Pijp"),
    ("Berlin Data", "Berlin", "de", 52.52, 13.40, "Factory Mitte"),
    ("Lisbon Analytics", "Lisbon", "pt", 38.72, -9.14, "LX Factory"),
    ("Austin Streaming", "Austin", "us", 30.27, -97.74, "Capital Factory"),
    ("Pune OLAP", "Pune", "in", 18.52, 73.86, "Koregaon Park Hub"),
)
DELETE_SHARE = 0.05  # an RSVP change that cancels its event: a tombstone where it is honoured


def meetup_events(count: int) -> list[dict]:
    """``count`` meetup events (``event_id`` e-0000, e-0001, ...) spread over five groups, the
    fields of the upsertMeetupRsvp schema that do not change between RSVPs."""
    out = []
    for i in range(count):
        name, city, country, lat, lon, venue = MEETUP_GROUPS[i % len(MEETUP_GROUPS)]
        out.append({
            "event_id": f"e-{i:04d}", "event_name": f"{name} meetup #{i // len(MEETUP_GROUPS)}",
            "group_id": 1000 + i % len(MEETUP_GROUPS), "group_name": name, "group_city": city,
            "group_country": country, "group_lat": lat, "group_lon": lon, "venue_name": venue,
        })  # fmt: skip
    return out


def rsvp_change(record: dict, now_s: float, loop: int) -> dict:
    """The event's latest state: a new RSVP count and ``mtime`` (the comparison column: the
    newest wins) of now, and ``deleted`` true for about one change in twenty (cancelled; the
    next change of the event brings it back)."""
    now_ms = int(now_s * 1000)
    record.update(
        rsvp_count=random.randint(1, 50 + 10 * loop),
        mtime=now_ms,
        event_time=now_ms + 7 * DAY_S * 1000,
        deleted=random.random() < DELETE_SHARE,
    )
    return record

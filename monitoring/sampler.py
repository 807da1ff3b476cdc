"""The lag collector for clusters whose `__consumer_offsets` cannot be read (managed services
forbid it; some brokers have none): every interval it lists the groups, reads their commits
and the end offsets through the AdminClient, and produces one JSON record per group and
partition to a topic that the `consumer_offsets` REALTIME table consumes.

A record is the decoder's seed format plus `logEndOffset` and `lag`:
`{"topic","partition","group","version":null,"offset","metadata","commitTimestamp",
"expireTimestamp":null,"logEndOffset","lag","source":"collector"}`. The AdminClient does not
tell when a commit was made, so `commitTimestamp` is the poll time. A partition a member owns
but the group never committed has `offset` and `lag` null: unknown, never 0. Groups without
active members keep being reported as long as they have commits.
"""

from __future__ import annotations

import fnmatch
import logging
import threading
import time
from collections.abc import Callable, Mapping

import orjson
from confluent_kafka import KafkaException, Producer

from monitoring import groups as g
from monitoring.errors import KafkaUnavailableError
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.tables import DEFAULT_TOPIC

log = logging.getLogger(__name__)


def sample_records(offsets: list[g.GroupOffsets], now_ms: int) -> list[dict]:
    """One JSON-ready record per partition row of each group."""
    records = []
    for entry in offsets:
        for row in entry.rows:
            record = {
                "topic": row.topic,
                "partition": row.partition,
                "group": row.group,
                "version": None,
                "offset": row.committed,
                "metadata": None,
                "commitTimestamp": now_ms,
                "expireTimestamp": None,
                "logEndOffset": row.end_offset,
                "lag": row.monitored_lag,
                "source": "collector",
            }
            if row.leader_epoch is not None:
                record["leaderEpoch"] = row.leader_epoch
            records.append(record)
    return records


class LagSampler:
    """Polls one cluster and produces lag samples to `topic` (on the same cluster unless
    `producer_config` names another). `groups` is a glob of the groups to sample (all by
    default); the sampler's own producer joins no group, so it never samples itself."""

    def __init__(
        self,
        reader: KafkaGroupReader,
        topic: str = DEFAULT_TOPIC,
        groups: str = "*",
        producer_config: Mapping | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.reader = reader
        self.topic = topic
        self.groups = groups
        self.clock = clock
        config = {"bootstrap.servers": reader.bootstrap_servers, "linger.ms": 50}
        self._producer = Producer({**config, **(producer_config or {})})

    def poll_once(self) -> list[dict]:
        """One round of admin calls: groups, descriptions, commits, end offsets."""
        now_ms = int(self.clock() * 1000)
        group_ids = [
            listing.group_id
            for listing in self.reader.list_groups()
            if fnmatch.fnmatchcase(listing.group_id, self.groups)
        ]
        return sample_records(self.reader.group_offsets(group_ids), now_ms)

    def publish(self, records: list[dict], timeout_s: float = 30.0) -> int:
        """Produces the records keyed `group/topic/partition` (so each partition's samples stay
        in order) and waits for delivery. Returns the number delivered; raises
        KafkaUnavailableError if any is not."""
        failures: list[str] = []

        def delivered(err, _msg) -> None:
            if err is not None:
                failures.append(err.str())

        for record in records:
            key = f"{record['group']}/{record['topic']}/{record['partition']}"
            self._produce(key.encode(), orjson.dumps(record), delivered)
        remaining = self._producer.flush(timeout_s)
        if remaining or failures:
            reason = failures[0] if failures else f"{remaining} not delivered in {timeout_s} s"
            raise KafkaUnavailableError(
                f"could not produce {remaining or len(failures)} lag sample(s) to topic "
                f"'{self.topic}': {reason}"
            )
        return len(records)

    def _produce(self, key: bytes, value: bytes, on_delivery) -> None:
        while True:
            try:
                self._producer.produce(self.topic, value=value, key=key, on_delivery=on_delivery)
                return
            except BufferError:
                self._producer.poll(0.1)  # the local queue is full: let deliveries drain
            except KafkaException as exc:
                raise KafkaUnavailableError(f"cannot produce to '{self.topic}': {exc}") from exc

    def run(self, interval_s: float, stop: threading.Event) -> None:
        """Samples every `interval_s` seconds until `stop` is set. A round that fails (the
        cluster is away) is logged and the next round tries again."""
        if interval_s <= 0:
            raise ValueError(f"interval must be positive, got {interval_s}")
        while not stop.is_set():
            started = time.monotonic()
            try:
                count = self.publish(self.poll_once())
                log.debug("produced %d lag samples to %s", count, self.topic)
            except KafkaUnavailableError as exc:
                log.warning("lag sampling round failed: %s", exc)
            stop.wait(max(0.0, interval_s - (time.monotonic() - started)))

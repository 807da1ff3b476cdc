"""Consumer lag as Prometheus series with kafka-lag-exporter's names and labels, from the
collector's polls (the same admin calls as the sampler's round).

Per group partition (labels `cluster_name, group, topic, partition, member_host, consumer_id,
client_id`): `kafka_consumergroup_group_offset`, `kafka_consumergroup_group_lag`,
`kafka_consumergroup_group_lag_seconds`; per partition (`cluster_name, topic, partition`):
`kafka_partition_latest_offset`; per cluster: `kafka_consumergroup_poll_time_ms`.

A partition without a commit has no offset, lag or time lag series at all: kafka-lag-exporter
exported NaN there, which breaks `sum()` (its issues #45, #125). Unknown time lag (fewer than two
end-offset points yet) is left out the same way. Partitions no member owns (groups without
active members keep reporting) carry `unknown` in the member labels. Plain module, no Django.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from monitoring import groups as g
from monitoring.evaluation.time_lag import EndOffsetTable

GROUP_SERIES = (
    ("kafka_consumergroup_group_offset", "Last group consumed offset of a partition"),
    ("kafka_consumergroup_group_lag", "Group offset lag of a partition"),
    ("kafka_consumergroup_group_lag_seconds", "Group time lag of a partition"),
)
UNKNOWN_MEMBER = "unknown"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Iterable[tuple[str, object]]) -> str:
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in pairs) + "}"


def _number(value: float | int) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


class LagExporter:
    """Keeps each partition's end offsets over time (for the time lag, `capacity` points, as
    kafka-lag-exporter's in-memory table) and the latest poll. Thread-safe."""

    def __init__(self, cluster_name: str, capacity: int = 60) -> None:
        self.cluster_name = cluster_name
        self.capacity = capacity
        self._tables: dict[g.TopicPartition, EndOffsetTable] = {}
        self._latest: list[g.GroupOffsets] = []
        self._polled_at_ms: int | None = None
        self._poll_time_ms: float | None = None
        self._lock = threading.Lock()

    @property
    def polled_at_ms(self) -> int | None:
        return self._polled_at_ms

    def observe(self, offsets: list[g.GroupOffsets], now_ms: int, poll_time_ms: float) -> None:
        """One poll's answer, taken at `now_ms` (epoch ms) in `poll_time_ms`."""
        with self._lock:
            seen = set()
            for entry in offsets:
                for row in entry.rows:
                    tp = (row.topic, row.partition)
                    if row.end_offset is None or tp in seen:
                        continue
                    seen.add(tp)
                    table = self._tables.get(tp)
                    if table is None:
                        table = self._tables[tp] = EndOffsetTable(self.capacity)
                    table.add(row.end_offset, now_ms)
            # partitions no group reads any more are forgotten, as the groups that read them
            for tp in set(self._tables) - seen:
                del self._tables[tp]
            self._latest = offsets
            self._polled_at_ms = now_ms
            self._poll_time_ms = poll_time_ms

    def lines(self) -> list[str]:
        """The Prometheus text lines of the latest poll; none before the first."""
        with self._lock:
            if self._polled_at_ms is None:
                return []
            now_ms = self._polled_at_ms
            series: dict[str, list[str]] = {name: [] for name, _ in GROUP_SERIES}
            latest: dict[g.TopicPartition, int] = {}
            for entry in self._latest:
                for row in entry.rows:
                    tp = (row.topic, row.partition)
                    if row.end_offset is not None:
                        latest[tp] = row.end_offset
                    if row.committed is None:
                        continue  # unknown: no series, never 0 or NaN
                    labels = _labels((
                        ("cluster_name", self.cluster_name), ("group", row.group),
                        ("topic", row.topic), ("partition", row.partition),
                        ("member_host", row.host if row.consumer_id else UNKNOWN_MEMBER),
                        ("consumer_id", row.consumer_id or UNKNOWN_MEMBER),
                        ("client_id", row.client_id if row.consumer_id else UNKNOWN_MEMBER),
                    ))  # fmt: skip
                    series["kafka_consumergroup_group_offset"].append(
                        f"kafka_consumergroup_group_offset{labels} {row.committed}"
                    )
                    if row.monitored_lag is not None:
                        series["kafka_consumergroup_group_lag"].append(
                            f"kafka_consumergroup_group_lag{labels} {row.monitored_lag}"
                        )
                    table = self._tables.get(tp)
                    seconds = table.time_lag_s(row.committed, now_ms) if table else None
                    if seconds is not None:
                        series["kafka_consumergroup_group_lag_seconds"].append(
                            f"kafka_consumergroup_group_lag_seconds{labels} {_number(seconds)}"
                        )
            out: list[str] = []
            for name, help_text in GROUP_SERIES:
                out += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *series[name]]
            out += [
                "# HELP kafka_partition_latest_offset Latest offset available for a partition",
                "# TYPE kafka_partition_latest_offset gauge",
            ]
            for (topic, partition), end in sorted(latest.items()):
                labels = _labels((("cluster_name", self.cluster_name), ("topic", topic),
                                  ("partition", partition)))  # fmt: skip
                out.append(f"kafka_partition_latest_offset{labels} {end}")
            out += [
                "# HELP kafka_consumergroup_poll_time_ms Time taken to poll the consumer groups",
                "# TYPE kafka_consumergroup_poll_time_ms gauge",
                f"kafka_consumergroup_poll_time_ms"
                f"{_labels((('cluster_name', self.cluster_name),))} {_number(self._poll_time_ms)}",
            ]
            return out

"""Burrow's consumer status (its `/v3/kafka/{cluster}/consumer/{group}/status` and `/lag`
bodies) for the Kafka cluster the controller watches: the Burrow window of each partition built
from the samples stored in the consumer_offsets table plus what Kafka says right now.

The cluster's name is `settings.KAFKA_CLUSTER_NAME` (env `SPRIG_KAFKA_CLUSTER_NAME`, "local"
like Burrow's sample config); it is the only cluster listed, and only once the
consumer_offsets table says which Kafka to watch.
"""

from __future__ import annotations

from django.conf import settings

from monitoring import groups as g
from monitoring.evaluation.burrow import Commit, GroupStatus, PartitionStatus, group_status
from monitoring.evaluation.window import Sample, WindowConfig, evaluate_samples
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.logic.lag_source import stored_samples


def cluster_name() -> str:
    return settings.KAFKA_CLUSTER_NAME


def consumer_group_status(
    reader: KafkaGroupReader, group: str, at_ms: int, config: WindowConfig | None = None
) -> tuple[GroupStatus, dict[tuple[str, int], g.PartitionRow]]:
    """The group's Burrow status as of `at_ms` and its live rows by partition (for owner and
    client id). The window of a partition is its stored samples plus this moment's commit and
    end offset, so a partition committed since the last sample is not left out. NOTFOUND when
    no partition of the group has a commit (Burrow knows a group from its commits only)."""
    config = config or WindowConfig()
    found = reader.group_offsets([group])
    rows = {}
    if found and found[0].description.state != g.DEAD:
        rows = {(r.topic, r.partition): r for r in found[0].rows}
    try:
        samples = stored_samples(group, at_ms)
    except ValueError:  # no table or no broker: Kafka's answer of this moment still counts
        samples = {}
    for tp, row in rows.items():
        if row.committed is not None:
            samples.setdefault(tp, []).append(Sample(at_ms, row.committed, row.end_offset))
    evaluated = [evaluate_samples(t, p, s, at_ms, config) for (t, p), s in sorted(samples.items())]
    known = [status for status in evaluated if status is not None]
    return group_status(group, known or None), rows


def _offset(commit: Commit | None) -> dict | None:
    if commit is None:
        return None
    return {
        "offset": commit.offset,
        "timestamp": commit.timestamp_ms,
        "observedAt": commit.observed_at_ms
        if commit.observed_at_ms is not None
        else commit.timestamp_ms,
        "lag": commit.lag,  # null when the end offset was not known at that commit
    }


def partition_json(status: PartitionStatus, row: g.PartitionRow | None) -> dict:
    return {
        "topic": status.topic,
        "partition": status.partition,
        "owner": (row.host or "") if row else "",
        "client_id": (row.client_id or "") if row else "",
        "status": status.status.name,
        "start": _offset(status.start),
        "end": _offset(status.end),
        "current_lag": status.current_lag,
        "complete": status.complete,
    }


def status_json(cluster: str, status: GroupStatus, rows: dict, show_all: bool) -> dict:
    """Burrow's ConsumerGroupStatus. `/status` (show_all False) lists only the partitions that
    are not OK; `/lag` lists all; partition_count, maxlag and totallag cover all either way."""
    shown = [p for p in status.partitions if show_all or p.status.name != "OK"]
    maxlag = status.maxlag
    return {
        "cluster": cluster,
        "group": status.group,
        "status": status.status.name,
        "complete": status.complete,
        "partitions": [partition_json(p, rows.get((p.topic, p.partition))) for p in shown],
        "partition_count": status.partition_count,
        "maxlag": partition_json(maxlag, rows.get((maxlag.topic, maxlag.partition)))
        if maxlag is not None
        else None,
        "totallag": status.totallag,
    }

"""A consumer group as the API and the console show it: the live describe data (state,
members, committed and end offsets, lag) with Burrow's status evaluated over the samples
stored in the consumer_offsets table."""

from __future__ import annotations

from engine.common.clock import now_ms
from monitoring import groups as g
from monitoring.evaluation.burrow import group_status
from monitoring.evaluation.window import WindowConfig, evaluate_samples
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.lag import total_lag
from monitoring.logic.lag_source import stored_samples


def list_groups(reader: KafkaGroupReader) -> list[dict]:
    """Every group with state, member count, partitions, total lag and status."""
    listings = reader.list_groups()
    if not listings:
        return []
    offsets = reader.group_offsets([listing.group_id for listing in listings])
    out = []
    for entry in sorted(offsets, key=lambda e: e.description.group_id):
        view = _view(entry, now_ms())
        view.pop("partitions")
        out.append(view)
    return out


def describe_group(reader: KafkaGroupReader, group: str) -> dict | None:
    """The group's view with one row per partition; None when Kafka does not know it: Dead,
    or (as some brokers describe an unknown id) no member and nothing committed."""
    found = reader.group_offsets([group])
    if not found:
        return None
    entry = found[0]
    if entry.description.state == g.DEAD or not (entry.rows or entry.description.members):
        return None
    return _view(entry, now_ms())


def _view(entry: g.GroupOffsets, at_ms: int) -> dict:
    group = entry.description.group_id
    statuses: dict[tuple[str, int], str | None] = {}
    history_error = None
    status = None
    try:
        samples = stored_samples(group, at_ms)
    except ValueError as exc:  # no table, no broker: the live data is still worth showing
        samples, history_error = {}, f"lag history unavailable: {exc}"
    if history_error is None:
        evaluated = [
            evaluate_samples(t, p, rows, at_ms, WindowConfig()) for (t, p), rows in samples.items()
        ]
        known = [s for s in evaluated if s is not None]
        statuses = {(s.topic, s.partition): s.status.name for s in known}
        status = group_status(group, known).status.name if known else None
    return {
        "group": group,
        "state": entry.description.state,
        "members": len(entry.description.members),
        "partitionCount": len(entry.rows),
        "totalLag": total_lag(row.lag for row in entry.rows),
        "status": status,
        "historyError": history_error,
        "partitions": [
            {
                "topic": row.topic,
                "partition": row.partition,
                "committed": row.committed,
                "endOffset": row.end_offset,
                "lag": row.lag,
                "status": statuses.get((row.topic, row.partition)),
                "consumerId": row.consumer_id,
                "host": row.host,
                "clientId": row.client_id,
            }
            for row in entry.rows
        ],
    }

"""Pausing and resuming a REALTIME table end to end (the REST calls' logic):

- pause: set the pause flag (``pause``), then force-commit every CONSUMING segment
  (``force_commit``); commits of a paused table create no successors;
- resume: clear the flag, then run the validation repairs on the table at once, so each
  partition gets its CONSUMING segment again from where it stopped (``lastConsumed``) or
  from ``consumeFrom`` smallest/largest.
"""

from __future__ import annotations

import logging

from cluster.logic import audit
from cluster.logic.cluster_view import replication_of, table_servers
from cluster.logic.realtime import pause
from cluster.logic.realtime.ensure_consuming import ensure_partitions_consuming
from cluster.logic.realtime.force_commit import MAX_BATCH, commit_in_batches
from engine.clusterstate import ClusterStore
from engine.common.errors import EngineError
from engine.stream.config import OffsetCriteria, table_stream_configs
from engine.stream.kafka import KafkaMetadataProvider

log = logging.getLogger(__name__)


def validate_realtime_table(store: ClusterStore, config, *,
                            offset_criteria: OffsetCriteria | None = None) -> list[str]:  # fmt: skip
    """RealtimeSegmentValidationManager's repairs for one table now; the repairs made.
    StreamError when the topic cannot be read (recorded as the table's stream error)."""
    stream = table_stream_configs(config)[0]
    servers = table_servers(store, config)
    provider = KafkaMetadataProvider(stream, f"sprig-validation-{config.table_name}")
    return ensure_partitions_consuming(store, config, servers, replication_of(config, servers),
                                       provider, offset_criteria=offset_criteria)  # fmt: skip


def pause_table(store: ClusterStore, table: str, comment: str | None = None, *,
                batch_size: int = MAX_BATCH, interval_s: float = 5.0,
                timeout_s: float = 180.0) -> dict:  # fmt: skip
    """Pause ``table`` (with type) and force-commit its CONSUMING segments; Pinot's
    PauseStatusDetails."""
    details = pause.pause_consumption(store, table, comment)
    ideal = store.ideal_state(table)
    commit_in_batches(store, ideal, details.get("consumingSegments", []), batch_size=batch_size,
                      interval_s=interval_s, timeout_s=timeout_s)  # fmt: skip
    audit.record("table.pauseConsumption", "table", table, comment=comment or "")
    return details


def resume_table(store: ClusterStore, config, comment: str | None = None,
                 consume_from: str | None = None) -> dict:  # fmt: skip
    """Resume ``config``'s table; ValueError for a bad ``consume_from`` (nothing changed).
    The consuming segments are created before returning; when the stream cannot be read now
    the flag is still cleared, the comment says why, and the validation manager retries."""
    table = config.table_name_with_type
    details, criteria = pause.resume_consumption(store, table, comment, consume_from)
    audit.record("table.resumeConsumption", "table", table, consumeFrom=consume_from or "")
    try:
        actions = validate_realtime_table(store, config, offset_criteria=criteria)
    except (EngineError, ValueError) as exc:
        log.warning("%s resumed, but its consuming segments cannot be created now: %s", table,
                    exc)  # fmt: skip
        details["comment"] = (
            f"Pause flag is cleared, but consuming segments could not be created yet: {exc}. "
            "RealtimeSegmentValidationManager retries."
        )
        return details
    for line in actions:
        log.info("%s resumed: %s", table, line)
    details["consumingSegments"] = pause.consuming_segments(store.ideal_state(table))
    return details

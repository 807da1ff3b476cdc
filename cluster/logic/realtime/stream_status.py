"""Why a REALTIME table is not consuming: its stream cannot be read (the topic does not exist,
the brokers are unreachable, access is refused).

Kept in the table's ideal state as the simple field ``streamIngestionError`` (JSON), next to
Pinot's ``pauseState``, so every controller serves it and it goes away with the table. It is
written when creating the table's CONSUMING segments or RealtimeSegmentValidationManager
fails to read the topic, and cleared once the validation reads it again; the validation
manager retries on its schedule (or at once through ``/periodictask/run``). It is shown by
``GET /tables/{t}/consumingSegmentsInfo`` and ``GET /tables/{t}/idealstate``.
"""

from __future__ import annotations

import orjson

from cluster.logic.realtime.ideal_fields import json_field
from engine.clusterstate import ClusterStore, ResourceAssignment
from engine.common import clock
from engine.spi.table_name import split_table_name
from engine.stream.config import StreamConfig

STREAM_ERROR = "streamIngestionError"
VALIDATION_TASK = "RealtimeSegmentValidationManager"


def describe_stream_error(stream: StreamConfig, raw_table: str, error: Exception) -> str:
    """The message a person can act on: what failed, which topic and which brokers."""
    return (
        f"cannot read topic '{stream.topic}' from bootstrap servers "
        f"{stream.broker_list or '(none)'}: {error}. {VALIDATION_TASK} retries; to retry now: "
        f"GET /periodictask/run?taskname={VALIDATION_TASK}&tableName={raw_table}"
    )


def record_stream_error(store: ClusterStore, table_with_type: str, stream: StreamConfig,
                        error: Exception, *, now_ms: int | None = None) -> dict:  # fmt: skip
    """Write (or refresh) the table's stream error; returns it. ``firstSeenMs`` stays the
    time the current error was first seen; ``lastCheckedMs`` is this attempt."""
    now = clock.now_ms() if now_ms is None else int(now_ms)
    raw = split_table_name(table_with_type)[0]
    entry = {
        "topic": stream.topic,
        "bootstrapServers": stream.broker_list,
        "error": f"{type(error).__name__}: {error}",
        "message": describe_stream_error(stream, raw, error),
        "firstSeenMs": now,
        "lastCheckedMs": now,
    }

    def change(ideal: ResourceAssignment) -> ResourceAssignment:
        before = stream_error(ideal)
        if before is not None and before.get("error") == entry["error"]:
            entry["firstSeenMs"] = before.get("firstSeenMs", now)
        ideal.extra_fields[STREAM_ERROR] = orjson.dumps(entry).decode()
        return ideal

    store.update_ideal_state(table_with_type, change, create=False)
    return entry


def clear_stream_error(store: ClusterStore, table_with_type: str) -> None:
    """Remove the stream error, if any (the ideal state is not rewritten when there is none)."""

    def change(ideal: ResourceAssignment) -> ResourceAssignment | None:
        if STREAM_ERROR not in ideal.extra_fields:
            return None
        del ideal.extra_fields[STREAM_ERROR]
        return ideal

    store.update_ideal_state(table_with_type, change, create=False)


def stream_error(ideal: ResourceAssignment | None) -> dict | None:
    return json_field(ideal, STREAM_ERROR)

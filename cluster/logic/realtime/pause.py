"""Pausing and resuming a REALTIME table's consumption, kept in its ideal state as Pinot does:
the simple field ``pauseState`` (JSON) plus the legacy ``isTablePaused``.

Pausing force-commits the CONSUMING segments (the caller sends the ForceCommit messages to the
servers holding ``consuming_segments``) and creates no successors. Resuming clears the flag;
the caller then runs ``ensure_partitions_consuming`` with the returned offset criteria
(``consumeFrom`` smallest or largest; None = where each partition left off).
"""

from __future__ import annotations

import datetime as dt

import orjson

from cluster.logic.realtime.ideal_fields import json_field
from engine.clusterstate import ClusterStore, ResourceAssignment
from engine.clusterstate.segment_status import is_consuming
from engine.common import clock
from engine.stream.config import OffsetCriteria

PAUSE_STATE = "pauseState"
IS_TABLE_PAUSED = "isTablePaused"
ADMINISTRATIVE = "ADMINISTRATIVE"
REASON_CODES = ("ADMINISTRATIVE", "STORAGE_QUOTA_EXCEEDED", "RESOURCE_UTILIZATION_LIMIT_EXCEEDED")
CONSUME_FROM = ("lastConsumed", "smallest", "largest")
PAUSED_COMMENT = (
    "Pause flag is set. Consuming segments are being committed. Use /pauseStatus endpoint in a "
    "few moments to check if all consuming segments have been committed."
)
RESUMED_COMMENT = (
    "Pause flag is cleared. Consuming segments are being created. Use /pauseStatus endpoint in "
    "a few moments to double check."
)


def java_timestamp(ms: int) -> str:
    """Epoch ms as Java's ``Timestamp.toString()`` in local time: ``2026-08-01 12:00:00.123``
    (trailing zeros of the fraction dropped, at least one digit kept)."""
    stamp = dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
    fraction = f"{ms % 1000:03d}".rstrip("0") or "0"
    return f"{stamp}.{fraction}"


def consuming_segments(ideal: ResourceAssignment | None) -> list[str]:
    if ideal is None:
        return []
    return sorted(s for s, replicas in ideal.segments.items() if is_consuming(replicas))


def pause_state(ideal: ResourceAssignment | None) -> dict | None:
    return json_field(ideal, PAUSE_STATE)


def is_paused(ideal: ResourceAssignment | None) -> bool:
    state = pause_state(ideal)
    if state is not None:
        return bool(state.get("paused"))
    return ideal is not None and ideal.extra_fields.get(IS_TABLE_PAUSED, "").lower() == "true"


def _details(paused: bool, segments: list[str], reason: str | None, comment: str | None,
             timestamp: str | None) -> dict:  # fmt: skip
    details = {
        "pauseFlag": paused,
        "consumingSegments": segments,
        "reasonCode": reason,
        "comment": comment,
        "timestamp": timestamp,
    }
    return {k: v for k, v in details.items() if v is not None}  # Pinot omits nulls


def _set_pause(store: ClusterStore, table: str, paused: bool, comment: str | None,
               now_ms: int) -> ResourceAssignment:  # fmt: skip
    state = {
        "paused": paused,
        "reasonCode": ADMINISTRATIVE,
        "comment": comment,
        "timeInMillis": java_timestamp(now_ms),
        "indexOfInactiveTopics": [],
    }

    def change(ideal: ResourceAssignment) -> ResourceAssignment:
        ideal.extra_fields[PAUSE_STATE] = orjson.dumps(state).decode()
        ideal.extra_fields[IS_TABLE_PAUSED] = "true" if paused else "false"
        return ideal

    updated = store.update_ideal_state(table, change, create=False)
    if updated is None:
        raise LookupError(f"Table {table} not found!")
    return updated


def pause_consumption(store: ClusterStore, table: str, comment: str | None = None, *,
                      now_ms: int | None = None) -> dict:  # fmt: skip
    """Set the pause flag; returns Pinot's PauseStatusDetails. Its ``consumingSegments`` are
    the segments the caller must force-commit."""
    now = clock.now_ms() if now_ms is None else int(now_ms)
    ideal = _set_pause(store, table, True, comment, now)
    return _details(True, consuming_segments(ideal), ADMINISTRATIVE, comment or PAUSED_COMMENT,
                    java_timestamp(now))  # fmt: skip


def resume_consumption(store: ClusterStore, table: str, comment: str | None = None,
                       consume_from: str | None = None, *,
                       now_ms: int | None = None) -> tuple[dict, OffsetCriteria | None]:  # fmt: skip
    """Clear the pause flag. ``consume_from``: lastConsumed (default), smallest or largest, in
    any case; anything else is a ValueError (a 400) and changes nothing. Returns the
    PauseStatusDetails and the offset criteria new consuming segments start from (None:
    where each partition left off)."""
    choice = (consume_from or "lastConsumed").strip()
    matched = next((c for c in CONSUME_FROM if c.lower() == choice.lower()), None)
    if matched is None:
        raise ValueError(
            f"consumeFrom must be one of {', '.join(CONSUME_FROM)}, got {consume_from!r}"
        )
    now = clock.now_ms() if now_ms is None else int(now_ms)
    ideal = _set_pause(store, table, False, comment, now)
    criteria = None if matched == "lastConsumed" else OffsetCriteria.parse(matched)
    details = _details(False, consuming_segments(ideal), ADMINISTRATIVE,
                       comment or RESUMED_COMMENT, java_timestamp(now))  # fmt: skip
    return details, criteria


def pause_status(store: ClusterStore, table: str) -> dict:
    """``GET /tables/{t}/pauseStatus``: from ``pauseState``, else the legacy flag."""
    ideal = store.ideal_state(table)
    if ideal is None:
        raise LookupError(f"Table {table} not found!")
    segments = consuming_segments(ideal)
    state = pause_state(ideal)
    if state is not None:
        return _details(bool(state.get("paused")), segments, state.get("reasonCode"),
                        state.get("comment"), state.get("timeInMillis"))  # fmt: skip
    paused = is_paused(ideal)
    return _details(paused, segments, None, "Table is paused." if paused else "Table is unpaused.",
                    None)  # fmt: skip

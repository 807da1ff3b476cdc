"""JSON objects kept in a REALTIME table's ideal-state simple fields (the pause state, the
stream error): one reader, so a missing, garbled or non-object value reads the same way."""

from __future__ import annotations

import orjson

from engine.clusterstate import ResourceAssignment


def json_field(ideal: ResourceAssignment | None, key: str) -> dict | None:
    """The JSON object stored under ``key``; None when absent, not JSON or not an object
    (a hand-edited field must not break the views that read it)."""
    raw = (ideal.extra_fields.get(key) if ideal is not None else None) or ""
    try:
        value = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None

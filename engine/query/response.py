"""Pinot's BrokerResponse JSON: ``resultTable{dataSchema{columnNames, columnDataTypes},
rows}``, ``exceptions[{errorCode, message}]`` and the execution statistics."""

from __future__ import annotations

import math

import numpy as np

from engine.query.errors import QueryError
from engine.query.intermediate import FRESHNESS_KEY, STAT_KEYS, empty_stats

_INTEGER_TYPES = {"INT", "LONG"}
_FLOAT_TYPES = {"FLOAT", "DOUBLE", "BIG_DECIMAL"}

# Sprig's response field: which engine answered
ENGINE_KEY = "queryEngine"
SINGLE_STAGE = "SINGLE_STAGE"
MULTI_STAGE = "MULTI_STAGE"


def json_float(value: float):
    """Floats as Pinot's JSON writes them: non-finite values become strings."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _timestamp_string(millis: int) -> str:
    # java.sql.Timestamp#toString: yyyy-MM-dd HH:mm:ss.f (fraction without trailing zeros)
    stamp = np.datetime64(int(millis), "ms").astype(object)
    fraction = f"{stamp.microsecond // 1000:03d}".rstrip("0") or "0"
    return stamp.strftime("%Y-%m-%d %H:%M:%S") + "." + fraction


def column_json(values, data_type: str) -> list:
    """One result column converted to JSON-ready Python values of Pinot type ``data_type``."""
    if hasattr(values, "to_pylist"):
        values = values.to_pylist()
    elif isinstance(values, np.ndarray):
        values = values.tolist()
    base = data_type.removesuffix("_ARRAY")
    if data_type.endswith("_ARRAY"):
        return [None if row is None else [_scalar(v, base) for v in row] for row in values]
    return [_scalar(v, base) for v in values]


def _scalar(value, data_type: str):
    if value is None:
        return None
    if data_type in _INTEGER_TYPES:
        if isinstance(value, float):
            if not math.isfinite(value):
                return json_float(value)
            return int(value)
        return int(value) if not isinstance(value, str) else value
    if data_type in _FLOAT_TYPES:
        try:
            return json_float(float(value))
        except (TypeError, ValueError):
            return str(value)
    if data_type == "BOOLEAN":
        return bool(value) if not isinstance(value, str) else value.lower() == "true"
    if data_type == "TIMESTAMP":
        return _timestamp_string(int(value)) if not isinstance(value, str) else value
    if data_type == "BYTES" and isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float):
        return repr(value)
    return value if isinstance(value, str) else str(value)


def broker_response(
    column_names: list[str] | None,
    column_types: list[str] | None,
    rows: list[list] | None,
    *,
    stats: dict | None = None,
    exceptions: list[dict] | None = None,
    num_groups_limit_reached: bool = False,
    time_used_ms: int = 0,
    num_servers_queried: int = 1,
    num_servers_responded: int = 1,
) -> dict:
    stats = {**empty_stats(), **(stats or {})}
    response: dict = {}
    if column_names is not None:
        response["resultTable"] = {
            "dataSchema": {"columnNames": column_names, "columnDataTypes": column_types},
            "rows": rows or [],
        }
    response["exceptions"] = exceptions or []
    response["numServersQueried"] = num_servers_queried
    response["numServersResponded"] = num_servers_responded
    for key in STAT_KEYS:
        response[key] = int(stats.get(key, 0))
    response["numGroupsLimitReached"] = bool(num_groups_limit_reached)
    response["partialResult"] = bool(exceptions)
    response[FRESHNESS_KEY] = int(stats.get(FRESHNESS_KEY) or 0)
    response["timeUsedMs"] = int(time_used_ms)
    return response


def exception_response(
    error_code: int, message: str, *, time_used_ms: int = 0, num_servers_queried: int = 0
) -> dict:
    """The one shape of an error body, broker's and controller's alike: Pinot's
    BrokerResponse with only ``exceptions[{errorCode, message}]`` and zero statistics. Like
    Pinot's (``resultTable`` is NON_NULL there) it has no ``resultTable`` key, and
    ``partialResult`` is true as for any response with exceptions."""
    return broker_response(
        None, None, None, exceptions=[{"errorCode": error_code, "message": message}],
        time_used_ms=time_used_ms, num_servers_queried=num_servers_queried,
        num_servers_responded=num_servers_queried,
    )  # fmt: skip


def error_response(
    error: QueryError, *, time_used_ms: int = 0, num_servers_queried: int = 0
) -> dict:
    """A response carrying only ``error``, as Pinot returns for a bad query."""
    return exception_response(
        error.error_code, error.message, time_used_ms=time_used_ms,
        num_servers_queried=num_servers_queried,
    )  # fmt: skip

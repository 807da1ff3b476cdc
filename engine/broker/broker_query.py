"""A query as a client sends it to the broker: the SQL, Pinot's ``queryOptions`` (a
``"k=v;k2=v2"`` string or an object) and ``trace``, read from a JSON body or form fields with
an error that says what is wrong."""

from __future__ import annotations

import dataclasses

import orjson

from engine.broker.errors import BadBrokerRequest


@dataclasses.dataclass
class BrokerQuery:
    sql: str
    options: dict[str, str]
    trace: bool = False
    multistage: bool = False  # asked on Pinot's multi-stage endpoint (POST /query)
    client_ip: str | None = None  # X-Forwarded-For, for the query log's clientIp

    @classmethod
    def from_json(cls, body: bytes) -> BrokerQuery:
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise BadBrokerRequest(f"the request body is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise BadBrokerRequest('the request body must be a JSON object like {"sql": "..."}')
        return cls.from_fields(data.get("sql"), data.get("queryOptions"), data.get("trace"))

    @classmethod
    def from_fields(cls, sql, options, trace) -> BrokerQuery:
        if not isinstance(sql, str) or not sql.strip():
            raise BadBrokerRequest("'sql' is required: the SQL query to run")
        return cls(sql, parse_query_options(options), _truthy(trace))


def parse_query_options(options) -> dict[str, str]:
    """Pinot's ``"k=v;k2=v2"`` string, or an object."""
    if options in (None, ""):
        return {}
    if isinstance(options, dict):
        return {str(k): str(v) for k, v in options.items()}
    if not isinstance(options, str):
        raise BadBrokerRequest("'queryOptions' must be a string like 'timeoutMs=1000;k=v'")
    out = {}
    for part in options.split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise BadBrokerRequest(f"queryOptions: {part!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


def _truthy(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)

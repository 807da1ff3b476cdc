"""The controller's query proxy (``POST /sql``): forward to a live broker of the table."""

from __future__ import annotations

import random

import requests
import sqlglot
from django.conf import settings
from sqlglot import exp

from cluster import models
from cluster.logic.cluster_view import parsed, table_broker_tag
from engine.broker.errors import (
    BROKER_RESOURCE_MISSING_ERROR_CODE,
    SERVER_NOT_RESPONDING_ERROR_CODE,
)
from engine.clusterstate import ClusterStore, InstanceType, split_table_name
from engine.query.response import exception_response


def query_tables(sql: str) -> list[str]:
    """Raw table names the query reads (empty if it does not parse; the broker reports that)."""
    try:
        statements = sqlglot.parse(sql, read="mysql")
    except sqlglot.errors.SqlglotError:
        return []
    names = []
    for statement in statements:
        if statement is None:
            continue
        for table in statement.find_all(exp.Table):
            if table.name:
                names.append(split_table_name(table.name)[0])
    return names


def live_brokers(store: ClusterStore, tag: str | None) -> list[tuple[str, str, int]]:
    live = store.live_instances()
    out = []
    for ident, config in sorted(store.instance_configs().items()):
        if config.type is not InstanceType.BROKER or ident not in live or not config.enabled:
            continue
        if tag is None or tag in config.tags:
            out.append((ident, config.host, config.port))
    return out


def forward_query(
    store: ClusterStore, body: dict, headers: dict[str, str] | None = None
) -> tuple[int, dict]:
    """(HTTP status, response JSON). 503 with a Pinot exception when no broker is live.
    ``headers`` go with the query (credentials for an authenticating broker)."""
    tables = query_tables(body["sql"])
    tag = None
    for raw in tables:
        row = models.TableConfig.objects.filter(table_name=raw).first()
        if row is not None:
            tag = table_broker_tag(parsed(row))
            break
    brokers = live_brokers(store, tag)
    if not brokers:
        where = f" tagged {tag}" if tag else ""
        return 503, exception_response(
            BROKER_RESOURCE_MISSING_ERROR_CODE,
            f"No live broker{where} to run the query (tables: {', '.join(tables) or 'none'}); "
            "start a broker with `sprig broker`",
        )
    ident, host, port = random.choice(brokers)
    try:
        response = requests.post(
            f"http://{host}:{port}/query/sql", json=body, headers=headers,
            timeout=settings.SQL_FORWARD_TIMEOUT_S,
        )  # fmt: skip
    except requests.RequestException as exc:
        return 503, exception_response(
            SERVER_NOT_RESPONDING_ERROR_CODE, f"Broker {ident} did not answer: {exc}"
        )
    try:
        return response.status_code, response.json()
    except ValueError:
        return 502, exception_response(
            SERVER_NOT_RESPONDING_ERROR_CODE,
            f"Broker {ident} answered {response.status_code} without JSON",
        )

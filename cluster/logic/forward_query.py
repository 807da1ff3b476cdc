"""The controller's query proxy (``POST /sql``): forward to a live broker of the table."""

from __future__ import annotations

import json
import random

import sqlglot
import urllib3
from django.conf import settings
from sqlglot import exp

from cluster import models
from cluster.logic.cluster_view import parsed, table_broker_tag
from controller.outbound import outbound_policy
from engine.broker.errors import (
    BROKER_RESOURCE_MISSING_ERROR_CODE,
    SERVER_NOT_RESPONDING_ERROR_CODE,
)
from engine.clusterstate import ClusterStore, InstanceConfig, InstanceType, split_table_name
from engine.query.response import exception_response
from engine.runtime.outbound import OutboundRefused, Target, opened
from engine.runtime.service_auth import CONTROLLER_BROKER, auth_headers


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


def live_brokers(store: ClusterStore, tag: str | None) -> list[tuple[str, InstanceConfig]]:
    live = store.live_instances()
    out = []
    for ident, config in sorted(store.instance_configs().items()):
        if config.type is not InstanceType.BROKER or ident not in live or not config.enabled:
            continue
        if tag is None or tag in config.tags:
            out.append((ident, config))
    return out


def own_broker_headers() -> dict[str, str]:
    """The controller's own credentials for brokers (``controller.broker.auth.token``)."""
    return auth_headers(settings.PINOT_PROPERTIES, CONTROLLER_BROKER)


def broker_target(config: InstanceConfig, path: str) -> Target:
    """Where to send ``path`` to a live broker: the address it registered itself, or one
    written through the REST API if the outbound policy allows it (OutboundRefused)."""
    return outbound_policy().instance_target(
        config.host, config.port, path, self_registered=config.self_registered,
        what="its address set through the REST API",
    )  # fmt: skip


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
    ident, config = random.choice(brokers)
    try:
        target = broker_target(config, "/query/sql")
    except OutboundRefused as exc:
        return 503, exception_response(SERVER_NOT_RESPONDING_ERROR_CODE, f"Broker {ident}: {exc}")
    wait_s = settings.SQL_FORWARD_TIMEOUT_S  # for the connection, then between reads
    try:
        with opened(target, "POST", timeout=urllib3.Timeout(connect=wait_s, read=wait_s),
                    body=json.dumps(body).encode(),
                    headers={**(headers or {}),
                             "Content-Type": "application/json"}) as response:  # fmt: skip
            status, data = response.status, response.read()
    except urllib3.exceptions.HTTPError as exc:
        return 503, exception_response(
            SERVER_NOT_RESPONDING_ERROR_CODE,
            f"Broker {ident} did not answer ({type(exc).__name__})",
        )
    try:
        return status, json.loads(data)
    except ValueError:
        return 502, exception_response(
            SERVER_NOT_RESPONDING_ERROR_CODE, f"Broker {ident} answered {status} without JSON"
        )

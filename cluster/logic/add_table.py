"""Create or update a table type (OFFLINE or REALTIME)."""

from __future__ import annotations

import logging
import threading

from django.db import transaction

from cluster import models
from cluster.logic import audit
from cluster.logic.cluster_view import check_replication, replication_of, table_servers
from cluster.logic.instance_partitions import publish_placement
from cluster.logic.publish import publish_table
from cluster.logic.realtime.consuming_segments import create_consuming_segments
from cluster.logic.validate_config import ConfigRejected, parse_table_config
from controller.errors import BadRequest, Conflict, NotFound
from engine.clusterstate import ClusterStore, ResourceAssignment, split_table_name
from engine.common.errors import ConfigError
from engine.spi import TableConfig
from engine.spi.secrets import restore_secrets
from engine.spi.table_config_validation import verify_hybrid_table_configs
from engine.stream.config import table_stream_configs
from engine.stream.errors import StreamError
from engine.stream.kafka import KafkaMetadataProvider

log = logging.getLogger(__name__)


def _normalized(config) -> dict:
    body = config.to_json()
    body["tableName"] = config.table_name_with_type
    body["tableType"] = config.table_type
    return body


def _check_hybrid(config) -> None:
    """When the other type of the table exists, the two must agree as Pinot requires."""
    other = (
        models.TableConfig.objects.filter(table_name=config.table_name)
        .exclude(table_type=config.table_type)
        .first()
    )
    if other is None:
        return
    existing = TableConfig.from_json(other.config)
    pair = (config, existing) if config.table_type == "OFFLINE" else (existing, config)
    try:
        verify_hybrid_table_configs(*pair)
    except ConfigError as exc:
        raise ConfigRejected("table config", exc) from exc


def _start_consuming(store: ClusterStore, config) -> None:
    """Create the CONSUMING segments of a new REALTIME table (one per partition) on a thread
    of its own: asking Kafka may take the stream's connection timeout, and a table whose
    topic is missing or unreachable is still created; RealtimeSegmentValidationManager then
    creates its segments once the topic can be read."""

    def run() -> None:
        table = config.table_name_with_type
        try:
            stream = table_stream_configs(config)[0]
            provider = KafkaMetadataProvider(stream, f"sprig-controller-{config.table_name}")
            servers = table_servers(store, config)
            if store.table_config(table) is None:
                return  # deleted meanwhile
            names = create_consuming_segments(
                store, config, servers, replication_of(config, servers), provider
            )
            log.info("%s: CONSUMING segments %s", table, ", ".join(names))
        except (StreamError, ConfigError, ValueError) as exc:
            log.error("%s: cannot create its CONSUMING segments now (%s); "
                      "RealtimeSegmentValidationManager retries", table, exc)  # fmt: skip

    threading.Thread(target=run, name=f"consuming-{config.table_name}", daemon=True).start()


def add_table(store: ClusterStore, data: dict) -> dict:
    """Validate, store and publish a new table type; 409 if it exists already."""
    config = parse_table_config(data)
    _check_hybrid(config)
    servers = check_replication(store, config)
    if models.TableConfig.objects.filter(
        table_name=config.table_name, table_type=config.table_type
    ).exists():
        raise Conflict(f"Table {config.table_name_with_type} already exists")
    publish_placement(store, config, servers)  # replica groups; 400 if the tenant is too small
    body = _normalized(config)
    with transaction.atomic():
        models.TableConfig.objects.create(
            table_name=config.table_name, table_type=config.table_type, config=body
        )
        audit.record("table.create", "table", config.table_name_with_type)
        publish_table(store, type(config).from_json(body))
        if config.table_type == "REALTIME":
            transaction.on_commit(lambda: _start_consuming(store, config))
    return {
        "unrecognizedProperties": config.unrecognized_properties,
        "warnings": config.warnings,
        "status": f"Table {config.table_name_with_type} successfully added",
    }


def update_table(store: ClusterStore, table_name: str, data: dict) -> dict:
    """Replace the config of an existing table type (``PUT /tables/{t}``). A secret sent
    back masked (as every read API shows it) keeps its stored value."""
    config = parse_table_config(data)
    raw, _ = split_table_name(table_name)
    if raw != config.table_name:
        raise BadRequest(
            f"the path names table '{raw}' but tableName in the body is '{config.table_name}'"
        )
    row = models.TableConfig.objects.filter(
        table_name=config.table_name, table_type=config.table_type
    ).first()
    if row is None:
        raise NotFound(f"Table {config.table_name_with_type} does not exist")
    config = parse_table_config(restore_secrets(data, row.config))
    _check_hybrid(config)
    check_replication(store, config)
    body = _normalized(config)
    with transaction.atomic():
        row.config = body
        row.save()
        audit.record("table.update", "table", config.table_name_with_type)
        publish_table(store, type(config).from_json(body))

        def set_replicas(ideal: ResourceAssignment) -> ResourceAssignment:
            ideal.replicas = str(config.segments_config.replication)
            return ideal

        store.update_ideal_state(config.table_name_with_type, set_replicas)
    return {
        "unrecognizedProperties": config.unrecognized_properties,
        "warnings": config.warnings,
        "status": f"Table config updated for {config.table_name_with_type}",
    }

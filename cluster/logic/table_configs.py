"""``/tableConfigs``: a schema and its OFFLINE/REALTIME configs as one document
``{"tableName", "schema", "offline", "realtime"}``, created or updated all together."""

from __future__ import annotations

from django.db import transaction

from cluster import models
from cluster.logic.add_table import add_table, update_table
from cluster.logic.delete_table import delete_table
from cluster.logic.save_schema import add_schema, delete_schema
from controller.errors import BadRequest, NotFound
from engine.clusterstate import ClusterStore, split_table_name


def get_table_configs(table: str) -> dict:
    raw = split_table_name(table)[0]
    rows = {row.table_type: row.config for row in models.TableConfig.objects.filter(table_name=raw)}
    if not rows:
        raise NotFound(f"Table {raw} does not exist")
    schema_name = None
    for config in rows.values():
        schema_name = (config.get("segmentsConfig") or {}).get("schemaName") or raw
    schema = models.Schema.objects.filter(name=schema_name).first()
    return {
        "tableName": raw,
        "schema": schema.config if schema else None,
        "offline": rows.get("OFFLINE"),
        "realtime": rows.get("REALTIME"),
    }


def _parts(body: dict) -> tuple[str, dict, list[dict]]:
    raw = body.get("tableName")
    if not isinstance(raw, str) or not raw:
        raise BadRequest("tableConfigs needs a tableName")
    schema = body.get("schema")
    if not isinstance(schema, dict):
        raise BadRequest("tableConfigs needs a schema object")
    tables = [body[k] for k in ("offline", "realtime") if body.get(k) is not None]
    if not tables:
        raise BadRequest("tableConfigs needs an offline or a realtime table config")
    for key, expected in (("offline", "OFFLINE"), ("realtime", "REALTIME")):
        config = body.get(key)
        if config is not None and str(config.get("tableType", "")).upper() != expected:
            raise BadRequest(f"{key}.tableType must be {expected}")
    return raw, schema, tables


def save_table_configs(store: ClusterStore, body: dict, *, update: bool) -> dict:
    """Create (or, with ``update``, replace) the schema and table configs in one transaction;
    a bad part leaves nothing stored in the database."""
    raw, schema, tables = _parts(body)
    published_schema = False
    unrecognized: dict = {}
    warnings: list[dict] = []
    try:
        with transaction.atomic():
            existed = models.Schema.objects.filter(name=schema.get("schemaName")).exists()
            add_schema(store, schema, override=True, force=False)
            published_schema = not existed
            for config in tables:
                kind = str(config["tableType"]).upper()
                exists = models.TableConfig.objects.filter(table_name=raw, table_type=kind).exists()
                if update and exists:
                    result = update_table(store, raw, config)
                else:
                    result = add_table(store, config)
                key = "offline" if kind == "OFFLINE" else "realtime"
                unrecognized |= {
                    f"/{key}{k}": v for k, v in result["unrecognizedProperties"].items()
                }
                warnings += [{**w, "field": f"{key}.{w['field']}"} for w in result["warnings"]]
    except Exception:
        if published_schema:
            store.delete_schema(schema.get("schemaName"))
        raise
    verb = "updated" if update else "added"
    return {
        "unrecognizedProperties": unrecognized,
        "warnings": warnings,
        "status": f"TableConfigs {raw} successfully {verb}",
    }


def delete_table_configs(store: ClusterStore, table: str) -> dict:
    configs = get_table_configs(table)
    delete_table(store, configs["tableName"], None, None)
    if configs["schema"] is not None:
        delete_schema(store, configs["schema"]["schemaName"])
    return {"status": f"Deleted TableConfigs: {configs['tableName']}"}

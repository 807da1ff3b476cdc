"""Add or update a schema (``POST /schemas``, ``PUT /schemas/{name}``)."""

from __future__ import annotations

from django.db import transaction

from cluster import models
from cluster.logic import audit
from cluster.logic.publish import publish_schema
from cluster.logic.validate_config import incompatible_changes, parse_schema
from controller.errors import BadRequest, Conflict, NotFound
from engine.clusterstate import ClusterStore
from engine.spi.schema_validation import schema_unrecognized_properties


def add_schema(store: ClusterStore, data, *, override: bool = True, force: bool = False) -> dict:
    """Create a schema; with ``override`` an existing one is updated (Pinot's default)."""
    schema = parse_schema(data)
    existing = models.Schema.objects.filter(name=schema.name).first()
    if existing is not None:
        if not override:
            raise Conflict(f"Schema {schema.name} already exists; pass override=true to update it")
        return update_schema(store, schema.name, data, force=force)
    with transaction.atomic():
        models.Schema.objects.create(name=schema.name, config=schema.to_json())
        audit.record("schema.create", "schema", schema.name)
        publish_schema(store, schema.to_json())
    return {
        "unrecognizedProperties": schema_unrecognized_properties(schema.to_json()),
        "status": f"{schema.name} successfully added",
    }


def update_schema(store: ClusterStore, name: str, data, *, force: bool = False) -> dict:
    """Replace a schema; backward-incompatible changes are rejected unless ``force``."""
    schema = parse_schema(data)
    if schema.name != name:
        raise BadRequest(
            f"the path names schema '{name}' but schemaName in the body is '{schema.name}'"
        )
    row = models.Schema.objects.filter(name=name).first()
    if row is None:
        raise NotFound(f"Schema {name} not found")
    problems = incompatible_changes(row.config, schema)
    if problems and not force:
        raise BadRequest(incompatible_schema_message(name, problems))
    with transaction.atomic():
        row.config = schema.to_json()
        row.save()
        audit.record("schema.update", "schema", name, forced=bool(problems))
        publish_schema(store, schema.to_json())
    return {
        "unrecognizedProperties": schema_unrecognized_properties(schema.to_json()),
        "status": f"{name} successfully added",
    }


def incompatible_schema_message(name: str, problems: list[str]) -> str:
    """Pinot's 400 for a backward-incompatible schema update, with its details and what to do."""
    details = "\n".join(f"- {p}" for p in problems)
    return (
        f"Backward incompatible schema {name}. Reason: New schema: {name} is not "
        f"backward-compatible with the existing schema.\nIncompatibility Details:\n{details}\n"
        "Suggestions to fix:\n"
        "- Keep every existing column, with its data type and single/multi-value kind\n"
        "- Add new columns instead of renaming or retyping existing ones\n"
        "- Keep the existing primary key columns of an upsert or dedup table\n"
        "- To change a column's type, add a new column and backfill it by re-ingesting\n"
        "- To store this schema anyway (existing segments may then fail), pass force=true"
    )


def delete_schema(store: ClusterStore, name: str) -> dict:
    row = models.Schema.objects.filter(name=name).first()
    if row is None:
        raise NotFound(f"Schema {name} not found")
    users = [
        t.name_with_type
        for t in models.TableConfig.objects.all()
        if (t.config.get("segmentsConfig") or {}).get("schemaName", t.table_name) == name
    ]
    if users:
        raise Conflict(f"Cannot delete schema {name}: it is used by table(s) {', '.join(users)}")
    with transaction.atomic():
        row.delete()
        audit.record("schema.delete", "schema", name)
        store.delete_schema(name)
    return {"status": f"Schema {name} deleted"}

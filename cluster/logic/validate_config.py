"""Schema and table-config validation through the engine's SPI, as actionable 400s."""

from __future__ import annotations

from cluster import models
from controller.errors import BadRequest
from engine.broker.quotas import parse_qps
from engine.common.errors import ConfigError
from engine.ingest.expression import Expression, ExpressionError
from engine.spi import Schema, TableConfig
from engine.spi.periods import data_size_bytes
from engine.spi.schema_validation import validate_schema
from engine.stream.config import table_stream_configs
from tasks.errors import TaskConfigError
from tasks.generators.base import table_task_config
from tasks.generators.purge import TASK_TYPE as PURGE_TASK
from tasks.generators.purge import check_declared_purge
from tasks.generators.upsert_compaction import TASK_TYPE as UPSERT_COMPACTION_TASK
from tasks.generators.upsert_compaction import UpsertCompactionTaskGenerator


class ConfigRejected(BadRequest):
    """A 400 that names the JSON field at fault."""

    def __init__(self, what: str, exc: ConfigError):
        self.field = exc.field
        where = f" at '{exc.field}'" if exc.field else ""
        super().__init__(f"Invalid {what}{where}: {exc.message}")


def parse_schema(data, *, pinot_rules: bool = True) -> Schema:
    """Read a schema; with ``pinot_rules`` also apply Pinot's SchemaUtils rules (for schemas
    coming in; stored ones were checked when they came in)."""
    try:
        schema = Schema.from_json(data)
        if pinot_rules:
            validate_schema(schema)
        return schema
    except ConfigError as exc:
        raise ConfigRejected("schema", exc) from exc


def parse_table_config(data) -> TableConfig:
    """Parse a table config and check it against its schema, which must exist: the schema is
    ``segmentsConfig.schemaName`` or else the raw table name, as in Pinot."""
    if not isinstance(data, dict):
        raise BadRequest("Invalid table config: the request body must be a JSON object")
    try:
        config = TableConfig.from_json(data)
    except ConfigError as exc:
        raise ConfigRejected("table config", exc) from exc
    schema_name = config.segments_config.schema_name or config.table_name
    row = models.Schema.objects.filter(name=schema_name).first()
    if row is None:
        field = "segmentsConfig.schemaName" if config.segments_config.schema_name else "tableName"
        err = BadRequest(
            f"Invalid table config for {config.table_name_with_type}: schema '{schema_name}' "
            f"(from {field}) does not exist; add it with POST /schemas first"
        )
        err.field = field
        raise err
    try:
        schema = parse_schema(row.config, pinot_rules=False)
        config = TableConfig.from_json(data, schema=schema)
        if _consumed_here(config):
            table_stream_configs(config)  # a stream we cannot consume or decode is a 400 now
        _check_ingestion_functions(config)
        _check_task_sql(data, schema)
        _check_quota(config)
        return config
    except ConfigError as exc:
        raise ConfigRejected("table config", exc) from exc


def _check_ingestion_functions(config: TableConfig) -> None:
    """Pinot refuses a transform or filter function it cannot parse (and Groovy, disabled by
    default); a function Sprig does not have yet is accepted with a warning."""
    ingestion = config.ingestion_config
    found = [(f"ingestionConfig.transformConfigs[{i}].transformFunction", t.transform_function)
             for i, t in enumerate(ingestion.transform_configs)]  # fmt: skip
    if ingestion.filter_function:
        found.append(("ingestionConfig.filterConfig.filterFunction", ingestion.filter_function))
    for field, text in found:
        try:
            Expression(text)
        except ExpressionError as exc:
            if str(exc).startswith("unknown function"):
                config.note(field, f"{exc}: Sprig has no such function yet, so ingestion fails")
            else:
                raise ConfigError(field, str(exc)) from exc


def _check_task_sql(data: dict, schema: Schema) -> None:
    """The Spark SQL a task config carries (PurgeTask's purgeFilter and modify.<column>) must
    be expressions over the schema's columns, never queries, and UpsertCompactionTask's keys
    must hold (as Pinot validates task configs when a table config comes in)."""
    purge = table_task_config(data, PURGE_TASK)
    compaction = table_task_config(data, UPSERT_COMPACTION_TASK)
    try:
        if purge is not None:
            check_declared_purge(purge, set(schema.columns))
        if compaction is not None:  # Pinot's UpsertCompactionTaskGenerator.validateTaskConfigs
            UpsertCompactionTaskGenerator().validate(data, compaction)
    except TaskConfigError as exc:
        raise ConfigError(f"task.taskTypeConfigsMap.{exc.key}", exc.message) from exc


def _check_quota(config: TableConfig) -> None:
    """Pinot's QuotaConfig: a data size for ``storage``, a positive number of queries."""
    quota = config.to_json().get("quota") or {}
    if quota.get("storage") is not None:
        try:
            data_size_bytes(quota["storage"])
        except ValueError as exc:
            raise ConfigError("quota.storage", str(exc)) from exc
    qps = quota.get("maxQueriesPerSecond")
    if qps is not None and parse_qps(qps) is None:  # the brokers read it the same way
        raise ConfigError(
            "quota.maxQueriesPerSecond", f"must be a positive, finite number, got {qps!r}"
        )


def _consumed_here(config: TableConfig) -> bool:
    """Kafka streams are checked in full now. Pinot also accepts other stream types (Kinesis,
    Pulsar); such a table is accepted with a warning (``config.warnings``) and not consumed."""
    kind = str(config.stream_configs.get("streamType", "kafka")).lower()
    return kind == "kafka"


def incompatible_changes(old: dict, new: Schema) -> list[str]:
    """Pinot's backward-compatibility check (``Schema.isBackwardCompatibleWith``), one
    ``Incompatibility Details`` line per kind of change: non-empty primary key columns
    changed, columns missing from ``new``, columns whose data type or single/multi-value
    changed. Adding columns, and changing a field type, default or maxLength, pass."""
    previous = parse_schema(old, pinot_rules=False)
    problems = []
    if previous.primary_key_columns and previous.primary_key_columns != new.primary_key_columns:
        problems.append(
            f"Primary key columns changed ({_listed(previous.primary_key_columns)} -> "
            f"{_listed(new.primary_key_columns)})"
        )
    missing = [name for name in previous.columns if not new.has_column(name)]
    if missing:
        problems.append(
            f"Missing columns (present in old schema but not in new): {_listed(missing)}"
        )
    changed = []
    for name in previous.columns:
        if not new.has_column(name):
            continue
        a, b = previous.field(name), new.field(name)
        if a.data_type != b.data_type or a.single_value != b.single_value:
            changed.append(f"{name} (old: {_spec_text(a)}, new: {_spec_text(b)})")
    if changed:
        problems.append(f"Incompatible field specifications: [{', '.join(changed)}]")
    return problems


def _listed(names: list[str]) -> str:
    return f"[{', '.join(names)}]"


def _spec_text(spec) -> str:
    kind = "" if spec.single_value else " MULTI_VALUE"
    return f"{spec.field_type.value} {spec.data_type.value}{kind}"

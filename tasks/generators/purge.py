"""PurgeTask on the controller: one subtask per segment that is due, as Pinot's generator.

A segment is due when its ZK ``custom.map`` has no ``PurgeTask.time`` (never purged; these
go first) or that time is at least ``lastPurgeTimeThresholdPeriod`` (14d) ago (oldest
first). Segments held by an unfinished PurgeTask subtask are left out, so two subtasks never
rewrite one segment.

What to purge is declared in the task config, which Pinot lacks (it needs a Java plug-in):
``purgeFilter`` (a SQL predicate of the records to remove), ``modify.<column>`` (a SQL
expression replacing the column in kept records), and ``recordPurger`` / ``recordModifier``
naming plug-ins registered on the minions (spark_jobs.minion.purge). Without any of them
the segments are rewritten unchanged, as in Pinot.

OFFLINE tables only for now: re-uploading a REALTIME segment through ``POST /segments``
would replace its LLC metadata (offsets, status).
"""

from __future__ import annotations

import orjson
import sqlglot
from sqlglot import exp

from cluster.periods import period_ms
from engine.clusterstate import split_table_name
from tasks.errors import TaskConfigError
from tasks.generators.base import TABLE_NAME_KEY, UPLOAD_URL_KEY, GenerationContext, TaskGenerator

TASK_TYPE = "PurgeTask"
THRESHOLD_KEY = "lastPurgeTimeThresholdPeriod"
DEFAULT_THRESHOLD = "14d"
PURGE_FILTER_KEY = "purgeFilter"
MODIFY_PREFIX = "modify."
RECORD_PURGER_KEY = "recordPurger"
RECORD_MODIFIER_KEY = "recordModifier"
SEGMENT_NAME_KEY = "segmentName"
DOWNLOAD_URL_KEY = "downloadURL"
PURGE_TIME_KEY = "PurgeTask.time"  # the custom.map key; spark_jobs.minion.purge writes it
_PASSED = (PURGE_FILTER_KEY, RECORD_PURGER_KEY, RECORD_MODIFIER_KEY)


def threshold_ms(task_config: dict[str, str]) -> int:
    raw = task_config.get(THRESHOLD_KEY) or DEFAULT_THRESHOLD
    try:
        value = period_ms(raw)
    except ValueError as exc:
        raise TaskConfigError(f"{TASK_TYPE}.{THRESHOLD_KEY}", str(exc)) from None
    if value < 0:
        raise TaskConfigError(f"{TASK_TYPE}.{THRESHOLD_KEY}", "must not be negative")
    return value


def _parse(key: str, sql: str, kind: str) -> exp.Expression:
    try:
        parsed = sqlglot.parse_one(f"SELECT {sql}" if kind == "expression" else
                                   f"SELECT 1 WHERE {sql}", read="spark")  # fmt: skip
    except sqlglot.errors.ParseError as exc:
        raise TaskConfigError(f"{TASK_TYPE}.{key}", f"not a SQL {kind}: {sql!r} ({exc})") from None
    return parsed


def check_declared_purge(task_config: dict[str, str], columns: set[str] | None) -> None:
    """``purgeFilter`` must be a SQL predicate and ``modify.<column>`` SQL expressions, over
    the schema's ``columns`` when they are known."""
    checks = []
    if (task_config.get(PURGE_FILTER_KEY) or "").strip():
        checks.append((PURGE_FILTER_KEY, task_config[PURGE_FILTER_KEY], "predicate"))
    for key, sql in task_config.items():
        if key.startswith(MODIFY_PREFIX):
            column = key[len(MODIFY_PREFIX):]  # fmt: skip
            if columns is not None and column not in columns:
                raise TaskConfigError(
                    f"{TASK_TYPE}.{key}", f"{column} is not a column of the table"
                )
            if not sql.strip():
                raise TaskConfigError(f"{TASK_TYPE}.{key}", "needs a SQL expression")
            checks.append((key, sql, "expression"))
    for key, sql, kind in checks:
        parsed = _parse(key, sql, kind)
        if columns is None:
            continue
        unknown = sorted({c.name for c in parsed.find_all(exp.Column)} - columns)
        if unknown:
            raise TaskConfigError(f"{TASK_TYPE}.{key}",
                                  f"unknown column(s) {', '.join(unknown)} in {sql!r}")  # fmt: skip


def _schema_columns(ctx: GenerationContext, table_config: dict) -> set[str] | None:
    raw = split_table_name(ctx.table_name)[0]
    name = (table_config.get("segmentsConfig") or {}).get("schemaName") or raw
    schema = ctx.store.schema(name) or ctx.store.schema(raw)
    if schema is None:
        return None
    return {spec["name"] for key in ("dimensionFieldSpecs", "metricFieldSpecs",
                                     "dateTimeFieldSpecs", "timeFieldSpec")
            for spec in (schema.get(key) or []) if isinstance(spec, dict)}  # fmt: skip


def last_purge_ms(custom_map: str | None) -> int | None:
    try:
        value = orjson.loads(custom_map or "{}").get(PURGE_TIME_KEY)
        return int(value) if value is not None else None
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        return None  # unreadable custom metadata: treat as never purged


class PurgeTaskGenerator(TaskGenerator):
    task_type = TASK_TYPE

    def validate(self, table_config: dict, task_config: dict[str, str]) -> None:
        name = str(table_config.get("tableName", ""))
        kind = split_table_name(name)[1] or str(table_config.get("tableType", "")).upper()
        if kind == "REALTIME":
            raise TaskConfigError(TASK_TYPE, "runs on OFFLINE tables only (a REALTIME "
                                             "segment's re-upload would lose its LLC metadata)")  # fmt: skip
        threshold_ms(task_config)
        check_declared_purge(task_config, None)

    def generate(self, ctx: GenerationContext, table_config: dict,
                 task_config: dict[str, str]) -> list[dict[str, str]]:  # fmt: skip
        self.validate({**table_config, "tableName": ctx.table_name}, task_config)
        check_declared_purge(task_config, _schema_columns(ctx, table_config))
        threshold = threshold_ms(task_config)
        busy = {c.get(SEGMENT_NAME_KEY) for c in ctx.incomplete_subtask_configs()}
        due = []  # (never purged first, then oldest purge, name)
        for segment in ctx.store.segment_names(ctx.table_name):
            if segment in busy:
                continue
            metadata = ctx.store.segment_metadata(ctx.table_name, segment)
            if metadata is None:
                continue
            last = last_purge_ms(metadata.extra.get("custom.map"))
            if last is not None and ctx.now_ms - last < threshold:
                continue
            due.append((last is not None, last or 0, segment, metadata.download_url))
        passed = {k: v for k, v in task_config.items()
                  if k in _PASSED or k.startswith(MODIFY_PREFIX)}  # fmt: skip
        return [
            {TABLE_NAME_KEY: ctx.table_name, SEGMENT_NAME_KEY: segment,
             DOWNLOAD_URL_KEY: url, UPLOAD_URL_KEY: f"{ctx.controller_url}/segments", **passed}
            for _, _, segment, url in sorted(due)
        ]  # fmt: skip

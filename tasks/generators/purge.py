"""PurgeTask on the controller: one subtask per segment that is due, as Pinot's generator.

A segment is due when its ZK ``custom.map`` has no ``PurgeTask.time`` (never purged; these
go first) or that time is at least ``lastPurgeTimeThresholdPeriod`` (14d) ago (oldest
first). Segments held by an unfinished PurgeTask subtask are left out, so two subtasks never
rewrite one segment.

What to purge is declared in the task config, which Pinot lacks (it needs a Java plug-in):
``purgeFilter`` (a SQL predicate of the records to remove), ``modify.<column>`` (a SQL
expression replacing the column in kept records), both expressions over the table's columns
and never queries (checked when the table config is submitted, here and on the minion), and ``recordPurger`` / ``recordModifier``
naming plug-ins registered on the minions (spark_jobs.minion.purge). Without any of them
the segments are rewritten unchanged, as in Pinot.

On a REALTIME table only completed segments are purged (status DONE, or UPLOADED; never a
CONSUMING or COMMITTING one, as Pinot's generator). The purged copy is uploaded as a refresh
of the same name, which keeps the segment's stream offsets and status in ZooKeeper. A segment
left empty is deleted, except the newest completed LLC segment of each partition
(``keepEmptySegment``): its end offset is where the partition's next segment starts, which
RealtimeSegmentValidationManager needs to repair a lost consuming segment.
"""

from __future__ import annotations

import orjson

from engine.clusterstate import ClusterStore, split_table_name
from engine.clusterstate.segment_status import is_completed
from engine.realtime.llc_name import LLCSegmentName
from engine.spi.periods import period_ms
from spark_jobs.minion.sql_expression import ExpressionRefusedError, checked_expression
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
# Pinot's ORIGINAL_SEGMENT_CRC_KEY: the CRC the subtask purges; the minion uploads nothing
# when the segment changed or went meanwhile (a refresh, retention)
CRC_KEY = "crc"
KEEP_EMPTY_KEY = "keepEmptySegment"  # "true": rewrite as an empty segment rather than delete
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


def check_declared_purge(task_config: dict[str, str], columns: set[str] | None) -> None:
    """``purgeFilter`` must be a SQL predicate and ``modify.<column>`` SQL expressions over
    the schema's ``columns`` (any column when None), never queries (see
    spark_jobs.minion.sql_expression); TaskConfigError naming the key otherwise."""
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
            checks.append((key, sql, "expression"))
    for key, sql, kind in checks:
        try:
            checked_expression(key, sql, columns, kind)
        except ExpressionRefusedError as exc:
            raise TaskConfigError(f"{TASK_TYPE}.{key}", exc.detail) from None


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
        threshold_ms(task_config)
        check_declared_purge(task_config, None)

    def generate(self, ctx: GenerationContext, table_config: dict,
                 task_config: dict[str, str]) -> list[dict[str, str]]:  # fmt: skip
        self.validate({**table_config, "tableName": ctx.table_name}, task_config)
        check_declared_purge(task_config, _schema_columns(ctx, table_config))
        threshold = threshold_ms(task_config)
        busy = {c.get(SEGMENT_NAME_KEY) for c in ctx.incomplete_subtask_configs()}
        realtime = split_table_name(ctx.table_name)[1] == "REALTIME"
        candidates = (completed_segments(ctx.store, ctx.table_name) if realtime
                      else _all_segments(ctx.store, ctx.table_name))  # fmt: skip
        keep = last_of_partitions(candidates) if realtime else set()
        due = []  # (never purged first, then oldest purge, name)
        for segment, metadata in candidates.items():
            if segment in busy:
                continue
            last = last_purge_ms(metadata.extra.get("custom.map"))
            if last is not None and ctx.now_ms - last < threshold:
                continue
            due.append((last is not None, last or 0, segment, metadata.download_url,
                        metadata.crc))  # fmt: skip
        passed = {k: v for k, v in task_config.items()
                  if k in _PASSED or k.startswith(MODIFY_PREFIX)}  # fmt: skip
        return [
            {TABLE_NAME_KEY: ctx.table_name, SEGMENT_NAME_KEY: segment,
             DOWNLOAD_URL_KEY: url, UPLOAD_URL_KEY: f"{ctx.controller_url}/segments",
             CRC_KEY: str(crc), **passed, **({KEEP_EMPTY_KEY: "true"} if segment in keep else {})}
            for _, _, segment, url, crc in sorted(due)
        ]  # fmt: skip


def _all_segments(store: ClusterStore, table: str) -> dict:
    found = {}
    for segment in store.segment_names(table):
        metadata = store.segment_metadata(table, segment)
        if metadata is not None:
            found[segment] = metadata
    return found


def completed_segments(store: ClusterStore, table: str) -> dict:
    """The REALTIME ``table``'s completed segments: DONE (or UPLOADED) in ZooKeeper and no
    longer CONSUMING in the ideal state (a commit marks DONE before it moves the ideal
    state). The ideal state is read first, so a commit in between is seen as consuming."""
    ideal = store.ideal_state(table)
    replicas = ideal.segments if ideal else {}
    return {s: m for s, m in _all_segments(store, table).items()
            if is_completed(m, replicas.get(s, {}))}  # fmt: skip


def last_of_partitions(segments: dict) -> set[str]:
    """The newest LLC segment of each partition among ``segments``."""
    newest: dict[int, LLCSegmentName] = {}
    for segment in segments:
        name = LLCSegmentName.parse(segment)
        if name is not None and (name.partition not in newest or name > newest[name.partition]):
            newest[name.partition] = name
    return {str(name) for name in newest.values()}

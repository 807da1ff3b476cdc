"""PurgeTask's data work: one segment's rows without the purged records, with the declared
column modifications, rebuilt under the same name through the engine's writer.

A purge is declared, not coded: ``purgeFilter`` is a SQL predicate over the table's columns
(``user_id IN (3, 7)``); a row it holds for is removed, a row where it is false or NULL is
kept. ``modify.<column>`` is a SQL expression whose value replaces the column in every kept
row (``CASE WHEN country = 'DE' THEN NULL ELSE email END``). Pinot's plug-in points exist too:
a RecordPurger (row -> bool, True removes) or RecordModifier (row -> row) registered by name
in a module the minion imports (``SPRIG_MINION_TASK_PLUGINS``).

Both are expressions over the table's columns, never queries: each is checked
(spark_jobs.minion.sql_expression) before Spark sees it, and Spark runs the checked form.

Rows move between Arrow and Spark through Parquet files, as MergeRollupTask's do.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from spark_jobs.minion.sql_expression import ExpressionRefusedError, checked_expression

# the segment ZK custom.map key recording when a segment was last purged (epoch ms)
PURGE_TIME_KEY = "PurgeTask.time"

_plugins_lock = threading.Lock()
_record_purgers: dict[str, Callable[[str], Callable[[dict], bool]]] = {}
_record_modifiers: dict[str, Callable[[str], Callable[[dict], dict]]] = {}


def register_record_purger(name: str, factory: Callable[[str], Callable[[dict], bool]]) -> None:
    """``factory(table_name_with_type)`` -> ``should_purge(row: dict) -> bool``."""
    with _plugins_lock:
        _record_purgers[name] = factory


def register_record_modifier(name: str, factory: Callable[[str], Callable[[dict], dict]]) -> None:
    """``factory(table_name_with_type)`` -> ``modify(row: dict) -> dict`` (the new row)."""
    with _plugins_lock:
        _record_modifiers[name] = factory


class PurgeSpecError(ValueError):
    """A purge the minion cannot run; ``key`` names the task config key."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"Invalid task config '{key}': {message}")


def _plugin(registry: dict, kind: str, key: str, name: str | None, table: str):
    if not name:
        return None
    with _plugins_lock:
        factory = registry.get(name)
        known = sorted(registry)
    if factory is None:
        raise PurgeSpecError(key, f"no {kind} named {name!r} is registered on this minion "
                                  f"(registered: {', '.join(known) or 'none'})")  # fmt: skip
    return factory(table)


@dataclasses.dataclass(frozen=True)
class PurgeSpec:
    purge_filter: str | None = None
    modifications: dict[str, str] = dataclasses.field(default_factory=dict)
    record_purger: Callable[[dict], bool] | None = None
    record_modifier: Callable[[dict], dict] | None = None

    @classmethod
    def resolve(cls, table: str, *, purge_filter: str | None, modifications: dict[str, str],
                record_purger: str | None, record_modifier: str | None) -> PurgeSpec:  # fmt: skip
        """The spec with the named plug-ins looked up on this minion."""
        purger = _plugin(_record_purgers, "RecordPurger", "recordPurger", record_purger, table)
        modifier = _plugin(_record_modifiers, "RecordModifier", "recordModifier",
                           record_modifier, table)  # fmt: skip
        return cls(purge_filter=(purge_filter or "").strip() or None,
                   modifications=dict(modifications), record_purger=purger,
                   record_modifier=modifier)  # fmt: skip

    def checked_sql(self, columns) -> tuple[str | None, dict[str, str]]:
        """The purge filter and modifications as Spark runs them, each checked to be an
        expression over ``columns``; PurgeSpecError naming the key otherwise."""
        try:
            where = None
            if self.purge_filter:
                where = checked_expression("purgeFilter", self.purge_filter, columns,
                                           "predicate")  # fmt: skip
            modified = {}
            for column, expression in self.modifications.items():
                if column not in columns:
                    raise PurgeSpecError(f"modify.{column}", "is not a column of the table")
                modified[column] = checked_expression(f"modify.{column}", expression, columns)
        except ExpressionRefusedError as exc:
            raise PurgeSpecError(exc.key, exc.detail) from None
        return where, modified

    @property
    def changes_rows(self) -> bool:
        return bool(self.purge_filter or self.modifications or self.record_purger
                    or self.record_modifier)  # fmt: skip


def purge(df, spec: PurgeSpec):
    """``df`` without the purged rows, modified as declared (column order and types kept)."""
    from pyspark.sql import functions as F

    types = {field.name: field.dataType for field in df.schema.fields}
    where, modifications = spec.checked_sql(list(types))
    if where:
        try:
            matches = F.expr(where).cast("boolean")
            # a NULL predicate keeps the row: only rows the filter holds for are purged
            df = df.filter(~F.coalesce(matches, F.lit(False)))
        except Exception as exc:  # pyspark's ParseException / AnalysisException
            raise PurgeSpecError("purgeFilter", f"{spec.purge_filter!r}: {exc}") from None
    for column, expression in modifications.items():
        df = df.withColumn(column, F.expr(expression).cast(types[column]))
    if spec.record_purger or spec.record_modifier:
        should_purge, modify = spec.record_purger, spec.record_modifier
        columns = df.columns

        def rows(partition):  # runs in Spark's Python workers (the functions are pickled)
            for row in partition:
                record = row.asDict(recursive=True)
                if should_purge is not None and should_purge(record):
                    continue
                if modify is not None:
                    record = modify(record)
                yield tuple(record.get(c) for c in columns)

        df = df.rdd.mapPartitions(rows).toDF(df.schema)
    return df


def purge_table(spark, table, spec: PurgeSpec, work_dir: Path):
    """The Arrow table of ``table``'s rows after the purge (same schema)."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    run = work_dir / f"purge-{uuid.uuid4().hex[:8]}"
    run.mkdir(parents=True)
    pq.write_table(table, run / "in.parquet")
    df = spark.read.parquet(str(run / "in.parquet"))
    purge(df, spec).write.parquet(str(run / "out"))
    out = ds.dataset(str(run / "out"), format="parquet").to_table(columns=table.schema.names)
    return out.cast(table.schema)


def segment_contents(segment_dir: Path):
    """(name, custom metadata, rows as Arrow) of the segment at ``segment_dir``, for a
    rewrite under its own name."""
    from engine.segment import load_segment

    segment = load_segment(segment_dir)
    try:
        return segment.name, dict(segment.metadata.custom), segment.to_arrow()
    finally:
        segment.close()


def purge_segment(spark, segment_dir: Path, schema, table_config, spec: PurgeSpec,
                  out_dir: Path, purge_time_ms: int, *, keep_empty: bool = False):  # fmt: skip
    """Rebuild the segment at ``segment_dir`` without its purged rows, under its own name,
    keeping its custom metadata and recording ``PurgeTask.time``.

    Returns ``(build_result or None when no row is left, rows_before, rows_after)``; with
    ``keep_empty`` a segment left with no row is rebuilt empty instead of None."""
    from engine.segment import build_segment

    name, custom, rows = segment_contents(segment_dir)
    purged = purge_table(spark, rows, spec, out_dir / "work") if spec.changes_rows else rows
    if purged.num_rows == 0 and not keep_empty:
        return None, rows.num_rows, 0
    custom[PURGE_TIME_KEY] = str(purge_time_ms)
    result = build_segment(purged, schema, table_config, out_dir / "segments",
                           segment_name=name, custom_metadata=custom)  # fmt: skip
    return result, rows.num_rows, purged.num_rows

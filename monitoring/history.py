"""SQL over the `consumer_offsets` REALTIME table, the lag history the sampler feeds, and the
rows it answers turned back into evaluation samples. Plain module: whoever runs the SQL (a
broker client, the controller's query proxy) passes the broker's JSON answer back in.

`group`, `partition` and `offset` are SQL keywords, so they are always double-quoted.
"""

from __future__ import annotations

from collections import defaultdict

from monitoring.evaluation.window import Sample
from monitoring.tables import TABLE_NAME

MINUTE_MS = 60_000
MAX_ROWS = 100_000
# A sample without a commit, and a deleted commit, store a null offset: read nulls as nulls,
# not as the column's default 0 (which would be a commit at offset 0).
NULLS = "SET enableNullHandling=true; "


def _literal(text: str) -> str:
    """A SQL string literal; a quote inside the group name is doubled, never interpreted."""
    return "'" + text.replace("'", "''") + "'"


def lag_per_minute_sql(group: str, since_ms: int, until_ms: int, table: str = TABLE_NAME) -> str:
    """Each topic partition's largest lag per minute for one group over [since_ms, until_ms)
    (epoch ms, start inclusive, end exclusive), oldest minute first. `minute` is the minute's
    start in epoch ms."""
    return NULLS + (
        f'SELECT DATETRUNC(\'MINUTE\', commitTimestamp) AS "minute", topic, "partition", '
        f'MAX(lag) AS lag, MAX("offset") AS committed, MAX(logEndOffset) AS endOffset '
        f'FROM {table} WHERE "group" = {_literal(group)} '
        f"AND commitTimestamp >= {int(since_ms)} AND commitTimestamp < {int(until_ms)} "
        f"GROUP BY DATETRUNC('MINUTE', commitTimestamp), topic, \"partition\" "
        f"ORDER BY DATETRUNC('MINUTE', commitTimestamp), topic, \"partition\" LIMIT {MAX_ROWS}"
    )


def samples_sql(group: str, since_ms: int, until_ms: int, table: str = TABLE_NAME) -> str:
    """The stored samples of one group over [since_ms, until_ms), newest first, at most
    MAX_ROWS: past the limit the oldest are left out (the Burrow window needs the newest)."""
    return NULLS + (
        f'SELECT topic, "partition", commitTimestamp, "offset", logEndOffset FROM {table} '
        f'WHERE "group" = {_literal(group)} '
        f"AND commitTimestamp >= {int(since_ms)} AND commitTimestamp < {int(until_ms)} "
        f"ORDER BY commitTimestamp DESC LIMIT {MAX_ROWS}"
    )


def rows_of(answer: dict) -> list[dict]:
    """The broker's `resultTable` as dicts keyed by column name; ValueError with the broker's
    own message when the answer carries exceptions (no table, no broker, a bad query)."""
    errors = answer.get("exceptions") or []
    if errors:
        raise ValueError("; ".join(str(e.get("message", e)) for e in errors))
    table = answer.get("resultTable") or {}
    names = (table.get("dataSchema") or {}).get("columnNames") or []
    return [dict(zip(names, row, strict=True)) for row in table.get("rows") or []]


def lag_series(rows: list[dict]) -> dict[str, list[dict]]:
    """`topic/partition` -> [{minute, lag, committed, endOffset}], from lag_per_minute_sql's
    rows. A minute whose samples had no commit keeps lag None (unknown), never 0."""
    series: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        series[f"{row['topic']}/{row['partition']}"].append({
            "minute": int(row["minute"]),
            "lag": _known(row["lag"]),
            "committed": _known(row["committed"]),
            "endOffset": _known(row["endOffset"]),
        })  # fmt: skip
    return dict(series)


def samples_by_partition(rows: list[dict]) -> dict[tuple[str, int], list[Sample]]:
    """(topic, partition) -> samples, oldest first, from samples_sql's rows. The collector
    does not know when a commit was made, so every sample is a poll (commit time unknown)."""
    out: dict[tuple[str, int], list[Sample]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: int(r["commitTimestamp"])):
        out[(row["topic"], int(row["partition"]))].append(
            Sample(int(row["commitTimestamp"]), _known(row["offset"]), _known(row["logEndOffset"]))
        )
    return dict(out)


def _known(value) -> int | None:
    # A null metric comes back as None with null handling on; a NaN or a float from an
    # aggregation over longs is read back as the integer it stands for.
    if value is None or (isinstance(value, float) and value != value):
        return None
    return int(value)

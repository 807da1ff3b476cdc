"""Null handling against DuckDB: a generated table with NULLs in every data type (single- and
multi-value), built with every access path, and the queries of ``null_queries`` checked
with ``enableNullHandling`` on and off.

Reusable like ``conformance.py``: ``run_suite(executor, table, reference, queries)`` takes any callable
``(sql, null_handling) -> BrokerResponse dict`` (in-process ``run_query`` here, a real broker
in ``tests/cluster_e2e``) and a ``Reference`` and returns one ``QueryCheck`` per query and
mode.

The reference is DuckDB over the same rows, in two tables:

* ``t_on``: the rows with their NULLs (an empty multi-value is NULL, as Pinot stores it): with
  null handling Pinot follows SQL, and the differences are written into the reference
  queries (``null_queries``): DuckDB's order is set to Pinot's (ASC NULLS LAST, DESC NULLS
  FIRST); a multi-value GROUP BY groups a NULL doc under its stored default value, as
  Pinot's group key generators ignore NULL for multi-value keys;
* ``t_off``: the rows as Pinot stores them without null handling, NULLs replaced by the
  column's default (dimensions: INT/LONG MIN_VALUE, FLOAT/DOUBLE -Infinity, STRING/JSON
  "null", BOOLEAN false, TIMESTAMP 0, BYTES empty, BIG_DECIMAL 0; metrics 0; multi-values
  ``[default]``), plus a ``<column>__null`` flag: IS [NOT] NULL and COALESCE still read the
  null value vector (Pinot's basic null support), everything else sees the defaults; an
  aggregation of no rows is Pinot's sentinel (SUM 0.0, MIN +Infinity, MAX, AVG and
  MINMAXRANGE -Infinity).
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

TABLE = "nullsAll"
DIMENSIONS = [
    ("id", "INT", True), ("i", "INT", True), ("l", "LONG", True), ("f", "FLOAT", True),
    ("d", "DOUBLE", True), ("bd", "BIG_DECIMAL", True), ("b", "BOOLEAN", True),
    ("ts", "TIMESTAMP", True), ("s", "STRING", True), ("j", "JSON", True), ("by", "BYTES", True),
    ("g", "STRING", True), ("g2", "INT", True), ("k", "STRING", True),
    ("mi", "INT", False), ("ml", "LONG", False), ("mf", "FLOAT", False), ("mdv", "DOUBLE", False),
    ("ms", "STRING", False),
]  # fmt: skip
METRICS = [("m", "INT"), ("md", "DOUBLE"), ("mn", "INT")]
NOT_NULL = {"id", "k", "mn"}
MV_COLUMNS = {name for name, _, single in DIMENSIONS if not single}

SCHEMA = {
    "schemaName": TABLE,
    "enableColumnBasedNullHandling": True,
    "dimensionFieldSpecs": [
        {"name": n, "dataType": t, "singleValueField": sv, "notNull": n in NOT_NULL}
        for n, t, sv in DIMENSIONS
    ],
    "metricFieldSpecs": [{"name": n, "dataType": t, "notNull": n in NOT_NULL} for n, t in METRICS],
}

_STAR_TREE = {
    "dimensionsSplitOrder": ["k", "g", "g2"],
    "functionColumnPairs": ["COUNT__*", "SUM__mn", "SUM__m", "MIN__md", "MAX__md", "AVG__mn"],
    "maxLeafRecords": 4,
}
# the access paths: each variant builds every segment with one of these index configs
VARIANTS = {
    "dictionary": {},
    "raw": {"noDictionaryColumns": ["i", "l", "f", "d", "bd", "ts", "s", "by", "m", "md", "mi"]},
    "indexed": {
        "sortedColumn": ["g2"],
        "invertedIndexColumns": ["i", "s", "g", "b", "mi", "ms"],
        "rangeIndexColumns": ["l", "d", "ts", "f"],
    },
    "startree": {"starTreeIndexConfigs": [_STAR_TREE]},
    # the consuming segments' (REALTIME): dictionary and raw columns, inverted indexes
    "consuming": {
        "invertedIndexColumns": ["i", "s", "g", "mi"],
        "noDictionaryColumns": ["l", "d", "md", "ts"],
    },
}
SEGMENT_SIZES = [110, 90, 40]  # the last has no value at all in s, f and mi
_ALL_NULL_IN_LAST = {"s", "f", "mi"}
_NEVER_NULL_IN_FIRST = {"d"}


def table_config(variant: str, table_type: str = "OFFLINE") -> dict:
    config = {
        "tableName": TABLE,
        "tableType": table_type,
        "segmentsConfig": {"replication": "1"},
        "tableIndexConfig": dict(VARIANTS[variant]),
    }
    if table_type == "REALTIME":
        config["tableIndexConfig"]["streamConfigs"] = {
            "streamType": "kafka", "stream.kafka.topic.name": TABLE,
            "stream.kafka.decoder.class.name":
                "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
        }  # fmt: skip
    return config


# ---- the rows ------------------------------------------------------------------------------

_WORDS = ["apple", "Banana", "cherry", "date", "", "null", "éclair"]


def generate_rows(seed: int = 29) -> dict[str, list]:
    """Columns as Python lists (multi-values as lists; None where NULL), about a quarter
    NULL in each nullable column."""
    rng = np.random.default_rng(seed)
    n = sum(SEGMENT_SIZES)
    last = range(n - SEGMENT_SIZES[-1], n)

    def column(name: str, make) -> list:
        values = [make() for _ in range(n)]
        if name in NOT_NULL:
            return values
        nulls = rng.random(n) < 0.25
        if name in _NEVER_NULL_IN_FIRST:
            nulls[: SEGMENT_SIZES[0]] = False
        if name in _ALL_NULL_IN_LAST:
            nulls[list(last)] = True
        return [None if null else v for v, null in zip(values, nulls, strict=True)]

    def pick(options):
        return lambda: options[int(rng.integers(len(options)))]

    def mv(make):
        return lambda: [make() for _ in range(int(rng.integers(1, 4)))]

    half = pick([x / 2 for x in range(-20, 21)])
    rows = {
        "id": list(range(n)),
        "i": column("i", lambda: int(rng.integers(-5, 21))),
        "l": column("l", lambda: int(rng.integers(-3, 4)) * 1_000_000_000_007),
        "f": column("f", half),
        "d": column("d", pick([x / 4 for x in range(-40, 41)])),
        "bd": column("bd", lambda: decimal.Decimal(int(rng.integers(-500, 500))) / 100),
        "b": column("b", lambda: bool(rng.integers(2))),
        "ts": column("ts", lambda: 1_700_000_000_000 + int(rng.integers(0, 50)) * 3_600_000),
        "s": column("s", pick(_WORDS)),
        "j": column("j", lambda: json.dumps({"a": int(rng.integers(5))})),
        "by": column("by", lambda: bytes([int(rng.integers(256)), int(rng.integers(256))])),
        "g": column("g", pick(["x", "y", "z"])),
        "g2": column("g2", lambda: int(rng.integers(1, 4))),
        "k": column("k", pick(["p", "q"])),
        "mi": column("mi", mv(lambda: int(rng.integers(0, 6)))),
        "ml": column("ml", mv(lambda: int(rng.integers(0, 4)) * 10_000_000_000)),
        "mf": column("mf", mv(half)),
        "mdv": column("mdv", mv(pick([x / 4 for x in range(0, 9)]))),
        "ms": column("ms", mv(pick(["a", "b", "c", "null"]))),
        "m": column("m", lambda: int(rng.integers(0, 30))),
        "md": column("md", pick([x / 8 for x in range(-16, 17)])),
        "mn": column("mn", lambda: int(rng.integers(1, 10))),
    }
    return rows


_ARROW = {"INT": pa.int32(), "LONG": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(),
          "BIG_DECIMAL": pa.decimal128(18, 2), "BOOLEAN": pa.bool_(), "TIMESTAMP": pa.int64(),
          "STRING": pa.string(), "JSON": pa.string(), "BYTES": pa.binary()}  # fmt: skip


def _types() -> dict[str, tuple[str, bool, bool]]:
    """name -> (Pinot type, single-value, metric)."""
    out = {n: (t, sv, False) for n, t, sv in DIMENSIONS}
    out.update({n: (t, True, True) for n, t in METRICS})
    return out


def arrow_rows(rows: dict[str, list], start: int = 0, stop: int | None = None) -> pa.Table:
    """Rows ``[start, stop)`` as Pinot's input: Arrow with NULLs."""
    columns = {}
    for name, (data_type, single, _) in _types().items():
        arrow_type = _ARROW[data_type] if single else pa.list_(_ARROW[data_type])
        columns[name] = pa.array(rows[name][start:stop], type=arrow_type)
    return pa.table(columns)


def segment_ranges() -> list[tuple[int, int]]:
    bounds = np.cumsum([0, *SEGMENT_SIZES])
    return [(int(a), int(b)) for a, b in itertools.pairwise(bounds)]


def _default(data_type: str, metric: bool):
    if metric:
        return 0.0 if data_type in ("FLOAT", "DOUBLE") else 0
    return {"INT": -(2**31), "LONG": -(2**63), "FLOAT": -math.inf, "DOUBLE": -math.inf,
            "BIG_DECIMAL": decimal.Decimal(0), "BOOLEAN": False, "TIMESTAMP": 0,
            "STRING": "null", "JSON": "null", "BYTES": b""}[data_type]  # fmt: skip


class Reference:
    """DuckDB with ``t_on`` (NULLs) and ``t_off`` (defaults and ``__null`` flags); each
    query's answer is computed once, however many access paths are checked against it."""

    def __init__(self, rows: dict[str, list]):
        self.con = _connection(rows)
        self._answers: dict[str, list] = {}

    def rows(self, sql: str) -> list[tuple]:
        if sql not in self._answers:
            self._answers[sql] = self.con.execute(sql).fetchall()
        return self._answers[sql]


def _connection(rows: dict[str, list]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET threads=1")
    on = arrow_rows(rows)
    off = {}
    for name, (data_type, single, metric) in _types().items():
        default = _default(data_type, metric)
        values = rows[name]
        filled = [(default if single else [default]) if v is None else v for v in values]
        off[name] = pa.array(filled, type=on.schema.field(name).type)
        off[f"{name}__null"] = pa.array([v is None for v in values])
    for table, data in (("t_on", on), ("t_off", pa.table(off))):
        con.register(f"{table}_rows", data)
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM {table}_rows")
        con.unregister(f"{table}_rows")
    return con


# ---- comparison -------------------------------------------------------------------------------


@dataclass
class QueryCheck:
    sql: str
    mode: str  # "on" / "off"
    ok: bool
    message: str = ""


_EMPTY_OFF = {"sum": 0.0, "min": math.inf, "max": -math.inf, "avg": -math.inf,
              "minmaxrange": -math.inf}  # fmt: skip


def _norm(value, data_type: str):
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return tuple(_norm(v, data_type.removesuffix("_ARRAY")) for v in value)
    if data_type == "TIMESTAMP" and isinstance(value, str):
        stamp = datetime.datetime.strptime(value, "%Y-%m-%d %H:%M:%S.%f")
        return int(stamp.replace(tzinfo=datetime.UTC).timestamp() * 1000)
    if data_type == "JSON" and isinstance(value, str) and value != "null":
        return json.dumps(json.loads(value), sort_keys=True)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, str):
        if value in ("Infinity", "-Infinity", "NaN"):
            return _norm(float(value.replace("Infinity", "inf")), data_type)
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, decimal.Decimal):
        value = float(value)
    if isinstance(value, int) and abs(value) < 2**53:
        return value
    if isinstance(value, int | float):  # past 2**53 Pinot's DOUBLE results are not exact
        value = float(value)
        if math.isnan(value):
            return "NaN"
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        return float(f"{value:.12g}")
    return value


def check(query, response: dict, reference: Reference, mode: str) -> QueryCheck:
    """``response`` (Pinot's JSON for ``query.sql``) against DuckDB's answer in ``mode``."""
    sql = query.pinot
    if response.get("exceptions"):
        return QueryCheck(sql, mode, False, f"exceptions: {response['exceptions']}")
    table = response["resultTable"]
    types = table["dataSchema"]["columnDataTypes"]
    got = [tuple(_norm(v, t) for v, t in zip(row, types, strict=True)) for row in table["rows"]]
    reference_sql = query.duck_on if mode == "on" else query.duck_off
    try:
        rows = reference.rows(reference_sql)
    except duckdb.Error as err:
        return QueryCheck(sql, mode, False, f"reference failed: {err}\n  {reference_sql}")
    if mode == "off" and query.aggregations is not None and len(rows) == 1:
        rows = [tuple(
            _EMPTY_OFF.get(a, v) if v is None else v
            for v, a in zip(rows[0], query.aggregations, strict=True)
        )]  # fmt: skip
    expected = [tuple(_norm(v, t) for v, t in zip(row, types, strict=True)) for row in rows]
    ok = got == expected if query.ordered else Counter(got) == Counter(expected)
    message = "" if ok else f"got {got[:6]}\n  expected {expected[:6]}\n  reference {reference_sql}"
    return QueryCheck(sql, mode, ok, message)


def run_suite(
    executor: Callable[[str, bool], dict],
    table: str,
    reference: Reference,
    queries,
    modes=("on", "off"),
) -> list[QueryCheck]:
    """Every query in every mode through ``executor(sql, null_handling)``."""
    checks = []
    for query in queries:
        for mode in modes:
            if mode == "off" and query.duck_off is None:
                continue
            try:
                response = executor(query.pinot.format(t=table), mode == "on")
                checks.append(check(query, response, reference, mode))
            except Exception as err:  # report, keep going: one bad query must not hide the rest
                checks.append(QueryCheck(query.pinot, mode, False, f"{type(err).__name__}: {err}"))
    return checks


def failures(checks: list[QueryCheck], limit: int = 12) -> str:
    bad = [c for c in checks if not c.ok]
    return f"{len(bad)} of {len(checks)} differ:\n" + "\n".join(
        f"[{c.mode}] {c.sql}\n  {c.message}" for c in bad[:limit]
    )

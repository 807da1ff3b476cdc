"""Pinot's multi-stage query tests (``shared/pinot-mse-queries``) as data for Sprig: the
cases, their tables as Pinot schemas, configs and rows, the reference side in DuckDB, and
Pinot's comparison rules (``QueryRunnerTestBase.compareRowEquals``); see that folder's
README for the semantics reproduced here."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import json
import math
import re
import struct
from pathlib import Path
from zoneinfo import ZoneInfo

LA = ZoneInfo("America/Los_Angeles")
UTC = dt.UTC
PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclasses.dataclass
class Query:
    file: str
    case: str
    index: int
    sql: str
    outputs: list | None
    h2_sql: str | None
    expected_exception: str | None
    keep_order: bool

    @property
    def id(self) -> str:
        return f"{self.file}:{self.case}:{self.index}"


@dataclasses.dataclass
class Case:
    file: str
    name: str
    tables: dict[str, dict]
    queries: list[Query]
    column_null_handling: bool


def load_cases(folder: Path) -> list[Case]:
    cases = []
    for path in sorted(folder.glob("*.json")):
        data, _ = json.JSONDecoder().raw_decode(path.read_text())
        for name, case in data.items():
            if case.get("ignored") or "queries" not in case:
                continue
            queries = []
            for i, q in enumerate(case["queries"]):
                if q.get("ignored"):
                    continue

                def fill(text, case_name=name):
                    return PLACEHOLDER.sub(lambda m: f"{case_name}_{m.group(1)}", text)

                queries.append(Query(
                    path.name, name, i, fill(q["sql"]), q.get("outputs"),
                    fill(q["h2Sql"]) if q.get("h2Sql") else None,
                    q.get("expectedException"), bool(q.get("keepOutputRowOrder")),
                ))  # fmt: skip
            extra = case.get("extraProps") or {}
            cases.append(Case(path.name, name, case.get("tables") or {}, queries,
                              bool(extra.get("enableColumnBasedNullHandling"))))  # fmt: skip
    return cases


# --- tables ------------------------------------------------------------------------------------
def columns_of(table: dict) -> list[dict]:
    """The schema's columns plus the harness's ``ts`` LONG, sorted by name (Pinot's order)."""
    columns = [dict(c) for c in table["schema"]] + [{"name": "ts", "type": "LONG"}]
    return sorted(columns, key=lambda c: c["name"])


def pinot_schema(name: str, table: dict, column_nulls: bool) -> dict:
    dims = []
    for c in columns_of(table):
        spec = {"name": c["name"], "dataType": c["type"]}
        if not c.get("isSingleValue", True):
            spec["singleValueField"] = False
        if c.get("notNull"):
            spec["notNull"] = True
        dims.append(spec)
    schema = {"schemaName": name, "dimensionFieldSpecs": dims}
    if column_nulls:
        schema["enableColumnBasedNullHandling"] = True
    if table.get("primaryKeyColumns"):
        schema["primaryKeyColumns"] = table["primaryKeyColumns"]
    return schema


def pinot_table_config(name: str, table: dict) -> dict:
    config = {
        "tableName": name, "tableType": "OFFLINE",
        "segmentsConfig": {"replication": "2" if table.get("replicated") else "1"},
        "tableIndexConfig": {"nullHandlingEnabled": True},
        "tenants": {}, "metadata": {},
    }  # fmt: skip
    if table.get("isDimTable"):
        config["isDimTable"] = True
    if table.get("partitionColumns"):  # Pinot's harness: Java hashCode of the values
        config["tableIndexConfig"]["segmentPartitionConfig"] = {"columnPartitionMap": {
            c: {"functionName": "HashCode", "numPartitions": int(table.get("partitionCount", 4))}
            for c in table["partitionColumns"]
        }}  # fmt: skip
    return config


def arrow_schema(table: dict):
    """The Arrow schema of ``record``'s dicts (stored forms, as the segment builder reads)."""
    import pyarrow as pa

    from engine.common.types import DataType

    fields = [pa.field("ts", pa.int64())]
    for spec in table["schema"]:
        data_type = DataType.parse(spec["type"])
        arrow = pa.int64() if data_type is DataType.TIMESTAMP else data_type.arrow_type
        if data_type is DataType.BOOLEAN:
            arrow = pa.bool_()
        if not spec.get("isSingleValue", True):
            arrow = pa.list_(arrow)
        fields.append(pa.field(spec["name"], arrow))
    return pa.schema(fields)


def rows_of(table: dict) -> list[list]:
    """The input rows in schema order, segment breakers dropped."""
    return [r for r in table.get("inputs") or [] if r != BREAKER]


BREAKER = ["------"]


def segments_of(table: dict) -> list[list[list]]:
    """The rows of each segment Pinot's harness builds (empty ones left out): a replicated
    table is one segment; otherwise row i of each run between breakers goes to partition
    ``i % partitionCount``, or by the Java hash codes of its ``partitionColumns``, and each
    partition's part of each run is a segment."""
    if table.get("replicated"):
        return [rows_of(table)]
    count = int(table.get("partitionCount", 4))
    names = [c["name"] for c in table["schema"]]
    keys = [(names.index(c), table["schema"][names.index(c)]["type"])
            for c in table.get("partitionColumns") or []]  # fmt: skip
    runs: list[list[list]] = [[]]
    for row in table.get("inputs") or []:
        if row == BREAKER:
            runs.append([])
        else:
            runs[-1].append(row)
    out = []
    for run in runs:
        parts: list[list[list]] = [[] for _ in range(count)]
        for i, row in enumerate(run):
            if table.get("partitionColumns") is None:
                part = i % count
            else:
                total = sum(java_hash(row[position], kind) for position, kind in keys)
                part = (total & 0x7FFFFFFF) % count
            parts[part].append(row)
        out += [p for p in parts if p]
    return out


def java_hash(value, pinot_type: str) -> int:
    """Java's ``hashCode`` of a column value (Integer, Long, Double, String, Boolean)."""
    if value is None:
        return 0
    if pinot_type == "INT":
        return int(value) & 0xFFFFFFFF
    if pinot_type in ("LONG", "TIMESTAMP") and not isinstance(value, str):
        v = int(value) & 0xFFFFFFFFFFFFFFFF
        return (v ^ (v >> 32)) & 0xFFFFFFFF
    if pinot_type in ("FLOAT", "DOUBLE"):
        bits = struct.unpack(">Q", struct.pack(">d", float(value)))[0]
        return (bits ^ (bits >> 32)) & 0xFFFFFFFF
    if pinot_type == "BOOLEAN":
        return 1231 if value else 1237
    h = 0
    units = str(value).encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return h


def record(table: dict, row: list, ts: int, stored: bool = True) -> dict:
    """One input row as a dict for the segment builder (stored forms)."""
    out = {"ts": ts}
    for spec, value in zip(table["schema"], row, strict=False):
        out[spec["name"]] = convert(spec["type"], value, spec.get("isSingleValue", True), stored)
    return out


def convert(pinot_type: str, value, single: bool = True, stored: bool = False):
    if value is None:
        return None
    if not single:
        return [convert(pinot_type, v) for v in value]
    if pinot_type == "TIMESTAMP":
        return timestamp_ms(value)
    if pinot_type == "BYTES":
        return bytes.fromhex(value) if isinstance(value, str) else value
    if pinot_type == "BIG_DECIMAL":  # Sprig stores decimal128(38, 18): 18 fractional digits
        number = decimal.Decimal(str(value))
        if abs(number) >= 10**20:  # past Sprig's decimal128(38, 18): stored as NULL
            return None if stored else number
        return number.quantize(decimal.Decimal("1e-18"), context=decimal.Context(prec=60))
    if pinot_type == "JSON" and not isinstance(value, str):
        return json.dumps(value)
    if pinot_type in ("INT", "LONG") and isinstance(value, str):
        return int(value)
    if pinot_type in ("FLOAT", "DOUBLE") and isinstance(value, str):
        return float(value)
    return value


def timestamp_ms(value, zone=LA) -> int:
    if isinstance(value, int | float):
        return int(value)
    text = str(value).strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if text.endswith("Z") or re.search(r"[+-]\d\d:\d\d$", text):
        stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T"))
        return int(stamp.timestamp() * 1000)
    stamp = dt.datetime.fromisoformat(text.replace(" ", "T")).replace(tzinfo=zone)
    return round(stamp.timestamp() * 1000)


# --- the reference engine ------------------------------------------------------------------------
_DUCK_TYPES = {"INT": "BIGINT", "LONG": "BIGINT", "FLOAT": "REAL", "DOUBLE": "DOUBLE",
               "BIG_DECIMAL": "DOUBLE", "BOOLEAN": "BOOLEAN", "TIMESTAMP": "TIMESTAMP",
               "STRING": "VARCHAR", "JSON": "VARCHAR", "BYTES": "BLOB"}  # fmt: skip


def duckdb_load(con, name: str, table: dict, ts: int) -> None:
    columns = columns_of(table)
    defs = []
    for c in columns:
        t = _DUCK_TYPES[c["type"]]
        defs.append(f'"{c["name"]}" {t}{"" if c.get("isSingleValue", True) else "[]"}')
    con.execute(f'CREATE TABLE "{name}" ({", ".join(defs)})')
    rows = []
    for row in rows_of(table):
        rec = record(table, row, ts, stored=False)
        values = []
        for c in columns:
            v = rec.get(c["name"])
            if c["type"] == "TIMESTAMP" and v is not None:
                v = dt.datetime.fromtimestamp(v / 1000, LA).replace(tzinfo=None)
            if c["type"] == "BIG_DECIMAL" and v is not None:
                v = float(v)
            values.append(v)
        rows.append(values)
    if rows:
        marks = ", ".join("?" for _ in columns)
        con.executemany(f'INSERT INTO "{name}" VALUES ({marks})', rows)


def duckdb_sql(query: Query) -> str:
    sql = query.h2_sql or query.sql
    if not query.h2_sql:
        while re.match(r"^\s*SET\s", sql, re.IGNORECASE):
            sql = sql.split(";", 1)[1]
    sql = re.sub(r"\bMINUS\b", "EXCEPT", sql, flags=re.IGNORECASE)
    sql = re.sub(
        r"(\w+)\s+BETWEEN\s+SYMMETRIC\s+(\w+)\s+AND\s+(\w+)",
        r"\1 BETWEEN LEAST(\2, \3) AND GREATEST(\2, \3)",
        sql,
        flags=re.IGNORECASE,
    )
    sql = re.sub(r"/\*\+.*?\*/", "", sql, flags=re.DOTALL)
    return sql


# --- comparison (compareRowEquals) -----------------------------------------------------------------
def same_rows(
    actual: list[list], expected: list[list], types: list[str], keep_order: bool
) -> str | None:
    """None when equal under Pinot's rules, else what differs."""
    if len(actual) != len(expected):
        return f"{len(actual)} rows, expected {len(expected)}"
    # Sprig writes TIMESTAMP values in UTC; Pinot's expected ones are in the harness's zone
    a = [[normalize(v, t, UTC) for v, t in zip(r, types, strict=False)] for r in actual]
    e = [[normalize(v, t) for v, t in zip(r, types, strict=False)] for r in expected]
    if not keep_order:
        a.sort(key=_sort_key)
        e.sort(key=_sort_key)
    for i, (ra, re_) in enumerate(zip(a, e, strict=True)):
        if len(ra) != len(re_):
            return f"row {i} has {len(ra)} columns, expected {len(re_)}"
        for j, (x, y) in enumerate(zip(ra, re_, strict=True)):
            if not _equal(x, y):
                return f"row {i} column {j}: {x!r} != expected {y!r}"
    return None


def normalize(value, pinot_type: str, zone=LA):
    if value is None:
        return None
    base = pinot_type.removesuffix("_ARRAY")
    if pinot_type.endswith("_ARRAY") and isinstance(value, list):
        return tuple(normalize(v, base, zone) for v in value)
    try:
        if base in ("INT", "LONG"):
            return int(float(value)) if not isinstance(value, bool) else int(value)
        if base in ("FLOAT", "DOUBLE", "BIG_DECIMAL"):
            if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
                return float(value.replace("Infinity", "inf"))
            return float(value)
        if base == "BOOLEAN":
            if isinstance(value, str):
                return value.lower() == "true"
            return bool(value)
        if base == "BYTES":
            return value.hex() if isinstance(value, bytes) else str(value).lower()
        if base == "TIMESTAMP":
            if isinstance(value, int | float):
                return int(value)
            if isinstance(value, dt.datetime):
                return int(value.replace(tzinfo=LA).timestamp() * 1000)
            return timestamp_ms(str(value), zone)
    except (TypeError, ValueError):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if base == "STRING" else value
    return value if isinstance(value, str) else str(value) if base == "STRING" else value


def _sort_key(row):
    return [(0, "") if v is None else (1, _orderable(v)) for v in row]


def _orderable(v):
    if isinstance(v, bool):
        return (0, int(v), "")
    if isinstance(v, int | float):
        return (0, v if not (isinstance(v, float) and math.isnan(v)) else math.inf, "")
    return (1, 0, str(v))


def _equal(x, y) -> bool:
    if x is None or y is None:
        return x is None and y is None
    if isinstance(x, float) or isinstance(y, float):
        try:
            fx, fy = float(x), float(y)
        except (TypeError, ValueError):
            return False
        if math.isnan(fx) or math.isnan(fy):
            return math.isnan(fx) and math.isnan(fy)
        if fx == fy or abs(fx - fy) <= 1e-4:
            return True
        scale = max(abs(fx), abs(fy))
        return abs(fx / scale - fy / scale) <= 1e-4
    if isinstance(x, tuple) and isinstance(y, tuple):
        return len(x) == len(y) and all(_equal(a, b) for a, b in zip(x, y, strict=True))
    return x == y

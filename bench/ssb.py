"""The Star Schema Benchmark's tables, generated with a seeded numpy generator after the SSB
specification's rules (O'Neil et al.): ``lineorder`` (6M rows per scale factor) and its four
dimensions, with the values the 13 queries filter on (regions, nations, ``UNITED KI1`` cities,
``MFGR#12`` categories, ``MFGR#2221`` brands, 1992-1998 dates). The same Arrow tables feed
Sprig and DuckDB, so both answer over equal data. The queries are Pinot's
(``shared/pinot-examples/queries/ssb_query_set.yaml``).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import yaml

NATIONS = [
    ("ALGERIA", "AFRICA"), ("ARGENTINA", "AMERICA"), ("BRAZIL", "AMERICA"), ("CANADA", "AMERICA"),
    ("EGYPT", "MIDDLE EAST"), ("ETHIOPIA", "AFRICA"), ("FRANCE", "EUROPE"), ("GERMANY", "EUROPE"),
    ("INDIA", "ASIA"), ("INDONESIA", "ASIA"), ("IRAN", "MIDDLE EAST"), ("IRAQ", "MIDDLE EAST"),
    ("JAPAN", "ASIA"), ("JORDAN", "MIDDLE EAST"), ("KENYA", "AFRICA"), ("MOROCCO", "AFRICA"),
    ("MOZAMBIQUE", "AFRICA"), ("PERU", "AMERICA"), ("CHINA", "ASIA"), ("ROMANIA", "EUROPE"),
    ("SAUDI ARABIA", "MIDDLE EAST"), ("VIETNAM", "ASIA"), ("RUSSIA", "EUROPE"),
    ("UNITED KINGDOM", "EUROPE"), ("UNITED STATES", "AMERICA"),
]  # fmt: skip
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
QUERIES_YAML = (
    Path(__file__).resolve().parents[2] / "shared/pinot-examples/queries/ssb_query_set.yaml"
)


def queries(path: Path = QUERIES_YAML) -> list[str]:
    """Pinot's 13 SSB queries, without their trailing semicolons."""
    return [q.strip().rstrip(";") for q in yaml.safe_load(path.read_text())["sqls"]]


def dates() -> pa.Table:
    days = [dt.date(1992, 1, 1) + dt.timedelta(d) for d in range((dt.date(1998, 12, 31) -
                                                                   dt.date(1992, 1, 1)).days + 1)]  # fmt: skip
    return pa.table({
        "D_DATEKEY": pa.array([d.year * 10000 + d.month * 100 + d.day for d in days], pa.int32()),
        "D_YEAR": pa.array([d.year for d in days], pa.int32()),
        "D_YEARMONTHNUM": pa.array([d.year * 100 + d.month for d in days], pa.int32()),
        "D_YEARMONTH": [f"{MONTHS[d.month - 1]}{d.year}" for d in days],
        "D_WEEKNUMINYEAR": pa.array([(d.timetuple().tm_yday - 1) // 7 + 1 for d in days],
                                    pa.int32()),
        "D_MONTHNUMINYEAR": pa.array([d.month for d in days], pa.int32()),
    })  # fmt: skip


def _cities(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    nation = rng.integers(0, len(NATIONS), n)
    digit = rng.integers(0, 10, n)
    names = np.array([name for name, _ in NATIONS])
    regions = np.array([region for _, region in NATIONS])
    prefixes = np.array([f"{name[:9]:<9}" for name, _ in NATIONS])
    city = np.char.add(prefixes[nation], digit.astype(str))
    return city, names[nation], regions[nation]


def customer(rng: np.random.Generator, sf: float) -> pa.Table:
    n = max(int(30_000 * sf), 1)
    city, nation, region = _cities(rng, n)
    return pa.table({"C_CUSTKEY": pa.array(np.arange(1, n + 1), pa.int32()), "C_CITY": city,
                     "C_NATION": nation, "C_REGION": region})  # fmt: skip


def supplier(rng: np.random.Generator, sf: float) -> pa.Table:
    n = max(int(2_000 * sf), 1)
    city, nation, region = _cities(rng, n)
    return pa.table({"S_SUPPKEY": pa.array(np.arange(1, n + 1), pa.int32()), "S_CITY": city,
                     "S_NATION": nation, "S_REGION": region})  # fmt: skip


def part(rng: np.random.Generator, sf: float) -> pa.Table:
    n = max(int(200_000 * sf), 1)
    mfgr = rng.integers(1, 6, n)
    category = rng.integers(1, 6, n)
    brand = rng.integers(1, 41, n)
    mfgr_s = np.char.add("MFGR#", mfgr.astype(str))
    category_s = np.char.add(mfgr_s, category.astype(str))
    return pa.table({"P_PARTKEY": pa.array(np.arange(1, n + 1), pa.int32()), "P_MFGR": mfgr_s,
                     "P_CATEGORY": category_s,
                     "P_BRAND1": np.char.add(category_s, brand.astype(str))})  # fmt: skip


def lineorder(rng: np.random.Generator, sf: float, date_keys: np.ndarray) -> pa.Table:
    n = max(int(6_000_000 * sf), 1)
    quantity = rng.integers(1, 51, n)
    discount = rng.integers(0, 11, n)
    price = rng.integers(90_000, 200_000, n) // 100
    extended = quantity * price
    return pa.table({
        "LO_ORDERKEY": pa.array(np.arange(n) // 4 + 1, pa.int32()),
        "LO_CUSTKEY": pa.array(rng.integers(1, max(int(30_000 * sf), 1) + 1, n), pa.int32()),
        "LO_PARTKEY": pa.array(rng.integers(1, max(int(200_000 * sf), 1) + 1, n), pa.int32()),
        "LO_SUPPKEY": pa.array(rng.integers(1, max(int(2_000 * sf), 1) + 1, n), pa.int32()),
        "LO_ORDERDATE": pa.array(date_keys[rng.integers(0, len(date_keys), n)], pa.int32()),
        "LO_QUANTITY": pa.array(quantity, pa.int32()),
        "LO_DISCOUNT": pa.array(discount, pa.int32()),
        "LO_EXTENDEDPRICE": pa.array(extended, pa.int32()),
        "LO_REVENUE": pa.array(extended * (100 - discount) // 100, pa.int32()),
        "LO_SUPPLYCOST": pa.array(price * 6 // 10, pa.int32()),
    })  # fmt: skip


def generate(sf: float, seed: int = 7) -> dict[str, pa.Table]:
    """Every SSB table at scale factor ``sf`` (lineorder: 6M rows at 1)."""
    rng = np.random.default_rng(seed)
    d = dates()
    return {
        "dates": d, "customer": customer(rng, sf), "supplier": supplier(rng, sf),
        "part": part(rng, sf),
        "lineorder": lineorder(rng, sf, d.column("D_DATEKEY").to_numpy()),
    }  # fmt: skip


_PINOT = {pa.int32(): "INT", pa.int64(): "LONG", pa.string(): "STRING", pa.float64(): "DOUBLE"}


PRIMARY_KEYS = {"dates": "D_DATEKEY", "customer": "C_CUSTKEY", "supplier": "S_SUPPKEY",
                "part": "P_PARTKEY"}  # fmt: skip


def schema_json(name: str, table: pa.Table) -> dict:
    schema = {
        "schemaName": name,
        "dimensionFieldSpecs": [
            {"name": f.name, "dataType": _PINOT.get(f.type, "STRING")} for f in table.schema
        ],
    }
    if name in PRIMARY_KEYS:
        schema["primaryKeyColumns"] = [PRIMARY_KEYS[name]]
    return schema


def table_config_json(name: str, *, replication: int = 1, dim: bool = False) -> dict:
    config = {"tableName": name, "tableType": "OFFLINE",
              "segmentsConfig": {"replication": str(replication)},
              "tableIndexConfig": {}, "tenants": {}, "metadata": {}}  # fmt: skip
    if dim:
        config["isDimTable"] = True
    return config

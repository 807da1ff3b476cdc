"""PARTIAL upsert with every strategy and the default one, nulls as Pinot handles them, deletes
and out-of-order rows, against the reference model's merge, through commits and a restart."""

from __future__ import annotations

import random

from tests.engine.upsert.harness import Server
from tests.engine.upsert.oracle import UpsertOracle

STRATEGIES = {"ow": "OVERWRITE", "fow": "FORCE_OVERWRITE", "ign": "IGNORE", "inc": "INCREMENT",
              "inc32": "INCREMENT", "app": "APPEND", "uni": "UNION", "mx": "MAX", "mn": "MIN"}  # fmt: skip
MV = {"app", "uni"}
SCHEMA = {
    "schemaName": "profiles",
    "primaryKeyColumns": ["id"],
    "enableColumnBasedNullHandling": True,
    "dimensionFieldSpecs": [
        {"name": "id", "dataType": "LONG"},
        {"name": "gone", "dataType": "STRING"},
        {"name": "ow", "dataType": "STRING"},
        {"name": "fow", "dataType": "STRING"},
        {"name": "ign", "dataType": "STRING"},
        {"name": "app", "dataType": "STRING", "singleValueField": False},
        {"name": "uni", "dataType": "STRING", "singleValueField": False},
        {"name": "other", "dataType": "STRING"},
    ],
    "metricFieldSpecs": [
        {"name": "inc", "dataType": "LONG"}, {"name": "inc32", "dataType": "INT"},
        {"name": "mx", "dataType": "DOUBLE"}, {"name": "mn", "dataType": "LONG"},
    ],
    "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
                            "granularity": "1:MILLISECONDS"}],
}  # fmt: skip
CONFIG = {
    "tableName": "profiles",
    "tableType": "REALTIME",
    "segmentsConfig": {"timeColumnName": "ts", "schemaName": "profiles", "replication": "1"},
    "routing": {"instanceSelectorType": "strictReplicaGroup"},
    "upsertConfig": {"mode": "PARTIAL", "partialUpsertStrategies": STRATEGIES,
                     "defaultPartialUpsertStrategy": "IGNORE", "deleteRecordColumn": "gone"},
    "ingestionConfig": {"streamIngestionConfig": {"streamConfigMaps": [{
        "streamType": "kafka", "stream.kafka.topic.name": "profiles"}]}},
}  # fmt: skip


def _wrap32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def merge(prev: dict, new: dict) -> dict:
    """UPSERT_AND_DEDUP.md §1.2, written from the text."""
    out = dict(new)
    for column in [f["name"] for f in SCHEMA["dimensionFieldSpecs"] + SCHEMA["metricFieldSpecs"]]:
        if column in ("id", "ts"):
            continue
        strategy = STRATEGIES.get(column, "IGNORE")
        p, n = prev.get(column), new.get(column)
        if strategy == "FORCE_OVERWRITE":
            merged = n
        elif strategy == "OVERWRITE":
            merged = p if n is None else n
        elif p is None or n is None:
            merged = n if p is None else p
        elif strategy == "IGNORE":
            merged = p
        elif strategy == "INCREMENT":
            merged = _wrap32(p + n) if column == "inc32" else p + n
        elif strategy == "APPEND":
            merged = p + n
        elif strategy == "UNION":
            merged = sorted(set(p) | set(n))
        elif strategy == "MAX":
            merged = n if n >= p else p
        else:
            merged = n if n <= p else p
        out[column] = merged
    return out


def events(n: int, keys: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    out, clock = [], 100

    def maybe(value):
        return None if rnd.random() < 0.25 else value

    for _ in range(n):
        clock += rnd.randint(0, 2)
        out.append({
            "id": rnd.randrange(keys), "ts": clock - rnd.choice([0, 0, 0, 0, 3]),
            "gone": "true" if rnd.random() < 0.04 else None,
            "ow": maybe(rnd.choice("xyz")), "fow": maybe(rnd.choice("pq")),
            "ign": maybe(rnd.choice("uv")), "other": maybe(rnd.choice("kl")),
            "app": maybe([rnd.choice("ab") for _ in range(rnd.randint(1, 2))]),
            "uni": maybe([rnd.choice("cdef") for _ in range(rnd.randint(1, 2))]),
            "inc": maybe(rnd.randint(-5, 10)), "inc32": maybe(rnd.randint(2**30, 2**31 - 1)),
            "mx": maybe(rnd.uniform(-1, 1)), "mn": maybe(rnd.randint(-9, 9)),
        })  # fmt: skip
    return out


COLUMNS = ["id", "ts", "ow", "fow", "ign", "other", "inc", "inc32", "mx", "mn", "app", "uni"]


def expected(oracle: UpsertOracle) -> list[list]:
    rows = []
    for r in oracle.default():
        row = [r.get(c) for c in COLUMNS]
        rows.append(row)
    return sorted(rows, key=lambda row: row[0])


def got(server: Server) -> list[list]:
    sql = f"SELECT {', '.join(COLUMNS)} FROM profiles ORDER BY id LIMIT 100000"
    rows = server.rows(sql, enableNullHandling=True)
    for row in rows:
        for i in (10, 11):
            row[i] = row[i] or None  # (an empty multi-value is a null one)
    return rows


def test_every_strategy_matches_the_model(tmp_path):
    server = Server(SCHEMA, CONFIG, tmp_path)
    oracle = UpsertOracle(lambda r: r["id"], lambda r: r["ts"], delete_column="gone", merge=merge)
    stream = events(2400, 60, seed=5)
    for start in range(0, 2400, 800):
        rows = stream[start : start + 800]
        server.consume(0, rows, batch=37)
        for r in rows:
            oracle.add(r)
        assert got(server) == expected(oracle)
        server.commit(0)
        assert got(server) == expected(oracle)
    server.restart(shuffle_seed=2)
    assert got(server) == expected(oracle)
    counted = server.rows("SELECT COUNT(*) FROM profiles", skipUpsert=True)
    assert counted == [[len(oracle.stored)]]


def test_several_comparison_columns(tmp_path):
    schema = {**SCHEMA, "metricFieldSpecs": SCHEMA["metricFieldSpecs"] + [
        {"name": "v1", "dataType": "LONG"}, {"name": "v2", "dataType": "LONG"}]}  # fmt: skip
    config = {**CONFIG, "upsertConfig": {"mode": "PARTIAL", "comparisonColumns": ["v1", "v2"],
                                         "defaultPartialUpsertStrategy": "OVERWRITE"}}  # fmt: skip
    server = Server(schema, config, tmp_path)
    base = {"id": 1, "ts": 1}
    results = server.consume(0, [
        {**base, "v1": 5, "ow": "a"},
        {**base, "v2": 3, "ow": "b"},          # v2 stored null: wins
        {**base, "v1": 4, "ow": "c"},          # v1 4 < 5: out of order
        {**base, "v1": 5, "v2": 9, "ow": "d"},  # two values: an error row
        {**base, "v2": 3, "ow": "e"},          # a tie on v2: the later row wins
    ], batch=1)  # fmt: skip
    errors = [e.message for r in results for e in r.errors]
    assert errors == ["Documents must have exactly 1 non-null comparison column value"]
    assert server.rows("SELECT ow, v1, v2 FROM profiles", enableNullHandling=True) == [["e", 5, 3]]
    assert server.rows("SELECT COUNT(*) FROM profiles", skipUpsert=True) == [[4]]

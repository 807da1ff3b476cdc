"""Every filter access path (sorted, inverted, range on dictionary and raw columns, scans,
multi-value columns, expressions) against a brute-force numpy evaluation of the same rows."""

from __future__ import annotations

import re

import numpy as np
import pytest

from engine.query import run_query


def _arrays(rows):
    out = {
        k: np.asarray(v, dtype=object if k == "country" else None)
        for k, v in rows.items()
        if k not in ("tags", "codes")
    }
    out["tags"] = rows["tags"]
    out["codes"] = rows["codes"]
    return out


def _any(mv, pred):
    return np.array([any(pred(v) for v in vals) for vals in mv])


def _none(mv, pred):
    return np.array([not any(pred(v) for v in vals) for vals in mv])


# (WHERE clause, brute force over arrays, expected access path in EXPLAIN)
CASES = [
    ("country = 'DE'", lambda r: r["country"] == "DE", "FILTER_SORTED_INDEX"),
    (
        "country IN ('US', 'FR')",
        lambda r: np.isin(r["country"], ["US", "FR"]),
        "FILTER_SORTED_INDEX",
    ),
    ("country <> 'US'", lambda r: r["country"] != "US", "FILTER_SORTED_INDEX"),
    (
        "country BETWEEN 'BR' AND 'FR'",
        lambda r: (r["country"] >= "BR") & (r["country"] <= "FR"),
        "FILTER_SORTED_INDEX",
    ),
    (
        "country NOT IN ('US', 'IN', 'GB')",
        lambda r: ~np.isin(r["country"], ["US", "IN", "GB"]),
        "FILTER_SORTED_INDEX",
    ),
    ("site = 7", lambda r: r["site"] == 7, "FILTER_INVERTED_INDEX"),
    ("site IN (1, 2, 3, 49)", lambda r: np.isin(r["site"], [1, 2, 3, 49]), "FILTER_INVERTED_INDEX"),
    ("site < 10", lambda r: r["site"] < 10, "FILTER_INVERTED_INDEX"),
    ("site >= 45", lambda r: r["site"] >= 45, "FILTER_INVERTED_INDEX"),
    ("site NOT IN (0, 1)", lambda r: ~np.isin(r["site"], [0, 1]), "FILTER_INVERTED_INDEX"),
    ("site != 5", lambda r: r["site"] != 5, "FILTER_INVERTED_INDEX"),
    ("site > 3", lambda r: r["site"] > 3, "FILTER_INVERTED_INDEX"),
    (
        "clicks BETWEEN 5 AND 9",
        lambda r: (r["clicks"] >= 5) & (r["clicks"] <= 9),
        "FILTER_RANGE_INDEX",
    ),
    ("clicks > 25", lambda r: r["clicks"] > 25, "FILTER_RANGE_INDEX"),
    ("clicks = 3", lambda r: r["clicks"] == 3, "FILTER_FULL_SCAN"),
    ("latency <= 100", lambda r: r["latency"] <= 100, "FILTER_RANGE_INDEX"),
    (
        "latency BETWEEN 100 AND 1500",
        lambda r: (r["latency"] >= 100) & (r["latency"] <= 1500),
        "FILTER_RANGE_INDEX",
    ),
    ("latency = 77", lambda r: r["latency"] == 77, "FILTER_FULL_SCAN"),
    ("score > 60.5", lambda r: r["score"] > 60.5, "FILTER_FULL_SCAN"),
    ("user = 1000123", lambda r: r["user"] == 1000123, "FILTER_FULL_SCAN"),
    (
        "user IN (1000001, 1000002, 1000003)",
        lambda r: np.isin(r["user"], [1000001, 1000002, 1000003]),
        "FILTER_FULL_SCAN",
    ),
    ("tags = 'a'", lambda r: _any(r["tags"], lambda v: v == "a"), "FILTER_INVERTED_INDEX"),
    (
        "tags IN ('b', 'e')",
        lambda r: _any(r["tags"], lambda v: v in ("b", "e")),
        "FILTER_INVERTED_INDEX",
    ),
    ("tags NOT IN ('a')", lambda r: _none(r["tags"], lambda v: v == "a"), "FILTER_INVERTED_INDEX"),
    ("tags != 'c'", lambda r: _none(r["tags"], lambda v: v == "c"), "FILTER_INVERTED_INDEX"),
    ("codes > 15", lambda r: _any(r["codes"], lambda v: v > 15), "FILTER_FULL_SCAN"),
    (
        "codes NOT IN (1, 2, 3)",
        lambda r: _none(r["codes"], lambda v: v in (1, 2, 3)),
        "FILTER_FULL_SCAN",
    ),
    (
        "country LIKE 'G%'",
        lambda r: np.char.startswith(r["country"].astype(str), "G"),
        "FILTER_SORTED_INDEX",
    ),
    (
        "REGEXP_LIKE(country, '^(U|I)')",
        lambda r: np.isin(r["country"], ["US", "IN"]),
        "FILTER_SORTED_INDEX",
    ),
    ("UPPER(country) = 'DE'", lambda r: r["country"] == "DE", "FILTER_SORTED_INDEX"),
    ("site + clicks > 60", lambda r: r["site"] + r["clicks"] > 60, "FILTER_EXPRESSION_SCAN"),
    (
        "country IS NOT NULL",
        lambda r: np.ones(len(r["site"]), dtype=bool),
        "FILTER_NULL_VALUE_INDEX",
    ),
    ("site IS NULL", lambda r: np.zeros(len(r["site"]), dtype=bool), "FILTER_NULL_VALUE_INDEX"),
    ("country = 'DE' AND site = 7", lambda r: (r["country"] == "DE") & (r["site"] == 7), None),
    (
        "country = 'DE' AND latency > 1000 AND score < 40",
        lambda r: (r["country"] == "DE") & (r["latency"] > 1000) & (r["score"] < 40),
        None,
    ),
    (
        "site = 7 OR clicks > 28 OR tags = 'e'",
        lambda r: (r["site"] == 7) | (r["clicks"] > 28) | _any(r["tags"], lambda v: v == "e"),
        None,
    ),
    (
        "NOT (site < 25 AND country = 'US')",
        lambda r: ~((r["site"] < 25) & (r["country"] == "US")),
        None,
    ),
    ("site BETWEEN 30 AND 10", lambda r: np.zeros(len(r["site"]), dtype=bool), None),
    ("country = 'NOWHERE'", lambda r: np.zeros(len(r["site"]), dtype=bool), None),
    ("5 < site", lambda r: r["site"] > 5, "FILTER_INVERTED_INDEX"),
    # column-free calls are folded to literals per execution, so indexes still apply
    ("ts >= FromEpochDays(19690) AND ts < NOW()", lambda r: r["ts"] >= 19690 * 86_400_000, None),
    ("site < 3 + 4", lambda r: r["site"] < 7, "FILTER_INVERTED_INDEX"),
]


@pytest.mark.parametrize(("where", "brute", "path"), CASES, ids=[c[0] for c in CASES])
def test_filter_matches_brute_force(synth, where, brute, path):
    rows, schema, single, three = synth
    arrays = _arrays(rows)
    mask = np.asarray(brute(arrays), dtype=bool)
    expected = [int(mask.sum()), float(arrays["clicks"][mask].sum())]
    for segments in (single, three):
        response = run_query(f"SELECT COUNT(*), SUM(clicks) FROM synth WHERE {where}", segments, table_schema=schema,
                             query_options={"useStarTree": "false"})  # fmt: skip
        assert response["exceptions"] == []
        assert response["resultTable"]["rows"] == [expected]
        assert response["numDocsScanned"] == expected[0]
    selected = run_query(
        f"SELECT user, ts FROM synth WHERE {where} ORDER BY ts, user LIMIT 5000",
        three,
        table_schema=schema,
    )
    got = [tuple(r) for r in selected["resultTable"]["rows"]]
    want = sorted(zip(arrays["ts"][mask].tolist(), arrays["user"][mask].tolist(), strict=True))
    assert got == [(u, t) for t, u in want]
    if path is not None:
        plan = run_query(f"EXPLAIN PLAN FOR SELECT COUNT(*) FROM synth WHERE {where}", single, table_schema=schema,
                         query_options={"useStarTree": "false"})  # fmt: skip
        operators = [row[0] for row in plan["resultTable"]["rows"]]
        assert any(op.startswith(path) for op in operators), operators


def test_pruning_by_min_max_bloom_and_partition(synth):
    rows, schema, _, three = synth
    ts = np.asarray(rows["ts"])
    last_third = int(ts[2000])
    response = run_query(
        f"SELECT COUNT(*) FROM synth WHERE ts >= {last_third}", three, table_schema=schema
    )
    assert response["numSegmentsQueried"] == 3
    assert response["numSegmentsProcessed"] == 1  # min/max of ts prunes the first two
    assert response["resultTable"]["rows"] == [[int((ts >= last_third).sum())]]
    absent = run_query("SELECT COUNT(*) FROM synth WHERE user = 999", three, table_schema=schema)
    assert absent["numSegmentsProcessed"] == 0 and absent["resultTable"]["rows"] == [[0]]


def test_explain_lists_operators_with_parents(synth):
    _, schema, single, _ = synth
    plan = run_query(
        "EXPLAIN PLAN FOR SELECT site, SUM(latency) FROM synth WHERE country = 'US' AND clicks > 3 GROUP BY site",
        single, table_schema=schema,
    )  # fmt: skip
    rows = plan["resultTable"]["rows"]
    assert plan["resultTable"]["dataSchema"]["columnNames"] == [
        "Operator",
        "Operator_Id",
        "Parent_Id",
    ]
    assert rows[0] == ["BROKER_REDUCE(limit:10)", 0, -1]
    ids = {r[1] for r in rows}
    assert all(r[2] in ids or r[2] == -1 for r in rows)
    text = "\n".join(r[0] for r in rows)
    assert "GROUP_BY(groupKeys:site" in text
    assert re.search(
        r"FILTER_SORTED_INDEX\(indexLookUp:sorted_index,operator:EQ,predicate:country = 'US'\)",
        text,
    )
    assert "FILTER_RANGE_INDEX(indexLookUp:range_index,operator:RANGE,predicate:clicks > 3)" in text


def test_partition_and_bloom_pruning(tmp_path):
    from tests.engine.query.conftest import build_synth, synth_rows

    rows = synth_rows(800, seed=5)
    order = np.argsort(np.asarray(rows["site"]) % 4, kind="stable")  # segment k holds site % 4 == k
    rows = {k: [v[i] for i in order] for k, v in rows.items()}
    rows["user"] = [1_000_000 + 2 * (i % 300) for i in range(800)]  # even users only
    sizes = np.bincount(np.asarray(rows["site"]) % 4, minlength=4).tolist()
    schema, segments = build_synth(rows, tmp_path, 4, sizes)
    assert [s.column("site").metadata.partitions for s in segments] == [[0], [1], [2], [3]]
    by_partition = run_query(
        "SELECT COUNT(*) FROM synth WHERE site = 5", segments, table_schema=schema
    )
    assert by_partition["numSegmentsProcessed"] == 1
    assert by_partition["resultTable"]["rows"] == [[int((np.asarray(rows["site"]) == 5).sum())]]
    by_bloom = run_query(
        "SELECT COUNT(*) FROM synth WHERE user = 1000301", segments, table_schema=schema
    )
    assert by_bloom["numSegmentsProcessed"] == 0  # odd user inside every segment's min/max
    assert by_bloom["resultTable"]["rows"] == [[0]]


def test_timestamp_literals_and_output(tmp_path):
    import pyarrow as pa

    from engine.segment import build_segment, load_segment
    from engine.spi.schema import Schema
    from engine.spi.table_config import TableConfig

    schema = Schema.from_json({
        "schemaName": "t",
        "dimensionFieldSpecs": [{"name": "d", "dataType": "INT"}],
        "dateTimeFieldSpecs": [{"name": "ts", "dataType": "TIMESTAMP", "format": "1:MILLISECONDS:EPOCH",
                                "granularity": "1:MILLISECONDS"}],
    })  # fmt: skip
    day = 86_400_000
    rows = pa.table({"d": [1, 2, 3], "ts": [1388534400000 + i * day for i in range(3)]})
    for raw in (True, False):
        config = TableConfig.from_json({"tableName": "t", "tableType": "OFFLINE",
                                        "tableIndexConfig": {"noDictionaryColumns": ["ts"] if raw else []}})  # fmt: skip
        segment = load_segment(build_segment(rows, schema, config, tmp_path / str(raw)).path)
        counted = run_query(
            "SELECT COUNT(*) FROM t WHERE ts >= '2014-01-02 00:00:00'",
            [segment],
            table_schema=schema,
        )
        assert counted["resultTable"]["rows"] == [[2]]
        selected = run_query(
            "SELECT * FROM t WHERE ts < '2014-01-02' ORDER BY d", [segment], table_schema=schema
        )
        assert selected["resultTable"]["dataSchema"] == {
            "columnNames": ["d", "ts"],
            "columnDataTypes": ["INT", "TIMESTAMP"],
        }
        assert selected["resultTable"]["rows"] == [[1, "2014-01-01 00:00:00.0"]]


def test_explain_split_between_servers_and_broker(synth):
    import orjson

    from engine.query import compile_query
    from engine.query.explain import explain_response, segment_plans

    _, schema, _, three = synth
    plan = compile_query("EXPLAIN PLAN FOR SELECT COUNT(*) FROM synth WHERE site = 3", schema)
    shipped = [
        orjson.loads(orjson.dumps(segment_plans(plan, group))) for group in (three[:1], three[1:])
    ]
    merged = explain_response(plan, shipped)
    assert ["PLAN_START(numSegmentsForThisPlan:3)", -1, -1] in merged["resultTable"]["rows"]
    assert merged == run_query(
        "EXPLAIN PLAN FOR SELECT COUNT(*) FROM synth WHERE site = 3", three, table_schema=schema
    )


NULLS_SCHEMA = {
    "schemaName": "nulls",
    "dimensionFieldSpecs": [
        {"name": "city", "dataType": "STRING"},
        {"name": "zip", "dataType": "INT"},
    ],
    "metricFieldSpecs": [{"name": "amount", "dataType": "DOUBLE"}],
}


@pytest.mark.parametrize("null_handling", [True, False])
def test_is_null_uses_the_null_value_vector(tmp_path, null_handling):
    """With ``nullHandlingEnabled`` the writer records which inputs were null and IS [NOT]
    NULL reads that vector; without it, as in Pinot, nulls became default values and no value
    is null."""
    import pyarrow as pa

    from engine.segment import build_segment, load_segment
    from engine.spi import Schema, TableConfig

    schema = Schema.from_json(NULLS_SCHEMA)
    config = TableConfig.from_json(
        {
            "tableName": "nulls",
            "tableType": "OFFLINE",
            "segmentsConfig": {"replication": "1"},
            "tableIndexConfig": {"nullHandlingEnabled": null_handling},
        },
        schema=schema,
    )
    rows = pa.table(
        {
            "city": ["Oslo", None, "Lima", None, "Pune"],
            "zip": [1, 2, None, 4, None],
            "amount": [1.0, None, 3.0, 4.0, 5.0],
        }
    )
    segment = load_segment(build_segment(rows, schema, config, tmp_path).path)

    def count(where: str) -> int:
        response = run_query(f"SELECT COUNT(*) FROM nulls WHERE {where}", [segment])
        assert not response["exceptions"], response["exceptions"]
        return response["resultTable"]["rows"][0][0]

    if null_handling:
        assert count("city IS NULL") == 2
        assert count("city IS NOT NULL") == 3
        assert count("zip IS NULL") == 2
        assert count("amount IS NULL") == 1
        assert count("city IS NULL AND zip IS NOT NULL") == 2
        assert count("city IS NULL OR zip IS NULL") == 4
    else:
        assert count("city IS NULL") == 0
        assert count("city IS NOT NULL") == 5
    explain = run_query("EXPLAIN PLAN FOR SELECT COUNT(*) FROM nulls WHERE city IS NULL", [segment])
    assert "FILTER_NULL_VALUE_INDEX" in str(explain["resultTable"]["rows"])

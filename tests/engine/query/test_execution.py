"""End-to-end execution on real segments: results split over segments equal one segment,
intermediate results survive serialization, star-tree answers equal row scans, Pinot's
result shapes (DISTINCT, HAVING, OFFSET, default LIMIT) and error codes."""

from __future__ import annotations

import threading

import numpy as np
import orjson
import pytest

from engine.query import IntermediateResult, compile_query, execute_segment, reduce, run_query
from engine.query.combine import combine
from engine.query.errors import QueryExecutionError
from engine.query.runner import QueryEngine
from engine.query.settings import QuerySettings

GROUP_QUERIES = [
    "SELECT country, COUNT(*), SUM(clicks), MIN(score), MAX(latency), AVG(clicks), MINMAXRANGE(score) "
    "FROM synth GROUP BY country ORDER BY country",
    "SELECT site, DISTINCTCOUNT(user), PERCENTILE(latency, 75), MODE(clicks), DISTINCTCOUNTHLL(user) "
    "FROM synth WHERE country IN ('US', 'DE') GROUP BY site ORDER BY site LIMIT 100",
    "SELECT country, site, COUNT(*) FROM synth GROUP BY country, site ORDER BY COUNT(*) DESC, country, site LIMIT 7",
    "SELECT DATETRUNC('DAY', ts) AS day, SUM(latency) FROM synth GROUP BY DATETRUNC('DAY', ts) ORDER BY day LIMIT 40",
    "SELECT COUNTMV(tags), SUMMV(codes), MAXMV(codes), DISTINCTCOUNTMV(tags), AVGMV(codes) FROM synth WHERE site < 20",
    "SELECT tags, codes, site FROM synth WHERE site = 3 ORDER BY ts LIMIT 5",
    "SELECT SUM(clicks) / COUNT(*), MAX(latency) - MIN(latency) FROM synth",
    "SELECT site, SUM(clicks) AS total FROM synth GROUP BY site HAVING total > 900 ORDER BY total DESC, site",
    "SELECT DISTINCT country FROM synth ORDER BY country",
    # HLL registers merge by maximum, so any split of the rows gives the same estimate
    "SELECT country, DISTINCTCOUNTHLL(site, 6), DISTINCTCOUNTHLL(user) FROM synth "
    "GROUP BY country ORDER BY country",
    "SELECT country, COUNT(*) FILTER (WHERE clicks > 20), SUM(latency) FILTER (WHERE site < 10), COUNT(*) "
    "FROM synth GROUP BY country ORDER BY country",
    "SELECT UPPER(country), CONCAT(country, 'x', '-'), clicks * 2 FROM synth ORDER BY user, ts LIMIT 4 OFFSET 3",
]


@pytest.mark.parametrize("sql", GROUP_QUERIES)
def test_three_segments_equal_one(synth, sql):
    _, schema, single, three = synth
    one = run_query(sql, single, table_schema=schema)
    split = run_query(sql, three, table_schema=schema)
    assert one["exceptions"] == [] and split["exceptions"] == []
    assert split["resultTable"] == one["resultTable"]
    assert split["numSegmentsQueried"] == 3
    rows_path = {"useStarTree": "false"}  # star-tree record counts depend on the segmentation
    one_scan = run_query(sql, single, table_schema=schema, query_options=rows_path)
    split_scan = run_query(sql, three, table_schema=schema, query_options=rows_path)
    assert split_scan["resultTable"] == one["resultTable"]
    if compile_query(sql, schema).kind != "selection":  # selections stop early per segment
        assert split_scan["numDocsScanned"] == one_scan["numDocsScanned"]


@pytest.mark.parametrize("sql", GROUP_QUERIES)
def test_serialized_server_results_reduce_to_the_same_answer(synth, sql):
    _, schema, _, three = synth
    plan = compile_query(sql, schema)
    # two "servers": one with segment 0, one with segments 1 and 2, shipped as bytes
    servers = [
        combine(plan, [execute_segment(plan, s) for s in group]) for group in (three[:1], three[1:])
    ]
    shipped = [IntermediateResult.from_bytes(s.to_bytes(plan)) for s in servers]
    response = reduce(plan, shipped, num_servers_queried=2)
    assert response["resultTable"] == run_query(sql, three, table_schema=schema)["resultTable"]
    assert response["numServersQueried"] == 2
    orjson.dumps(response)  # JSON-serializable as is


def test_star_tree_answers_equal_row_scans(synth):
    _, schema, single, three = synth
    sql = (
        "SELECT country, site, COUNT(*), SUM(clicks), MAX(latency), AVG(clicks), MIN(score) FROM synth "
        "WHERE site NOT IN (3, 4) AND country BETWEEN 'BR' AND 'US' GROUP BY country, site "
        "ORDER BY country, site LIMIT 1000"
    )
    star = run_query(sql, three, table_schema=schema)
    scan = run_query(sql, three, table_schema=schema, query_options={"useStarTree": "false"})
    assert star["resultTable"] == scan["resultTable"]
    assert star["numDocsScanned"] < scan["numDocsScanned"]
    explain = run_query(f"EXPLAIN PLAN FOR {sql}", single, table_schema=schema)
    assert any(r[0] == "STAR_TREE_INDEX" for r in explain["resultTable"]["rows"])
    # a column outside the split order forces the row path
    off_tree = run_query(
        "EXPLAIN PLAN FOR SELECT COUNT(*) FROM synth WHERE user = 1000001",
        single,
        table_schema=schema,
    )
    assert not any(r[0] == "STAR_TREE_INDEX" for r in off_tree["resultTable"]["rows"])


def test_default_limit_types_and_empty_aggregation(synth):
    rows, schema, _, three = synth
    selection = run_query("SELECT site FROM synth", three, table_schema=schema)
    assert len(selection["resultTable"]["rows"]) == 10
    empty = run_query(
        "SELECT COUNT(*), SUM(clicks), MIN(clicks), MAX(clicks), AVG(clicks) FROM synth WHERE site > 1000",
        three, table_schema=schema,
    )  # fmt: skip
    assert empty["resultTable"]["rows"] == [[0, 0.0, "Infinity", "-Infinity", "-Infinity"]]
    assert empty["resultTable"]["dataSchema"]["columnDataTypes"] == [
        "LONG",
        "DOUBLE",
        "DOUBLE",
        "DOUBLE",
        "DOUBLE",
    ]
    total = run_query("SELECT COUNT(*) FROM synth", three, table_schema=schema)
    assert total["resultTable"]["rows"] == [[len(rows["site"])]]
    assert total["totalDocs"] == len(rows["site"])


def test_group_trim_and_num_groups_limit(synth):
    rows, schema, _, three = synth
    limited = run_query("SET numGroupsLimit = 5; SELECT user, COUNT(*) FROM synth GROUP BY user LIMIT 1000", three,
                        table_schema=schema)  # fmt: skip
    assert limited["numGroupsLimitReached"] is True
    assert len(limited["resultTable"]["rows"]) <= 15  # at most 5 groups per segment
    top = run_query("SELECT user, COUNT(*) FROM synth GROUP BY user ORDER BY COUNT(*) DESC, user LIMIT 3", three,
                    table_schema=schema)  # fmt: skip
    users, counts = np.unique(np.asarray(rows["user"]), return_counts=True)
    order = np.lexsort((users, -counts))[:3]
    assert top["resultTable"]["rows"] == [[int(users[i]), int(counts[i])] for i in order]


@pytest.mark.parametrize(
    ("sql", "code", "fragment"),
    [
        ("SELECT * FROM", 150, "line 1"),
        ("SELECT site FROM synth WHERE", 150, "column"),
        ("SELECT nosuch FROM synth", 710, "nosuch"),
        ("SELECT COUNT(*) FROM other_table", 190, "other_table"),
        ("SELECT BOGUS(site) FROM synth", 700, "BOGUS"),
        ("SET timeoutMs = 0; SELECT COUNT(*) FROM synth WHERE site > 3", 250, "timeoutMs=0"),
        ("SELECT CAST(country AS LONG) FROM synth", 200, "country"),
    ],
)
def test_errors_carry_pinot_codes(synth, sql, code, fragment):
    _, schema, _, three = synth
    response = run_query(sql, three, table_schema=schema)
    assert "resultTable" not in response
    assert [e["errorCode"] for e in response["exceptions"]] == [code]
    assert fragment in response["exceptions"][0]["message"]


def test_bad_inputs_never_raise(synth):
    three = synth[3]
    assert run_query(None, three)["exceptions"][0]["errorCode"] == 150  # type: ignore[arg-type]
    assert run_query("SELECT COUNT(*) FROM synth", [])["exceptions"][0]["errorCode"] == 190
    with pytest.raises(QueryExecutionError, match="Malformed"):
        IntermediateResult.from_bytes(b"not arrow")


def test_table_name_with_type_suffix(synth):
    _, schema, _, three = synth
    response = run_query("SELECT COUNT(*) FROM synth_OFFLINE", three, table_schema=schema)
    assert response["exceptions"] == []


def test_trimmed_group_by_stays_exact_when_ordered_by_keys(synth, monkeypatch):
    import importlib

    combine_module = importlib.import_module(
        "engine.query.combine"
    )  # the package exports the function

    _, schema, single, three = synth
    sql = "SELECT user, COUNT(*), SUM(clicks) FROM synth GROUP BY user ORDER BY user DESC LIMIT 4"
    full = run_query(sql, single, table_schema=schema)
    monkeypatch.setattr(combine_module, "MIN_TRIM_SIZE", 5)  # trim to max(5 * 4, 5) = 20 groups
    plan = compile_query(sql, schema)
    merged = combine(plan, [execute_segment(plan, s) for s in three])
    assert merged.num_groups == 20
    assert reduce(plan, [merged])["resultTable"] == full["resultTable"]


def test_multi_value_aggregations_and_group_by_match_brute_force(synth):
    rows, schema, _, three = synth
    site = np.asarray(rows["site"])
    keep = [i for i in range(len(site)) if site[i] < 20]
    flat_codes = [c for i in keep for c in rows["codes"][i]]
    flat_tags = [t for i in keep for t in rows["tags"][i]]
    response = run_query(
        "SELECT COUNTMV(tags), SUMMV(codes), MAXMV(codes), MINMV(codes), DISTINCTCOUNTMV(tags), AVGMV(codes) "
        "FROM synth WHERE site < 20",
        three, table_schema=schema,
    )  # fmt: skip
    assert response["resultTable"]["rows"] == [[
        len(flat_tags), float(sum(flat_codes)), float(max(flat_codes)), float(min(flat_codes)),
        len(set(flat_tags)), pytest.approx(sum(flat_codes) / len(flat_codes)),
    ]]  # fmt: skip
    grouped = run_query("SELECT tags, COUNT(*), SUM(clicks) FROM synth GROUP BY tags ORDER BY tags", three,
                        table_schema=schema)  # fmt: skip
    assert grouped["resultTable"]["dataSchema"]["columnDataTypes"] == ["STRING", "LONG", "DOUBLE"]
    expected = {}
    for tags, clicks in zip(rows["tags"], rows["clicks"], strict=True):
        for tag in tags:
            count, total = expected.get(tag, (0, 0.0))
            expected[tag] = (count + 1, total + clicks)
    assert grouped["resultTable"]["rows"] == [[t, c, s] for t, (c, s) in sorted(expected.items())]


def test_a_broken_segment_gives_a_partial_result(synth):
    rows, schema, _, three = synth

    class BrokenSegment:
        name = "synth_broken"
        table_name = "synth_OFFLINE"
        total_docs = 10
        column_names = three[0].column_names
        star_trees = []

        def column(self, name):
            raise OSError(f"cannot read column {name}: file truncated")

    response = run_query("SELECT COUNT(*), SUM(clicks) FROM synth WHERE site > 3", [*three, BrokenSegment()],
                         table_schema=schema)  # fmt: skip
    assert response["partialResult"] is True
    assert response["exceptions"][0]["errorCode"] == 200
    assert "synth_broken" in response["exceptions"][0]["message"]
    site = np.asarray(rows["site"])
    assert response["resultTable"]["rows"][0][0] == int((site > 3).sum())


def test_all_segments_pruned_still_serializes(synth):
    _, schema, _, three = synth
    sql = "SELECT COUNT(*), SUM(clicks), DISTINCTCOUNTHLL(user), PERCENTILETDIGEST(latency, 50) FROM synth WHERE user = 5"
    plan = compile_query(sql, schema)
    server = combine(plan, [execute_segment(plan, s) for s in three])
    assert server.stats["numSegmentsProcessed"] == 0
    response = reduce(plan, [IntermediateResult.from_bytes(server.to_bytes(plan))])
    assert response["resultTable"]["rows"] == [[0, 0.0, 0, "NaN"]]


def test_json_column_extraction_in_select_where_and_group_by(tmp_path):
    import pyarrow as pa

    from engine.segment import build_segment, load_segment
    from engine.spi.schema import Schema
    from engine.spi.table_config import TableConfig

    schema = Schema.from_json({"schemaName": "j", "dimensionFieldSpecs": [
        {"name": "id", "dataType": "INT"}, {"name": "doc", "dataType": "JSON"}]})  # fmt: skip
    config = TableConfig.from_json({"tableName": "j", "tableType": "OFFLINE"})
    docs = ['{"kind": "a", "n": 1}', '{"kind": "b", "n": 5}', '{"kind": "a", "n": 7}']
    segment = load_segment(
        build_segment(pa.table({"id": [1, 2, 3], "doc": docs}), schema, config, tmp_path).path
    )
    response = run_query(
        "SELECT JSONEXTRACTSCALAR(doc, '$.kind', 'STRING') AS kind, SUM(JSONEXTRACTSCALAR(doc, '$.n', 'INT')) "
        "FROM j WHERE JSONEXTRACTSCALAR(doc, '$.n', 'INT') > 1 GROUP BY kind ORDER BY kind",
        [segment], table_schema=schema,
    )  # fmt: skip
    assert response["exceptions"] == []
    assert response["resultTable"]["dataSchema"]["columnDataTypes"] == ["STRING", "DOUBLE"]
    assert response["resultTable"]["rows"] == [["a", 7.0], ["b", 5.0]]


def test_filtered_aggregations_match_brute_force(synth):
    rows, schema, _, three = synth
    site, clicks, latency = (np.asarray(rows[k]) for k in ("site", "clicks", "latency"))
    response = run_query(
        "SELECT COUNT(*) FILTER (WHERE clicks > 20) AS busy, SUM(latency) FILTER (WHERE site < 10), "
        "AVG(clicks) FILTER (WHERE site >= 10), COUNT(*) FROM synth WHERE site < 40",
        three, table_schema=schema,
    )  # fmt: skip
    base = site < 40
    assert response["resultTable"]["dataSchema"]["columnNames"] == [
        "busy", "sum(latency) FILTER(WHERE site < 10)", "avg(clicks) FILTER(WHERE site >= 10)", "count(*)"]  # fmt: skip
    assert response["resultTable"]["rows"] == [[
        int((base & (clicks > 20)).sum()), float(latency[base & (site < 10)].sum()),
        pytest.approx(clicks[base & (site >= 10)].mean()), int(base.sum()),
    ]]  # fmt: skip


def test_concurrent_queries_share_caches_safely(synth):
    from concurrent.futures import ThreadPoolExecutor

    _, schema, _, three = synth
    sqls = [
        f"SELECT site, COUNT(*) FROM synth WHERE clicks > {i % 7} GROUP BY site ORDER BY site LIMIT 3"
        for i in range(60)
    ]
    expected = {sql: run_query(sql, three, table_schema=schema)["resultTable"] for sql in set(sqls)}
    with ThreadPoolExecutor(6) as pool:
        responses = list(pool.map(lambda sql: run_query(sql, three, table_schema=schema), sqls))
    assert [r["resultTable"] for r in responses] == [expected[sql] for sql in sqls]


class ThreadRecordingEngine(QueryEngine):
    """Notes which thread ran each segment."""

    def __init__(self, settings):
        super().__init__(settings)
        self.threads = []

    def _run_segment(self, plan, segment, valid=None):
        self.threads.append(threading.current_thread().name)
        return super()._run_segment(plan, segment, valid)


def test_segments_run_in_parallel_only_when_their_cost_pays(synth):
    _, schema, _, three = synth
    sql = "SELECT country, SUM(clicks) FROM synth WHERE site < 50 GROUP BY country ORDER BY country"
    answers = []
    for threshold in (1e9, 0.0):  # every segment "cheap", then every segment "worth a thread"
        engine = ThreadRecordingEngine(QuerySettings(threads=2, parallel_min_segment_ms=threshold))
        plan = engine.compile(sql, schema)
        engine.execute_server(plan, three)  # first run: cost unknown, so parallel
        assert len(engine.threads) == 3
        assert all(name.startswith("sprig-query") for name in engine.threads)
        assert engine.segment_cost_ms(sql) > 0  # measured in thread CPU time
        engine.threads.clear()
        answers.append(reduce(plan, [engine.execute_server(plan, three)], num_servers_queried=1))
        in_pool = [name.startswith("sprig-query") for name in engine.threads]
        assert in_pool == [threshold == 0.0] * 3
        engine.close()
    assert answers[0]["resultTable"] == answers[1]["resultTable"]
    assert answers[0]["resultTable"] == run_query(sql, three, table_schema=schema)["resultTable"]

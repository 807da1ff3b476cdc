"""GROUP BY shortcuts (sorted-key runs, clustered time buckets, cached dictionary counts)
against DuckDB on the same rows, with enough rows per segment for each shortcut to engage."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from engine.functions.datetime import date_trunc
from engine.query import run_query
from engine.query.grouping import run_starts, time_buckets
from engine.query.parser import parse_sql
from tests.engine.query.conftest import build_synth, synth_rows

ROWS = 60_000  # 20,000 per segment: above run_starts' minimum of 16,384 rows


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    rows = synth_rows(ROWS, seed=23)
    schema, segments = build_synth(rows, tmp_path_factory.mktemp("runs"), 3)
    con = duckdb.connect()
    table = pa.table({k: v for k, v in rows.items() if k not in ("tags", "codes")})
    con.register("synth", table)
    return schema, segments, con


def parse_expression(text: str):
    return parse_sql(f"SELECT {text} FROM t").select[0].expr


def _ours(big, sql, **options):
    schema, segments, _ = big
    response = run_query(sql, segments, table_schema=schema, query_options=options or None)
    assert not response["exceptions"], response["exceptions"]
    return response["resultTable"]["rows"]


def _same(ours, theirs):
    assert len(ours) == len(theirs), (ours[:5], theirs[:5])
    for mine, other in zip(sorted(ours), sorted(theirs), strict=True):
        for a, b in zip(mine, other, strict=True):
            if isinstance(a, float) or isinstance(b, float):
                assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), (mine, other)
            else:
                assert a == b, (mine, other)


AGGS = "COUNT(*), SUM(latency), SUM(score), MIN(clicks), MAX(latency), AVG(clicks), MIN(score)"
DUCK_AGGS = (
    "COUNT(*), SUM(latency)::DOUBLE, SUM(score), MIN(clicks)::DOUBLE, MAX(latency)::DOUBLE, "
    "AVG(clicks), MIN(score)"
)


@pytest.mark.parametrize(
    "where",
    ["", "WHERE country = 'US'", "WHERE country IN ('BR', 'DE')", "WHERE site < 20"],
)
def test_group_by_the_sorted_column_reduces_runs_with_the_same_answers(big, where):
    ours = _ours(big, f"SELECT country, {AGGS} FROM synth {where} GROUP BY country LIMIT 100")
    theirs = big[2].execute(f"SELECT country, {DUCK_AGGS} FROM synth {where} GROUP BY country")
    _same(ours, theirs.fetchall())


def test_sorted_runs_with_functions_that_have_no_run_kernel(big):
    sql = (
        "SELECT country, DISTINCTCOUNT(site), COUNT(*) FILTER(WHERE clicks > 10), "
        "MINMAXRANGE(latency), SUM(clicks) FROM synth GROUP BY country LIMIT 100"
    )
    duck = (
        "SELECT country, COUNT(DISTINCT site), COUNT(*) FILTER (WHERE clicks > 10), "
        "(MAX(latency) - MIN(latency))::DOUBLE, SUM(clicks)::DOUBLE FROM synth GROUP BY country"
    )
    _same(_ours(big, sql), big[2].execute(duck).fetchall())


def test_num_groups_limit_on_the_sorted_column_keeps_pinots_first_groups(big):
    schema, segments, _ = big
    # SUM(score) is not in the star-tree, so the sorted column's runs are what is grouped
    sql = "SET numGroupsLimit = 2; SELECT country, SUM(score) FROM synth GROUP BY country LIMIT 100"
    response = run_query(sql, segments, table_schema=schema)
    assert response["numGroupsLimitReached"] is True
    # each segment keeps its first two countries (dictionary order), as the general path does
    first_two = {c for s in segments for c in s.column("country").dictionary.to_numpy()[:2]}
    assert {row[0] for row in response["resultTable"]["rows"]} == first_two


@pytest.mark.parametrize(
    ("unit", "bucket_sql"),
    [
        ("DAY", "(ts // 86400000) * 86400000"),
        ("HOUR", "(ts // 3600000) * 3600000"),
        ("WEEK", "((ts // 86400000 + 3) // 7 * 7 - 3) * 86400000"),
    ],
)
def test_datetrunc_buckets_of_time_ordered_rows(big, unit, bucket_sql):
    sql = (
        f"SELECT DATETRUNC('{unit}', ts), {AGGS} FROM synth "
        f"GROUP BY DATETRUNC('{unit}', ts) LIMIT 100000"
    )
    duck = f"SELECT {bucket_sql} AS b, {DUCK_AGGS} FROM synth GROUP BY b"
    _same(_ours(big, sql), big[2].execute(duck).fetchall())
    # the same buckets under a filter that leaves a doc list, not a range
    _same(
        _ours(big, sql.replace("GROUP BY", "WHERE site < 7 GROUP BY")),
        big[2].execute(duck.replace("GROUP BY", "WHERE site < 7 GROUP BY")).fetchall(),
    )


def test_group_by_a_whole_segments_dictionary_column_counts_from_the_cache(big):
    sql = "SELECT site, COUNT(*), COUNT(clicks), SUM(latency) FROM synth GROUP BY site LIMIT 100"
    duck = "SELECT site, COUNT(*), COUNT(clicks), SUM(latency)::DOUBLE FROM synth GROUP BY site"
    expected = big[2].execute(duck).fetchall()
    _same(_ours(big, sql), expected)
    _same(_ours(big, sql), expected)  # second run: counts from the per-segment cache


@pytest.mark.parametrize(
    "call",
    [
        "DATETRUNC('DAY', t)",
        "DATETRUNC('WEEK', t)",
        "DATETRUNC('MINUTE', t, 'SECONDS')",
        "DATETRUNC('HOUR', t, 'SECONDS', 'UTC', 'MINUTES')",
        "DATETRUNC('day', t, 'MILLISECONDS', 'UTC', 'DAYS')",
    ],
)
def test_time_bucket_codes_decode_to_datetrunc_of_every_value(call):
    expr = parse_expression(call)
    buckets = time_buckets(expr)
    assert buckets is not None
    rng = np.random.default_rng(3)
    scale = 1000 if "SECONDS" in call else 1
    values = rng.integers(-40 * 86_400_000, 40 * 86_400_000, 50_000) // scale  # both sides of 1970
    codes, starts = buckets.codes(values)
    args = [a.value for a in expr.args[2:]]
    np.testing.assert_array_equal(starts[codes], date_trunc(expr.args[0].value, values, *args))


@pytest.mark.parametrize(
    "call", ["DATETRUNC('MONTH', t)", "DATETRUNC('DAY', t, 'MILLISECONDS', 'Asia/Tokyo')", "t"]
)
def test_calendar_units_and_time_zones_are_not_fixed_buckets(call):
    assert time_buckets(parse_expression(call)) is None


def test_run_starts_only_for_clustered_keys():
    rng = np.random.default_rng(4)
    clustered = np.repeat(np.arange(40), 2_000)
    starts = run_starts(clustered)
    assert starts is not None and starts.tolist() == list(range(0, 80_000, 2_000))
    assert run_starts(rng.integers(0, 40, 80_000)) is None  # shuffled keys: no runs
    assert run_starts(clustered[:1000]) is None  # too few rows to bother

"""What the per-query memos keep (plain predicates, columns, star-tree decisions) and what
they must not keep (a filter with NOW(), whose value moves between executions)."""

from __future__ import annotations

import time

import pytest

from engine.common.clock import now_ms
from engine.query import run_query
from engine.query.expressions import Function, Identifier, Literal, columns_of, folds_constants
from engine.query.parser import parse_sql
from engine.query.predicate import to_leaf


def _where(sql_filter: str):
    return parse_sql(f"SELECT * FROM t WHERE {sql_filter}").where


def test_plain_predicates_are_one_leaf_and_now_is_folded_each_time():
    plain = _where("site = 7")
    assert to_leaf(plain) is to_leaf(_where("site = 7"))  # kept: equal predicates, one leaf
    moving = _where("ts > now()")
    assert folds_constants(moving) and not folds_constants(plain)
    first = to_leaf(moving).operands[0]
    time.sleep(0.005)
    assert to_leaf(moving).operands[0] > first


def test_equal_expressions_hash_alike_and_unhashable_literals_still_work():
    a = Function("plus", (Identifier("x"), Literal(1)))
    b = Function("plus", (Identifier("x"), Literal(1)))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    odd = Function("plus", (Identifier("y"), Literal([1, 2])))  # a list: not hashable
    with pytest.raises(TypeError):
        hash(odd)
    assert columns_of(odd) == {"y"}
    assert folds_constants(odd)  # cannot be memoised: treated as changing


def test_star_tree_answers_follow_a_moving_filter(synth):
    """A star-tree query whose filter has NOW() is decided afresh each time, not memoised."""
    _, schema, single, _ = synth
    start_ms = now_ms()
    # site * 20 < ms since start: a few sites at first, every site (0..49) after a second
    moving = (
        f"SELECT country, COUNT(*) FROM synth WHERE site * 20 < now() - {start_ms} "
        "GROUP BY country LIMIT 10"
    )

    def total() -> int:
        rows = run_query(moving, single, table_schema=schema)["resultTable"]["rows"]
        return sum(row[1] for row in rows)

    early = total()
    time.sleep(1.1)
    assert early < total() == single[0].total_docs


def test_pruning_follows_a_moving_filter(synth):
    """A segment pruned by a NOW() filter is pruned afresh on each query, not from a memo."""
    _, schema, single, _ = synth
    newest = single[0].column("ts").metadata.max_value
    start_ms = now_ms()
    # the bound starts 1 s past the newest row (the segment is pruned by its max) and falls
    # 2 ms per ms: a second later it is 1.2 s before the newest row, which matches rows
    sql = f"SELECT COUNT(*) FROM synth WHERE ts > {newest} + 1000 - (now() - {start_ms}) * 2"
    first = run_query(sql, single, table_schema=schema)["resultTable"]["rows"][0][0]
    time.sleep(1.1)
    second = run_query(sql, single, table_schema=schema)["resultTable"]["rows"][0][0]
    assert first == 0 < second


def test_a_filters_matching_docs_are_kept_per_segment_and_reused(synth):
    """The second run of a query reads the filter's docs (found by indexes alone) from the
    decoded cache, with the same answer; a filter with NOW() or one that scans values is
    evaluated afresh each time."""
    from engine.query.runner import QueryEngine

    rows, schema, single, _ = synth
    engine = QueryEngine()
    segment = single[0]
    sql = "SELECT COUNT(*), SUM(latency) FROM synth WHERE country = 'US' AND site < 20"
    plan = engine.compile(sql, schema)
    first = engine.run(sql, single, table_schema=schema)["resultTable"]["rows"]
    kept = engine.decoded.get(segment, plan.filter_memo_key)
    assert kept is not None
    docs = kept.docs
    expected = sum(
        1 for c, s in zip(rows["country"], rows["site"], strict=True) if c == "US" and s < 20
    )
    assert docs.count() == expected == first[0][0]
    assert engine.run(sql, single, table_schema=schema)["resultTable"]["rows"] == first
    moving = f"SELECT COUNT(*) FROM synth WHERE site < now() - {10**12}"
    engine.run(moving, single, table_schema=schema)
    moving_plan = engine.compile(moving, schema)
    assert moving_plan.filter_memo_key is None and moving_plan.segment_memo_key is None
    scan = "SELECT COUNT(*) FROM synth WHERE latency * 2 > 1000"  # a scan: not kept
    engine.run(scan, single, table_schema=schema)
    scan_plan = engine.compile(scan, schema)
    assert engine.decoded.get(segment, scan_plan.filter_memo_key) is None
    # the segment's decisions are kept, without the scanned filter's docs
    decided = engine.decoded.get(segment, scan_plan.segment_memo_key)
    assert decided is not None and decided.pruned is None and decided.filtered is None


def test_a_segments_decisions_are_kept_per_plan_shape_and_answer_as_before(synth):
    """One decoded-cache entry per segment and plan shape holds pruned / star-tree / filter
    docs; repeated runs answer as the first, and as the same query with no star-tree (a
    different shape, so a different entry)."""
    from engine.query.runner import QueryEngine

    rows, schema, _, three = synth
    engine = QueryEngine()
    newest_first = three[0].column("ts").metadata.max_value
    pruned_sql = f"SELECT COUNT(*), SUM(clicks) FROM synth WHERE ts > {newest_first}"
    grouped_sql = "SELECT country, SUM(clicks) FROM synth WHERE site = 7 GROUP BY country"
    for sql in (pruned_sql, grouped_sql):
        first = engine.run(sql, three, table_schema=schema)
        for _ in range(2):
            assert (
                engine.run(sql, three, table_schema=schema)["resultTable"] == first["resultTable"]
            )
        plain = engine.run(sql, three, table_schema=schema, query_options={"useStarTree": "false"})
        assert sorted(plain["resultTable"]["rows"]) == sorted(first["resultTable"]["rows"])
    plan = engine.compile(pruned_sql, schema)
    decided = [engine.decoded.get(s, plan.segment_memo_key) for s in three]
    assert decided[0].pruned is not None  # every row of the first third is older
    assert decided[1].pruned is None and decided[1].filtered is not None
    expected = sum(c for c, ts in zip(rows["clicks"], rows["ts"], strict=True) if ts > newest_first)
    assert (
        engine.run(pruned_sql, three, table_schema=schema)["resultTable"]["rows"][0][1] == expected
    )
    # the same filter in another shape: its own decisions, the filter's docs shared
    other = engine.compile(f"SELECT MAX(latency) FROM synth WHERE ts > {newest_first}", schema)
    assert other.segment_memo_key != plan.segment_memo_key
    assert other.filter_memo_key == plan.filter_memo_key
    no_star = engine.compile(grouped_sql, schema, {"useStarTree": "false"})
    assert no_star.segment_memo_key != engine.compile(grouped_sql, schema).segment_memo_key
    inverted = engine.decoded.get(three[1], no_star.segment_memo_key).filtered
    assert inverted.matched == len(inverted.doc_ids) > 0
    assert inverted.doc_ids.flags.writeable is False  # shared by later queries: read-only


def test_equal_plans_hand_the_decoded_cache_one_memo_key():
    """Two plans of one query (a plan cache miss, a schema read anew) share their memo keys
    by identity, so a cache lookup never compares expression trees."""
    from engine.query.plan import compile_query

    sql = "SELECT COUNT(*) FROM t WHERE site = 7 AND country = 'MX'"
    first, second = compile_query(sql), compile_query(sql)
    assert first is not second
    assert first.segment_memo_key is second.segment_memo_key
    assert first.filter_memo_key is second.filter_memo_key
    other = compile_query("SELECT COUNT(*) FROM t WHERE site = 8 AND country = 'MX'")
    assert other.segment_memo_key != first.segment_memo_key

"""Query tracing (``trace`` option): each segment's operator timings, the server's combine,
carried through the intermediate result's bytes; an untraced query carries none."""

from __future__ import annotations

import pytest

from engine.query import IntermediateResult, run_query
from engine.query.runner import QueryEngine
from engine.query.settings import QuerySettings

TRACED = {"trace": "true"}


def _engine() -> QueryEngine:
    return QueryEngine(QuerySettings(threads=1))


def test_each_segment_records_its_stages_in_order(synth):
    _, schema, _, three = synth
    engine = _engine()
    plan = engine.compile(
        "SELECT site, COUNT(*), SUM(clicks) FROM synth WHERE country = 'US' GROUP BY site",
        schema, {**TRACED, "useStarTree": "false"},  # else the star-tree answers it
    )  # fmt: skip
    result = engine.execute_server(plan, three)
    segments = result.trace["segments"]
    assert [s["segment"] for s in segments] == [s.name for s in three]
    for entry, segment in zip(segments, three, strict=True):
        names = [op["operator"] for op in entry["operators"]]
        # country is the sorted column: the filter is a doc range
        assert names == ["SegmentPruner", "FilterOperator (range)", "GroupByOperator"]
        assert all(op["timeMs"] >= 0 for op in entry["operators"])
        assert entry["timeMs"] >= sum(op["timeMs"] for op in entry["operators"]) - 0.01
        assert entry["totalDocs"] == segment.total_docs
        assert 0 < entry["numDocsScanned"] < segment.total_docs
    assert sum(s["numDocsScanned"] for s in segments) == result.stats["numDocsScanned"]
    assert [op["operator"] for op in result.trace["operators"]] == ["CombineOperator"]


def test_pruned_segments_and_metadata_answers_are_named(synth):
    _, schema, _, three = synth
    engine = _engine()
    # ts is sorted across the three segments: a range inside the first prunes the others
    first_max = max(three[0].column("ts").metadata.max_value, 0)
    pruned = engine.compile(f"SELECT COUNT(*) FROM synth WHERE ts <= {first_max}", schema, TRACED)
    segments = engine.execute_server(pruned, three).trace["segments"]
    assert segments[0]["operators"][0]["operator"] == "SegmentPruner"
    assert all(
        s["operators"][0]["operator"].startswith("SegmentPruner (min/max") for s in segments[1:]
    )
    assert all(len(s["operators"]) == 1 and s["numDocsScanned"] == 0 for s in segments[1:])
    count = engine.compile("SELECT COUNT(*) FROM synth", schema, TRACED)
    segments = engine.execute_server(count, three).trace["segments"]
    assert {s["operators"][-1]["operator"] for s in segments} == {"NonScanBasedAggregationOperator"}


@pytest.mark.parametrize(
    ("sql", "last"),
    [
        ("SELECT country, clicks FROM synth WHERE site = 3 LIMIT 5", "SelectionOnlyOperator"),
        ("SELECT country FROM synth ORDER BY latency DESC LIMIT 5", "SelectionOrderByOperator"),
        ("SELECT SUM(latency) FROM synth WHERE clicks > 10", "AggregationOperator"),
        ("SELECT country, SUM(clicks) FROM synth GROUP BY country", "StarTreeOperator"),
    ],
)
def test_the_operator_names_follow_the_query_kind(synth, sql, last):
    _, schema, single, _ = synth
    engine = _engine()
    result = engine.execute_server(engine.compile(sql, schema, TRACED), single)
    assert result.trace["segments"][0]["operators"][-1]["operator"] == last


def test_the_trace_survives_the_transport_and_untraced_results_carry_none(synth):
    _, schema, _, three = synth
    engine = _engine()
    sql = "SELECT country, MAX(latency) FROM synth GROUP BY country"
    traced_plan = engine.compile(sql, schema, TRACED)
    traced = engine.execute_server(traced_plan, three)
    decoded = IntermediateResult.from_bytes(traced.to_bytes(traced_plan))
    assert decoded.trace == traced.trace
    plain_plan = engine.compile(sql, schema)
    plain = engine.execute_server(plain_plan, three)
    assert plain.trace is None
    assert IntermediateResult.from_bytes(plain.to_bytes(plain_plan)).trace is None


def test_set_trace_in_the_sql_traces_and_leaves_the_answer_alone(synth):
    _, schema, _, three = synth
    sql = "SELECT country, SUM(clicks) FROM synth GROUP BY country ORDER BY country"
    plain = run_query(sql, three, table_schema=schema)
    traced = run_query(f"SET trace = true; {sql}", three, table_schema=schema)
    assert "traceInfo" not in plain
    assert traced["resultTable"] == plain["resultTable"]
    local = traced["traceInfo"]["local"]
    assert len(local["segments"]) == 3
    assert local["operators"][-1]["operator"] == "CombineOperator"


def test_the_gc_clock_counts_each_collections_pause():
    import gc

    from engine.query.trace import gc_clock

    clock = gc_clock()
    assert gc_clock() is clock  # one hook per process
    before_ms, before_count = clock.total_ms(), list(clock.collections)
    gc.collect(2)
    assert clock.collections[2] == before_count[2] + 1
    assert clock.total_ms() > before_ms

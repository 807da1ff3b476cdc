"""The broker prunes a repeated query once per routing change: the kept segments are reused
for the same route and filter, and a new route (a routing change) is pruned afresh."""

from __future__ import annotations

from engine.broker.handler import QueryRunner
from engine.broker.pruning import SegmentInfo
from engine.broker.routes import TableRoute
from engine.query.plan import compile_query
from engine.spi.datetime_format import DateTimeFormat

DAY = 86_400_000


def _where(sql_filter: str):
    return compile_query(f"SELECT COUNT(*) FROM t WHERE {sql_filter}").filter


def _route(spans: dict[str, tuple[int, int]]) -> TableRoute:
    infos = {n: SegmentInfo(n, a * DAY, b * DAY) for n, (a, b) in spans.items()}
    return TableRoute("t_OFFLINE", {n: ("S1",) for n in spans}, infos, time_column="d",
                      time_format=DateTimeFormat.parse("1:DAYS:EPOCH"))  # fmt: skip


def _runner() -> QueryRunner:
    # only the pruning step is exercised: routing, schemas, selection and scatter are unused
    return QueryRunner(None, None, None, None, None)


def test_same_route_and_filter_reuse_the_pruned_segments():
    runner = _runner()
    route = _route({"s1": (10, 19), "s2": (20, 29), "s3": (30, 39)})
    first = runner._pruned(route, _where("d = 25"))
    assert first == (["s2"], 3)
    again = runner._pruned(route, _where("d = 25"))  # an equal filter from a new parse
    assert again == first and again[0] is first[0]
    assert runner._pruned(route, _where("d >= 30")) == (["s3"], 3)
    assert runner._pruned(route, None) == (["s1", "s2", "s3"], 3)


def test_a_new_route_is_pruned_afresh():
    runner = _runner()
    where = _where("d = 25")
    assert runner._pruned(_route({"s1": (10, 19), "s2": (20, 29)}), where) == (["s2"], 2)
    moved = _route({"s1": (10, 19), "s2": (30, 39), "s4": (25, 26)})
    assert runner._pruned(moved, where) == (["s4"], 3)


def test_the_same_filter_object_hits_by_identity_and_a_new_route_still_prunes_afresh():
    runner = _runner()
    where = _where("d = 25")
    route = _route({"s1": (10, 19), "s2": (20, 29)})
    first = runner._pruned(route, where)
    assert runner._pruned(route, where)[0] is first[0]
    assert (id(route), id(where)) in runner._pruned_by_id
    moved = _route({"s1": (10, 19), "s2": (30, 39), "s4": (25, 26)})
    assert runner._pruned(moved, where) == (["s4"], 3)
    assert runner._pruned(route, None) == (["s1", "s2"], 2)

"""The console's own logic, run as the browser runs it (ES modules imported in Chromium):
segment status from ideal state vs external view, and which results can be charted."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def module_call(page, module: str, expression: str, arg):
    page.goto("/console/tables")
    return page.evaluate(
        f"async (arg) => {{ const m = await import('/static/console/js/{module}'); return {expression}; }}",
        arg,
    )


@pytest.mark.parametrize(
    ("ideal", "view", "status"),
    [
        ({"s1": "ONLINE", "s2": "ONLINE"}, {"s1": "ONLINE", "s2": "ONLINE"}, "GOOD"),
        ({"s1": "ONLINE", "s2": "ONLINE"}, {"s1": "ONLINE", "s2": "ERROR"}, "BAD"),
        ({"s1": "ONLINE", "s2": "ONLINE"}, {"s1": "ONLINE"}, "UPDATING"),
        ({"s1": "ONLINE"}, {"s1": "OFFLINE"}, "UPDATING"),
        ({"s1": "ONLINE"}, None, "UPDATING"),
        ({"s1": "CONSUMING"}, {"s1": "CONSUMING"}, "GOOD"),
        ({"s1": "ONLINE"}, {"s1": "ONLINE", "s2": "ONLINE"}, "UPDATING"),  # an extra replica
    ],
)
def test_segment_status_compares_ideal_state_with_external_view(page, ideal, view, status):
    got = module_call(
        page,
        "tablestate.js",
        "m.segmentStatus(arg.ideal, arg.view)",
        {"ideal": ideal, "view": view},
    )
    assert got == status


def test_table_status_is_the_worst_segment_status(page):
    rows = module_call(
        page,
        "tablestate.js",
        "[m.segmentRows(arg.ideal, arg.view).map(r => [r.segment, r.type, r.status]), "
        "m.tableStatus(m.segmentRows(arg.ideal, arg.view)), m.tableStatus([])]",
        {
            "ideal": {"OFFLINE": {"a": {"s1": "ONLINE"}, "b": {"s1": "ONLINE"}}, "REALTIME": None},
            "view": {"OFFLINE": {"a": {"s1": "ONLINE"}, "b": {"s1": "ERROR"}}, "REALTIME": None},
        },
    )
    assert rows == [[["a", "OFFLINE", "GOOD"], ["b", "OFFLINE", "BAD"]], "BAD", "GOOD"]


@pytest.mark.parametrize(
    ("names", "types", "expected"),
    [
        (["DaysSinceEpoch", "count(*)"], ["INT", "LONG"], {"x": 0, "series": [1], "kind": "line"}),
        (
            ["Carrier", "sum(ArrDelay)", "count(*)"],
            ["STRING", "DOUBLE", "LONG"],
            {"x": 0, "series": [1, 2], "kind": "bar"},
        ),
        (["count(*)", "Origin"], ["LONG", "STRING"], {"x": 1, "series": [0], "kind": "bar"}),
        (["Carrier", "Origin"], ["STRING", "STRING"], None),
        (["count(*)"], ["LONG"], None),
    ],
)
def test_chart_plan(page, names, types, expected):
    plan = module_call(
        page,
        "resultchart.js",
        "m.chartPlan({columnNames: arg.names, columnDataTypes: arg.types}, new Set(['DaysSinceEpoch']))",
        {"names": names, "types": types},
    )
    if expected is None:
        assert "reason" in plan
    else:
        assert {k: plan[k] for k in ("x", "series", "kind")} == expected

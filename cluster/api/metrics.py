"""``GET /metrics``: the SegmentStatusChecker's gauges in Prometheus text format, one series
per table type, read from ZooKeeper so that every controller serves the same values."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, renderer_classes
from rest_framework.renderers import StaticHTMLRenderer

from cluster.api.common import store
from cluster.logic.check_segment_status import saved_status
from engine.spi.table_name import split_table_name
from tasks.controller import cron
from tasks.logic.metrics import prometheus_lines as task_metric_lines

GAUGES = ("numberOfReplicas", "percentOfReplicas", "percentSegmentsAvailable",
          "segmentsInErrorState", "segmentCount")  # fmt: skip

# Other apps add their series here (monitoring's consumer lag, from its AppConfig.ready()), so
# this module does not import them.
METRIC_SOURCES: list[Callable[[], list[str]]] = []


def register_metrics_source(source: Callable[[], list[str]]) -> None:
    if source not in METRIC_SOURCES:
        METRIC_SOURCES.append(source)


@extend_schema(
    summary="Controller metrics (Prometheus text)",
    description='pinot_controller_<gauge>_Value{table="t",tableType="OFFLINE"} (Pinot\'s JMX '
    'exporter names) and pinot_controller_<gauge>{table="t_OFFLINE"} for ' + ", ".join(GAUGES),
    tags=["Health"],
    responses={200: OpenApiTypes.STR},
)
@api_view(["GET"])
@renderer_classes([StaticHTMLRenderer])
def metrics(request):
    cluster = store()
    lines = []
    reports = {}
    for resource in cluster.children(cluster.paths.table_status):
        report = saved_status(cluster, resource)
        if report is not None:
            reports[resource] = report
    for gauge in GAUGES:
        lines.append(f"# TYPE pinot_controller_{gauge} gauge")
        for resource, report in sorted(reports.items()):
            lines.append(f'pinot_controller_{gauge}{{table="{resource}"}} {report.get(gauge, 0)}')
        # the name and labels Pinot's JMX exporter gives the same gauge
        lines.append(f"# TYPE pinot_controller_{gauge}_Value gauge")
        for resource, report in sorted(reports.items()):
            raw, table_type = split_table_name(resource)
            lines.append(f'pinot_controller_{gauge}_Value{{table="{raw}",tableType="{table_type}"}}'
                         f" {report.get(gauge, 0)}")  # fmt: skip
    lines += task_metric_lines(cron.missed)  # the minion task and cron gauges (tasks.logic.metrics)
    for source in METRIC_SOURCES:
        lines += source()
    return HttpResponse("\n".join(lines) + "\n", content_type="text/plain; version=0.0.4")

"""``/periodictask/names`` and ``/periodictask/run``."""

from __future__ import annotations

import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import TableTypeParam, query, store
from cluster.logic.check_segment_status import saved_status
from cluster.logic.table_views import existing_types
from cluster.periodic import get_task, run_task, task_names
from engine.clusterstate import split_table_name, table_name_with_type

TAG = ["Periodic Task"]


class RunParams(TableTypeParam):
    taskname = serializers.CharField()
    tableName = serializers.CharField(required=False, allow_blank=True)


class ReportParams(TableTypeParam):
    tableName = serializers.CharField()


class PeriodicTaskNamesView(APIView):
    @extend_schema(summary="Names of the periodic tasks", tags=TAG,
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        return Response(task_names())


class PeriodicTaskRunView(APIView):
    @extend_schema(
        summary="Run a periodic task now",
        description="Runs on the controller that receives the request, over one table "
        "(tableName, type) or all tables, and returns once it is done; `taskReport` is the "
        "task's own report.",
        tags=TAG,
        parameters=[RunParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        params = query(request, RunParams)
        get_task(params["taskname"])
        report = run_task(store(), params["taskname"], params.get("tableName") or None,
                          params.get("type"))  # fmt: skip
        return Response({
            "Log Request Id": f"api-{uuid.uuid4().hex[:8]}",
            "Controllers notified": True,
            "taskReport": report,
        })  # fmt: skip


class SegmentStatusReportView(APIView):
    @extend_schema(
        summary="The SegmentStatusChecker's last report for a table",
        description="numberOfReplicas, percentOfReplicas, percentSegmentsAvailable, "
        "segmentsInErrorState, errorSegments and replicasOnlinePerSegment per table type.",
        tags=TAG,
        parameters=[ReportParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        params = query(request, ReportParams)
        table = params["tableName"]
        raw = split_table_name(table)[0]
        cluster = store()
        return Response({
            kind: saved_status(cluster, table_name_with_type(raw, kind))
            for kind in existing_types(table, params.get("type"))
        })  # fmt: skip

"""``/periodictask/names`` and ``/periodictask/run``."""

from __future__ import annotations

import logging
import uuid

from drf_spectacular.plumbing import build_array_type, build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import TableTypeParam, query, store
from cluster.logic.check_segment_status import saved_status
from cluster.logic.table_views import existing_types
from cluster.periodic import get_task, run_task, task_names
from cluster.periodic.registry import run_status
from controller.errors import ControllerError
from engine.clusterstate import split_table_name, table_name_with_type

TAG = ["Periodic Task"]
log = logging.getLogger(__name__)


class RunParams(TableTypeParam):
    taskname = serializers.CharField()
    tableName = serializers.CharField(required=False, allow_blank=True)


class ReportParams(TableTypeParam):
    tableName = serializers.CharField()


class RunResponse(serializers.Serializer):
    taskId = serializers.CharField(help_text="api- and 8 characters of a UUID")
    isSuccessful = serializers.BooleanField()
    taskReport = serializers.JSONField(required=False, help_text="the task's own report")
    error = serializers.CharField(required=False)


class RunStatus(serializers.Serializer):
    taskName = serializers.CharField()
    description = serializers.CharField()
    frequency = serializers.CharField(help_text="Pinot period; negative = not scheduled")
    frequencySeconds = serializers.FloatField(allow_null=True)
    lastRunTimeMs = serializers.IntegerField(allow_null=True)
    lastRunDurationMs = serializers.IntegerField(allow_null=True)
    lastRunSuccessful = serializers.BooleanField(allow_null=True)
    lastRunError = serializers.CharField(allow_null=True)
    numberOfRuns = serializers.IntegerField()


class PeriodicTaskNamesView(APIView):
    @extend_schema(summary="Names of the periodic tasks", tags=TAG,
                   responses={200: build_array_type(build_basic_type(OpenApiTypes.STR))})  # fmt: skip
    def get(self, request):
        return Response(task_names())


class PeriodicTaskRunView(APIView):
    @extend_schema(
        summary="Run a periodic task now",
        description="Runs on the controller that receives the request, over one table "
        "(tableName, type) or all tables, and returns once it is done. Pinot's answer "
        "(taskId, isSuccessful) plus `taskReport`, the task's own report; a run that fails "
        "answers isSuccessful false with the error. An unknown task name is 404.",
        tags=TAG,
        parameters=[RunParams],
        responses={200: RunResponse},
    )
    def get(self, request):
        params = query(request, RunParams)
        get_task(params["taskname"])
        body = {"taskId": f"api-{uuid.uuid4().hex[:8]}", "isSuccessful": True}
        try:
            body["taskReport"] = run_task(store(), params["taskname"],
                                          params.get("tableName") or None, params.get("type"))  # fmt: skip
        except ControllerError:
            raise
        except Exception as exc:  # recorded as the run's outcome; the caller learns why
            log.exception("periodic task %s failed", params["taskname"])
            body.update(isSuccessful=False, error=f"{type(exc).__name__}: {exc}")
        return Response(body)


class PeriodicTaskStatusView(APIView):
    @extend_schema(
        summary="Every periodic task's frequency and last run",
        description="Start time (epoch ms), duration and outcome of each task's last run, "
        "scheduled or on demand, from any controller.",
        tags=TAG,
        responses={200: RunStatus(many=True)},
    )
    def get(self, request):
        return Response(run_status())


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

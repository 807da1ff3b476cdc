"""Read-only table views: ideal state, external view, size, segment status, instances, jobs."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import TableTypeAliasParam, TableTypeParam, query, store
from cluster.logic.controller_jobs import JOB_TYPES, table_jobs
from cluster.logic.table_views import (
    assignment_by_type,
    existing_types,
    segment_status,
    table_instances,
    table_size,
)
from engine.clusterstate import split_table_name, table_name_with_type

TAG = ["Table"]


class AssignmentParams(TableTypeAliasParam):
    segmentNames = serializers.CharField(required=False, allow_blank=True,
                                         help_text="comma-separated segments to keep")  # fmt: skip


def _filtered(out: dict, segment_names: str | None) -> dict:
    if not segment_names:
        return out
    keep = {s.strip() for s in segment_names.split(",") if s.strip()}
    return {k: ({s: m for s, m in v.items() if s in keep} if v is not None else None)
            for k, v in out.items()}  # fmt: skip


class IdealStateView(APIView):
    @extend_schema(
        summary="The table's ideal state",
        description='`{"OFFLINE": {segment: {instance: state}} | null, "REALTIME": ...}`',
        tags=TAG,
        parameters=[AssignmentParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, table: str):
        params = query(request, AssignmentParams)
        out = assignment_by_type(store(), table, params.get("type"), "ideal")
        return Response(_filtered(out, params.get("segmentNames")))


class ExternalViewView(APIView):
    @extend_schema(
        summary="The table's external view",
        description="What the servers report, aggregated by the leading controller.",
        tags=TAG,
        parameters=[AssignmentParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, table: str):
        params = query(request, AssignmentParams)
        out = assignment_by_type(store(), table, params.get("type"), "view")
        return Response(_filtered(out, params.get("segmentNames")))


class TableSizeView(APIView):
    @extend_schema(
        summary="The table's size",
        description="reportedSizeInBytes counts replicas online in the external view, "
        "estimatedSizeInBytes the replicas in the ideal state (per segment: its tar.gz size).",
        tags=TAG,
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, table: str):
        return Response(table_size(store(), table))


class SegmentStatusSerializer(serializers.Serializer):
    segmentName = serializers.CharField()
    segmentStatus = serializers.ChoiceField(choices=["GOOD", "BAD", "UPDATING"])
    tableNameWithType = serializers.CharField()
    replicasOnline = serializers.IntegerField()
    replicasExpected = serializers.IntegerField()


class SegmentsStatusView(APIView):
    @extend_schema(
        summary="Per-segment status",
        description="GOOD (external view equals ideal state), BAD (a replica in ERROR) or "
        "UPDATING, with replicasOnline and replicasExpected.",
        tags=TAG,
        parameters=[TableTypeParam],
        responses={200: SegmentStatusSerializer(many=True)},
    )
    def get(self, request, table: str):
        params = query(request, TableTypeParam)
        return Response(segment_status(store(), table, params.get("type")))


class TableInstancesView(APIView):
    @extend_schema(
        summary="The table's brokers and servers",
        tags=TAG,
        parameters=[TableTypeParam],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, table: str):
        params = query(request, TableTypeParam)
        return Response(table_instances(store(), table, params.get("type")))


class JobsParams(TableTypeParam):
    jobTypes = serializers.CharField(required=False, allow_blank=True,
                                     help_text="comma-separated, e.g. TABLE_REBALANCE")  # fmt: skip


class TableJobsView(APIView):
    @extend_schema(
        summary="The table's controller jobs (rebalance, reload)",
        tags=TAG,
        parameters=[JobsParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, table: str):
        params = query(request, JobsParams)
        wanted = [t.strip() for t in (params.get("jobTypes") or "").split(",") if t.strip()]
        raw = split_table_name(table)[0]
        out = {}
        for kind in existing_types(table, params.get("type")):
            out.update(
                table_jobs(store(), table_name_with_type(raw, kind), wanted or list(JOB_TYPES))
            )
        return Response(out)

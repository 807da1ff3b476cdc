"""``/segments/{t}``: list, metadata, download, delete, reload and reset segments."""

from __future__ import annotations

import orjson
from django.http import FileResponse
from drf_spectacular.plumbing import build_array_type, build_object_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import TableTypeParam, query, store
from cluster.api.openapi import STRING_LIST
from cluster.logic.cluster_view import table_row, table_types
from cluster.logic.deep_store import get_deep_store
from cluster.logic.delete_segments import delete_all_segments, delete_segments, keep_deleted
from cluster.logic.reload_segments import (
    need_reload,
    reload_segments,
    reload_status,
    reset_segments,
)
from cluster.logic.segment_metadata import segment_metadata
from cluster.logic.table_views import segment_servers, segments_by_type
from controller.errors import NotFound
from engine.clusterstate import split_table_name

TAG = ["Segment"]


class DeleteParams(TableTypeParam):
    retention = serializers.CharField(required=False, allow_blank=True)


class ReloadParams(TableTypeParam):
    forceDownload = serializers.BooleanField(required=False, default=False)


class ResetParams(TableTypeParam):
    targetInstance = serializers.CharField(required=False, allow_blank=True)
    errorSegmentsOnly = serializers.BooleanField(required=False, default=False)


class MetadataParams(TableTypeParam):
    columns = serializers.CharField(required=False, allow_blank=True,
                                    help_text="* or comma-separated column names")  # fmt: skip


class SegmentListView(APIView):
    @extend_schema(
        summary="List a table's segments",
        operation_id="listSegments",
        description='`[{"OFFLINE": [segment, ...]}, {"REALTIME": [...]}]`',
        tags=TAG,
        parameters=[TableTypeParam],
        responses={200: build_array_type(build_object_type(additionalProperties=STRING_LIST))},
    )
    def get(self, request, table: str):
        params = query(request, TableTypeParam)
        return Response(segments_by_type(store(), table, params.get("type")))

    @extend_schema(
        summary="Delete all segments of a table type",
        operation_id="deleteAllSegments",
        tags=TAG,
        parameters=[DeleteParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def delete(self, request, table: str):
        params = query(request, DeleteParams)
        keep = keep_deleted(params.get("retention"))
        done = delete_all_segments(store(), table, params.get("type"), keep=keep)
        return Response({"status": f"All segments of table {', '.join(done)} deleted"})


class SegmentDetailView(APIView):
    @extend_schema(
        summary="Download a segment (tar.gz)",
        tags=TAG,
        parameters=[TableTypeParam],
        responses={200: OpenApiResponse(description="the segment tar.gz")},
    )
    def get(self, request, table: str, segment: str):
        params = query(request, TableTypeParam)
        # The deep store keys segments by the raw table name, so a hybrid table's raw name
        # downloads without a type (servers' download URLs carry none), as in Pinot.
        raw_name, _ = split_table_name(table)
        if not table_types(table, params.get("type")):
            table_row(table, params.get("type"))  # raises the usual 404
        deep_store = get_deep_store()
        if not deep_store.exists(raw_name, segment):
            raise NotFound(f"Segment {segment} of table {table} not found")
        return FileResponse(
            deep_store.open(raw_name, segment),
            as_attachment=True,
            filename=f"{segment}.tar.gz",
            content_type="application/octet-stream",
        )

    @extend_schema(
        summary="Delete one segment",
        tags=TAG,
        parameters=[DeleteParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def delete(self, request, table: str, segment: str):
        params = query(request, DeleteParams)
        row = table_row(table, params.get("type"))
        keep = keep_deleted(params.get("retention"))
        delete_segments(store(), row.name_with_type, [segment], keep=keep)
        return Response({"status": f"Segment {segment} deleted"})


class SegmentMetadataView(APIView):
    @extend_schema(
        summary="A segment's metadata",
        description="The segment's own metadata (from its deep-store copy) merged with its "
        "ZooKeeper metadata; `columns=*` or a list adds per-column metadata.",
        tags=TAG,
        parameters=[MetadataParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, table: str, segment: str):
        params = query(request, MetadataParams)
        row = table_row(table, params.get("type"))
        columns = params.get("columns") or ""
        wanted = None if columns in ("", "*") else [c.strip() for c in columns.split(",")]
        return Response(segment_metadata(store(), row, segment, wanted, bool(columns)))


class SegmentZkMetadataView(APIView):
    @extend_schema(
        summary="The ZooKeeper metadata of every segment of a table",
        tags=TAG,
        parameters=[TableTypeParam],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, table: str):
        params = query(request, TableTypeParam)
        row = table_row(table, params.get("type"))
        cluster = store()
        out = {}
        for name in cluster.segment_names(row.name_with_type):
            meta = cluster.segment_metadata(row.name_with_type, name)
            if meta is not None:
                out[name] = meta.to_json()
        return Response(out)


class SegmentServersSerializer(serializers.Serializer):
    tableName = serializers.CharField(help_text="with its type")
    serverToSegmentsMap = serializers.DictField(child=serializers.ListField(
        child=serializers.CharField()), help_text="server instance id to its segments")  # fmt: skip


class SegmentServersView(APIView):
    @extend_schema(
        summary="Which server holds which segments",
        description="One entry per table type, from the ideal state.",
        tags=TAG,
        parameters=[TableTypeParam],
        responses={200: SegmentServersSerializer(many=True)},
    )
    def get(self, request, table: str):
        params = query(request, TableTypeParam)
        return Response(segment_servers(store(), table, params.get("type")))


class TableReloadView(APIView):
    @extend_schema(
        summary="Reload all segments of a table",
        operation_id="reloadAllSegments",
        description="Sends SEGMENT_RELOAD messages to the servers; track with "
        "GET /segments/segmentReloadStatus/{jobId}.",
        tags=TAG,
        parameters=[ReloadParams],
        request=None,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request, table: str):
        params = query(request, ReloadParams)
        out = reload_segments(store(), table, params.get("type"),
                              force_download=params["forceDownload"])  # fmt: skip
        return Response({"status": orjson.dumps(out).decode()})


class SegmentReloadView(APIView):
    @extend_schema(
        summary="Reload one segment",
        tags=TAG,
        parameters=[ReloadParams],
        request=None,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request, table: str, segment: str):
        params = query(request, ReloadParams)
        out = reload_segments(store(), table, params.get("type"), segment,
                              force_download=params["forceDownload"])  # fmt: skip
        ((resource, job),) = out.items()
        return Response({
            "status": f"Submitted reload job id: {job['reloadJobId']}, sent "
            f"{job['numMessagesSent']} reload messages for {resource}. "
            "Job meta ZK storage status: SUCCESS",
            **job,
        })  # fmt: skip


class NeedReloadParams(serializers.Serializer):
    verbose = serializers.BooleanField(required=False, default=False)


class NeedReloadView(APIView):
    @extend_schema(
        summary="Whether a reload would change the table's segments",
        description="True while some server holds a segment lacking a column the schema "
        "has (it reads as the column's default until a reload writes it). verbose=true "
        "lists each server's answer.",
        tags=TAG,
        parameters=[NeedReloadParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, table: str):
        params = query(request, NeedReloadParams)
        return Response(need_reload(store(), table, verbose=params["verbose"]))


class ReloadStatusView(APIView):
    @extend_schema(summary="Status of a reload job", tags=TAG, responses={200: OpenApiTypes.OBJECT})
    def get(self, request, job_id: str):
        return Response(reload_status(store(), job_id))


class TableResetView(APIView):
    @extend_schema(
        summary="Reset segments (ERROR -> OFFLINE -> ONLINE)",
        description="Sends SEGMENT_RESET messages to the replicas (only ERROR ones with "
        "errorSegmentsOnly=true; one server with targetInstance).",
        tags=TAG,
        parameters=[ResetParams],
        request=None,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request, table: str):
        return _reset(request, table, None)


class SegmentResetView(APIView):
    @extend_schema(
        summary="Reset one segment (ERROR -> OFFLINE -> ONLINE)",
        operation_id="resetSegment",
        tags=TAG,
        parameters=[ResetParams],
        request=None,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request, table: str, segment: str):
        return _reset(request, table, segment)


def _reset(request, table: str, segment: str | None) -> Response:
    params = query(request, ResetParams)
    return Response(
        reset_segments(
            store(),
            table,
            params.get("type"),
            segment,
            target_instance=params.get("targetInstance") or None,
            error_only=params["errorSegmentsOnly"],
        )
    )

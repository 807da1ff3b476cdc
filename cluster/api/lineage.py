"""Segment replacement at Pinot's paths: ``POST /segments/{t}/startReplaceSegments``,
``endReplaceSegments`` and ``revertReplaceSegments``, and ``GET /segments/{t}/lineage``.

The protocol itself is in ``cluster.logic.segment_lineage``; minions call it through
``tasks.lineage_client``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import TableTypeParam, query, store
from cluster.logic.cluster_view import table_row
from cluster.logic.segment_lineage import (
    end_replace_segments,
    lineage_json,
    revert_replace_segments,
    start_replace_segments,
)
from engine.clusterstate.lineage import LineageEntryState

TAG = ["Segment"]

_ERRORS = (
    "400: bad parameters or body; 404: unknown table, segment or lineage entry; 409: the "
    "change conflicts with the lineage (another replacement, or a state that does not allow it)."
)


class StartReplaceParams(TableTypeParam):
    forceCleanup = serializers.BooleanField(
        required=False, default=False,
        help_text="revert conflicting IN_PROGRESS entries (failed earlier attempts) and delete "
        "their uploaded segmentsTo",
    )  # fmt: skip


class StartReplaceRequest(serializers.Serializer):
    segmentsFrom = serializers.ListField(child=serializers.CharField(), required=False,
                                         default=list, help_text="segments to be replaced")  # fmt: skip
    segmentsTo = serializers.ListField(child=serializers.CharField(), required=False,
                                       default=list, help_text="new segments, not yet uploaded")  # fmt: skip
    customMap = serializers.DictField(
        child=serializers.CharField(), required=False,
        help_text="accepted as Pinot does; its default lineage manager does not use it",
    )  # fmt: skip


class StartReplaceResponse(serializers.Serializer):
    segmentLineageEntryId = serializers.CharField()


class EndReplaceRequest(serializers.Serializer):
    segmentsTo = serializers.ListField(
        child=serializers.CharField(), required=False,
        help_text="optional (Pinot's EndReplaceSegmentsRequest); must match the entry's",
    )  # fmt: skip
    customMap = serializers.DictField(child=serializers.CharField(), required=False)


class EntryParams(TableTypeParam):
    segmentLineageEntryId = serializers.CharField(help_text="from startReplaceSegments")


class RevertParams(EntryParams):
    forceRevert = serializers.BooleanField(
        required=False, default=False, help_text="also revert an IN_PROGRESS entry"
    )


class LineageStateResponse(serializers.Serializer):
    segmentLineageEntryId = serializers.CharField()
    state = serializers.ChoiceField(choices=["IN_PROGRESS", "COMPLETED", "REVERTED"])


class LineageEntrySerializer(serializers.Serializer):
    segmentsFrom = serializers.ListField(child=serializers.CharField())
    segmentsTo = serializers.ListField(child=serializers.CharField())
    state = serializers.ChoiceField(choices=["IN_PROGRESS", "COMPLETED", "REVERTED"])
    timestamp = serializers.IntegerField(help_text="epoch ms of the last state change")


class SegmentLineageSerializer(serializers.Serializer):
    tableNameWithType = serializers.CharField()
    lineageEntries = serializers.DictField(child=LineageEntrySerializer(),
                                           help_text="entry id -> entry, oldest first")  # fmt: skip
    customMap = serializers.DictField(child=serializers.CharField(), required=False)


def _body(request, serializer_class: type[serializers.Serializer]) -> dict:
    data = request.data if request.data not in (None, "") else {}
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _target(request, table: str, params_class: type[TableTypeParam]) -> tuple[dict, str]:
    """The validated query parameters and the table name with type they point at."""
    params = query(request, params_class)
    return params, table_row(table, params.get("type")).name_with_type


def _state(entry_id: str, state: LineageEntryState) -> Response:
    return Response({"segmentLineageEntryId": entry_id, "state": state.value})


class StartReplaceSegmentsView(APIView):
    @extend_schema(
        summary="Start replacing segments (segment lineage)",
        operation_id="startReplaceSegments",
        description="Records an IN_PROGRESS lineage entry: brokers keep routing segmentsFrom "
        "and hide segmentsTo until endReplaceSegments. segmentsFrom must be segments of the "
        "table; segmentsTo must not be another live entry's target or a served segment. " + _ERRORS,
        tags=TAG,
        parameters=[StartReplaceParams],
        request=StartReplaceRequest,
        responses={200: StartReplaceResponse},
    )
    def post(self, request, table: str):
        params, table_with_type = _target(request, table, StartReplaceParams)
        body = _body(request, StartReplaceRequest)
        entry_id = start_replace_segments(
            store(), table_with_type, list(body["segmentsFrom"]), list(body["segmentsTo"]),
            force_cleanup=params["forceCleanup"],
        )  # fmt: skip
        return Response({"segmentLineageEntryId": entry_id})


class EndReplaceSegmentsView(APIView):
    @extend_schema(
        summary="End a segment replacement: switch queries to segmentsTo",
        operation_id="endReplaceSegments",
        description="Marks the entry COMPLETED once every segmentsTo is uploaded and ONLINE "
        "(waiting up to 30 s); brokers then route segmentsTo instead of segmentsFrom, which "
        "retention deletes after segmentsConfig.replacedSegmentsRetentionPeriod (1d). Ending a "
        "COMPLETED entry again succeeds; a REVERTED one is a 409. A body's segmentsTo must "
        "be the entry's: segments uploaded under other names were never hidden. " + _ERRORS,
        tags=TAG,
        parameters=[EntryParams],
        request=EndReplaceRequest,
        responses={200: LineageStateResponse},
    )
    def post(self, request, table: str):
        params, table_with_type = _target(request, table, EntryParams)
        body = _body(request, EndReplaceRequest)
        entry_id = params["segmentLineageEntryId"]
        state = end_replace_segments(
            store(), table_with_type, entry_id, segments_to=body.get("segmentsTo")
        )
        return _state(entry_id, state)


class RevertReplaceSegmentsView(APIView):
    @extend_schema(
        summary="Revert a segment replacement: switch queries back to segmentsFrom",
        operation_id="revertReplaceSegments",
        description="Marks the entry REVERTED. A COMPLETED entry needs its segmentsFrom still "
        "ONLINE and no live entry replacing its segmentsTo; an IN_PROGRESS one needs "
        "forceRevert=true. segmentsTo are deleted: at once when they were never served, by "
        "the next retention run otherwise. " + _ERRORS,
        tags=TAG,
        parameters=[RevertParams],
        request=None,
        responses={200: LineageStateResponse},
    )
    def post(self, request, table: str):
        params, table_with_type = _target(request, table, RevertParams)
        entry_id = params["segmentLineageEntryId"]
        state = revert_replace_segments(
            store(), table_with_type, entry_id, force_revert=params["forceRevert"]
        )
        return _state(entry_id, state)


class SegmentLineageView(APIView):
    @extend_schema(
        summary="A table type's segment lineage",
        operation_id="listSegmentLineage",
        tags=TAG,
        parameters=[TableTypeParam],
        responses={200: SegmentLineageSerializer},
    )
    def get(self, request, table: str):
        _, table_with_type = _target(request, table, TableTypeParam)
        return Response(lineage_json(store(), table_with_type))

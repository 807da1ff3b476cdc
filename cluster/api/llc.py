"""Pinot's segment completion protocol (``LLCSegmentCompletionHandlers``): the calls a
consuming server makes when its segment reaches its end criteria.

Every call carries ``name=<segment>&instance=<Server_h_p>``; the answer is always 200 with
Pinot's JSON (``{"status", "streamPartitionMsgOffset", "buildTimeSec", "isSplitCommitType"}``).
Only the lead controller answers with a decision; the others say NOT_LEADER and the server
looks the leader up again. The views are thin: the FSMs are
``cluster.logic.realtime.completion_manager`` and the commit ``cluster.logic.realtime.commit``.
The FSMs live in this process (the controller runs one gunicorn worker); a restarted
controller rebuilds them from ZooKeeper.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster import models
from cluster.api.common import query, store
from cluster.logic.deep_store import get_deep_store
from cluster.logic.realtime.commit import finish_commit, fsm_from_zk, receive_upload
from cluster.logic.realtime.completion_manager import SegmentCompletionManager
from cluster.logic.realtime.consuming_segments import CONSUMING, OFFLINE
from engine.clusterstate import ResourceAssignment
from engine.realtime import completion as proto
from engine.realtime.completion import CompletionResponse
from engine.realtime.llc_name import LLCSegmentName
from engine.spi import TableConfig
from engine.spi.table_name import REALTIME, split_table_name, table_name_with_type

TAG = ["LLCSegmentCompletionHandlers"]
log = logging.getLogger(__name__)


def controller_url() -> str:
    return settings.CONTROLLER_URL


def _is_leader(_table_with_type: str) -> bool:
    # Sprig has one lead controller for every table (Pinot may spread tables over leaders)
    from cluster import runtime

    current = runtime.current()
    return current is not None and current.is_leader


def _table_config(table_with_type: str) -> TableConfig:
    raw = split_table_name(table_with_type)[0]
    row = models.TableConfig.objects.filter(table_name=raw, table_type="REALTIME").first()
    if row is None:
        raise ValueError(f"table {table_with_type} does not exist")
    return TableConfig.from_json(row.config)


def _make_fsm(segment: str):
    table = table_name_with_type(LLCSegmentName.parse(segment).table, REALTIME)
    config = _table_config(table)

    def commit(_instance: str, end_offset: int, location: str) -> bool:
        following = finish_commit(
            store(), config, get_deep_store(), segment, end_offset, location, controller_url()
        )
        log.info("%s committed at offset %d; %s is CONSUMING", segment, end_offset, following)
        return True

    return fsm_from_zk(store(), table, segment, commit, controller_vip_url=controller_url())


_manager: SegmentCompletionManager | None = None
_manager_lock = threading.Lock()


def manager() -> SegmentCompletionManager:
    global _manager
    with _manager_lock:
        if _manager is None:
            _manager = SegmentCompletionManager(_make_fsm, _is_leader)
        return _manager


class CompletionParams(serializers.Serializer):
    name = serializers.CharField(help_text="the LLC segment name")
    instance = serializers.CharField(help_text="the calling server's instance id")
    streamPartitionMsgOffset = serializers.IntegerField(min_value=0)
    reason = serializers.CharField(required=False, allow_blank=True, default="")
    memoryUsedBytes = serializers.IntegerField(required=False)
    rowCount = serializers.IntegerField(required=False)
    buildTimeMillis = serializers.IntegerField(required=False)
    waitTimeMillis = serializers.IntegerField(required=False)
    segmentSizeBytes = serializers.IntegerField(required=False)


class CommitEndParams(CompletionParams):
    location = serializers.CharField(help_text="segmentLocation from segmentUpload")


class ExtendParams(CompletionParams):
    extraTimeSec = serializers.IntegerField(min_value=1)


def _answer(response: CompletionResponse) -> Response:
    return Response(response.to_json())


def _safely(call) -> Response:
    """An unexpected failure is FAILED (the server holds and retries), never a 500."""
    try:
        return _answer(call())
    except ValueError as exc:  # a name or segment the controller cannot use
        log.warning("segment completion call refused: %s", exc)
    except Exception:  # the protocol has no error status but FAILED
        log.exception("segment completion call failed")
    return _answer(CompletionResponse(proto.FAILED))


_DOC = dict(tags=TAG, responses={200: OpenApiTypes.OBJECT})


class SegmentConsumedView(APIView):
    @extend_schema(summary="A replica reached its end criteria", parameters=[CompletionParams],
                   operation_id="segmentConsumed", **_DOC)  # fmt: skip
    def get(self, request):
        p = query(request, CompletionParams)
        return _safely(lambda: manager().segment_consumed(
            p["name"], p["instance"], p["streamPartitionMsgOffset"], p["reason"]
        ))  # fmt: skip


class SegmentCommitStartView(APIView):
    @extend_schema(summary="The committer starts its commit", parameters=[CompletionParams],
                   operation_id="segmentCommitStart", **_DOC)  # fmt: skip
    def get(self, request):
        p = query(request, CompletionParams)
        return _safely(lambda: manager().segment_commit_start(
            p["name"], p["instance"], p["streamPartitionMsgOffset"]
        ))  # fmt: skip


class SegmentUploadView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(summary="The committer uploads the built segment (multipart tar.gz) to the "
                   "lead controller; accepted only from the segment's winner after "
                   "segmentCommitStart", parameters=[CompletionParams],
                   request={"multipart/form-data": OpenApiTypes.OBJECT},
                   operation_id="segmentUpload", **_DOC)  # fmt: skip
    def post(self, request):
        p = query(request, CompletionParams)
        if not request.FILES:
            return _answer(CompletionResponse(proto.FAILED))

        incoming = next(iter(request.FILES.values()))
        return _safely(lambda: manager().segment_upload(
            p["name"], p["instance"], p["streamPartitionMsgOffset"],
            lambda: receive_upload(get_deep_store(), p["name"], incoming),
        ))  # fmt: skip


class SegmentCommitEndView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(summary="The committer ends its commit: the controller writes ZooKeeper",
                   parameters=[CommitEndParams],
                   request={"multipart/form-data": OpenApiTypes.OBJECT},
                   operation_id="segmentCommitEndWithMetadata", **_DOC)  # fmt: skip
    def post(self, request):
        p = query(request, CommitEndParams)
        return _safely(lambda: manager().segment_commit_end(
            p["name"], p["instance"], p["streamPartitionMsgOffset"], p["location"]
        ))  # fmt: skip


class SegmentStoppedConsumingView(APIView):
    @extend_schema(summary="A replica gave up consuming: it goes OFFLINE in the ideal state",
                   parameters=[CompletionParams], operation_id="segmentStoppedConsuming",
                   **_DOC)  # fmt: skip
    def get(self, request):
        p = query(request, CompletionParams)

        def stopped():
            reply = manager().segment_stopped_consuming(
                p["name"], p["instance"], p["streamPartitionMsgOffset"], p["reason"]
            )
            if reply.status == proto.PROCESSED:
                _set_offline(p["name"], p["instance"])
            return reply

        return _safely(stopped)


def _set_offline(segment: str, instance: str) -> None:
    table = table_name_with_type(LLCSegmentName.parse(segment).table, REALTIME)

    def change(ideal: ResourceAssignment) -> ResourceAssignment:
        replicas = ideal.segments.get(segment)
        if replicas and replicas.get(instance) == CONSUMING:
            replicas[instance] = OFFLINE
        return ideal

    store().update_ideal_state(table, change)
    log.warning("%s stopped consuming %s: set OFFLINE in the ideal state", instance, segment)


class ExtendBuildTimeView(APIView):
    @extend_schema(summary="The committer needs more time to build", parameters=[ExtendParams],
                   operation_id="extendBuildTime", **_DOC)  # fmt: skip
    def get(self, request):
        p = query(request, ExtendParams)
        return _safely(lambda: manager().extend_build_time(
            p["name"], p["instance"], p["streamPartitionMsgOffset"], p["extraTimeSec"]
        ))  # fmt: skip

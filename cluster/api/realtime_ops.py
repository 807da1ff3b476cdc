"""Operating a REALTIME table at Pinot's paths (``PinotRealtimeTableResource``):

- ``GET /tables/{t}/consumingSegmentsInfo``: every consuming server's report, merged;
- ``POST /tables/{t}/pauseConsumption``, ``POST /tables/{t}/resumeConsumption``,
  ``GET /tables/{t}/pauseStatus``;
- ``POST /tables/{t}/forceCommit`` and ``GET /tables/forceCommitStatus/{jobId}``.

``{t}`` may carry ``_REALTIME`` or not. An unknown table is 404 ``Table t_REALTIME not
found!``; an OFFLINE table, a disabled table (for the changes) and bad parameters are 400.
The views are thin: the logic is in ``cluster.logic.realtime``.
"""

from __future__ import annotations

from contextlib import contextmanager

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster import models
from cluster.api.common import query, store
from cluster.logic.realtime import pause
from cluster.logic.realtime.consuming_info import collect_consuming_info
from cluster.logic.realtime.consumption_control import pause_table, resume_table
from cluster.logic.realtime.force_commit import MAX_BATCH, force_commit, force_commit_status
from controller.errors import BadRequest, NotFound
from engine.clusterstate import split_table_name
from engine.spi import TableConfig

TAG = ["Table"]


def realtime_table(table: str, action: str, *, enabled: bool = False) -> models.TableConfig:
    """The REALTIME table row for ``table``: 404 when there is none, 400 when ``table`` is an
    OFFLINE table, or (with ``enabled``) when the table is disabled."""
    raw, kind = split_table_name(table)
    row = models.TableConfig.objects.filter(table_name=raw, table_type="REALTIME").first()
    if kind == "OFFLINE" or (row is None and models.TableConfig.objects.filter(
            table_name=raw, table_type="OFFLINE").exists()):  # fmt: skip
        raise BadRequest(f"{action} applies to REALTIME tables only; {raw}_OFFLINE is an OFFLINE "
                         f"table" + ("" if row is None else f" (use {raw}_REALTIME)"))  # fmt: skip
    if row is None:
        raise NotFound(f"Table {raw}_REALTIME not found!")
    if enabled:
        ideal = store().ideal_state(row.name_with_type)
        if ideal is not None and not ideal.enabled:
            raise BadRequest(f"Table {row.name_with_type} is disabled; enable it first")
    return row


@contextmanager
def ideal_state_required():
    """A table whose ideal state is not written yet is a 404 (the logic raises LookupError)."""
    try:
        yield
    except LookupError as exc:
        raise NotFound(str(exc)) from exc


def batch_args(p: dict) -> dict:
    """BatchParams as the keyword arguments of the batched commits (pause, forceCommit)."""
    return {"batch_size": p["batchSize"], "interval_s": p["batchStatusCheckIntervalSec"],
            "timeout_s": p["batchStatusCheckTimeoutSec"]}  # fmt: skip


# --- parameters ------------------------------------------------------------------------------
class BatchParams(serializers.Serializer):
    batchSize = serializers.IntegerField(
        required=False, default=MAX_BATCH, min_value=1,
        help_text="segments force-committed at a time; the next batch once these committed",
    )  # fmt: skip
    batchStatusCheckIntervalSec = serializers.IntegerField(required=False, default=5, min_value=1)
    batchStatusCheckTimeoutSec = serializers.IntegerField(required=False, default=180, min_value=1)


class PauseParams(BatchParams):
    comment = serializers.CharField(required=False, allow_blank=True, max_length=1000)


class ResumeParams(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, max_length=1000)
    consumeFrom = serializers.CharField(
        required=False, allow_blank=True,
        help_text="lastConsumed (default), smallest or largest, in any case",
    )  # fmt: skip

    def validate_consumeFrom(self, value: str) -> str:
        if value and value.strip().lower() not in {c.lower() for c in pause.CONSUME_FROM}:
            raise serializers.ValidationError(
                f"must be one of {', '.join(pause.CONSUME_FROM)}, got '{value}'"
            )
        return value


class ForceCommitParams(BatchParams):
    partitions = serializers.CharField(
        required=False, allow_blank=True, help_text="comma-separated partition ids"
    )
    segments = serializers.CharField(
        required=False, allow_blank=True, help_text="comma-separated CONSUMING segment names"
    )


# --- responses -------------------------------------------------------------------------------
class PartitionOffsetInfo(serializers.Serializer):
    currentOffsetsMap = serializers.DictField(child=serializers.CharField())
    latestUpstreamOffsetMap = serializers.DictField(child=serializers.CharField())
    recordsLagMap = serializers.DictField(child=serializers.CharField())
    availabilityLagMsMap = serializers.DictField(child=serializers.CharField())


class ConsumerInfo(serializers.Serializer):
    serverName = serializers.CharField()
    consumerState = serializers.ChoiceField(choices=["CONSUMING", "NOT_CONSUMING"])
    lastConsumedTimestamp = serializers.IntegerField()
    partitionToOffsetMap = serializers.DictField(child=serializers.CharField(),
                                                 help_text="deprecated by Pinot")  # fmt: skip
    partitionOffsetInfo = PartitionOffsetInfo()
    rowsWithErrors = serializers.IntegerField(required=False, help_text="ours: messages skipped")


class StreamIngestionError(serializers.Serializer):
    topic = serializers.CharField()
    bootstrapServers = serializers.CharField(allow_null=True)
    error = serializers.CharField()
    message = serializers.CharField()
    firstSeenMs = serializers.IntegerField()
    lastCheckedMs = serializers.IntegerField()


class ConsumingSegmentsInfo(serializers.Serializer):
    _segmentToConsumingInfoMap = serializers.DictField(
        child=serializers.ListField(child=ConsumerInfo()), label="_segmentToConsumingInfoMap",
        help_text="CONSUMING segment -> one entry per server consuming it ([] when none)",
    )  # fmt: skip
    serversFailingToRespond = serializers.IntegerField()
    serversUnparsableRespond = serializers.IntegerField()
    serverErrors = serializers.DictField(child=serializers.CharField(), required=False,
                                         help_text="ours: server -> why it gave no answer")  # fmt: skip
    streamIngestionError = StreamIngestionError(required=False,
                                                help_text="ours: why the topic cannot be read")  # fmt: skip


class PauseStatusDetails(serializers.Serializer):
    pauseFlag = serializers.BooleanField()
    consumingSegments = serializers.ListField(child=serializers.CharField())
    reasonCode = serializers.CharField(required=False)
    comment = serializers.CharField(required=False)
    timestamp = serializers.CharField(required=False, help_text="Java Timestamp text")


class ForceCommitResponse(serializers.Serializer):
    forceCommitStatus = serializers.CharField()
    jobMetaZKWriteStatus = serializers.CharField()
    forceCommitJobId = serializers.CharField()
    forceCommittedSegments = serializers.ListField(child=serializers.CharField())


class ForceCommitStatus(serializers.Serializer):
    jobId = serializers.CharField()
    tableName = serializers.CharField()
    jobType = serializers.CharField()
    submissionTimeMs = serializers.CharField()
    segmentsForceCommitted = serializers.CharField(help_text="a JSON-encoded list, as Pinot's")
    segmentsYetToBeCommitted = serializers.ListField(child=serializers.CharField())
    numberOfSegmentsYetToBeCommitted = serializers.IntegerField()


# --- views -----------------------------------------------------------------------------------
class ConsumingSegmentsInfoView(APIView):
    @extend_schema(
        summary="Offsets and lags of the table's consuming segments, from every server",
        description="Asks each server holding a CONSUMING replica, in parallel with a "
        "timeout; a server that does not answer is counted in serversFailingToRespond and "
        "named in serverErrors. streamIngestionError says why the topic cannot be read.",
        tags=TAG, responses={200: ConsumingSegmentsInfo}, operation_id="getConsumingSegmentsInfo",
    )  # fmt: skip
    def get(self, request, table: str):
        row = realtime_table(table, "consumingSegmentsInfo")
        return Response(collect_consuming_info(store(), row.name_with_type))


class PauseConsumptionView(APIView):
    @extend_schema(
        summary="Pause consumption: the consuming segments commit and get no successors",
        tags=TAG, parameters=[PauseParams], request=None,
        responses={200: PauseStatusDetails}, operation_id="pauseConsumption",
    )  # fmt: skip
    def post(self, request, table: str):
        p = query(request, PauseParams)
        row = realtime_table(table, "pauseConsumption", enabled=True)
        with ideal_state_required():
            details = pause_table(store(), row.name_with_type, p.get("comment") or None,
                                  **batch_args(p))  # fmt: skip
        return Response(details)


class ResumeConsumptionView(APIView):
    @extend_schema(
        summary="Resume consumption: each partition gets a consuming segment again",
        description="consumeFrom lastConsumed (default) continues where each partition "
        "stopped; smallest or largest start the new segments at that stream offset.",
        tags=TAG, parameters=[ResumeParams], request=None,
        responses={200: PauseStatusDetails}, operation_id="resumeConsumption",
    )  # fmt: skip
    def post(self, request, table: str):
        p = query(request, ResumeParams)
        row = realtime_table(table, "resumeConsumption", enabled=True)
        config = TableConfig.from_json(row.config)
        with ideal_state_required():
            details = resume_table(store(), config, p.get("comment") or None,
                                   p.get("consumeFrom") or None)  # fmt: skip
        return Response(details)


class PauseStatusView(APIView):
    @extend_schema(summary="Whether consumption is paused, and the segments still consuming",
                   tags=TAG, responses={200: PauseStatusDetails},
                   operation_id="getPauseStatus")  # fmt: skip
    def get(self, request, table: str):
        row = realtime_table(table, "pauseStatus")
        with ideal_state_required():
            return Response(pause.pause_status(store(), row.name_with_type))


class ForceCommitView(APIView):
    @extend_schema(
        summary="Commit consuming segments now (all, or some partitions or segments)",
        description="partitions and segments are comma-separated and exclusive. Follow the "
        "job with GET /tables/forceCommitStatus/{jobId}.",
        tags=TAG, parameters=[ForceCommitParams], request=None,
        responses={200: ForceCommitResponse}, operation_id="forceCommit",
    )  # fmt: skip
    def post(self, request, table: str):
        p = query(request, ForceCommitParams)
        row = realtime_table(table, "forceCommit", enabled=True)
        return Response(force_commit(store(), row.name_with_type, partitions=p.get("partitions"),
                                     segments=p.get("segments"), **batch_args(p)))  # fmt: skip


class ForceCommitStatusView(APIView):
    @extend_schema(summary="Progress of a force-commit job", tags=TAG,
                   responses={200: ForceCommitStatus},
                   operation_id="getForceCommitJobStatus")  # fmt: skip
    def get(self, request, job_id: str):
        return Response(force_commit_status(store(), job_id))

"""`GET /consumerGroups`, `GET /consumerGroups/{group}` and its lag history by the minute."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import query
from controller.errors import NotFound, ServiceUnavailable
from engine.common.clock import now_ms
from monitoring.errors import KafkaUnavailableError
from monitoring.history import MINUTE_MS
from monitoring.logic import group_view
from monitoring.logic.lag_source import lag_per_minute, reader

TAG = ["Consumer lag"]


def _kafka(call, *args):
    try:
        return call(reader(), *args)
    except KafkaUnavailableError as exc:
        raise ServiceUnavailable(str(exc)) from exc


class ConsumerGroupsView(APIView):
    @extend_schema(
        summary="List the consumer groups with state, members, total lag and Burrow status",
        operation_id="listConsumerGroups",
        description="Live from the Kafka cluster the consumer_offsets table's stream reads; "
        "the status is Burrow's, evaluated over the samples stored in that table (null with "
        "historyError when they cannot be read). Lag is null when no partition has a commit.",
        tags=TAG,
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        return Response({"groups": _kafka(group_view.list_groups)})


class ConsumerGroupView(APIView):
    @extend_schema(
        summary="Describe a consumer group: each partition's committed, end offset, lag, status",
        operation_id="describeConsumerGroup",
        tags=TAG,
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, group: str):
        view = _kafka(group_view.describe_group, group)
        if view is None:
            raise NotFound(f"Consumer group '{group}' does not exist.")
        return Response(view)


class HistoryParams(serializers.Serializer):
    minutes = serializers.IntegerField(required=False, default=60, min_value=1,
                                       max_value=7 * 24 * 60)  # fmt: skip


class ConsumerGroupLagHistoryView(APIView):
    @extend_schema(
        summary="A consumer group's lag per partition per minute, from the consumer_offsets table",
        description="The largest sampled lag of each partition in each minute of the last "
        "`minutes` minutes; `minute` is the minute's start in epoch ms. Lag is null in a "
        "minute whose samples had no commit.",
        tags=TAG,
        parameters=[HistoryParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, group: str):
        minutes = query(request, HistoryParams)["minutes"]
        until = now_ms()
        since = (until // MINUTE_MS - minutes + 1) * MINUTE_MS
        try:
            series = lag_per_minute(group, since, until + 1)
        except ValueError as exc:
            raise ServiceUnavailable(f"lag history unavailable: {exc}") from exc
        return Response({"group": group, "sinceMs": since, "untilMs": until, "series": series})

"""Burrow's HTTP API v3 for consumer lag, so dashboards and alerting built for Burrow work
unchanged: `/v3/kafka`, `/v3/kafka/{cluster}/consumer`, and a group's `/status` (only the
partitions that are not OK) and `/lag` (every partition). Bodies and status codes are
Burrow's: `{"error","message",...,"request":{"url","host"}}`; an unknown cluster or group is
404, with `status.status` NOTFOUND on the status paths and `"error": true` on the list."""

from __future__ import annotations

import socket

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from controller.errors import ServiceUnavailable
from engine.common.clock import now_ms
from monitoring.errors import KafkaUnavailableError
from monitoring.evaluation.burrow import Status, group_status
from monitoring.logic.burrow_status import cluster_name, consumer_group_status, status_json
from monitoring.logic.lag_source import reader

TAG = ["Consumer lag (Burrow API)"]


def _request_info(request) -> dict:
    # Burrow reports the path asked for and the name of the host that answered
    return {"url": request.get_full_path(), "host": socket.gethostname()}


def _error(request, status: int, message: str) -> Response:
    return Response({"error": True, "message": message, "request": _request_info(request)},
                    status=status)  # fmt: skip


def _clusters() -> list[str]:
    """The watched cluster, once the consumer_offsets table names it; none before."""
    try:
        reader()
    except ServiceUnavailable:
        return []
    return [cluster_name()]


class BurrowClustersView(APIView):
    @extend_schema(summary="Burrow: list the Kafka clusters", operation_id="burrowClusters",
                   tags=TAG, responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        return Response({"error": False, "message": "cluster list returned",
                         "clusters": _clusters(), "request": _request_info(request)})  # fmt: skip


class BurrowConsumersView(APIView):
    @extend_schema(summary="Burrow: list a cluster's consumer groups",
                   operation_id="burrowConsumers", tags=TAG,
                   responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request, cluster: str):
        if cluster not in _clusters():
            return _error(request, 404, "cluster not found")
        try:
            groups = sorted(listing.group_id for listing in reader().list_groups())
        except KafkaUnavailableError as exc:
            return _error(request, 503, str(exc))
        return Response({"error": False, "message": "consumer list returned",
                         "consumers": groups, "request": _request_info(request)})  # fmt: skip


class _BurrowStatusView(APIView):
    show_all = False

    def get(self, request, cluster: str, group: str):
        if cluster in _clusters():
            try:
                status, rows = consumer_group_status(reader(), group, now_ms())
            except KafkaUnavailableError as exc:
                return _error(request, 503, str(exc))
        else:
            status, rows = group_status(group, None), {}
        body = {"error": False, "message": "consumer status returned",
                "status": status_json(cluster, status, rows, self.show_all),
                "request": _request_info(request)}  # fmt: skip
        return Response(body, status=404 if status.status == Status.NOTFOUND else 200)


class BurrowStatusView(_BurrowStatusView):
    @extend_schema(summary="Burrow: a group's status with the partitions that are not OK",
                   operation_id="burrowConsumerStatus", tags=TAG,
                   description="Burrow's rules (OK, WARN, ERR, STOP, STALL, REWIND) over the "
                   "commits stored in the consumer_offsets table and Kafka's answer now.",
                   responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request, cluster: str, group: str):
        return super().get(request, cluster, group)


class BurrowLagView(_BurrowStatusView):
    show_all = True

    @extend_schema(summary="Burrow: a group's status with every partition",
                   operation_id="burrowConsumerLag", tags=TAG,
                   responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request, cluster: str, group: str):
        return super().get(request, cluster, group)

"""``/queries``, ``/query/{brokerId}/{queryId}``, ``/clientQuery/{clientQueryId}``: running
queries on every broker, and their cancellation (Pinot's ``PinotRunningQueryResource``)."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import query, store
from cluster.api.sql import broker_headers
from cluster.logic.running_queries import cancel_client_query, cancel_query, running_queries

TAG = ["Query"]


class ListParams(serializers.Serializer):
    timeoutMs = serializers.IntegerField(required=False, default=3000, min_value=1)


class CancelParams(ListParams):
    verbose = serializers.BooleanField(required=False, default=False)


class RunningQueriesView(APIView):
    @extend_schema(
        summary="Running queries on every live broker",
        description="{brokerInstanceId: {requestId: sql}}; brokers that do not answer within "
        "timeoutMs are left out.",
        tags=TAG,
        parameters=[ListParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        timeout_ms = query(request, ListParams)["timeoutMs"]
        return Response(running_queries(store(), timeout_ms, broker_headers(request)))


class CancelQueryView(APIView):
    @extend_schema(
        summary="Cancel a running query on one broker",
        description="Forwarded to the broker's DELETE /query/{queryId}: its servers stop the "
        "query's work. 200 text 'Cancelled query: <id>', 404 when it is not running.",
        tags=TAG,
        parameters=[CancelParams],
        responses={200: OpenApiTypes.STR},
    )
    def delete(self, request, broker_id: str, query_id: str):
        params = query(request, CancelParams)
        status, text = cancel_query(
            store(), broker_id, query_id, client=False,
            timeout_ms=params["timeoutMs"], verbose=params["verbose"],
            headers=broker_headers(request),
        )  # fmt: skip
        return HttpResponse(text, status=status, content_type=_content_type(status))


class CancelClientQueryView(APIView):
    @extend_schema(
        summary="Cancel a running query by its clientQueryId",
        description="Tries every live broker; 404 when no broker runs the query.",
        tags=TAG,
        parameters=[CancelParams],
        responses={200: OpenApiTypes.STR},
    )
    def delete(self, request, client_query_id: str):
        params = query(request, CancelParams)
        status, text = cancel_client_query(
            store(), client_query_id, timeout_ms=params["timeoutMs"], verbose=params["verbose"],
            headers=broker_headers(request),
        )  # fmt: skip
        return HttpResponse(text, status=status, content_type=_content_type(status))


def _content_type(status: int) -> str:
    # a broker's error is Pinot's JSON {"code", "error"}; its success a line of text
    return "text/plain; charset=utf-8" if status == 200 else "application/json"

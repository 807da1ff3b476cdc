"""``POST /sql`` and ``GET /sql``: the query console's proxy to a broker of the table."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.access import authorize_table
from cluster.api.common import store
from cluster.logic.forward_query import forward_query, own_broker_headers, query_tables
from engine.runtime.access import AccessType

TAG = ["Query"]


class SqlSerializer(serializers.Serializer):
    sql = serializers.CharField()
    trace = serializers.BooleanField(required=False, default=False)
    queryOptions = serializers.CharField(required=False, allow_blank=True,
                                         help_text="k=v;k2=v2")  # fmt: skip


class SqlView(APIView):
    access_types = {"POST": AccessType.READ}  # a query reads, whatever its method

    @extend_schema(
        summary="Run a SQL query through a broker of the table",
        description="Forwarded to a live broker tagged for the table's broker tenant. With no "
        "live broker: 503 with a Pinot exception (errorCode 410).",
        tags=TAG,
        request=SqlSerializer,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        body = SqlSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self._forward(request, body.validated_data)

    @extend_schema(summary="Run a SQL query (GET form)", tags=TAG, parameters=[SqlSerializer],
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        body = SqlSerializer(data=request.query_params)
        body.is_valid(raise_exception=True)
        return self._forward(request, body.validated_data)

    def _forward(self, request, data: dict) -> Response:
        payload = {"sql": data["sql"], "trace": data.get("trace", False)}
        if data.get("queryOptions"):
            payload["queryOptions"] = data["queryOptions"]
        for table in query_tables(data["sql"]):  # the broker checks again with its principals
            authorize_table(request, table, AccessType.READ)
        status, response = forward_query(store(), payload, headers=broker_headers(request))
        return Response(response, status=status)


def broker_headers(request) -> dict[str, str]:
    """The credentials the query goes to the broker with: the controller's own
    (``controller.broker.auth.token``), else the caller's Basic header, so a script's query
    reaches an authenticating broker as its own."""
    own = own_broker_headers()
    caller = request.META.get("HTTP_AUTHORIZATION")
    return own or ({"Authorization": caller} if caller else {})

"""``/tableConfigs``: schema plus table configs as one document."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster import models
from cluster.api.access import authorize_table
from cluster.api.common import json_body, store
from cluster.api.openapi import STRING_LIST
from cluster.logic.table_configs import (
    delete_table_configs,
    get_table_configs,
    save_table_configs,
)
from engine.runtime.access import AccessType
from engine.spi.secrets import mask_secrets

TAG = ["Table"]


class TableConfigsListView(APIView):
    manual_authorization = ("POST",)  # the table's name is in the body

    @extend_schema(summary="List tables (tableConfigs)", operation_id="listTableConfigs",
                   tags=TAG, responses={200: STRING_LIST})  # fmt: skip
    def get(self, request):
        names = models.TableConfig.objects.values_list("table_name", flat=True)
        return Response(sorted(set(names)))

    @extend_schema(
        summary="Create a schema and its table configs together",
        description='Body: `{"tableName", "schema", "offline", "realtime"}`.',
        tags=TAG,
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        body = json_body(request)
        authorize_table(request, str(body.get("tableName") or "") or None, AccessType.CREATE)
        return Response(save_table_configs(store(), body, update=False))


class TableConfigsDetailView(APIView):
    @extend_schema(summary="A table's schema and configs", tags=TAG,
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request, table: str):
        return Response(mask_secrets(get_table_configs(table)))

    @extend_schema(summary="Update a table's schema and configs", tags=TAG,
                   request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def put(self, request, table: str):
        return Response(save_table_configs(store(), json_body(request), update=True))

    @extend_schema(summary="Delete a table (both types) and its schema", tags=TAG,
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def delete(self, request, table: str):
        return Response(delete_table_configs(store(), table))

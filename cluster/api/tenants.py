"""``/tenants``: create (retagging untagged instances), list, get, tables, delete."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import query, store
from cluster.logic.tenants import (
    create_tenant,
    delete_tenant,
    list_tenants,
    tenant_instances,
    tenant_tables,
    update_tenant,
)

TAG = ["Tenant"]


class TenantSerializer(serializers.Serializer):
    tenantRole = serializers.ChoiceField(["SERVER", "BROKER", "server", "broker"])
    tenantName = serializers.RegexField(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=200)
    numberOfInstances = serializers.IntegerField(min_value=1)
    offlineInstances = serializers.IntegerField(min_value=0, required=False)
    realtimeInstances = serializers.IntegerField(min_value=0, required=False)


class TypeParam(serializers.Serializer):
    type = serializers.ChoiceField(["server", "broker", "SERVER", "BROKER"], required=False)


class TenantListView(APIView):
    @extend_schema(
        summary="List tenants",
        operation_id="listTenants",
        description='`{"SERVER_TENANTS": [...], "BROKER_TENANTS": [...]}`',
        tags=TAG,
        parameters=[TypeParam],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        params = query(request, TypeParam)
        return Response(list_tenants(store(), params.get("type")))

    @extend_schema(
        summary="Create a tenant",
        description="Retags `numberOfInstances` untagged instances (server_untagged or "
        "broker_untagged) with the tenant's tags.",
        tags=TAG,
        request=TenantSerializer,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        body = TenantSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(create_tenant(store(), dict(body.validated_data)))

    @extend_schema(
        summary="Update a tenant",
        description="Grows it from untagged instances or shrinks it (members go back to "
        "untagged), then retags its members.",
        tags=TAG,
        request=TenantSerializer,
        responses={200: OpenApiTypes.OBJECT},
    )
    def put(self, request):
        body = TenantSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(update_tenant(store(), dict(body.validated_data)))


class TenantDetailView(APIView):
    @extend_schema(
        summary="A tenant's instances",
        tags=TAG,
        parameters=[TypeParam],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, name: str):
        params = query(request, TypeParam)
        return Response(tenant_instances(store(), name, params.get("type")))

    @extend_schema(
        summary="Delete a tenant",
        description="Its instances go back to untagged. Refused while a table uses it.",
        tags=TAG,
        parameters=[TypeParam],
        responses={200: OpenApiTypes.OBJECT},
    )
    def delete(self, request, name: str):
        params = query(request, TypeParam)
        return Response(delete_tenant(store(), name, params.get("type") or "SERVER"))


class TenantTablesView(APIView):
    @extend_schema(summary="A tenant's tables", tags=TAG, responses={200: OpenApiTypes.OBJECT})
    def get(self, request, name: str):
        return Response(tenant_tables(name))

"""``/instances``: list, get, register, update, retag, enable/disable and drop."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import query, store
from cluster.logic.manage_instances import (
    drop_instance,
    get_instance,
    register_instance,
    set_enabled,
    update_tags,
)

TAG = ["Instance"]


class InstanceSerializer(serializers.Serializer):
    host = serializers.CharField(max_length=255)
    port = serializers.IntegerField(min_value=1, max_value=65535)
    type = serializers.ChoiceField(
        ["SERVER", "BROKER", "MINION", "CONTROLLER", "server", "broker", "minion", "controller"]
    )
    tags = serializers.ListField(child=serializers.CharField(), required=False)
    grpcPort = serializers.IntegerField(required=False, default=-1)
    adminPort = serializers.IntegerField(required=False, default=-1)
    queryServicePort = serializers.IntegerField(required=False, default=-1)


class UpdateParam(serializers.Serializer):
    update = serializers.BooleanField(required=False, default=False)


class TagsParam(serializers.Serializer):
    tags = serializers.CharField(help_text="comma-separated tags")


class StateParam(serializers.Serializer):
    state = serializers.ChoiceField(["enable", "disable", "ENABLE", "DISABLE"])


class InstanceListView(APIView):
    @extend_schema(
        summary="List instance ids",
        operation_id="listInstances",
        tags=TAG,
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        return Response({"instances": store().instance_ids()})

    @extend_schema(
        summary="Register an instance",
        description="Without tags a server/broker joins DefaultTenant (tenant isolation on).",
        tags=TAG,
        request=InstanceSerializer,
        parameters=[UpdateParam],
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        params = query(request, UpdateParam)
        body = InstanceSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(
            register_instance(store(), dict(body.validated_data), update=params["update"])
        )


class InstanceDetailView(APIView):
    @extend_schema(summary="An instance's config", tags=TAG, responses={200: OpenApiTypes.OBJECT})
    def get(self, request, instance: str):
        cluster = store()
        out = get_instance(cluster, instance).to_pinot_json()
        out["alive"] = instance in cluster.live_instances()
        return Response(out)

    @extend_schema(
        summary="Update an instance",
        tags=TAG,
        request=InstanceSerializer,
        responses={200: OpenApiTypes.OBJECT},
    )
    def put(self, request, instance: str):
        get_instance(store(), instance)
        body = InstanceSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(register_instance(store(), dict(body.validated_data), update=True))

    @extend_schema(
        summary="Drop an instance",
        description="Refused (409) while it is live or holds segments.",
        tags=TAG,
        responses={200: OpenApiTypes.OBJECT},
    )
    def delete(self, request, instance: str):
        return Response(drop_instance(store(), instance))


class InstanceTagsView(APIView):
    @extend_schema(
        summary="Replace an instance's tags",
        tags=TAG,
        parameters=[TagsParam],
        request=None,
        responses={200: OpenApiTypes.OBJECT},
    )
    def put(self, request, instance: str):
        params = query(request, TagsParam)
        tags = [t.strip() for t in params["tags"].split(",") if t.strip()]
        return Response(update_tags(store(), instance, tags))


class InstanceStateView(APIView):
    @extend_schema(
        summary="Enable or disable an instance",
        tags=TAG,
        parameters=[StateParam],
        request=None,
        responses={200: OpenApiTypes.OBJECT},
    )
    def put(self, request, instance: str):
        params = query(request, StateParam)
        return Response(set_enabled(store(), instance, params["state"].lower() == "enable"))

    post = put

"""``GET /audit``: the controller's change history, newest first (not a Pinot endpoint)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster import models
from cluster.api.common import query


class AuditParams(serializers.Serializer):
    resourceType = serializers.CharField(required=False, allow_blank=True)
    resourceName = serializers.CharField(required=False, allow_blank=True)
    limit = serializers.IntegerField(required=False, default=100, min_value=1, max_value=1000)


class AuditEventSerializer(serializers.Serializer):
    time = serializers.DateTimeField(help_text="when the change was made (ISO 8601, UTC)")
    action = serializers.CharField(help_text="e.g. table.create, segment.upload")
    resourceType = serializers.CharField()
    resourceName = serializers.CharField()
    detail = serializers.DictField(help_text="what the change carried, by action")


class AuditView(APIView):
    @extend_schema(
        summary="The controller's change history",
        description="One entry per successful change, newest first; filter by resourceType "
        "(schema, table, segment, instance, tenant, cluster, znode) and resourceName.",
        tags=["Cluster"],
        parameters=[AuditParams],
        responses={200: AuditEventSerializer(many=True)},
    )
    def get(self, request):
        params = query(request, AuditParams)
        events = models.AuditEvent.objects.order_by("-created_at", "-id")
        if params.get("resourceType"):
            events = events.filter(resource_type=params["resourceType"])
        if params.get("resourceName"):
            events = events.filter(resource_name=params["resourceName"])
        return Response([
            {"time": e.created_at.isoformat(), "action": e.action, "resourceType": e.resource_type,
             "resourceName": e.resource_name, "detail": e.detail}
            for e in events[: params["limit"]]
        ])  # fmt: skip

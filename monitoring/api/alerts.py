"""Lag alert rules (create, list, delete) and the firing/resolved events they recorded."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import query
from monitoring.logic import alert_rules
from monitoring.models import LagAlertEvent, LagAlertRule

TAG = ["Consumer lag"]


class RuleSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    groupPattern = serializers.CharField(max_length=255, help_text="a group or a glob: billing-*")
    condition = serializers.CharField(
        max_length=200,
        help_text="'status >= WARN', 'lag > 1000', 'time lag > 60s' or 'no progress for 2m'",
    )
    duration = serializers.CharField(required=False, default="0", max_length=50,
                                     help_text="how long it must hold: 90, 90s, 5m, 1h")  # fmt: skip
    webhookUrl = serializers.URLField(required=False, allow_blank=True, default="",
                                      help_text="firing/resolved events are POSTed here")  # fmt: skip


class AlertRulesView(APIView):
    @extend_schema(summary="List the consumer-lag alert rules", tags=TAG,
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        return Response({"rules": [alert_rules.rule_json(r) for r in LagAlertRule.objects.all()]})

    @extend_schema(
        summary="Create a consumer-lag alert rule",
        description="Evaluated on the lead controller by the ConsumerLagAlertEvaluator "
        "periodic task over the samples in the consumer_offsets table. 400 names what cannot "
        "be read; 409 when the name is taken.",
        tags=TAG,
        request=RuleSerializer,
        responses={201: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        body = RuleSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        rule = alert_rules.create_rule(
            data["name"], data["groupPattern"], data["condition"], data["duration"],
            data["webhookUrl"],
        )  # fmt: skip
        return Response(alert_rules.rule_json(rule), status=status.HTTP_201_CREATED)


class AlertRuleView(APIView):
    @extend_schema(summary="Delete a consumer-lag alert rule (its events are kept)", tags=TAG,
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def delete(self, request, name: str):
        alert_rules.delete_rule(name)
        return Response({"status": f"Alert rule {name} deleted"})


class EventParams(serializers.Serializer):
    limit = serializers.IntegerField(required=False, default=100, min_value=1, max_value=10_000)
    group = serializers.CharField(required=False, allow_blank=True)


class AlertEventsView(APIView):
    @extend_schema(summary="Recent firing and resolved lag alerts, newest first", tags=TAG,
                   parameters=[EventParams], responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        params = query(request, EventParams)
        events = LagAlertEvent.objects.all()
        if params.get("group"):
            events = events.filter(group=params["group"])
        return Response({"events": [e.to_json() for e in events[: params["limit"]]]})

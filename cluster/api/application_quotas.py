"""Pinot's application query quotas: ``GET /applicationQuotas``,
``GET /applicationQuotas/{app}`` and ``POST /applicationQuotas/{app}?maxQueriesPerSecond=``
(empty removes it). Kept where Pinot keeps them, ``PROPERTYSTORE/CONFIGS/CLUSTER/
applicationQuotas``; brokers read them from there (``engine.broker.quotas``) and share each
among the live brokers. The cluster config ``applicationMaxQueriesPerSecond`` is the quota of
every other application that names itself."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import query, store
from cluster.logic import audit
from controller.errors import BadRequest
from engine.broker.quotas import APPLICATION_DEFAULT_KEY, parse_qps
from engine.clusterstate import ZNRecord

TAG = ["Quota"]


def _quotas() -> dict[str, float]:
    record, _ = store().get_record(store().paths.application_quotas)
    quotas = {app: parse_qps(v) for app, v in (record.simple_fields if record else {}).items()}
    return {app: qps for app, qps in quotas.items() if qps is not None}


class ApplicationQuotasView(APIView):
    @extend_schema(summary="Every application's query quota (queries per second)", tags=TAG,
                   operation_id="applicationQuotas_list",
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        return Response(_quotas())


class QuotaParams(serializers.Serializer):
    maxQueriesPerSecond = serializers.CharField(required=False, allow_blank=True)


class ApplicationQuotaView(APIView):
    @extend_schema(summary="One application's query quota (its own, else the cluster default)",
                   description="204 (no body, as Pinot answers) when neither is set.",
                   operation_id="applicationQuotas_get", tags=TAG, responses={200: OpenApiTypes.NUMBER, 204: None})  # fmt: skip
    def get(self, request, app: str):
        own = _quotas().get(app)
        if own is None:
            own = parse_qps(store().cluster_config().get(APPLICATION_DEFAULT_KEY))
        return Response(own) if own is not None else Response(status=204)

    @extend_schema(summary="Set (or, empty, remove) an application's query quota", tags=TAG,
                   operation_id="applicationQuotas_set", request=None,
                   parameters=[QuotaParams], responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def post(self, request, app: str):
        raw = (query(request, QuotaParams).get("maxQueriesPerSecond") or "").strip()
        qps = parse_qps(raw) if raw else None
        if raw and qps is None:
            raise BadRequest(f"maxQueriesPerSecond must be a positive number, got {raw!r}")
        cluster = store()

        def change(record: ZNRecord | None) -> ZNRecord:
            record = record or ZNRecord(id="applicationQuotas")
            if qps is None:
                record.simple_fields.pop(app, None)
            else:
                record.simple_fields[app] = str(qps)
            return record

        cluster.update(cluster.paths.application_quotas, change)
        audit.record("application.quota", "application", app, maxQueriesPerSecond=qps)
        what = f"set to {qps}" if qps is not None else "removed"
        return Response({"status": f"Query quota for application {app} {what} "
                         f"(cluster {settings.CLUSTER_NAME})"})  # fmt: skip

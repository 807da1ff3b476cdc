"""``/cluster/info`` and ``/cluster/configs``."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import json_body, store
from cluster.logic import audit
from controller.errors import NotFound

TAG = ["Cluster"]


class ClusterInfoView(APIView):
    @extend_schema(summary="Cluster name and leading controller", tags=TAG,
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        return Response(
            {"clusterName": settings.CLUSTER_NAME, "leaderController": store().controller_leader()}
        )


class ClusterConfigsView(APIView):
    @extend_schema(summary="Cluster configs", tags=TAG, responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        return Response(store().cluster_config())

    @extend_schema(
        summary="Set cluster configs",
        description='Body: `{"key": "value", ...}`, e.g. `{"MergeRollupTask.timeoutMs": "600000"}`.',
        tags=TAG,
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        body = json_body(request)
        store().update_cluster_config({str(k): str(v) for k, v in body.items()})
        audit.record("cluster.config", "cluster", settings.CLUSTER_NAME, keys=sorted(body))
        return Response({"status": "Updated cluster config."})


class ClusterConfigDeleteView(APIView):
    @extend_schema(summary="Delete a cluster config", tags=TAG,
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def delete(self, request, key: str):
        cluster = store()
        if key not in cluster.cluster_config():
            raise NotFound(f"Cluster config {key} not found")
        cluster.update_cluster_config({}, [key])
        audit.record("cluster.config.delete", "cluster", settings.CLUSTER_NAME, key=key)
        return Response({"status": f"Deleted cluster config: {key}"})

"""``POST /tables/{t}/rebalance`` and ``GET /rebalanceStatus/{jobId}``."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import TableTypeParam, query, store
from cluster.logic.cluster_view import table_row
from cluster.logic.rebalance_table import cancel_rebalance, rebalance_status, rebalance_table

TAG = ["Table"]


class RebalanceParams(TableTypeParam):
    dryRun = serializers.BooleanField(required=False, default=False)
    preChecks = serializers.BooleanField(required=False, default=False)
    reassignInstances = serializers.BooleanField(required=False, default=True)
    includeConsuming = serializers.BooleanField(required=False, default=True)
    downtime = serializers.BooleanField(required=False, default=False)
    minAvailableReplicas = serializers.IntegerField(required=False, default=-1)
    bestEfforts = serializers.BooleanField(required=False, default=False)
    lowDiskMode = serializers.BooleanField(required=False, default=False)
    minimizeDataMovement = serializers.BooleanField(required=False, default=True)


class RebalanceView(APIView):
    @extend_schema(
        summary="Rebalance a table's segments over its tenant's servers",
        description="Computes the balanced target and, unless dryRun, applies it as a job: "
        "without downtime new replicas are added first and old ones removed only once the "
        "new ones are ONLINE in the external view. Adding replicas never lowers availability, "
        "so minAvailableReplicas is always met. includeConsuming=false keeps CONSUMING "
        "segments in place. reassignInstances, bestEfforts, lowDiskMode and "
        "minimizeDataMovement are accepted; moves are always minimal.",
        tags=TAG,
        parameters=[RebalanceParams],
        request=None,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request, table: str):
        params = query(request, RebalanceParams)
        return Response(
            rebalance_table(
                store(),
                table,
                params.get("type"),
                dry_run=params["dryRun"],
                downtime=params["downtime"],
                include_consuming=params["includeConsuming"],
            )
        )

    @extend_schema(
        summary="Cancel a table's running rebalance",
        tags=TAG,
        parameters=[TableTypeParam],
        responses={200: OpenApiTypes.OBJECT},
    )
    def delete(self, request, table: str):
        params = query(request, TableTypeParam)
        row = table_row(table, params.get("type"))
        return Response(cancel_rebalance(store(), row.name_with_type))


class RebalanceStatusView(APIView):
    @extend_schema(summary="Progress of a rebalance job", tags=TAG,
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request, job_id: str):
        return Response(rebalance_status(store(), job_id))

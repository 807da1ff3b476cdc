"""Upsert and dedup tables as the servers see them:

- ``GET /tables/{t}/validDocIdsMetadata`` (Pinot's path and parameters): each ONLINE
  replica's valid and invalid doc counts per completed segment, a flat list; 501 for an
  OFFLINE table, as Pinot answers;
- ``GET /tables/{t}/upsertSummary`` (ours, what the console's table page shows): the
  effective upsert/dedup config, primary keys per partition and server, and the segments
  UpsertCompactionTask's thresholds make due.

The logic is in ``cluster.logic.upsert_status``.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import query, store
from cluster.api.realtime_ops import realtime_table
from cluster.logic.upsert_status import BATCH_SIZE, upsert_summary, valid_docs_metadata
from engine.clusterstate import split_table_name
from engine.spi.upsert_compaction import VALID_DOC_IDS_TYPES

TAG = ["Table"]


class ValidDocIdsParams(serializers.Serializer):
    type = serializers.CharField(required=False, allow_blank=True, help_text="REALTIME")
    segmentNames = serializers.ListField(
        child=serializers.CharField(), required=False,
        help_text="repeat, or separate by commas; all completed segments when absent",
    )  # fmt: skip
    validDocIdsType = serializers.ChoiceField(choices=VALID_DOC_IDS_TYPES, required=False,
                                              default="SNAPSHOT")  # fmt: skip
    serverRequestBatchSize = serializers.IntegerField(required=False, min_value=1,
                                                      default=BATCH_SIZE)  # fmt: skip


class ValidDocIdsMetadataView(APIView):
    @extend_schema(
        summary="Valid and invalid docs of each completed segment, from every replica",
        description="Pinot's controller endpoint: one entry per ONLINE replica "
        "(segmentName, totalDocs, totalValidDocs, totalInvalidDocs, segmentCrc, "
        "validDocIdsType, serverStatus, instanceId, segmentSizeInBytes, "
        "segmentCreationTimeMillis). Consuming segments have none. 501 for OFFLINE tables.",
        tags=TAG, parameters=[ValidDocIdsParams], responses={200: OpenApiTypes.OBJECT},
        operation_id="getTableValidDocIdsMetadata",
    )  # fmt: skip
    def get(self, request, table: str):
        p = query(request, ValidDocIdsParams)
        _raw, kind = split_table_name(table)
        if kind == "OFFLINE" or (p.get("type") or "").upper() == "OFFLINE":
            return Response(
                {"code": 501, "error": "validDocIdsMetadata is for REALTIME upsert tables"},
                status=501,
            )
        row = realtime_table(table, "validDocIdsMetadata")
        names = [n.strip() for v in p.get("segmentNames") or [] for n in v.split(",") if n.strip()]
        entries, _errors = valid_docs_metadata(
            store(), row.name_with_type, names or None, p["validDocIdsType"],
            p["serverRequestBatchSize"],
        )  # fmt: skip
        return Response(entries)


class UpsertSummaryView(APIView):
    @extend_schema(
        summary="An upsert or dedup table's mode, primary keys and compaction candidates",
        description='`{"tableName", "kind": "upsert"|"dedup"|null, "config": the section with '
        'Pinot\'s defaults, "primaryKeyCounts": {partition: {server: keys}}, "compaction": '
        '{"taskConfigured", "validDocIdsType", "invalidRecordsThresholdPercent", '
        '"invalidRecordsThresholdCount", "segments": [{"segmentName", "partition", "servers", '
        '"totalDocs", "totalValidDocs", "totalInvalidDocs", "invalidPercent", "replicasAgree", '
        '"verdict": COMPACT|DELETE|KEEP|null}]} (upsert only), "serverErrors"}`. Without an '
        "UpsertCompactionTask the thresholds are Pinot's defaults and the counts IN_MEMORY "
        "unless snapshots are enabled.",
        tags=TAG, responses={200: OpenApiTypes.OBJECT}, operation_id="getUpsertSummary",
    )  # fmt: skip
    def get(self, request, table: str):
        row = realtime_table(table, "upsertSummary")
        return Response(upsert_summary(store(), row.name_with_type, row.config))

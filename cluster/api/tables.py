"""``/tables``: list, create, get, update, delete and validate table configs; the table's
schema and its enabled/disabled state."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster import models
from cluster.api.access import authorize_table
from cluster.api.common import TableTypeParam, json_body, query, store
from cluster.logic.add_table import add_table, update_table
from cluster.logic.cluster_view import parsed, table_row
from cluster.logic.delete_table import delete_table
from cluster.logic.instance_partitions import placement_for
from cluster.logic.publish import publish_broker_resource
from cluster.logic.table_state import set_table_state, table_state
from cluster.logic.validate_config import parse_table_config
from controller.errors import NotFound
from engine.clusterstate import split_table_name
from engine.runtime.access import AccessType
from engine.spi.secrets import mask_secrets

TAG = ["Table"]


class ListParams(TableTypeParam):
    taskType = serializers.CharField(required=False, allow_blank=True)
    sortType = serializers.ChoiceField(["name", "creationTime", "lastModifiedTime"], required=False)
    sortAsc = serializers.BooleanField(required=False, default=True)


class DeleteParams(TableTypeParam):
    retention = serializers.CharField(
        required=False, allow_blank=True, help_text="e.g. 0d to delete segments at once"
    )


class StateParams(TableTypeParam):
    state = serializers.ChoiceField(["enable", "disable", "ENABLE", "DISABLE"], required=False)


class TableListView(APIView):
    manual_authorization = ("POST",)  # the table's name is in the body

    @extend_schema(
        summary="List tables",
        operation_id="listTables",
        description="Raw table names; `type` filters OFFLINE/REALTIME, `taskType` keeps tables "
        "configured for that minion task type.",
        tags=TAG,
        parameters=[ListParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        params = query(request, ListParams)
        rows = models.TableConfig.objects.all()
        if params.get("type"):
            rows = rows.filter(table_type=params["type"])
        if params.get("taskType"):
            rows = [r for r in rows if params["taskType"] in parsed(r).task_configs]
        order = {"creationTime": "created_at", "lastModifiedTime": "updated_at"}
        key = order.get(params.get("sortType") or "name")
        rows = sorted(rows, key=lambda r: getattr(r, key) if key else r.table_name,
                      reverse=not params["sortAsc"])  # fmt: skip
        names = list(dict.fromkeys(r.table_name for r in rows))
        return Response({"tables": names})

    @extend_schema(
        summary="Create a table",
        description="Body: a Pinot table config. Its schema must exist and the tenant must "
        "have at least `replication` enabled servers.",
        tags=TAG,
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        body = json_body(request)
        authorize_table(request, str(body.get("tableName") or "") or None, AccessType.CREATE)
        return Response(add_table(store(), body))


class TableValidateView(APIView):
    access_types = {"POST": AccessType.READ}

    @extend_schema(
        summary="Validate a table config without storing it",
        tags=TAG,
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        config = parse_table_config(json_body(request))
        return Response(
            {
                **mask_secrets(config.to_json()),
                "unrecognizedProperties": config.unrecognized_properties,
                "warnings": config.warnings,
            }
        )


class TableDetailView(APIView):
    @extend_schema(
        summary="Get a table's configs",
        description='`{"OFFLINE": {...}, "REALTIME": {...}}` with the types that exist.',
        tags=TAG,
        parameters=[TableTypeParam],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, table: str):
        params = query(request, TableTypeParam)
        raw, suffix = split_table_name(table)
        rows = models.TableConfig.objects.filter(table_name=raw)
        wanted = params.get("type") or suffix
        if wanted:
            rows = rows.filter(table_type=wanted)
        out = {row.table_type: mask_secrets(row.config) for row in rows}
        if not out:
            raise NotFound(f"Table {table} does not exist")
        return Response(out)

    @extend_schema(
        summary="Update a table config",
        tags=TAG,
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT},
    )
    def put(self, request, table: str):
        return Response(update_table(store(), table, json_body(request)))

    @extend_schema(
        summary="Delete a table",
        description="Deletes its segments from the deep store (kept 7 days in "
        "Deleted_Segments unless retention=0d), ZooKeeper and the servers.",
        tags=TAG,
        parameters=[DeleteParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def delete(self, request, table: str):
        params = query(request, DeleteParams)
        return Response(delete_table(store(), table, params.get("type"), params.get("retention")))


class TableSchemaView(APIView):
    @extend_schema(summary="The table's schema", tags=TAG, responses={200: OpenApiTypes.OBJECT})
    def get(self, request, table: str):
        raw = split_table_name(table)[0]
        row = models.TableConfig.objects.filter(table_name=raw).first()
        if row is None:
            raise NotFound(f"Table {table} does not exist")
        name = parsed(row).segments_config.schema_name or raw
        schema = models.Schema.objects.filter(name=name).first()
        if schema is None:
            raise NotFound(f"Schema {name} of table {table} not found")
        return Response(schema.config)


class TableStateView(APIView):
    @extend_schema(
        summary="Get or set the table's state",
        description="Without `state`: the current state. With state=enable|disable: set it "
        "(Pinot accepts GET for this too).",
        tags=TAG,
        parameters=[StateParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, table: str):
        params = query(request, StateParams)
        if params.get("state"):
            return Response(set_table_state(store(), table, params.get("type"), params["state"]))
        return Response(table_state(store(), table, params.get("type")))

    @extend_schema(
        summary="Enable or disable a table",
        tags=TAG,
        parameters=[StateParams],
        request=None,
        responses={200: OpenApiTypes.OBJECT},
    )
    def put(self, request, table: str):
        params = query(request, StateParams)
        return Response(
            set_table_state(store(), table, params.get("type"), params.get("state", ""))
        )

    post = put


class RebuildBrokerResourceView(APIView):
    @extend_schema(
        summary="Rebuild the table's broker resource entry from the brokers' tags",
        tags=TAG,
        parameters=[TableTypeParam],
        request=None,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request, table: str):
        params = query(request, TableTypeParam)
        row = table_row(table, params.get("type"))
        publish_broker_resource(store(), parsed(row))
        return Response({"status": f"Broker resource of {row.name_with_type} rebuilt"})


class InstancePartitionsView(APIView):
    @extend_schema(
        summary="The table's replica-group instance partitions",
        description='`{"OFFLINE": {"instancePartitionsName", "partitionToInstancesMap": '
        '{"<partition>_<replicaGroup>": [servers]}}}`, for tables with replica-group '
        "assignment (their own partitions or the ones named by instancePartitionsMap).",
        tags=TAG,
        parameters=[TableTypeParam],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, table: str):
        params = query(request, TableTypeParam)
        row = table_row(table, params.get("type") or "OFFLINE")
        placement = placement_for(store(), parsed(row))
        if placement is None:
            raise NotFound(f"Table {row.name_with_type} has no instance partitions")
        lists = placement.to_record().list_fields
        return Response({row.table_type: {"instancePartitionsName": placement.name,
                                          "partitionToInstancesMap": lists}})  # fmt: skip

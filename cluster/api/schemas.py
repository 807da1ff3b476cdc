"""``/schemas``: list, add, get, update, delete and validate Pinot schemas."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster import models
from cluster.api.access import authorize_table
from cluster.api.common import JSON_FILE_PARSERS, json_file_body, query, store
from cluster.api.openapi import STRING_LIST
from cluster.logic.reload_segments import reload_schema_tables
from cluster.logic.save_schema import add_schema, delete_schema, update_schema
from cluster.logic.validate_config import parse_schema
from controller.errors import NotFound
from engine.runtime.access import AccessType
from engine.spi.schema_validation import schema_unrecognized_properties

TAG = ["Schema"]


class AddParams(serializers.Serializer):
    override = serializers.BooleanField(required=False, default=True)
    force = serializers.BooleanField(required=False, default=False)


class UpdateParams(serializers.Serializer):
    reload = serializers.BooleanField(required=False, default=False)
    force = serializers.BooleanField(required=False, default=False)


class SchemaListView(APIView):
    manual_authorization = ("POST",)  # the schema's name is in the body
    parser_classes = JSON_FILE_PARSERS

    @extend_schema(
        summary="List schema names",
        operation_id="listSchemas",
        tags=TAG,
        responses={200: STRING_LIST},
    )
    def get(self, request):
        return Response(list(models.Schema.objects.values_list("name", flat=True)))

    @extend_schema(
        summary="Add a schema",
        description="Body: a Pinot schema JSON (or a multipart file). An existing schema is "
        "updated when override=true (the default); incompatible changes need force=true.",
        tags=TAG,
        request=OpenApiTypes.OBJECT,
        parameters=[AddParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        params = query(request, AddParams)
        body = json_file_body(request)
        authorize_table(request, str(body.get("schemaName") or "") or None, AccessType.CREATE)
        return Response(add_schema(store(), body, **params))


class SchemaValidateView(APIView):
    access_types = {"POST": AccessType.READ}
    parser_classes = JSON_FILE_PARSERS

    @extend_schema(
        summary="Validate a schema without storing it",
        tags=TAG,
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        schema = parse_schema(json_file_body(request))
        unknown = schema_unrecognized_properties(schema.to_json())
        return Response({**schema.to_json(), "unrecognizedProperties": unknown})


class SchemaDetailView(APIView):
    table_kwarg = "name"
    parser_classes = JSON_FILE_PARSERS

    @extend_schema(summary="Get a schema", tags=TAG, responses={200: OpenApiTypes.OBJECT})
    def get(self, request, name: str):
        row = models.Schema.objects.filter(name=name).first()
        if row is None:
            raise NotFound(f"Schema {name} not found")
        return Response(row.config)

    @extend_schema(
        summary="Update a schema",
        description="Only backward-compatible changes (new columns) unless force=true; "
        "reload=true then reloads every segment of the tables that use the schema.",
        tags=TAG,
        request=OpenApiTypes.OBJECT,
        parameters=[UpdateParams],
        responses={200: OpenApiTypes.OBJECT},
    )
    def put(self, request, name: str):
        params = query(request, UpdateParams)
        cluster = store()
        out = update_schema(cluster, name, json_file_body(request), force=params["force"])
        if params["reload"]:
            out["reload"] = reload_schema_tables(cluster, name)
        return Response(out)

    @extend_schema(
        summary="Delete a schema",
        description="Refused (409) while a table uses it.",
        tags=TAG,
        parameters=[OpenApiParameter("name", str, OpenApiParameter.PATH)],
        responses={200: OpenApiTypes.OBJECT},
    )
    def delete(self, request, name: str):
        return Response(delete_schema(store(), name))

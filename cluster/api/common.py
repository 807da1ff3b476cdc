"""Small helpers shared by the API views."""

from __future__ import annotations

import orjson
from rest_framework import serializers
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.request import Request

from controller.errors import BadRequest
from controller.zk import get_store
from engine.clusterstate import ClusterStore


def store() -> ClusterStore:
    return get_store()


def query(request: Request, serializer_class: type[serializers.Serializer]) -> dict:
    """Validated query parameters (400 naming the parameter when invalid)."""
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


# The parsers of the endpoints Pinot documents as JSON file uploads (the schema endpoints);
# every other endpoint takes application/json only (settings.REST_FRAMEWORK)
JSON_FILE_PARSERS = [JSONParser, MultiPartParser]


def _json_object(data) -> dict:
    if not isinstance(data, dict):
        raise BadRequest("the request body must be a JSON object")
    return dict(data)


def json_body(request: Request) -> dict:
    """The JSON object in an application/json body."""
    return _json_object(request.data)


def json_file_body(request: Request, file_field: str | None = None) -> dict:
    """The JSON object in the body, or in the first uploaded file of a multipart request, as
    Pinot's ``POST /schemas`` accepts it; for views whose parsers are JSON_FILE_PARSERS."""
    if not request.FILES:
        return json_body(request)
    upload = request.FILES.get(file_field) if file_field else None
    upload = upload or next(iter(request.FILES.values()))
    try:
        return _json_object(orjson.loads(upload.read()))
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"the uploaded file {upload.name} is not valid JSON: {exc}") from exc


class TableTypeParam(serializers.Serializer):
    type = serializers.CharField(required=False, allow_blank=True, help_text="OFFLINE or REALTIME")

    def validate_type(self, value: str) -> str | None:
        if not value:
            return None
        if value.upper() not in ("OFFLINE", "REALTIME"):
            raise serializers.ValidationError("must be OFFLINE or REALTIME")
        return value.upper()


class TableTypeAliasParam(TableTypeParam):
    """Pinot names the parameter ``tableType`` on some endpoints and ``type`` on others."""

    tableType = serializers.CharField(required=False, allow_blank=True)

    def validate(self, attrs: dict) -> dict:
        alias = attrs.pop("tableType", None)
        if alias and not attrs.get("type"):
            attrs["type"] = self.validate_type(alias)
        return attrs

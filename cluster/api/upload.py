"""``POST /segments`` and ``POST /v2/segments``: segment upload (tar, URI or metadata push)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import FileUploadParser, FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import store
from cluster.logic.upload_segment import Upload, upload_segment


class UploadParams(serializers.Serializer):
    tableName = serializers.CharField(required=False, allow_blank=True)
    tableType = serializers.ChoiceField(["OFFLINE", "REALTIME", "offline", "realtime"],
                                       required=False)  # fmt: skip
    uploadType = serializers.ChoiceField(
        ["SEGMENT", "URI", "METADATA", "segment", "uri", "metadata"], required=False
    )
    allowRefresh = serializers.BooleanField(required=False, default=True)
    enableParallelPushProtection = serializers.BooleanField(required=False, default=False)


class _OctetParser(FileUploadParser):
    media_type = "application/octet-stream"


class SegmentUploadView(APIView):
    parser_classes = [MultiPartParser, FormParser, JSONParser, _OctetParser]

    @extend_schema(
        summary="Upload a segment",
        description="Multipart `.tar.gz` (any field name) with `tableName` and `tableType`. "
        "A segment with the same name is refreshed if its CRC differs. uploadType=URI takes "
        "the DOWNLOAD_URI header instead of a file; uploadType=METADATA takes a tar.gz of the "
        "segment's metadata files plus DOWNLOAD_URI. A corrupt archive is a 400; an unknown "
        "table a 404.",
        tags=["Segment"],
        parameters=[UploadParams],
        request={"multipart/form-data": OpenApiTypes.OBJECT},
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        params = UploadParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        values = params.validated_data
        # META, not request.headers: Pinot's header names contain underscores
        meta = request.META
        upload_type = values.get("uploadType") or meta.get("HTTP_UPLOAD_TYPE") or "SEGMENT"
        with tempfile.TemporaryDirectory(prefix="sprig-push-") as work:
            tar_path = None
            if request.FILES:
                incoming = next(iter(request.FILES.values()))
                tar_path = Path(work) / "upload.tar.gz"
                with tar_path.open("wb") as out:
                    for chunk in incoming.chunks():
                        out.write(chunk)
            upload = Upload(
                table_name=values.get("tableName") or None,
                table_type=(values.get("tableType") or "").upper() or None,
                upload_type=upload_type.upper(),
                tar_path=tar_path,
                download_uri=meta.get("HTTP_DOWNLOAD_URI") or None,
                allow_refresh=values["allowRefresh"],
            )
            return Response(upload_segment(store(), upload))

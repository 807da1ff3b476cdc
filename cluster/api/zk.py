"""``/zk/ls|lsl|get|stat|put|delete``: the ZooKeeper browser's API, limited to the cluster."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from kazoo.exceptions import BadVersionError, NoNodeError
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import query, store
from cluster.logic import audit
from controller.errors import BadRequest, Conflict, NotFound

TAG = ["Zookeeper"]


class PathParam(serializers.Serializer):
    path = serializers.CharField()

    def validate_path(self, value: str) -> str:
        value = "/" + value.strip("/") if value.strip("/") else "/"
        if ".." in value.split("/"):
            raise serializers.ValidationError("must not contain '..'")
        return value


class PutParams(PathParam):
    data = serializers.CharField(required=False, allow_blank=True)
    expectedVersion = serializers.IntegerField(required=False, default=-1)
    accessOption = serializers.IntegerField(required=False, default=1)


def _stat_json(stat) -> dict:
    return {
        "version": stat.version, "aversion": stat.aversion, "cversion": stat.cversion,
        "ctime": stat.ctime, "mtime": stat.mtime, "czxid": stat.czxid, "mzxid": stat.mzxid,
        "pzxid": stat.pzxid, "numChildren": stat.numChildren, "dataLength": stat.dataLength,
        "ephemeralOwner": stat.ephemeralOwner,
    }  # fmt: skip


def _writable(path: str) -> None:
    root = f"/{settings.CLUSTER_NAME}"
    if path != root and not path.startswith(root + "/"):
        raise BadRequest(f"only paths under {root} can be changed")


class ZkLsView(APIView):
    @extend_schema(summary="Children of a znode", tags=TAG, parameters=[PathParam],
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        path = query(request, PathParam)["path"]
        cluster = store()
        if cluster.stat(path) is None:
            raise NotFound(f"znode {path} does not exist")
        return Response(cluster.children(path))


class ZkLslView(APIView):
    @extend_schema(summary="Children of a znode with their stats", tags=TAG,
                   parameters=[PathParam], responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        path = query(request, PathParam)["path"]
        cluster = store()
        if cluster.stat(path) is None:
            raise NotFound(f"znode {path} does not exist")
        out = {}
        for child in cluster.children(path):
            stat = cluster.stat(f"{path.rstrip('/')}/{child}")
            if stat is not None:
                out[child] = _stat_json(stat)
        return Response(out)


class ZkGetView(APIView):
    @extend_schema(summary="Data of a znode (text)", tags=TAG, parameters=[PathParam],
                   responses={200: OpenApiTypes.STR})  # fmt: skip
    def get(self, request):
        path = query(request, PathParam)["path"]
        got = store().get_raw(path)
        if got is None:
            raise NotFound(f"znode {path} does not exist")
        data = got[0] or b""
        kind = "application/json" if data.lstrip()[:1] in (b"{", b"[") else "text/plain"
        return HttpResponse(data, content_type=kind)


class ZkStatView(APIView):
    @extend_schema(summary="Stat of a znode", tags=TAG, parameters=[PathParam],
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        path = query(request, PathParam)["path"]
        stat = store().stat(path)
        if stat is None:
            raise NotFound(f"znode {path} does not exist")
        return Response(_stat_json(stat))


class ZkPutView(APIView):
    all_tables_required = True  # a znode write can change any table (cluster.api.access)

    @extend_schema(
        summary="Write a znode's data",
        description="`data` as a query parameter or the request body; `expectedVersion` "
        "makes it a compare-and-set. Only under the cluster's root.",
        tags=TAG,
        parameters=[PutParams],
        request=OpenApiTypes.STR,
        responses={200: OpenApiTypes.OBJECT},
    )
    def put(self, request):
        params = query(request, PutParams)
        path = params["path"]
        _writable(path)
        data = params.get("data")
        payload = data.encode() if data is not None else request.body
        try:
            store().put_raw(path, payload, version=params["expectedVersion"])
        except BadVersionError as exc:
            raise Conflict(f"znode {path} is not at version {params['expectedVersion']}") from exc
        except NoNodeError as exc:
            raise NotFound(f"znode {path} does not exist (expectedVersion needs one)") from exc
        audit.record("zk.put", "znode", path)
        return Response({"status": f"Successfully updated path: {path}"})


class ZkDeleteView(APIView):
    all_tables_required = True

    @extend_schema(summary="Delete a znode and its children", tags=TAG,
                   parameters=[PathParam], responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def delete(self, request):
        path = query(request, PathParam)["path"]
        _writable(path)
        if path == f"/{settings.CLUSTER_NAME}":
            raise BadRequest("refusing to delete the whole cluster")
        if not store().delete(path, recursive=True):
            raise NotFound(f"znode {path} does not exist")
        audit.record("zk.delete", "znode", path)
        return Response({"status": f"Successfully deleted path: {path}"})

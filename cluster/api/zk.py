"""``/zk/ls|lsl|get|stat|put|delete``: the ZooKeeper browser's API, limited to the cluster.

Reads see the cluster's own tree only (``/`` lists just the cluster's root), never the rest
of a shared ZooKeeper (``/zookeeper/config``, other clusters). ``get`` masks secrets in the
data and ``put`` gives a masked secret back its stored value (``engine.spi.secrets``).
Writes need Pinot's UPDATE or DELETE permission and a principal limited to no table once
access control is on, and SPRIG_ZK_WRITES_ENABLED=false turns them off."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from kazoo.exceptions import BadVersionError, NoNodeError
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.access import PinotAccessPermission
from cluster.api.common import query, store
from cluster.logic import audit
from controller.errors import BadRequest, Conflict, Forbidden, NotFound
from engine.spi.secrets import mask_znode, restore_znode

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


def _in_cluster(path: str) -> bool:
    root = f"/{settings.CLUSTER_NAME}"
    return path == root or path.startswith(root + "/")


def _readable(path: str) -> str:
    if path != "/" and not _in_cluster(path):
        raise Forbidden(f"only the cluster's own tree /{settings.CLUSTER_NAME} can be read")
    return path


def _writable(path: str) -> None:
    if not _in_cluster(path):
        raise Forbidden(f"only paths under /{settings.CLUSTER_NAME} can be changed")


def _children(cluster, path: str) -> list[str]:
    children = cluster.children(path)
    return [c for c in children if c == settings.CLUSTER_NAME] if path == "/" else children


class ZkWriteAllowed(BasePermission):
    """``/zk/put`` and ``/zk/delete`` rewrite cluster state by hand: off with
    SPRIG_ZK_WRITES_ENABLED=false. With access control on, ``PinotAccessPermission`` first
    asks for Pinot's UPDATE (put) or DELETE permission and a principal limited to no table
    (``all_tables_required``), since a znode can hold any table's state."""

    def has_permission(self, request, view) -> bool:
        if not settings.ZK_WRITES_ENABLED:
            raise PermissionDenied("znode writes are turned off (SPRIG_ZK_WRITES_ENABLED=false)")
        return True


class ZkLsView(APIView):
    @extend_schema(summary="Children of a znode", tags=TAG, parameters=[PathParam],
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        path = _readable(query(request, PathParam)["path"])
        cluster = store()
        if cluster.stat(path) is None:
            raise NotFound(f"znode {path} does not exist")
        return Response(_children(cluster, path))


class ZkLslView(APIView):
    @extend_schema(summary="Children of a znode with their stats", tags=TAG,
                   parameters=[PathParam], responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        path = _readable(query(request, PathParam)["path"])
        cluster = store()
        if cluster.stat(path) is None:
            raise NotFound(f"znode {path} does not exist")
        out = {}
        for child in _children(cluster, path):
            stat = cluster.stat(f"{path.rstrip('/')}/{child}")
            if stat is not None:
                out[child] = _stat_json(stat)
        return Response(out)


class ZkGetView(APIView):
    @extend_schema(summary="Data of a znode (text)", tags=TAG, parameters=[PathParam],
                   responses={200: OpenApiTypes.STR})  # fmt: skip
    def get(self, request):
        path = _readable(query(request, PathParam)["path"])
        got = store().get_raw(path)
        if got is None:
            raise NotFound(f"znode {path} does not exist")
        data = mask_znode(got[0] or b"")
        kind = "application/json" if data.lstrip()[:1] in (b"{", b"[") else "text/plain"
        return HttpResponse(data, content_type=kind)


class ZkStatView(APIView):
    @extend_schema(summary="Stat of a znode", tags=TAG, parameters=[PathParam],
                   responses={200: OpenApiTypes.OBJECT})  # fmt: skip
    def get(self, request):
        path = _readable(query(request, PathParam)["path"])
        stat = store().stat(path)
        if stat is None:
            raise NotFound(f"znode {path} does not exist")
        return Response(_stat_json(stat))


class ZkPutView(APIView):
    all_tables_required = True  # a znode write can change any table (cluster.api.access)
    permission_classes = [PinotAccessPermission, ZkWriteAllowed]

    @extend_schema(
        summary="Write a znode's data",
        description="`data` as a query parameter or the request body; `expectedVersion` "
        "makes it a compare-and-set. Only under the cluster's root; a secret sent back "
        "masked (`*****`, as GET shows it) keeps its stored value. Principals limited to no table only when "
        "auth is on; off with SPRIG_ZK_WRITES_ENABLED=false.",
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
        cluster = store()
        current = cluster.get_raw(path)
        payload = restore_znode(payload, current[0] if current else None)
        try:
            cluster.put_raw(path, payload, version=params["expectedVersion"])
        except BadVersionError as exc:
            raise Conflict(f"znode {path} is not at version {params['expectedVersion']}") from exc
        except NoNodeError as exc:
            raise NotFound(f"znode {path} does not exist (expectedVersion needs one)") from exc
        audit.record("zk.put", "znode", path)
        return Response({"status": f"Successfully updated path: {path}"})


class ZkDeleteView(APIView):
    all_tables_required = True
    permission_classes = [PinotAccessPermission, ZkWriteAllowed]

    @extend_schema(summary="Delete a znode and its children (principals limited to no table "
                   "when auth is on; off with SPRIG_ZK_WRITES_ENABLED=false)", tags=TAG,
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

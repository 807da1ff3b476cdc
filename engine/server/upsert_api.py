"""Pinot's server endpoints for upsert tables (admin port), which UpsertCompactionTask and the
console read:

    POST /tables/{tableNameWithType}/validDocIdsMetadata?validDocIdsType=SNAPSHOT
         body {"segments": [...]} (absent: all) -> [{"segmentName", "totalDocs",
         "totalValidDocs", "totalInvalidDocs", "segmentCrc", "validDocIdsType",
         "serverStatus", "instanceId", "segmentSizeInBytes", "segmentCreationTimeMillis"}]
    GET  /segments/{tableNameWithType}/{segmentName}/validDocIdsBitmap?validDocIdsType=
         -> {"segmentName", "segmentCrc", "validDocIdsType", "bitmap" (base64 portable
         roaring), "instanceId", "serverStatus"}; 404 no such segment or bitmap, 400 consuming
    GET  /instance/primaryKeyCount -> {"instanceId", "numPrimaryKeys", "upsertAndDedupTables",
         "lastUpdatedTimeInEpochMs"}
    GET  /tables/{tableNameWithType}/metadata -> {"tableName",
         "upsertPartitionToServerPrimaryKeyCountMap": {"<p>": {"<server>": n}}}

``validDocIdsType``: SNAPSHOT (the bitmap last written to disk, Pinot's default),
SNAPSHOT_WITH_DELETE (its queryable twin, tombstones left out), IN_MEMORY and
IN_MEMORY_WITH_DELETE (the live bitmaps). Consuming and bitmap-less segments are skipped.
"""

from __future__ import annotations

import base64
from pathlib import Path

import orjson
from pyroaring import BitMap

from engine.common.clock import now_ms
from engine.runtime import Request, Response
from engine.upsert.snapshots import QUERYABLE_DOCS_SNAPSHOT, VALID_DOCS_SNAPSHOT

TYPES = ("SNAPSHOT", "SNAPSHOT_WITH_DELETE", "IN_MEMORY", "IN_MEMORY_WITH_DELETE")


class UpsertEndpoints:
    def __init__(self, instance_id: str, upsert) -> None:
        self.instance_id = instance_id
        self.upsert = upsert  # engine.server.upsert_tables.UpsertTables

    def routes(self, router, guarded=lambda handler: handler) -> None:
        """Add the endpoints to ``router``, each behind ``guarded`` (the admin API's access
        control)."""
        router.add("POST", "/tables/{table}/validDocIdsMetadata",
                   guarded(self.valid_docs_metadata))  # fmt: skip
        router.add("GET", "/segments/{table}/{segment}/validDocIdsBitmap",
                   guarded(self.valid_docs_bitmap))  # fmt: skip
        router.add("GET", "/instance/primaryKeyCount", guarded(self.primary_key_count))
        router.add("GET", "/tables/{table}/metadata", guarded(self.table_metadata))

    def _kind(self, request: Request) -> str | Response:
        kind = (request.query.get("validDocIdsType") or "SNAPSHOT").upper()
        if kind not in TYPES:
            return Response.error(400, f"validDocIdsType must be one of {', '.join(TYPES)}")
        return kind

    def valid_docs_metadata(self, request: Request) -> Response:
        kind = self._kind(request)
        if isinstance(kind, Response):
            return kind
        table = self.upsert.known(request.params["table"])
        if table is None:
            return Response.error(404, f"table {request.params['table']} has no upsert metadata "
                                  f"on {self.instance_id}")  # fmt: skip
        wanted = None
        if request.body:
            try:
                wanted = orjson.loads(request.body).get("segments")
            except (orjson.JSONDecodeError, AttributeError):
                return Response.error(400, 'the body must be {"segments": [...]}')
        out = []
        for part in list(table.partitions.values()):
            with part.lock:
                tracked = [part.segments[sid] for sid in part.by_name.values()]
            for entry in tracked:
                if entry.mutable or (wanted is not None and entry.name not in wanted):
                    continue
                bitmap = _bitmap(entry, kind)
                if bitmap is None:
                    continue
                total = int(entry.segment.total_docs)
                metadata = entry.segment.metadata
                out.append({
                    "segmentName": entry.name, "totalDocs": total,
                    "totalValidDocs": len(bitmap), "totalInvalidDocs": total - len(bitmap),
                    "segmentCrc": str(metadata.crc), "validDocIdsType": kind,
                    "serverStatus": "GOOD", "instanceId": self.instance_id,
                    "segmentSizeInBytes": _size(getattr(entry.segment, "path", None)),
                    "segmentCreationTimeMillis": int(getattr(metadata, "creation_time", 0) or 0),
                })  # fmt: skip
        return Response.json(out)

    def valid_docs_bitmap(self, request: Request) -> Response:
        kind = self._kind(request)
        if isinstance(kind, Response):
            return kind
        name, table_name = request.params["segment"], request.params["table"]
        table = self.upsert.known(table_name)
        entry = table.tracked(name) if table is not None else None
        if entry is None:
            return Response.error(
                404, f"segment {name} of {table_name} is not on {self.instance_id}"
            )
        if entry.mutable:
            return Response.error(400, f"segment {name} is consuming: it has no final bitmap")
        bitmap = _bitmap(entry, kind)
        if bitmap is None:
            return Response.error(404, f"segment {name} has no {kind} valid-doc bitmap")
        return Response.json({
            "segmentName": name, "segmentCrc": str(entry.segment.metadata.crc),
            "validDocIdsType": kind, "bitmap": base64.b64encode(bitmap.serialize()).decode(),
            "instanceId": self.instance_id, "serverStatus": "GOOD",
        })  # fmt: skip

    def primary_key_count(self, _request: Request) -> Response:
        tables = self.upsert.tables()
        total = sum(sum(t.primary_key_counts().values()) for t in tables.values())
        return Response.json({
            "instanceId": self.instance_id, "numPrimaryKeys": total,
            "upsertAndDedupTables": sorted(tables), "lastUpdatedTimeInEpochMs": now_ms(),
        })  # fmt: skip

    def table_metadata(self, request: Request) -> Response:
        name = request.params["table"]
        table = self.upsert.known(name)
        counts = {} if table is None else table.primary_key_counts()
        return Response.json({
            "tableName": name,
            "upsertPartitionToServerPrimaryKeyCountMap": {
                str(p): {self.instance_id: n} for p, n in counts.items()
            },
        })  # fmt: skip


def _bitmap(entry, kind: str) -> BitMap | None:
    """The segment's valid docs of ``kind``, None when it has none of that kind."""
    with_delete = kind.endswith("_WITH_DELETE")
    if kind.startswith("IN_MEMORY"):
        valid, queryable = entry.frozen()
        return queryable if with_delete and queryable is not None else valid
    directory = getattr(entry.segment, "path", None)
    if directory is None:
        return None
    name = (
        QUERYABLE_DOCS_SNAPSHOT
        if with_delete and entry.queryable is not None
        else VALID_DOCS_SNAPSHOT
    )
    try:
        return BitMap.deserialize((Path(directory) / name).read_bytes())
    except (OSError, ValueError):
        return None


def _size(directory) -> int:
    if directory is None:
        return 0
    return sum(f.stat().st_size for f in Path(directory).rglob("*") if f.is_file())

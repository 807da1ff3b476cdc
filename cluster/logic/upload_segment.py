"""Segment upload (``POST /segments``): validate the tar.gz, store it in the deep store, write
its metadata and assign it. The same segment name again is a refresh, decided by CRC.

Nothing is stored until the archive has been unpacked and its metadata read, so a corrupt or
truncated upload leaves no trace. A URI push's ``DOWNLOAD_URI`` is opened only when it lies
under the readable data roots (tasks.data_roots), and a METADATA push's, which the servers
fetch, only when ``download_uri`` allows it; anything else is a 400 naming the setting,
before anyone touches it.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
import uuid
from pathlib import Path

import fsspec
from django.conf import settings

from cluster.logic import audit
from cluster.logic.assign_segments import assign_segment
from cluster.logic.cluster_view import (
    parsed,
    replication_of,
    table_row,
    table_servers,
    table_types,
)
from cluster.logic.completed_placement import completed_server_tag, completed_servers
from cluster.logic.deep_store import get_deep_store
from cluster.logic.download_uri import check_download_uri
from cluster.logic.instance_partitions import segment_placement
from controller.errors import BadRequest, Conflict, Forbidden, PayloadTooLarge
from engine.clusterstate import (
    ClusterStore,
    Message,
    ResourceAssignment,
    SegmentState,
    SegmentZKMetadata,
    ZnodeTooLargeError,
    ZooKeeperUnavailableError,
    split_table_name,
)
from engine.clusterstate import realtime_metadata as llc
from engine.clusterstate.segment_metadata import recorded_time_range
from engine.clusterstate.segment_status import is_committed
from engine.common.clock import now_ms
from engine.common.errors import SegmentError
from engine.common.names import InvalidNameError, check_segment_name
from engine.segment import SegmentMetadata, read_metadata, unpack_segment
from engine.segment.tarball import SegmentTooLargeError, extract_checked
from engine.spi.data_roots import OutsideRootsError
from engine.spi.periods import data_size_bytes
from tasks.data_roots import readable_roots

METADATA_FILE = "metadata.json"


@dataclasses.dataclass
class Upload:
    """One upload request. ``tar_path`` is the local copy of the uploaded file (SEGMENT and
    METADATA uploads); ``download_uri`` is the DOWNLOAD_URI header (URI and METADATA)."""

    table_name: str | None
    table_type: str | None
    upload_type: str = "SEGMENT"
    tar_path: Path | None = None
    download_uri: str | None = None
    allow_refresh: bool = True


def upload_segment(store: ClusterStore, upload: Upload) -> dict:
    kind = (upload.upload_type or "SEGMENT").upper()
    if kind not in ("SEGMENT", "URI", "METADATA"):
        raise BadRequest(f"uploadType must be SEGMENT, URI or METADATA, got '{upload.upload_type}'")
    if kind != "SEGMENT" and not upload.download_uri:
        raise BadRequest(f"uploadType={kind} needs the DOWNLOAD_URI header")
    if kind != "URI" and upload.tar_path is None:
        raise BadRequest("no segment file in the request: send the tar.gz as a multipart file")
    if kind == "METADATA":  # every server of the segment will fetch it
        check_download_uri(upload.download_uri)
    location = _readable(upload.download_uri) if kind == "URI" else None
    # an unknown table is a 404 before the file is even looked at
    row = _upload_table(upload.table_name, upload.table_type) if upload.table_name else None
    with tempfile.TemporaryDirectory(prefix="sprig-upload-") as work:
        work = Path(work)
        tar_path = upload.tar_path
        if kind == "URI":
            tar_path = _fetch(location, work / "segment.tar.gz")
        metadata = (
            _metadata_only(tar_path, work) if kind == "METADATA" else _read_segment(tar_path, work)
        )
        if row is None:
            raw, suffix_type = split_table_name(metadata.table_name)
            row = table_row(raw, upload.table_type or suffix_type)
        size = tar_path.stat().st_size if kind != "METADATA" else _remote_size(upload.download_uri)
        return _store(store, row, metadata, tar_path if kind == "SEGMENT" else None, size, upload)


def _upload_table(table: str, table_type: str | None):
    """Pinot's tableType defaults to OFFLINE; without it a single-type table is that type."""
    if table_type is None and len(table_types(table, None)) > 1:
        table_type = "OFFLINE"
    return table_row(table, table_type)


def _read_segment(tar_path: Path, work: Path) -> SegmentMetadata:
    limit = settings.SEGMENT_MAX_UNPACKED_BYTES
    try:
        return read_metadata(unpack_segment(tar_path, work / "unpacked", max_unpacked_bytes=limit))
    except SegmentTooLargeError as exc:
        raise PayloadTooLarge(f"Invalid segment upload: {exc}") from exc
    except SegmentError as exc:
        raise BadRequest(f"Invalid segment upload: {exc}") from exc


def _metadata_only(tar_path: Path, work: Path) -> SegmentMetadata:
    """A METADATA push carries only the segment's metadata files."""
    try:
        extract_checked(tar_path, work / "meta", settings.SEGMENT_MAX_UNPACKED_BYTES)
    except SegmentTooLargeError as exc:
        raise PayloadTooLarge(f"Invalid segment metadata upload: {exc}") from exc
    except SegmentError as exc:
        raise BadRequest(f"Invalid segment metadata upload: {exc}") from exc
    found = sorted((work / "meta").rglob(METADATA_FILE))
    if not found:
        raise BadRequest(f"Invalid segment metadata upload: no {METADATA_FILE} in the archive")
    try:
        return read_metadata(found[0].parent)
    except SegmentError as exc:
        raise BadRequest(f"Invalid segment metadata upload: {exc}") from exc


def _readable(uri: str) -> str:
    """Where to read DOWNLOAD_URI from; a 400 when it is outside the readable data roots."""
    try:
        return readable_roots().check(uri, "DOWNLOAD_URI")
    except OutsideRootsError as exc:
        raise BadRequest(str(exc)) from None


def _fetch(location: str, dest: Path) -> Path:
    try:
        with fsspec.open(location, "rb") as src, dest.open("wb") as out:
            shutil.copyfileobj(src, out)
    except (OSError, ValueError, ImportError) as exc:
        raise BadRequest(f"cannot download the segment from DOWNLOAD_URI: {exc}") from exc
    return dest


def _remote_size(uri: str) -> int:
    try:
        fs, path = fsspec.core.url_to_fs(uri)
        return int(fs.size(path) or 0)
    except (OSError, ValueError, ImportError):
        return 0


def _store(store, row, metadata: SegmentMetadata, tar_path, size: int, upload: Upload) -> dict:
    resource = row.name_with_type
    try:  # it becomes a file name in the deep store and on every server, and a znode
        segment = check_segment_name(metadata.segment_name)
    except InvalidNameError as exc:
        raise BadRequest(f"Invalid segment upload: {exc}") from None
    existing = store.segment_metadata(resource, segment)
    crc = str(metadata.crc)
    if existing is not None:
        if not upload.allow_refresh:
            raise Conflict(f"Segment {segment} of {resource} already exists and allowRefresh=false")
        if not is_committed(existing):
            raise Conflict(f"Segment {segment} of {resource} is still being consumed "
                           f"({llc.status_of(existing)}); only a completed segment can be "
                           f"refreshed")  # fmt: skip
        if existing.crc == crc:
            # as Pinot: same data, so no refresh, but the ZK metadata takes the new custom.map
            # (a PurgeTask that removed nothing must still record PurgeTask.time)
            custom = json.dumps(metadata.custom, sort_keys=True) if metadata.custom else None
            if custom and existing.extra.get("custom.map") != custom:
                existing.extra["custom.map"] = custom
                store.put_segment_metadata(existing)
            return {
                "status": f"Segment {segment} of table {resource} already exists with the same "
                f"CRC {crc}; nothing changed"
            }
    config = parsed(row)
    _check_quota(store, row, segment, size)
    # a segment pushed to a REALTIME table is complete: with realtimeCompleted set it goes
    # straight to those servers (Pinot's RealtimeSegmentAssignment does the same)
    completed_tag = completed_server_tag(config)
    servers = (
        completed_servers(store, completed_tag) if completed_tag else table_servers(store, config)
    )
    placed = segment_placement(store, config, metadata) if existing is None else None
    ideal = store.ideal_state(resource) or ResourceAssignment(resource)
    if existing is None:
        assign_segment(
            ideal, servers, replication_of(config, servers), placed
        )  # 400 before anything is stored
    deep_store = get_deep_store()
    stored_url = None
    if tar_path is not None:
        stored_url = deep_store.put(str(tar_path), row.table_name, segment)
        download_url = f"{settings.CONTROLLER_URL}/segments/{row.table_name}/{segment}"
    else:
        download_url = upload.download_uri
    now = now_ms()
    start, end, unit = recorded_time_range(
        metadata.start_time, metadata.end_time, metadata.time_unit,
        metadata.start_time_ms, metadata.end_time_ms,
    )  # fmt: skip
    zk_metadata = SegmentZKMetadata(
        segment_name=segment,
        table_name_with_type=resource,
        crc=crc,
        total_docs=metadata.total_docs,
        start_time=start,
        end_time=end,
        time_unit=unit,
        download_url=download_url,
        push_time_ms=existing.push_time_ms if existing else now,
        refresh_time_ms=now if existing else 0,
        creation_time_ms=int(metadata.creation_time or 0),
        size_in_bytes=size,
        # a refreshed real-time segment (e.g. purged) keeps its stream offsets and status
        extra={**_llc_fields(existing), **_extra_fields(metadata, stored_url)},
    )
    try:
        store.put_segment_metadata(zk_metadata)
        if existing is None:
            instances = _assign(
                store, resource, segment, servers, replication_of(config, servers), placed
            )
        else:
            instances = _notify_refresh(store, resource, segment)
    except (ZooKeeperUnavailableError, ZnodeTooLargeError):
        if stored_url is not None and existing is None:
            deep_store.remove(row.table_name, segment, keep=False)
        raise
    action = "segment.refresh" if existing else "segment.upload"
    audit.record(action, "segment", f"{resource}/{segment}", crc=crc, instances=instances)
    verb = "refreshed" if existing else "uploaded"
    return {"status": f"Successfully {verb} segment: {segment} of table: {resource}"}


def _llc_fields(existing: SegmentZKMetadata | None) -> dict[str, str]:
    keys = (llc.STATUS, llc.START_OFFSET, llc.END_OFFSET, llc.NUM_REPLICAS,
            llc.FLUSH_THRESHOLD_SIZE)  # fmt: skip
    extra = existing.extra if existing is not None else {}
    return {key: extra[key] for key in keys if key in extra}


def _extra_fields(metadata: SegmentMetadata, stored_url: str | None) -> dict[str, str]:
    """Pinot's ``segment.partition.metadata`` (the partitions each partitioned column's values
    fall in, which brokers prune by) and the deep-store copy's URL."""
    extra: dict[str, str] = {}
    if stored_url:
        extra["segment.deep.store.url"] = stored_url
    if metadata.custom:
        # Pinot's custom.map: the segment's custom metadata (e.g. the minion's
        # input.data.file.uri, which keeps APPEND tables from ingesting a file twice)
        extra["custom.map"] = json.dumps(metadata.custom, sort_keys=True)
    partitions = {
        name: {
            "functionName": column.partition_function,
            "numPartitions": column.num_partitions,
            "partitions": sorted(column.partitions or []),
            # {} rather than null for "no config", so readers can tell it from metadata
            # written before the config was recorded (see engine.spi.partition)
            "functionConfig": column.partition_function_config,
        }
        for name, column in metadata.columns.items()
        if column.partition_function
    }
    if partitions:
        extra["segment.partition.metadata"] = json.dumps({"columnPartitionMap": partitions})
    return extra


def _check_quota(store, row, segment: str, size: int) -> None:
    """Pinot's ``quota.storage``: the table's size per replica (tar.gz bytes of its segments,
    a refreshed segment counted once) may not exceed it; 403 otherwise."""
    quota = (row.config.get("quota") or {}).get("storage")
    if not quota:
        return
    try:
        limit = data_size_bytes(quota)
    except ValueError as exc:
        raise BadRequest(f"quota.storage of {row.name_with_type}: {exc}") from exc
    used = 0
    for name in store.segment_names(row.name_with_type):
        meta = store.segment_metadata(row.name_with_type, name)
        if meta is not None and name != segment:
            used += meta.size_in_bytes
    if used + size > limit:
        raise Forbidden(
            f"Quota check failed for segment {segment} of table {row.name_with_type}: the table "
            f"would use {used + size} bytes per replica, over quota.storage {quota} ({limit} bytes)"
        )


def _assign(
    store, resource: str, segment: str, servers: list[str], replication: int, placed=None
) -> list[str]:
    chosen: list[str] = []

    def change(ideal: ResourceAssignment) -> ResourceAssignment | None:
        if segment in ideal.segments:
            chosen[:] = list(ideal.segments[segment])
            return None
        chosen[:] = assign_segment(ideal, servers, replication, placed)
        ideal.segments[segment] = dict.fromkeys(chosen, SegmentState.ONLINE.value)
        return ideal

    store.update_ideal_state(resource, change)
    return chosen


def _notify_refresh(store, resource: str, segment: str) -> list[str]:
    """A refreshed segment keeps its replicas; each is told to download the new copy."""
    ideal = store.ideal_state(resource)
    instances = sorted((ideal.segments.get(segment) or {}) if ideal else {})
    for instance in instances:
        message = Message(uuid.uuid4().hex, "SEGMENT_REFRESH", resource, segment)
        store.send_message(instance, message)
    return instances

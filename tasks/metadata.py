"""Minion task metadata (watermarks) in ZooKeeper, where Pinot keeps it:
``/<cluster>/PROPERTYSTORE/MINION_TASK_METADATA/<tableNameWithType>/<TaskType>``, a ZNRecord
of string fields (MergeRollup: ``watermarkMs_<level>``; RealtimeToOffline: ``watermarkMs``).
Pinot's older ``<TaskType>/<table>`` layout is read as a fallback only."""

from __future__ import annotations

from engine.clusterstate import ClusterStore, ZNRecord


def metadata_root(store: ClusterStore) -> str:
    return f"{store.paths.property_store}/MINION_TASK_METADATA"


def metadata_path(store: ClusterStore, table_name: str, task_type: str) -> str:
    return f"{metadata_root(store)}/{table_name}/{task_type}"


def read_metadata(
    store: ClusterStore, table_name: str, task_type: str
) -> tuple[ZNRecord | None, int]:
    """The record and its znode version ((None, -1) when there is none)."""
    record, version = store.get_record(metadata_path(store, table_name, task_type))
    if record is None:
        legacy, _ = store.get_record(f"{metadata_root(store)}/{task_type}/{table_name}")
        if legacy is not None:
            return legacy, -1  # -1: the next write creates the record at the new path
    return record, version


def write_metadata(store: ClusterStore, table_name: str, task_type: str, record: ZNRecord,
                   expected_version: int = -1) -> None:  # fmt: skip
    """Write the record; with ``expected_version`` >= 0 only if the znode is still at that
    version (ConcurrentUpdate from kazoo's BadVersionError otherwise)."""
    store.put_raw(metadata_path(store, table_name, task_type), record.to_bytes(),
                  version=expected_version)  # fmt: skip


def delete_metadata(store: ClusterStore, table_name: str, task_type: str) -> bool:
    return store.delete(metadata_path(store, table_name, task_type))

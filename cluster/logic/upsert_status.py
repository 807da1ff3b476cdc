"""An upsert or dedup table as its servers see it, asked through their admin APIs
(``engine/server/upsert_api.py``):

- ``valid_docs_metadata``: Pinot's controller ``GET /tables/{t}/validDocIdsMetadata``, each
  ONLINE replica's ``validDocIdsMetadata`` entry, a flat list;
- ``upsert_summary``: what the console's table page shows: the table's effective
  ``upsertConfig``/``dedupConfig`` (Pinot's defaults filled in), primary keys per partition
  and server (the servers' ``/tables/{t}/metadata``), and per completed segment its valid and
  invalid docs and what UpsertCompactionTask would do with it: the task's own rule
  (``engine.spi.upsert_compaction``, with its partitions' newest completed segments never
  deleted, ``tasks.generators.upsert_compaction.kept_segments``).
"""

from __future__ import annotations

from cluster.logic import server_admin
from engine.clusterstate import ClusterStore
from engine.common.errors import ConfigError
from engine.realtime.llc_name import LLCSegmentName
from engine.spi import TableConfig
from engine.spi.upsert_compaction import CompactionThresholds
from engine.spi.upsert_config import DedupConfig, Toggle, UpsertConfig, UpsertMode
from tasks.generators.upsert_compaction import kept_segments

BATCH_SIZE = 500  # Pinot's serverRequestBatchSize default


def valid_docs_metadata(store: ClusterStore, table: str, segment_names: list[str] | None = None,
                        kind: str = "SNAPSHOT", batch_size: int = BATCH_SIZE
                        ) -> tuple[list[dict], dict[str, str]]:  # fmt: skip
    """(entries, server -> why it gave none): every ONLINE replica's validDocIdsMetadata
    entry of ``table`` (with type), of ``segment_names`` only when given, asking each server
    for at most ``batch_size`` segments at a time. Consuming segments and segments without a
    bitmap of ``kind`` have no entry (the servers skip them)."""
    view = store.external_view(table)
    holders: dict[str, list[str]] = {}
    for segment, replicas in sorted((view.segments if view else {}).items()):
        if segment_names is not None and segment not in segment_names:
            continue
        for server, state in replicas.items():
            if state == "ONLINE":
                holders.setdefault(server, []).append(segment)
    entries: list[dict] = []
    errors: dict[str, str] = {}
    path = f"{server_admin.table_path(table, 'validDocIdsMetadata')}?validDocIdsType={kind}"
    for server, segments in sorted(holders.items()):
        for start in range(0, len(segments), batch_size):
            body = {"segments": segments[start : start + batch_size]}
            answer, why = server_admin.ask_servers(store, [server], path, body=body)[server]
            if why is not None or not isinstance(answer, list):
                errors[server] = why or "the answer is not a list"
                break
            entries.extend(e for e in answer if isinstance(e, dict))
    return entries, errors


def primary_key_counts(store: ClusterStore, table: str) -> tuple[dict, dict[str, str]]:
    """({partition: {server: primary keys}}, server -> why it gave none) over the servers
    holding a replica of ``table`` (with type), as Pinot's
    ``upsertPartitionToServerPrimaryKeyCountMap``."""
    ideal = store.ideal_state(table)
    servers = sorted({s for replicas in (ideal.segments if ideal else {}).values()
                      for s in replicas})  # fmt: skip
    asked = server_admin.ask_servers(store, servers, server_admin.table_path(table, "metadata"))
    counts: dict[str, dict[str, int]] = {}
    errors = {}
    for server, (answer, why) in asked.items():
        found = answer.get("upsertPartitionToServerPrimaryKeyCountMap") if isinstance(
            answer, dict) else None  # fmt: skip
        if why is not None or not isinstance(found, dict):
            errors[server] = why or "no upsertPartitionToServerPrimaryKeyCountMap in its answer"
            continue
        for partition, per_server in found.items():
            counts.setdefault(str(partition), {}).update(per_server)
    ordered = sorted(counts.items(), key=lambda kv: (len(kv[0]), kv[0]))
    return {p: dict(sorted(s.items())) for p, s in ordered}, errors


def effective_config(config_json: dict) -> dict | None:
    """{"kind": "upsert"|"dedup", "config": the section's keys with Pinot's defaults}, None
    when the table neither upserts nor dedups. ConfigError for a section that cannot be read."""
    table = TableConfig.from_json(config_json)
    upsert = UpsertConfig.of(table)
    if upsert is not None:
        out = {
            "mode": upsert.mode.value,
            "comparisonColumns": list(upsert.comparison_columns_of(table)),
            "hashFunction": upsert.hash_function.value,
            "deleteRecordColumn": upsert.delete_record_column,
            "metadataTTL": upsert.metadata_ttl, "deletedKeysTTL": upsert.deleted_keys_ttl,
            "dropOutOfOrderRecord": upsert.drop_out_of_order_record,
            "outOfOrderRecordColumn": upsert.out_of_order_record_column,
            "consistencyMode": upsert.consistency_mode.value,
            "snapshot": upsert.snapshot.value, "preload": upsert.preload.value,
        }  # fmt: skip
        if upsert.mode is UpsertMode.PARTIAL:
            out["defaultPartialUpsertStrategy"] = upsert.default_partial_upsert_strategy.value
            out["partialUpsertStrategies"] = {
                c: s.value for c, s in sorted(upsert.partial_upsert_strategies.items())
            }
        return {"kind": "upsert", "config": out}
    dedup = DedupConfig.of(table)
    if dedup is not None:
        return {"kind": "dedup", "config": {
            "dedupTimeColumn": dedup.time_column_of(table), "metadataTTL": dedup.metadata_ttl,
            "hashFunction": dedup.hash_function.value, "preload": dedup.preload.value,
        }}  # fmt: skip
    return None


def upsert_summary(store: ClusterStore, table: str, config_json: dict) -> dict:
    """The console's view of ``table`` (with type), whose config is ``config_json``; see the
    module docstring. Without an upsert or dedup section: ``{"tableName", "kind": null}``."""
    try:
        found = effective_config(config_json)
    except ConfigError as exc:
        return {"tableName": table, "kind": None, "configError": str(exc)}
    if found is None:
        return {"tableName": table, "kind": None}
    counts, errors = primary_key_counts(store, table)
    out = {"tableName": table, **found, "primaryKeyCounts": counts}
    if found["kind"] == "upsert":
        out["compaction"], segment_errors = _compaction(store, table, config_json, found)
        errors = {**errors, **segment_errors}
    if errors:
        out["serverErrors"] = dict(sorted(errors.items()))
    return out


def _compaction(store: ClusterStore, table: str, config_json: dict,
                found: dict) -> tuple[dict, dict[str, str]]:  # fmt: skip
    try:
        thresholds = CompactionThresholds.of(config_json)
    except ConfigError as exc:
        return {"configError": str(exc), "segments": []}, {}
    kind = thresholds.valid_doc_ids_type
    if not thresholds.configured and found["config"]["snapshot"] != Toggle.ENABLE.value:
        kind = "IN_MEMORY"  # no task to follow, and no snapshot files to read
    entries, errors = valid_docs_metadata(store, table, kind=kind)
    by_segment: dict[str, list[dict]] = {}
    for entry in entries:
        by_segment.setdefault(str(entry.get("segmentName")), []).append(entry)
    newest = kept_segments(store, table) if by_segment else set()
    segments = [_segment(name, replicas, thresholds, name in newest)
                for name, replicas in sorted(by_segment.items())]  # fmt: skip
    return {
        "taskConfigured": thresholds.configured, "validDocIdsType": kind,
        "invalidRecordsThresholdPercent": thresholds.percent,
        "invalidRecordsThresholdCount": thresholds.count, "segments": segments,
    }, errors  # fmt: skip


def _segment(name: str, replicas: list[dict], thresholds: CompactionThresholds,
             newest: bool) -> dict:  # fmt: skip
    """One completed segment: the counts of its replicas (the first when they agree; when
    they do not, the task's default EQUAL consensus leaves it alone); ``newest``: its
    partition's newest completed segment, which the task never deletes."""
    counts = {(int(r.get("totalDocs") or 0), int(r.get("totalInvalidDocs") or 0))
              for r in replicas}  # fmt: skip
    total, invalid = min(counts)
    llc = LLCSegmentName.parse(name)
    agree = len(counts) == 1
    return {
        "segmentName": name, "partition": llc.partition if llc else None,
        "servers": sorted(str(r.get("instanceId")) for r in replicas),
        "totalDocs": total, "totalValidDocs": total - invalid, "totalInvalidDocs": invalid,
        "invalidPercent": round(100.0 * invalid / total, 2) if total else 0.0,
        "replicasAgree": agree, "newestOfPartition": newest,
        "verdict": thresholds.verdict(total, invalid, newest=newest).value if agree else None,
    }  # fmt: skip

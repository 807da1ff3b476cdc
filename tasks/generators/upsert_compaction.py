"""UpsertCompactionTask on the controller (Pinot's ``UpsertCompactionTaskGenerator``): one
subtask per completed segment of an upsert table with enough invalid docs.

Keys, with Pinot's names and defaults: ``bufferTimePeriod`` (7d: only segments whose end time
is at least that old), ``invalidRecordsThresholdPercent`` and ``invalidRecordsThresholdCount``
(read, checked and applied by ``engine.spi.upsert_compaction.CompactionThresholds``, the rule
the console shares); ``validDocIdsType`` (SNAPSHOT: the bitmap the server last wrote to
disk, which needs ``snapshot`` not DISABLE; IN_MEMORY: the live one; SNAPSHOT_WITH_DELETE and
IN_MEMORY_WITH_DELETE also drop the tombstones, which needs a ``deleteRecordColumn``);
``validDocIdsConsensusMode`` (EQUAL: every ONLINE replica reports the same valid docs, else
the segment waits; MOST_VALID_DOCS; UNSAFE: any one), ``ignoreCrcMismatch`` (false),
``numSegmentsBatchPerServerRequest`` (500) and ``tableMaxNumTasks`` (no limit).

The counts come from the ONLINE replicas' ``validDocIdsMetadata`` (server admin API); an
entry counts only when its CRC is ZooKeeper's and its server is GOOD. A segment whose docs
are all invalid gets a subtask that deletes it (Pinot's generator deletes it itself; here a
generator writes nothing), except the newest completed segment of each partition
(``kept_segments``), whose end offset starts the partition's next segment. The others go most
invalid first. A table with an
unfinished task of this type gets none. Refused for OFFLINE tables, tables that do not upsert
and tables with ``metadataTTL`` (docs of keys that left the map stay valid without being in
it, so a bitmap does not say which docs are superseded).

Where Sprig differs: Pinot turns any type into SNAPSHOT_WITH_DELETE on a table with a
``deleteRecordColumn``; here the type is what the config says (SNAPSHOT by default), so a
tombstone stays until the config asks to drop it: a dropped tombstone lets an older version
of the key in another segment come back at the next restart (apache/pinot#13347).
"""

from __future__ import annotations

import dataclasses
import logging

import orjson
import requests

from engine.clusterstate import ClusterStore
from engine.common.errors import ConfigError
from engine.spi.periods import period_ms
from engine.spi.table_config import TableConfig
from engine.spi.upsert_compaction import (
    TASK_TYPE,
    VALID_DOC_IDS_TYPE,
    CompactionThresholds,
    Verdict,
    task_number,
)
from engine.spi.upsert_config import Toggle, UpsertConfig
from tasks.errors import TaskConfigError
from tasks.generators.base import TABLE_NAME_KEY, UPLOAD_URL_KEY, GenerationContext, TaskGenerator
from tasks.generators.purge import completed_segments, last_of_partitions

log = logging.getLogger(__name__)

SEGMENT_NAME_KEY = "segmentName"
DOWNLOAD_URL_KEY = "downloadURL"
CRC_KEY = "crc"  # Pinot's ORIGINAL_SEGMENT_CRC_KEY
KEEP_EMPTY_KEY = "keepEmptySegment"  # "true": never delete it (a partition's newest)
BUFFER_KEY = "bufferTimePeriod"
CONSENSUS_MODE = "validDocIdsConsensusMode"
IGNORE_CRC_KEY = "ignoreCrcMismatch"
BATCH_KEY = "numSegmentsBatchPerServerRequest"
MAX_TASKS_KEY = "tableMaxNumTasks"
MODES = ("EQUAL", "MOST_VALID_DOCS", "UNSAFE")
SERVER_TIMEOUT_S = 60


@dataclasses.dataclass(frozen=True)
class Rules:
    buffer_ms: int = 7 * 86_400_000
    percent: float = 0.0
    count: int = 1
    kind: str = "SNAPSHOT"
    mode: str = "EQUAL"
    ignore_crc: bool = False
    batch: int = 500
    max_tasks: int | None = None

    @property
    def thresholds(self) -> CompactionThresholds:
        return CompactionThresholds(self.percent, self.count, self.kind, configured=True)


def _key(key: str) -> str:
    return f"{TASK_TYPE}.{key}"


def rules_of(task_config: dict[str, str], upsert: UpsertConfig | None = None) -> Rules:
    """The task config read and checked with Pinot's rules and messages."""
    try:
        thresholds = CompactionThresholds.of_task(task_config)
        batch = task_number(task_config, BATCH_KEY, int, "an integer")
        max_tasks = task_number(task_config, MAX_TASKS_KEY, int, "an integer")
    except ConfigError as exc:
        raise TaskConfigError(exc.field, exc.message) from None
    try:
        buffer_ms = period_ms(task_config.get(BUFFER_KEY) or "7d")
    except ValueError as exc:
        raise TaskConfigError(_key(BUFFER_KEY), str(exc)) from None
    kind = thresholds.valid_doc_ids_type
    if upsert is not None and kind.startswith("SNAPSHOT") and upsert.snapshot is Toggle.DISABLE:
        raise TaskConfigError(_key(VALID_DOC_IDS_TYPE),
                              f"'snapshot' must not be 'DISABLE' with validDocIdsType: {kind}")  # fmt: skip
    if upsert is not None and kind.endswith("_WITH_DELETE") and not upsert.delete_record_column:
        raise TaskConfigError(_key(VALID_DOC_IDS_TYPE), "'deleteRecordColumn' must be provided "
                              f"with validDocIdsType: {kind}")  # fmt: skip
    mode = str(task_config.get(CONSENSUS_MODE) or "EQUAL").strip().upper()
    if mode not in MODES:
        raise TaskConfigError(_key(CONSENSUS_MODE), f"must be one of {', '.join(MODES)}")
    for key, value in ((BATCH_KEY, batch), (MAX_TASKS_KEY, max_tasks)):
        if value is not None and value < 1:
            raise TaskConfigError(_key(key), "must be at least 1")
    return Rules(buffer_ms, thresholds.percent, thresholds.count, kind, mode,
                 str(task_config.get(IGNORE_CRC_KEY, "false")).lower() == "true",
                 batch or 500, max_tasks)  # fmt: skip


def checked_upsert(table_config: dict) -> UpsertConfig:
    """The table's upsert config; TaskConfigError when Pinot refuses the task for it."""
    if str(table_config.get("tableType", "")).upper() != "REALTIME":
        raise TaskConfigError(TASK_TYPE, f"{TASK_TYPE} only supports realtime tables!")
    try:
        upsert = UpsertConfig.of(TableConfig.from_json(table_config))
    except ConfigError as exc:
        raise TaskConfigError(TASK_TYPE, str(exc)) from None
    if upsert is None:
        raise TaskConfigError(TASK_TYPE, f"Upsert must be enabled for {TASK_TYPE}")
    if upsert.metadata_ttl > 0:
        raise TaskConfigError(TASK_TYPE, f"{TASK_TYPE} does not run on a table with "
                              "upsertConfig.metadataTTL: its expired keys' docs stay valid")  # fmt: skip
    return upsert


def replica_admin_urls(store, table: str) -> dict[str, dict[str, str]]:
    """segment -> {instance: admin URL} of the servers where it is ONLINE in the external
    view."""
    view = store.external_view(table)
    configs = store.instance_configs()
    out: dict[str, dict[str, str]] = {}
    for segment, replicas in (view.segments if view else {}).items():
        for instance, state in sorted(replicas.items()):
            config = configs.get(instance)
            if state == "ONLINE" and config is not None and config.admin_port > 0:
                url = f"http://{config.host}:{config.admin_port}"
                out.setdefault(segment, {})[instance] = url
    return out


def valid_docs_metadata(table: str, replicas: dict[str, dict[str, str]], segments: list[str],
                        rules: Rules) -> dict[str, list[dict]]:  # fmt: skip
    """segment -> each answering replica's validDocIdsMetadata entry, asked per server in
    batches of ``numSegmentsBatchPerServerRequest``."""
    by_server: dict[str, list[str]] = {}
    for segment in segments:
        for url in replicas.get(segment, {}).values():
            by_server.setdefault(url, []).append(segment)
    found: dict[str, list[dict]] = {}
    for url, names in sorted(by_server.items()):
        for start in range(0, len(names), rules.batch):
            for entry in _ask(url, table, names[start : start + rules.batch], rules.kind):
                found.setdefault(entry["segmentName"], []).append(entry)
    return found


def _ask(url: str, table: str, segments: list[str], kind: str) -> list[dict]:
    try:
        response = requests.post(f"{url}/tables/{table}/validDocIdsMetadata",
                                 params={"validDocIdsType": kind},
                                 data=orjson.dumps({"segments": segments}),
                                 headers={"Content-Type": "application/json"},
                                 timeout=SERVER_TIMEOUT_S)  # fmt: skip
    except requests.RequestException as exc:
        log.warning("%s: no validDocIdsMetadata from %s: %s", table, url, exc)
        return []
    if response.status_code != 200:
        log.warning("%s: validDocIdsMetadata from %s: HTTP %s %s", table, url,
                    response.status_code, response.text[:200])  # fmt: skip
        return []
    return response.json()


def agreed_counts(entries: list[dict], replicas: int, crc: str, mode: str) -> tuple | None:
    """(total docs, invalid docs) the replicas agree on; None when an entry's copy is not
    ZooKeeper's, its server is not GOOD, or (EQUAL) a replica is missing or differs."""
    usable = [e for e in entries
              if str(e.get("segmentCrc")) == crc and e.get("serverStatus", "GOOD") == "GOOD"]  # fmt: skip
    if not usable or (mode == "EQUAL" and len(usable) < max(replicas, len(entries))):
        return None
    valid = {int(e["totalValidDocs"]) for e in usable}
    if mode == "EQUAL" and len(valid) != 1:
        return None
    total = int(usable[0]["totalDocs"])
    return total, total - max(valid)


def select(found: dict[str, list[dict]], due: dict, replicas: dict[str, dict], keep: set[str],
           rules: Rules) -> tuple[list[str], list[str]]:  # fmt: skip
    """(segments to delete, segments to compact most invalid first) among ``due`` (name ->
    ZK metadata); ``keep``: the partitions' newest completed segments, never deleted."""
    deletions, compactions = [], []
    for segment, metadata in due.items():
        counts = agreed_counts(found.get(segment, []), len(replicas.get(segment, {})),
                               str(metadata.crc), rules.mode)  # fmt: skip
        if counts is None:
            continue
        total, invalid = counts
        verdict = rules.thresholds.verdict(total, invalid, newest=segment in keep)
        if verdict is Verdict.DELETE:
            deletions.append(segment)
        elif verdict is Verdict.COMPACT:
            compactions.append((-invalid, segment))
    return sorted(deletions), [segment for _, segment in sorted(compactions)]


def kept_segments(store: ClusterStore, table: str) -> set[str]:
    """The newest completed segment of each partition of ``table`` (with type): the task
    never deletes these (the console marks them so too)."""
    return last_of_partitions(completed_segments(store, table))


class UpsertCompactionTaskGenerator(TaskGenerator):
    task_type = TASK_TYPE

    def validate(self, table_config: dict, task_config: dict[str, str]) -> None:
        rules_of(task_config, checked_upsert(table_config))

    def generate(self, ctx: GenerationContext, table_config: dict,
                 task_config: dict[str, str]) -> list[dict[str, str]]:  # fmt: skip
        rules = rules_of(task_config, checked_upsert({**table_config, "tableName": ctx.table_name}))
        if ctx.incomplete_subtask_configs():
            return []  # Pinot: one task of this type per table at a time
        completed = completed_segments(ctx.store, ctx.table_name)
        horizon = ctx.now_ms - rules.buffer_ms
        due = {s: m for s, m in completed.items()
               if m.download_url and m.end_time_ms is not None and m.end_time_ms <= horizon}  # fmt: skip
        if not due:
            return []
        replicas = replica_admin_urls(ctx.store, ctx.table_name)
        found = valid_docs_metadata(ctx.table_name, replicas, sorted(due), rules)
        keep = last_of_partitions(completed)
        deletions, compactions = select(found, due, replicas, keep, rules)
        if rules.max_tasks is not None:
            compactions = compactions[: rules.max_tasks]
        return [{
            TABLE_NAME_KEY: ctx.table_name, SEGMENT_NAME_KEY: segment,
            DOWNLOAD_URL_KEY: due[segment].download_url,
            UPLOAD_URL_KEY: f"{ctx.controller_url}/segments", CRC_KEY: str(due[segment].crc),
            VALID_DOC_IDS_TYPE: rules.kind, CONSENSUS_MODE: rules.mode,
            IGNORE_CRC_KEY: str(rules.ignore_crc).lower(),
            **({KEEP_EMPTY_KEY: "true"} if segment in keep else {}),
        } for segment in deletions + compactions]  # fmt: skip

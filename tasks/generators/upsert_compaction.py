"""UpsertCompactionTask on the controller (Pinot's ``UpsertCompactionTaskGenerator``): one
subtask per completed segment of an upsert table with enough invalid docs.

Keys (Pinot's defaults): ``bufferTimePeriod`` (7d: only segments whose end time is older),
``invalidRecordsThresholdPercent`` (0.0) and ``invalidRecordsThresholdCount`` (1), both of
which must hold, ``validDocIdsType`` (SNAPSHOT, SNAPSHOT_WITH_DELETE, IN_MEMORY,
IN_MEMORY_WITH_DELETE), ``validDocIdsConsensusMode`` (EQUAL: every replica's count the same,
else the segment waits; MOST_VALID_DOCS; UNSAFE), ``tableMaxNumTasks`` (no limit).

The counts come from each ONLINE replica's ``validDocIdsMetadata`` (server admin API), whose
CRC must be ZooKeeper's. A table with an unfinished task of this type gets none. The most
invalid segments go first. Refused for OFFLINE tables, tables that do not upsert and tables
with ``metadataTTL`` (their old docs stay valid without being in the map, Pinot's rule).
"""

from __future__ import annotations

import logging

import orjson
import requests

from engine.common.errors import ConfigError
from engine.spi.periods import period_ms
from engine.spi.table_config import TableConfig
from engine.spi.upsert_config import UpsertConfig
from tasks.errors import TaskConfigError
from tasks.generators.base import TABLE_NAME_KEY, UPLOAD_URL_KEY, GenerationContext, TaskGenerator
from tasks.generators.purge import completed_segments, last_of_partitions

log = logging.getLogger(__name__)

TASK_TYPE = "UpsertCompactionTask"
SEGMENT_NAME_KEY = "segmentName"
DOWNLOAD_URL_KEY = "downloadURL"
CRC_KEY = "crc"
SERVERS_KEY = "serverAdminUrls"  # JSON list: the replicas to take the bitmap from
KEEP_EMPTY_KEY = "keepEmptySegment"
VALID_DOC_IDS_TYPE = "validDocIdsType"
CONSENSUS_MODE = "validDocIdsConsensusMode"
TYPES = ("SNAPSHOT", "SNAPSHOT_WITH_DELETE", "IN_MEMORY", "IN_MEMORY_WITH_DELETE")
MODES = ("EQUAL", "MOST_VALID_DOCS", "UNSAFE")
SERVER_TIMEOUT_S = 30


def _number(task_config: dict, key: str, default: float) -> float:
    raw = task_config.get(key)
    try:
        value = float(raw) if raw not in (None, "") else default
    except ValueError:
        raise TaskConfigError(f"{TASK_TYPE}.{key}", f"{raw!r} is not a number") from None
    if value < 0:
        raise TaskConfigError(f"{TASK_TYPE}.{key}", "must not be negative")
    return value


def settings(task_config: dict[str, str]) -> dict:
    kind = (task_config.get(VALID_DOC_IDS_TYPE) or "SNAPSHOT").upper()
    if kind not in TYPES:
        raise TaskConfigError(
            f"{TASK_TYPE}.{VALID_DOC_IDS_TYPE}", f"must be one of {', '.join(TYPES)}"
        )
    mode = (task_config.get(CONSENSUS_MODE) or "EQUAL").upper()
    if mode not in MODES:
        raise TaskConfigError(f"{TASK_TYPE}.{CONSENSUS_MODE}", f"must be one of {', '.join(MODES)}")
    try:
        buffer_ms = period_ms(task_config.get("bufferTimePeriod") or "7d")
    except ValueError as exc:
        raise TaskConfigError(f"{TASK_TYPE}.bufferTimePeriod", str(exc)) from None
    return {
        "type": kind, "mode": mode, "buffer_ms": buffer_ms,
        "percent": _number(task_config, "invalidRecordsThresholdPercent", 0.0),
        "count": _number(task_config, "invalidRecordsThresholdCount", 1),
        "max_tasks": int(_number(task_config, "tableMaxNumTasks", float("inf")))
        if task_config.get("tableMaxNumTasks") else None,
    }  # fmt: skip


def check_table(table_config: dict) -> None:
    """Pinot refuses the task for OFFLINE, non-upsert and metadataTTL tables."""
    name = table_config.get("tableName", "?")
    if str(table_config.get("tableType", "")).upper() != "REALTIME":
        raise TaskConfigError(TASK_TYPE, f"{TASK_TYPE} is for REALTIME tables only, not {name}")
    try:
        upsert = UpsertConfig.of(TableConfig.from_json(table_config))
    except ConfigError as exc:
        raise TaskConfigError(TASK_TYPE, str(exc)) from None
    if upsert is None:
        raise TaskConfigError(TASK_TYPE, f"{TASK_TYPE} needs an upsert table; {name} is not one")
    if upsert.metadata_ttl > 0:
        raise TaskConfigError(TASK_TYPE, f"{TASK_TYPE} does not run on a table with metadataTTL")


def replica_admin_urls(ctx: GenerationContext) -> dict[str, list[str]]:
    """segment -> the admin URLs of the servers where it is ONLINE in the external view."""
    view = ctx.store.external_view(ctx.table_name)
    configs = ctx.store.instance_configs()
    out: dict[str, list[str]] = {}
    for segment, replicas in (view.segments if view else {}).items():
        for instance, state in sorted(replicas.items()):
            config = configs.get(instance)
            if state == "ONLINE" and config is not None and config.admin_port > 0:
                out.setdefault(segment, []).append(f"http://{config.host}:{config.admin_port}")
    return out


def valid_docs_metadata(table: str, urls: list[str], segments: list[str], kind: str) -> dict:
    """segment -> [each answering replica's validDocIdsMetadata entry]."""
    found: dict[str, list[dict]] = {}
    for url in urls:
        try:
            response = requests.post(f"{url}/tables/{table}/validDocIdsMetadata",
                                     params={"validDocIdsType": kind},
                                     data=orjson.dumps({"segments": segments}),
                                     headers={"Content-Type": "application/json"},
                                     timeout=SERVER_TIMEOUT_S)  # fmt: skip
        except requests.RequestException as exc:
            log.warning("%s: no validDocIdsMetadata from %s: %s", table, url, exc)
            continue
        if response.status_code != 200:
            continue
        for entry in response.json():
            found.setdefault(entry["segmentName"], []).append(entry)
    return found


class UpsertCompactionTaskGenerator(TaskGenerator):
    task_type = TASK_TYPE

    def validate(self, table_config: dict, task_config: dict[str, str]) -> None:
        check_table(table_config)
        settings(task_config)

    def generate(self, ctx: GenerationContext, table_config: dict,
                 task_config: dict[str, str]) -> list[dict[str, str]]:  # fmt: skip
        self.validate({**table_config, "tableName": ctx.table_name}, task_config)
        if ctx.incomplete_subtask_configs():
            return []  # Pinot: one run of this task per table at a time
        rules = settings(task_config)
        completed = completed_segments(ctx)
        due = {s: m for s, m in completed.items()
               if m.end_time_ms is not None and m.end_time_ms <= ctx.now_ms - rules["buffer_ms"]}  # fmt: skip
        urls = replica_admin_urls(ctx)
        servers = sorted({u for s in due for u in urls.get(s, [])})
        found = valid_docs_metadata(ctx.table_name, servers, sorted(due), rules["type"])
        keep = last_of_partitions(completed)
        picked = []
        for segment, metadata in due.items():
            counts = _agreed_counts(found.get(segment, []), len(urls.get(segment, [])),
                                    str(metadata.crc), rules["mode"])  # fmt: skip
            if counts is None:
                continue
            total, valid = counts
            invalid = total - valid
            percent = 100.0 * invalid / total if total else 0.0
            if invalid < rules["count"] or percent < rules["percent"] or invalid == 0:
                continue
            picked.append((-invalid, segment, metadata))
        picked.sort()
        if rules["max_tasks"] is not None:
            picked = picked[: rules["max_tasks"]]
        return [{
            TABLE_NAME_KEY: ctx.table_name, SEGMENT_NAME_KEY: segment,
            DOWNLOAD_URL_KEY: metadata.download_url, UPLOAD_URL_KEY: f"{ctx.controller_url}/segments",
            CRC_KEY: str(metadata.crc), SERVERS_KEY: orjson.dumps(urls.get(segment, [])).decode(),
            VALID_DOC_IDS_TYPE: rules["type"], CONSENSUS_MODE: rules["mode"],
            **({KEEP_EMPTY_KEY: "true"} if segment in keep else {}),
        } for _, segment, metadata in picked]  # fmt: skip


def _agreed_counts(entries: list[dict], replicas: int, crc: str, mode: str):
    """(total docs, valid docs) the replicas agree on, None when they do not (or a replica
    holds another copy than ZooKeeper's, or did not answer under EQUAL)."""
    usable = [
        e for e in entries if str(e.get("segmentCrc")) == crc and e.get("serverStatus") == "GOOD"
    ]
    if not usable or (mode == "EQUAL" and len(usable) < replicas):
        return None
    valid = {int(e["totalValidDocs"]) for e in usable}
    if mode == "EQUAL" and len(valid) != 1:
        return None
    return int(usable[0]["totalDocs"]), max(valid)

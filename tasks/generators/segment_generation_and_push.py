"""SegmentGenerationAndPushTask on the controller: one subtask per input file of the table's
``batchConfigMaps``, as Pinot's generator does.

Input files are read only under the readable data roots and a URI or METADATA push writes
only under the writable ones (``tasks.data_roots``): anything else is a TaskConfigError
naming the key and the setting, before any file is listed. Each minion checks again.

An APPEND table skips files already ingested (any segment's ``custom.map`` holds the file's
URI in ``input.data.file.uri``) or held by an unfinished subtask, so a file is never ingested
twice, even across runs; a REFRESH table rebuilds every file, under names derived from the
file, so each run replaces its segments. ``tableMaxNumTasks`` caps a run (the framework
applies it); the next run takes the rest.
"""

from __future__ import annotations

import orjson

from engine.clusterstate import split_table_name
from tasks.data_roots import readable_roots, writable_roots
from tasks.errors import TaskConfigError
from tasks.generators.base import UPLOAD_URL_KEY, GenerationContext, TaskGenerator
from tasks.generators.batch_inputs import (
    BATCH_MAPS_KEY,
    batch_config_maps,
    input_format_of,
    list_input_uris,
    within_roots,
)

TASK_TYPE = "SegmentGenerationAndPushTask"
INPUT_FILE_URI_KEY = "input.data.file.uri"
PUSH_MODES = ("TAR", "URI", "METADATA")
# the batch config map keys passed on to the executor as they are
_PASSED = ("outputDirURI", "push.segmentUriPrefix", "push.segmentUriSuffix")
_PASSED_PREFIXES = ("recordReader.", "segmentNameGenerator.", "input.fs.")


def ingestion_type(table_config: dict) -> str:
    batch = (table_config.get("ingestionConfig") or {}).get("batchIngestionConfig") or {}
    kind = batch.get("segmentIngestionType") or (table_config.get("segmentsConfig") or {}).get(
        "segmentPushType", "APPEND"
    )
    return str(kind).upper()


def push_mode(batch_map: dict[str, str], index: int) -> str:
    # Pinot's code defaults to TAR (its comment says METADATA)
    mode = (batch_map.get("push.mode") or "TAR").upper()
    if mode not in PUSH_MODES:
        raise TaskConfigError(
            f"ingestionConfig.batchIngestionConfig.batchConfigMaps[{index}].push.mode",
            f"must be TAR, URI or METADATA, got {mode!r}",
        )
    if mode != "TAR" and not batch_map.get("outputDirURI"):
        raise TaskConfigError(
            f"ingestionConfig.batchIngestionConfig.batchConfigMaps[{index}].outputDirURI",
            f"push.mode {mode} needs an outputDirURI the controller can read the segment from",
        )
    return mode


def ingested_files(ctx: GenerationContext) -> set[str]:
    """Input file URIs recorded in the table's segments' ZK metadata."""
    done = set()
    for segment in ctx.store.segment_names(ctx.table_name):
        metadata = ctx.store.segment_metadata(ctx.table_name, segment)
        custom = (metadata.extra.get("custom.map") if metadata else None) or "{}"
        uri = orjson.loads(custom).get(INPUT_FILE_URI_KEY)
        if uri:
            done.add(uri)
    return done


class SegmentGenerationAndPushTaskGenerator(TaskGenerator):
    task_type = TASK_TYPE

    def validate(self, table_config: dict, task_config: dict[str, str]) -> None:
        if split_table_name(str(table_config.get("tableName", "")))[1] == "REALTIME" or (
            str(table_config.get("tableType", "")).upper() == "REALTIME"
        ):
            raise TaskConfigError(TASK_TYPE, "runs on OFFLINE tables only")
        for index, batch_map in enumerate(batch_config_maps(table_config)):
            push_mode(batch_map, index)

    def generate(self, ctx: GenerationContext, table_config: dict,
                 task_config: dict[str, str]) -> list[dict[str, str]]:  # fmt: skip
        append = ingestion_type(table_config) != "REFRESH"
        skip = set()
        if append:
            skip = ingested_files(ctx) | {
                c.get(INPUT_FILE_URI_KEY) for c in ctx.incomplete_subtask_configs()
            }
        configs = []
        readable, writable = readable_roots(), writable_roots()
        for index, batch_map in enumerate(batch_config_maps(table_config)):
            mode = push_mode(batch_map, index)
            if mode != "TAR":
                within_roots(writable, batch_map["outputDirURI"],
                             f"{BATCH_MAPS_KEY}[{index}].outputDirURI")  # fmt: skip
            for uri in list_input_uris(batch_map, index, readable):
                if uri in skip:
                    continue
                config = {
                    INPUT_FILE_URI_KEY: uri,
                    "inputFormat": input_format_of(batch_map, index, uri),
                    "push.mode": mode,
                    "segmentIngestionType": "APPEND" if append else "REFRESH",
                    "sequenceId": str(len(configs)),
                    UPLOAD_URL_KEY: f"{ctx.controller_url}/segments",
                }
                config.update({k: v for k, v in batch_map.items() if k in _PASSED
                               or k.startswith(_PASSED_PREFIXES)})  # fmt: skip
                configs.append(config)
        return configs

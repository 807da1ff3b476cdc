"""SegmentGenerationAndPushTask on a minion: fetch the input file, build its segment on the
worker's SparkSession, and push it to the controller's segment API. A push the controller
refuses (or never answers) fails the subtask: the segment is not in the table, so the subtask
must not report success (Pinot PR #18813).

The input file and the ``outputDirURI`` are checked against this minion's own data roots
(``tasks.data_roots``) before either is opened, whatever the controller checked."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

import fsspec
import orjson
import requests

from engine.clusterstate import split_table_name
from engine.spi.data_roots import OutsideRootsError
from spark_jobs.ingestion.naming import INPUT_FILE, SIMPLE, SegmentNamer
from spark_jobs.ingestion.push import PushTarget, push_segment
from spark_jobs.ingestion.table_source import (
    default_schema_uri,
    default_table_config_uri,
    fetch_schema,
    fetch_table_config,
)
from tasks.controller_auth import task_headers, task_token
from tasks.data_roots import readable_roots, writable_roots
from tasks.errors import SubtaskFailedError
from tasks.executors.base import SubtaskContext, TaskExecutor
from tasks.generators.base import UPLOAD_URL_KEY
from tasks.generators.segment_generation_and_push import INPUT_FILE_URI_KEY

_READER_PREFIX = "recordReader.prop."
_NAMING_PREFIX = "segmentNameGenerator.configs."


def _prefixed(configs: dict[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix):]: v for k, v in configs.items() if k.startswith(prefix)}  # fmt: skip


def _local_copy(location: str, work: Path) -> Path:
    """A local file of the input at ``location`` (what ``DataRoots.check`` returned)."""
    parsed = urlparse(location)
    if not parsed.scheme:
        return Path(location)
    target = work / "input" / Path(unquote(parsed.path)).name
    target.parent.mkdir(parents=True, exist_ok=True)
    with fsspec.open(location, "rb") as src, target.open("wb") as out:
        shutil.copyfileobj(src, out)
    return target


def _checked_locations(configs: dict[str, str], mode: str) -> tuple[str, str | None]:
    """Where to read the input and, for a URI or METADATA push, write the tar; a refusal
    names the key and the setting, and nothing is opened."""
    try:
        source = readable_roots().check(configs[INPUT_FILE_URI_KEY], INPUT_FILE_URI_KEY)
        output = None
        if mode != "TAR":
            output = writable_roots().check(configs["outputDirURI"], "outputDirURI")
    except OutsideRootsError as exc:
        raise SubtaskFailedError(f"refused by this minion: {exc}") from None
    return source, output


def _namer(configs: dict[str, str], table_config: dict, schema: dict) -> SegmentNamer:
    kind = configs.get("segmentNameGenerator.type")
    naming = _prefixed(configs, _NAMING_PREFIX)
    if not kind:
        if configs.get("segmentIngestionType") == "REFRESH":
            # <table>_<file stem>: the next run's segment of the file replaces this one
            kind = INPUT_FILE
            raw_table = split_table_name(str(table_config.get("tableName", "")))[0]
            naming.setdefault("file.path.pattern", r".*/([^/]+?)(?:\.[^/.]*)?")
            naming.setdefault("segment.name.template", raw_table + r"_${filePathPattern:\1}")
        else:
            # Pinot's minion names APPEND segments with a UUID, so runs never collide
            kind = SIMPLE
            naming.setdefault("append.uuid.to.segment.name", "true")
    return SegmentNamer.create(kind, naming, table_config, schema)


def _publish(tar: Path, output_dir_uri: str) -> str:
    """Copy the tar to ``outputDirURI`` (a checked location: a local directory or an fsspec
    URL) for a URI or METADATA push; its URI."""
    destination = f"{output_dir_uri.rstrip('/')}/{tar.name}"
    with tar.open("rb") as src, fsspec.open(destination, "wb") as out:
        shutil.copyfileobj(src, out)
    return destination if urlparse(destination).scheme else Path(destination).as_uri()


def _metadata_files(mode: str) -> tuple[str, ...]:
    """What a METADATA push sends instead of the whole tar."""
    if mode != "METADATA":
        return ()
    from engine.segment.files import CREATION_META_FILE, METADATA_FILE

    return (METADATA_FILE, CREATION_META_FILE)


def _segment_of(controller: str, raw_table: str, table_type: str, uri: str) -> str | None:
    """The table's segment built from ``uri`` (its custom.map names the file), if any."""
    response = requests.get(f"{controller}/segments/{raw_table}/zkmetadata",
                            params={"type": table_type}, headers=task_headers(),
                            timeout=60)  # fmt: skip
    response.raise_for_status()
    for segment, fields in response.json().items():
        custom = orjson.loads(fields.get("custom.map") or "{}")
        if custom.get(INPUT_FILE_URI_KEY) == uri:
            return segment
    return None


class SegmentGenerationAndPushTaskExecutor(TaskExecutor):
    task_type = "SegmentGenerationAndPushTask"

    def execute(self, ctx: SubtaskContext) -> dict:
        from spark_jobs.minion.segment_generation import build_file_segment
        from spark_jobs.minion.session import minion_spark

        configs = ctx.configs
        upload_url = configs[UPLOAD_URL_KEY]
        controller = upload_url.rsplit("/segments", 1)[0]
        raw_table, table_type = split_table_name(ctx.table_name)
        uri = configs[INPUT_FILE_URI_KEY]
        mode = configs.get("push.mode", "TAR").upper()
        source, output_dir = _checked_locations(configs, mode)
        ctx.report_progress("reading the schema and table config")
        schema = fetch_schema(default_schema_uri(controller, raw_table), auth_token=task_token())
        table_config = fetch_table_config(default_table_config_uri(controller, raw_table),
                                          raw_table, auth_token=task_token())  # fmt: skip
        if configs.get("segmentIngestionType", "APPEND") == "APPEND":
            existing = _segment_of(controller, raw_table, table_type or "OFFLINE", uri)
            if existing:
                # an earlier attempt pushed it and was lost before it could report (e.g. its
                # minion was killed): pushing again would duplicate the file's rows
                ctx.report_progress(f"{uri} is already in segment {existing}")
                return {"segmentName": existing, INPUT_FILE_URI_KEY: uri, "skipped": True}
        work = Path(tempfile.mkdtemp(prefix="sprig-sgp-"))
        try:
            ctx.report_progress(f"fetching {uri}")
            local = _local_copy(source, work)
            ctx.report_progress(f"building the segment of {uri}")
            outcome = build_file_segment(
                minion_spark(), local, schema=schema, table_config=table_config,
                input_format=configs["inputFormat"],
                reader_configs=_prefixed(configs, _READER_PREFIX),
                namer=_namer(configs, table_config, schema), output_dir=work / "out",
                sequence_id=int(configs.get("sequenceId", "0")), input_file_uri=uri,
            )  # fmt: skip
            if not outcome.ok:
                raise SubtaskFailedError(f"building the segment of {uri} failed: "
                                         f"{outcome.message}")  # fmt: skip
            tar = Path(outcome.tar_path)
            download_uri = None
            if output_dir is not None:
                download_uri = _publish(tar, output_dir)
            ctx.report_progress(f"pushing segment {outcome.segment_name} ({mode})")
            target = PushTarget(controller, raw_table, table_type or "OFFLINE", mode,
                                auth_token=task_token())  # fmt: skip
            pushed = push_segment(target, tar, download_uri=download_uri,
                                  metadata_files=_metadata_files(mode))  # fmt: skip
            if not pushed.ok:
                raise SubtaskFailedError(
                    f"the upload of segment {outcome.segment_name} to {upload_url} failed: "
                    f"{pushed.message}"
                )
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return {"segmentName": outcome.segment_name, "numRows": outcome.num_rows,
                INPUT_FILE_URI_KEY: uri, "pushMode": mode, "push": pushed.message}  # fmt: skip

"""The input files of a table's ``batchConfigMaps``: ``inputDirURI`` is a local path or any
fsspec URL (``file://``, ``s3://``, ``gs://``, ``memory://``…) inside the readable data roots
(``tasks.data_roots``), filtered by Pinot's ``includeFileNamePattern`` /
``excludeFileNamePattern`` (``glob:`` or ``regex:``)."""

from __future__ import annotations

from urllib.parse import urlparse

import fsspec

from engine.spi.data_roots import DataRoots, OutsideRootsError
from spark_jobs.ingestion.files import FilePattern
from tasks.errors import TaskConfigError

BATCH_MAPS_KEY = "ingestionConfig.batchIngestionConfig.batchConfigMaps"
INPUT_FORMATS = {"avro", "csv", "json", "parquet", "orc", "thrift", "protobuf", "gzipped_json"}


def batch_config_maps(table_config: dict) -> list[dict[str, str]]:
    batch = (table_config.get("ingestionConfig") or {}).get("batchIngestionConfig") or {}
    maps = batch.get("batchConfigMaps") or []
    if not maps:
        raise TaskConfigError(BATCH_MAPS_KEY, "the table has no batch config map to ingest from")
    return [{str(k): str(v) for k, v in m.items()} for m in maps]


def input_format_of(batch_map: dict[str, str], index: int, uri: str | None = None) -> str:
    fmt = (batch_map.get("inputFormat") or "").lower()
    if not fmt and uri:  # ad-hoc runs may leave it to the file's extension, as Pinot's do
        fmt = uri.rsplit(".", 1)[-1].lower()
    if fmt not in INPUT_FORMATS:
        raise TaskConfigError(
            f"{BATCH_MAPS_KEY}[{index}].inputFormat",
            f"must be one of {', '.join(sorted(INPUT_FORMATS))}, got {fmt or 'nothing'!r}",
        )
    return fmt


def _uri(fs, path: str) -> str:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return f"file://{path}" if protocol in ("file", "local") else f"{protocol}://{path}"


def within_roots(roots: DataRoots, uri: str, key: str) -> str:
    """The location to open for ``uri``; TaskConfigError naming ``key`` and the setting to
    change when it is outside ``roots``."""
    try:
        return roots.check(uri, key)
    except OutsideRootsError as exc:
        raise TaskConfigError(key, exc.detail) from None


def list_input_uris(batch_map: dict[str, str], index: int, roots: DataRoots) -> list[str]:
    """The URIs of the matching files, sorted; TaskConfigError naming the key when the
    directory is missing, unreadable or outside ``roots``, or a file in it (a symlink) leads
    outside them. Nothing is opened before the directory is found inside ``roots``."""
    key = f"{BATCH_MAPS_KEY}[{index}].inputDirURI"
    directory = batch_map.get("inputDirURI")
    if not directory:
        raise TaskConfigError(key, "is required")
    location = within_roots(roots, directory, key)
    try:
        fs, root = fsspec.core.url_to_fs(location)
        if not fs.isdir(root):
            raise TaskConfigError(key, f"{directory!r} is not a directory")
        paths = sorted(fs.find(root))
    except TaskConfigError:
        raise
    except (OSError, ValueError, ImportError) as exc:
        raise TaskConfigError(key, f"cannot list {directory!r}: {exc}") from None
    include = batch_map.get("includeFileNamePattern")
    exclude = batch_map.get("excludeFileNamePattern")
    include_pattern = FilePattern.parse(include) if include else None
    exclude_pattern = FilePattern.parse(exclude) if exclude else None
    prefix = root.rstrip("/") + "/"
    uris = []
    for path in paths:
        relative = path[len(prefix) :] if path.startswith(prefix) else path
        absolute = path if path.startswith("/") else "/" + path
        if include_pattern and not include_pattern.matches(relative, absolute):
            continue
        if exclude_pattern and exclude_pattern.matches(relative, absolute):
            continue
        uri = _uri(fs, path)
        within_roots(roots, uri, key)
        uris.append(uri)
    return uris


def is_local(uri: str) -> bool:
    return urlparse(uri).scheme in ("", "file")

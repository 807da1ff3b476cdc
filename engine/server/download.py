"""Fetching a segment tar.gz from the deep store: ``segment.download.url`` is an http(s) URL
(the controller serves ``GET /segments/{table}/{segment}``), a local path, or any fsspec URL."""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path

import fsspec
import requests

from engine.clusterstate import SegmentZKMetadata
from engine.common.errors import ConfigError, EngineError
from engine.segment import read_metadata, unpack_segment
from engine.segment.tarball import DEFAULT_MAX_UNPACKED_BYTES
from engine.server.errors import SegmentLoadError

log = logging.getLogger(__name__)
_CHUNK = 1 << 20
DEEP_STORE_URL_KEY = "segment.deep.store.url"
MAX_UNPACKED_ENV = "SPRIG_SEGMENT_MAX_UNPACKED_BYTES"


def max_unpacked_bytes_from_env(environ: Mapping[str, str] | None = None) -> int:
    """``SPRIG_SEGMENT_MAX_UNPACKED_BYTES`` (unset or empty: 8 GiB), the most one downloaded
    segment may unpack to; ConfigError naming the variable unless a positive integer."""
    env = os.environ if environ is None else environ
    raw = (env.get(MAX_UNPACKED_ENV) or "").strip()
    if not raw:
        return DEFAULT_MAX_UNPACKED_BYTES
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(MAX_UNPACKED_ENV, f"expected a positive number of bytes, got {raw!r}")
    return int(raw)


def fetch_segment(seg_dir: Path, meta: SegmentZKMetadata, *, force: bool,
                  max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
                  headers: dict[str, str] | None = None) -> Path:  # fmt: skip
    """The local segment directory ``seg_dir``: reused when its CRC matches ZooKeeper's
    (unless ``force``), else downloaded and unpacked (at most ``max_unpacked_bytes``). The
    old local copy is replaced only once the new one is unpacked and checked."""
    name = seg_dir.name
    if seg_dir.is_dir() and not force:
        try:
            if not meta.crc or str(read_metadata(seg_dir).crc) == meta.crc:
                return seg_dir
        except EngineError:
            pass  # a damaged local copy: download it again
    staging = seg_dir.parent / f".staging-{uuid.uuid4().hex[:8]}"
    try:
        archive = _download(meta, staging / f"{name}.tar.gz", headers)
        unpacked = unpack_segment(archive, staging / "untar", max_unpacked_bytes=max_unpacked_bytes)
        got = read_metadata(unpacked)
        if got.segment_name != name:
            raise SegmentLoadError(
                f"{meta.download_url} holds segment {got.segment_name!r}, not {name!r}"
            )
        shutil.rmtree(seg_dir, ignore_errors=True)
        unpacked.rename(seg_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return seg_dir


def _download(meta: SegmentZKMetadata, dest: Path, headers: dict[str, str] | None) -> Path:
    """From ``segment.download.url``; when that fails and the controller also recorded the
    file's deep-store location (``segment.deep.store.url``, e.g. a directory every process
    mounts), from there."""
    try:
        return download_segment(meta.download_url, dest, headers=headers)
    except SegmentLoadError as exc:
        fallback = meta.extra.get(DEEP_STORE_URL_KEY)
        if not fallback or fallback == meta.download_url:
            raise
        log.warning("%s; trying the deep store copy at %s", exc, fallback)
        try:
            return download_segment(fallback, dest, headers=headers)
        except SegmentLoadError as again:
            raise SegmentLoadError(f"{exc}; the deep store copy also failed: {again}") from again


def download_segment(
    url: str, dest: Path, *, timeout_s: float = 300.0, headers: dict[str, str] | None = None
) -> Path:
    """Copy the archive at ``url`` to ``dest`` (written to a temp name, then renamed);
    ``headers`` go with an HTTP request (the server's fetcher credentials)."""
    if not url:
        raise SegmentLoadError("the segment metadata has no segment.download.url")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        if url.startswith(("http://", "https://")):
            _http_get(url, tmp, timeout_s, headers)
        else:
            _fs_get(url, tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _http_get(url: str, tmp: Path, timeout_s: float, headers: dict[str, str] | None) -> None:
    try:
        with requests.get(url, stream=True, timeout=(5, timeout_s), headers=headers) as response:
            if response.status_code != 200:
                # never the reply's body: whatever the URL pointed at must not show in the
                # segment's error, which the admin API and the controller serve
                raise SegmentLoadError(f"downloading {url} failed: HTTP {response.status_code}")
            with open(tmp, "wb") as out:
                for chunk in response.iter_content(_CHUNK):
                    out.write(chunk)
    except requests.RequestException as exc:
        raise SegmentLoadError(f"downloading {url} failed: {exc}") from exc


def _fs_get(url: str, tmp: Path) -> None:
    try:
        with fsspec.open(url, "rb") as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out, _CHUNK)
    except FileNotFoundError:
        raise SegmentLoadError(f"the deep store has no file at {url}") from None
    except (OSError, ValueError, ImportError) as exc:
        raise SegmentLoadError(f"reading {url} from the deep store failed: {exc}") from exc

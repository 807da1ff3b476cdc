"""Fetching a segment tar.gz from the deep store: ``segment.download.url`` is an http(s) URL
(the controller serves ``GET /segments/{table}/{segment}``), a local path, or any fsspec URL.

An http(s) URL may have come from a caller (a METADATA push's DOWNLOAD_URI): the controller
checked its host when it was pushed, and the host is checked again here, when it is fetched,
and the request sent to the address checked (``SegmentSources``), so a name that resolves
elsewhere by now (DNS rebinding) cannot send the fetch to an internal address. No redirect
is followed, and a failure names the status, never the reply.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

import fsspec
import urllib3

from engine.clusterstate import ClusterStore, InstanceType, SegmentZKMetadata
from engine.common.errors import ConfigError, EngineError
from engine.runtime.outbound import OutboundPolicy, OutboundRefused, Target, opened
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


def controller_download(url: str) -> tuple[str, int] | None:
    """(host, port) of ``url`` when it names a controller's segment download
    (``http(s)://host:port/segments/...``, after resolving ``.``, ``..`` and escapes), else
    None."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        return None
    path = os.path.normpath(unquote(parts.path))
    if scheme not in ("http", "https") or not parts.hostname or not path.startswith("/segments/"):
        return None
    return parts.hostname.lower(), port


def _no_controller(_host: str, _port: int) -> bool:
    return False


def registered_controllers(store_of: Callable[[], ClusterStore]) -> Callable[[str, int], bool]:
    """``is_controller`` for ``SegmentSources``: whether a controller instance registered
    itself at (host, port) in the cluster's ZooKeeper (ZooKeeperUnavailableError while it is
    away). Read at each download: controllers come and go."""

    def is_controller(host: str, port: int) -> bool:
        store = store_of()
        controllers = (
            store.instance_config(ident) for ident in store.instance_ids()
            if InstanceType.of_instance(ident) is InstanceType.CONTROLLER
        )  # fmt: skip
        return any(
            c is not None and c.self_registered and (c.host.lower(), c.port) == (host, port)
            for c in controllers
        )

    return is_controller


@dataclasses.dataclass(frozen=True)
class SegmentSources:
    """Which http(s) hosts a process downloads segments from: a controller's own download
    (``is_controller(host, port)``: a controller registered itself at that address), as it
    is; any other host only if ``outbound`` allows it, at the address it checked."""

    outbound: OutboundPolicy = dataclasses.field(default_factory=OutboundPolicy)
    is_controller: Callable[[str, int], bool] = _no_controller

    def target(self, url: str) -> Target:
        """Where to GET ``url``; SegmentLoadError saying why not."""
        controller = controller_download(url)
        if controller is not None and self.is_controller(*controller):
            parts = urlsplit(url.strip())
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            return Target(parts.scheme.lower(), *controller, (controller[0],), path)
        try:
            return self.outbound.target(url, "the segment's download URL")
        except OutboundRefused as exc:
            raise SegmentLoadError(f"not downloading {url}: {exc}") from None

    def credentials(self, url: str, headers: dict[str, str] | None) -> dict[str, str]:
        """``headers`` (a process's credentials) when ``url`` is a controller's own download,
        else none: a URL pushed through the API may name any host, which must not get them."""
        controller = controller_download(url)
        if headers and controller is not None and self.is_controller(*controller):
            return dict(headers)
        return {}


def fetch_segment(seg_dir: Path, meta: SegmentZKMetadata, *, force: bool,
                  sources: SegmentSources,
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
        archive = _download(meta, staging / f"{name}.tar.gz", sources, headers)
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


def _download(meta: SegmentZKMetadata, dest: Path, sources: SegmentSources,
              headers: dict[str, str] | None) -> Path:  # fmt: skip
    """From ``segment.download.url``; when that fails and the controller also recorded the
    file's deep-store location (``segment.deep.store.url``, e.g. a directory every process
    mounts), from there."""
    try:
        return download_segment(meta.download_url, dest, sources, headers=headers)
    except SegmentLoadError as exc:
        fallback = meta.extra.get(DEEP_STORE_URL_KEY)
        if not fallback or fallback == meta.download_url:
            raise
        log.warning("%s; trying the deep store copy at %s", exc, fallback)
        try:
            return download_segment(fallback, dest, sources, headers=headers)
        except SegmentLoadError as again:
            raise SegmentLoadError(f"{exc}; the deep store copy also failed: {again}") from again


def download_segment(url: str, dest: Path, sources: SegmentSources, *, timeout_s: float = 300.0,
                     headers: dict[str, str] | None = None) -> Path:  # fmt: skip
    """Copy the archive at ``url`` to ``dest`` (written to a temp name, then renamed); an
    http(s) URL only from where ``sources`` allows. ``timeout_s``: the most seconds between
    two reads. ``headers`` (the process's fetcher credentials) go only to a controller's own
    download (``SegmentSources.credentials``)."""
    if not url:
        raise SegmentLoadError("the segment metadata has no segment.download.url")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        if url.lower().startswith(("http://", "https://")):
            target = sources.target(url)
            _http_get(url, target, tmp, timeout_s, sources.credentials(url, headers))
        else:
            _fs_get(url, tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _http_get(url: str, target: Target, tmp: Path, timeout_s: float,
              headers: dict[str, str]) -> None:  # fmt: skip
    try:
        with opened(target, timeout=urllib3.Timeout(connect=5, read=timeout_s),
                    headers=headers) as response:  # fmt: skip
            if response.status != 200:
                # never the reply's body: whatever the URL pointed at must not show in the
                # segment's error, which the admin API and the controller serve
                raise SegmentLoadError(f"downloading {url} failed: HTTP {response.status}")
            with open(tmp, "wb") as out:
                for chunk in response.stream(_CHUNK):
                    out.write(chunk)
    except urllib3.exceptions.HTTPError as exc:
        raise SegmentLoadError(f"downloading {url} failed: {type(exc).__name__}") from exc


def _fs_get(url: str, tmp: Path) -> None:
    try:
        with fsspec.open(url, "rb") as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out, _CHUNK)
    except FileNotFoundError:
        raise SegmentLoadError(f"the deep store has no file at {url}") from None
    except (OSError, ValueError, ImportError) as exc:
        raise SegmentLoadError(f"reading {url} from the deep store failed: {exc}") from exc

"""Fetching a segment tar.gz from the deep store: ``segment.download.url`` is an http(s) URL
(the controller serves ``GET /segments/{table}/{segment}``), a local path, or any fsspec URL."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import fsspec
import requests

from engine.server.errors import SegmentLoadError

_CHUNK = 1 << 20


def download_segment(url: str, dest: Path, *, timeout_s: float = 300.0) -> Path:
    """Copy the archive at ``url`` to ``dest`` (written to a temp name, then renamed)."""
    if not url:
        raise SegmentLoadError("the segment metadata has no segment.download.url")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        if url.startswith(("http://", "https://")):
            _http_get(url, tmp, timeout_s)
        else:
            _fs_get(url, tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _http_get(url: str, tmp: Path, timeout_s: float) -> None:
    try:
        with requests.get(url, stream=True, timeout=(5, timeout_s)) as response:
            if response.status_code != 200:
                raise SegmentLoadError(
                    f"downloading {url} failed: HTTP {response.status_code} "
                    f"{response.text[:200].strip()}"
                )
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

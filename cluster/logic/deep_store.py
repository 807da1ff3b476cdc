"""The deep store (Pinot's ``controller.data.dir``): segment tar.gz files at
``<root>/<rawTable>/<segment>``, on a local directory or any fsspec URL (``s3://``, ``file://``).

Deleted segments move to ``<root>/Deleted_Segments/<rawTable>/<segment>__deleted_<epochMs>``
and are purged by the RetentionManager once older than DELETED_SEGMENTS_RETENTION.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import quote

import fsspec
from django.conf import settings

from engine.common import clock
from engine.common.names import InvalidNameError, check_segment_name, check_table_name

DELETED_DIR = "Deleted_Segments"
_DELETED_SUFFIX = re.compile(r"__deleted_(\d+)$")


class DeepStore:
    def __init__(self, uri: str):
        self.uri = uri
        self.fs, self.root = fsspec.core.url_to_fs(uri)
        self.root = self.root.rstrip("/")

    def segment_path(self, raw_table: str, segment: str) -> str:
        """``<root>/<rawTable>/<segment>``; InvalidNameError for names that are not one path
        component each (they come from requests and from ZooKeeper)."""
        check_segment_name(segment)
        return self.inside(f"{self.table_path(raw_table)}/{quote(segment, safe='')}")

    def table_path(self, raw_table: str) -> str:
        return self.inside(f"{self.root}/{check_table_name(raw_table)}")

    def inside(self, path: str) -> str:
        """``path`` normalised, if it lies below the root; InvalidNameError otherwise."""
        normal = posixpath.normpath(path)
        if not normal.startswith(f"{self.root}/"):
            # the message names the last part only: the root is the operator's business
            raise InvalidNameError("deep-store file", path.rsplit("/", 1)[-1],
                                   "its path leaves the deep store")  # fmt: skip
        return normal

    def url_of(self, path: str) -> str:
        return self.fs.unstrip_protocol(path)

    def put(self, local_path: str, raw_table: str, segment: str) -> str:
        """Copy a local tar.gz in; returns the stored file's URL."""
        path = self.segment_path(raw_table, segment)
        self.fs.makedirs(self.table_path(raw_table), exist_ok=True)
        tmp = f"{path}.uploading"
        self.fs.put_file(local_path, tmp)
        self.fs.mv(tmp, path)
        return self.url_of(path)

    def exists(self, raw_table: str, segment: str) -> bool:
        return self.fs.exists(self.segment_path(raw_table, segment))

    def size(self, raw_table: str, segment: str) -> int:
        return int(self.fs.size(self.segment_path(raw_table, segment)))

    def open(self, raw_table: str, segment: str):
        return self.fs.open(self.segment_path(raw_table, segment), "rb")

    def remove(self, raw_table: str, segment: str, *, keep: bool) -> bool:
        """Delete one segment file, or move it to Deleted_Segments when ``keep``."""
        path = self.segment_path(raw_table, segment)
        if not self.fs.exists(path):
            return False
        self._remove_file(raw_table, path, keep=keep)
        return True

    def _remove_file(self, raw_table: str, path: str, *, keep: bool) -> None:
        if keep:
            folder = f"{self.root}/{DELETED_DIR}/{raw_table}"
            self.fs.makedirs(folder, exist_ok=True)
            stored_name = path.rsplit("/", 1)[-1]  # quoted already
            self.fs.mv(path, f"{folder}/{stored_name}__deleted_{clock.now_ms()}")
        else:
            self.fs.rm(path)

    def remove_table(self, raw_table: str, *, keep: bool) -> int:
        """Delete (or move to Deleted_Segments) every file of a table; returns how many."""
        folder = self.table_path(raw_table)
        if not self.fs.exists(folder):
            return 0
        paths = [self.inside(p) for p in self.fs.ls(folder, detail=False)]
        for path in paths:
            self._remove_file(raw_table, path, keep=keep)
        self.fs.rm(folder, recursive=True)
        return len(paths)

    def purge_deleted(self, older_than_ms: int, now_ms: int | None = None) -> list[str]:
        """Remove kept deleted segments deleted more than ``older_than_ms`` ago."""
        now_ms = now_ms if now_ms is not None else clock.now_ms()
        base = f"{self.root}/{DELETED_DIR}"
        if not self.fs.exists(base):
            return []
        purged = []
        for table_dir in self.fs.ls(base, detail=False):
            for path in self.fs.ls(table_dir, detail=False):
                match = _DELETED_SUFFIX.search(path)
                if match and now_ms - int(match.group(1)) > older_than_ms:
                    self.fs.rm(path)
                    purged.append(path)
        return purged


def get_deep_store() -> DeepStore:
    return DeepStore(settings.DEEP_STORE_URI)

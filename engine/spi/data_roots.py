"""Where the cluster may read and write data files: URIs under configured roots only.

A minion task's ``inputDirURI`` and ``outputDirURI`` and a URI push's ``DOWNLOAD_URI`` come
from callers; each is checked against the roots an operator configured (the deep store and
the declared input and output roots) before anything opens it. A root is a local directory
or an fsspec URL (``s3://bucket/prefix``); its scheme is part of it, so a URI whose scheme
no root has is refused too.

The check returns the location to open, so what is checked is what is read: a local path is
resolved (``..`` and symlinks) and must stay inside a resolved local root; a remote URI may
not have ``.`` or ``..`` segments (a server resolves them, an object store does not) and must
start with a root's segments. Chained fsspec URLs (``zip://a::file:///b``) are refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from urllib.parse import unquote

from fsspec.core import split_protocol

_LOCAL = {None, "file", "local"}


class OutsideRootsError(ValueError):
    """A URI outside every configured root; ``key`` names the config field that held it and
    ``setting`` the setting that would allow it."""

    def __init__(self, key: str, uri: str, reason: str, setting: str):
        self.key = key
        self.setting = setting
        self.detail = f"{uri!r} {reason}; to allow it, add its directory to {setting}"
        super().__init__(f"{key} {self.detail}")


def _local_path(protocol: str | None, path: str) -> str | None:
    """The absolute, resolved path of a local URI; None for a remote host (file://host/)."""
    if protocol is not None and not path.startswith("/"):
        return None  # file://host/path names another machine
    return os.path.realpath(path)


def _segments(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


class DataRoots:
    """The roots one kind of access may use; ``setting`` is named in refusals."""

    def __init__(self, roots: Iterable[str], setting: str):
        self.roots = [str(root) for root in roots if str(root).strip()]
        self.setting = setting

    def check(self, uri: str, key: str) -> str:
        """The location to open for ``uri`` (a resolved local path, or the URI itself);
        OutsideRootsError naming ``key`` when it is not inside a root."""
        text = str(uri).strip()
        if not text:
            raise OutsideRootsError(key, text, "is empty", self.setting)
        if "::" in text:
            raise OutsideRootsError(key, text, "chains filesystems (::)", self.setting)
        protocol, path = split_protocol(text)
        if protocol in _LOCAL:
            local = _local_path(protocol, path)
            if local is None:
                raise OutsideRootsError(key, text, "names another host", self.setting)
            for root in self._local_roots():
                if local == root or local.startswith(root.rstrip("/") + "/"):
                    return local
            raise OutsideRootsError(key, text, "is outside the allowed roots", self.setting)
        parts = _segments(path)
        if any(unquote(part) in (".", "..") for part in parts):
            raise OutsideRootsError(key, text, "has . or .. segments", self.setting)
        for root_protocol, root_parts in self._remote_roots():
            if root_protocol == protocol and parts[: len(root_parts)] == root_parts:
                return text
        raise OutsideRootsError(key, text, "is outside the allowed roots", self.setting)

    def contains(self, uri: str) -> bool:
        try:
            self.check(uri, "uri")
        except OutsideRootsError:
            return False
        return True

    def _local_roots(self) -> list[str]:
        found = []
        for root in self.roots:
            protocol, path = split_protocol(root)
            if protocol in _LOCAL and "::" not in root:
                local = _local_path(protocol, path)
                if local is not None:
                    found.append(local)
        return found

    def _remote_roots(self) -> list[tuple[str, list[str]]]:
        found = []
        for root in self.roots:
            protocol, path = split_protocol(root)
            if protocol not in _LOCAL and "::" not in root and _segments(path):
                found.append((protocol, _segments(path)))
        return found

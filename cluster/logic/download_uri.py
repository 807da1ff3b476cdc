"""Where a METADATA push's DOWNLOAD_URI may point: the controller records it as the segment's
download URL, and every server it is assigned to fetches it.

- ``http(s)``: the controller's own segment download (``/segments/...``, its deep store), or
  a host that resolves to public addresses only (``engine.runtime.outbound``; private ones
  by SPRIG_OUTBOUND_ALLOWED_HOSTS or SPRIG_OUTBOUND_ALLOW_PRIVATE);
- a local path or ``file://``: inside the deep store or an output root (SPRIG_OUTPUT_ROOTS,
  where ingestion jobs and minions write the segments they push), after resolving ``..``
  and symlinks;
- another filesystem (``s3://``, ``gs://``, ``hdfs://`` ...): under the deep store's URI or
  an output root, without ``.`` or ``..`` segments.

Anything else (``ftp://``, ``webhdfs://``, ...) is refused. A refusal is a 400 that names
the setting to change.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit

from django.conf import settings
from fsspec.core import split_protocol

from cluster.errors import BadRequest
from engine.runtime.outbound import OutboundPolicy, OutboundRefused

_LOCAL = {None, "file", "local"}
_WEB = {"http", "https"}


def check_download_uri(uri: str) -> str:
    """``uri`` if servers may fetch it; BadRequest saying why and what to change otherwise."""
    try:
        if "::" in uri:
            raise OutboundRefused("DOWNLOAD_URI must not chain filesystems (::)")
        protocol, path = split_protocol(uri.strip())
        protocol = protocol.lower() if protocol else None
        if protocol in _WEB:
            if not _controller_download(uri):
                policy = OutboundPolicy(
                    tuple(settings.OUTBOUND_ALLOWED_HOSTS), settings.OUTBOUND_ALLOW_PRIVATE
                )
                policy.check_url(uri, "DOWNLOAD_URI")
        elif protocol in _LOCAL:
            _check_local(protocol, path)
        else:
            _check_remote(protocol, path)
    except OutboundRefused as exc:
        raise BadRequest(str(exc)) from None
    return uri


def _roots() -> list[str]:
    return [settings.DEEP_STORE_URI, *settings.OUTPUT_ROOTS]


def _controller_download(uri: str) -> bool:
    parts = urlsplit(uri)
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        return False
    return (
        (parts.hostname or "").lower() == settings.CONTROLLER_HOST.lower()
        and port == settings.CONTROLLER_PORT
        and os.path.normpath(unquote(parts.path)).startswith("/segments/")
    )


def _check_local(protocol: str | None, path: str) -> None:
    if protocol is not None and not path.startswith("/"):
        raise OutboundRefused("DOWNLOAD_URI names a file on another host (file://host/...)")
    local = os.path.realpath(unquote(path) if protocol else path)
    for root in _roots():
        root_protocol, root_path = split_protocol(root)
        if root_protocol not in _LOCAL:
            continue
        base = os.path.realpath(root_path)
        if os.path.commonpath([base, local]) == base:
            return
    raise OutboundRefused(
        "DOWNLOAD_URI is a local file outside the deep store and the output roots; to allow "
        "its directory, add it to SPRIG_OUTPUT_ROOTS"
    )


def _segments(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


def _check_remote(protocol: str | None, path: str) -> None:
    parts = _segments(path)
    if any(unquote(part) in (".", "..") for part in parts):
        raise OutboundRefused("DOWNLOAD_URI must not have . or .. segments")
    for root in _roots():
        root_protocol, root_path = split_protocol(root)
        root_parts = _segments(root_path)
        if root_protocol == protocol and root_parts and parts[: len(root_parts)] == root_parts:
            return
    raise OutboundRefused(
        f"DOWNLOAD_URI scheme {protocol}:// is only allowed under the deep store "
        "(SPRIG_DEEP_STORE_URI) or an output root (SPRIG_OUTPUT_ROOTS)"
    )

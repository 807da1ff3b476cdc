"""Where a METADATA push's DOWNLOAD_URI may point: the controller records it as the segment's
download URL, and every server it is assigned to fetches it.

- ``http(s)``: the controller's own segment download (``/segments/...``, its deep store), or
  a host that resolves to public addresses only (``engine.runtime.outbound``; private ones
  by SPRIG_OUTBOUND_ALLOWED_HOSTS or SPRIG_OUTBOUND_ALLOW_PRIVATE);
- anything else (a local path, ``file://``, ``s3://`` ...): under the deep store or an output
  root, where ingestion jobs and minions write the segments they push
  (``tasks.data_roots.writable_roots``: local paths resolved, no ``..`` in remote ones).

A refusal is a 400 that names the setting to change.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit

from django.conf import settings
from fsspec.core import split_protocol

from controller.errors import BadRequest
from engine.runtime.outbound import OutboundPolicy, OutboundRefused
from engine.spi.data_roots import OutsideRootsError
from tasks.data_roots import writable_roots

_WEB = {"http", "https"}


def check_download_uri(uri: str) -> str:
    """``uri`` if servers may fetch it; BadRequest saying why and what to change otherwise."""
    protocol = (split_protocol(uri.strip())[0] or "").lower()
    try:
        if protocol in _WEB and "::" not in uri:
            if not _controller_download(uri):
                policy = OutboundPolicy(
                    tuple(settings.OUTBOUND_ALLOWED_HOSTS), settings.OUTBOUND_ALLOW_PRIVATE
                )
                policy.check_url(uri, "DOWNLOAD_URI")
        else:
            writable_roots().check(uri, "DOWNLOAD_URI")
    except (OutboundRefused, OutsideRootsError) as exc:
        raise BadRequest(str(exc)) from None
    return uri


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

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

from django.conf import settings
from fsspec.core import split_protocol

from controller.errors import BadRequest
from controller.outbound import outbound_policy
from engine.runtime.outbound import OutboundRefused
from engine.server.download import controller_download
from engine.spi.data_roots import OutsideRootsError
from tasks.data_roots import writable_roots

_WEB = {"http", "https"}


def check_download_uri(uri: str) -> str:
    """``uri`` if servers may fetch it; BadRequest saying why and what to change otherwise."""
    protocol = (split_protocol(uri.strip())[0] or "").lower()
    try:
        if protocol in _WEB and "::" not in uri:
            if not _controller_download(uri):
                outbound_policy().check_url(uri, "DOWNLOAD_URI")
        else:
            writable_roots().check(uri, "DOWNLOAD_URI")
    except (OutboundRefused, OutsideRootsError) as exc:
        raise BadRequest(str(exc)) from None
    return uri


def _controller_download(uri: str) -> bool:
    return controller_download(uri) == (settings.CONTROLLER_HOST.lower(), settings.CONTROLLER_PORT)

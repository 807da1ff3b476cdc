"""The credentials a process sends with its own calls to other processes, from Pinot's
``<namespace>.token`` keys (``AuthProviderUtils``): the token goes in ``Authorization``, with
``Basic `` put in front unless it is there already; ``<namespace>.header`` and
``<namespace>.prefix`` change the header's name and the scheme.

The namespaces Sprig reads::

    pinot.server.segment.fetcher.auth     a server's segment downloads
    pinot.server.segment.uploader.auth    a server's completion protocol calls and uploads
    task.auth                             a minion's calls to the controller (also segment.fetcher.auth
                                          for its downloads)
    controller.broker.auth                the controller's /sql forwarded to a broker
    controller.server.admin.auth          the controller's calls to servers' admin ports
"""

from __future__ import annotations

from engine.runtime.properties import PinotProperties

SERVER_FETCHER = "pinot.server.segment.fetcher.auth"
SERVER_UPLOADER = "pinot.server.segment.uploader.auth"
MINION_TASK = "task.auth"
MINION_FETCHER = "segment.fetcher.auth"
CONTROLLER_BROKER = "controller.broker.auth"
CONTROLLER_SERVER_ADMIN = "controller.server.admin.auth"


def auth_headers(properties: PinotProperties, namespace: str) -> dict[str, str]:
    """The header to send for ``namespace`` ({} when it has no token)."""
    token = properties.get(f"{namespace}.token", "")
    if not token:
        return {}
    header = properties.get(f"{namespace}.header", "") or "Authorization"
    prefix = properties.get(f"{namespace}.prefix", "") or "Basic"
    if not token.startswith(f"{prefix} "):
        token = f"{prefix} {token}"
    return {header: token}

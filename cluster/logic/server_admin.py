"""The controller asking servers on their admin ports (``consumingSegmentsInfo``,
``needReload``, ``validDocIdsMetadata``), in parallel.

A server is asked at the address it registered itself; an address written through the REST
API (``POST``/``PUT /instances``) only where the outbound policy allows, at the address it
checked (``engine.runtime.outbound``); with the controller's credentials
(``controller.server.admin.auth.token``) for servers that authenticate. Of an answer only its
JSON or its status is kept, never its text: what the controller relays goes to its caller,
and the address may be a caller's.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import orjson
import urllib3
from django.conf import settings

from controller.outbound import outbound_policy
from engine.clusterstate import ClusterStore
from engine.runtime.outbound import OutboundRefused, Target, opened
from engine.runtime.service_auth import CONTROLLER_SERVER_ADMIN, auth_headers

SERVER_TIMEOUT_S = 10.0
MAX_ANSWER_BYTES = 16 << 20  # thousands of segments' reports fit; more is not a server's
UNREADABLE = object()  # an answer that is not JSON (or too long to be one)


def table_path(table: str, tail: str) -> str:
    """``/tables/<table>/<tail>`` with the table name escaped."""
    return f"/tables/{quote(table, safe='')}/{tail}"


def ask_servers(store: ClusterStore, servers, path: str, timeout_s: float = SERVER_TIMEOUT_S, *,
                body: object = None) -> dict[str, tuple[object, str | None]]:  # fmt: skip
    """server -> (its JSON answer to ``GET path``, or ``POST path`` with ``body`` as JSON when
    given, None), or (None, why) when it could not be asked or did not answer, or
    (UNREADABLE, why); each within ``timeout_s``."""
    out: dict[str, tuple[object, str | None]] = {}
    targets: dict[str, Target] = {}
    policy = outbound_policy()
    for server in sorted(servers):
        config = store.instance_config(server)
        if config is None or config.admin_port <= 0:
            out[server] = None, "no admin port in its instance config"
            continue
        try:
            targets[server] = policy.instance_target(
                config.host, config.admin_port, path, self_registered=config.self_registered,
                what="the admin address set through the REST API",
            )  # fmt: skip
        except OutboundRefused as exc:
            out[server] = None, str(exc)
    if targets:
        headers = auth_headers(settings.PINOT_PROPERTIES, CONTROLLER_SERVER_ADMIN)
        payload = None
        if body is not None:
            payload = orjson.dumps(body)
            headers = {**headers, "Content-Type": "application/json"}
        with ThreadPoolExecutor(max_workers=min(16, len(targets))) as pool:
            futures = {s: pool.submit(_ask, target, timeout_s, headers, payload)
                       for s, target in targets.items()}  # fmt: skip
            out.update({server: future.result() for server, future in futures.items()})
    return out


def _ask(target: Target, timeout_s: float, headers: dict[str, str],
         payload: bytes | None = None) -> tuple[object, str | None]:  # fmt: skip
    method = "GET" if payload is None else "POST"
    try:
        with opened(target, method, timeout=urllib3.Timeout(total=timeout_s), body=payload,
                    headers=headers) as response:  # fmt: skip
            if response.status != 200:
                return None, f"HTTP {response.status}"
            data = response.read(MAX_ANSWER_BYTES + 1)
    except urllib3.exceptions.HTTPError as exc:
        return None, f"no answer: {type(exc).__name__}"
    if len(data) > MAX_ANSWER_BYTES:
        return UNREADABLE, f"the answer is over {MAX_ANSWER_BYTES} bytes"
    try:
        return orjson.loads(data), None
    except orjson.JSONDecodeError:
        return UNREADABLE, "the answer is not JSON"

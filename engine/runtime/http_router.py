"""Requests, responses and routes of the engine's HTTP service (``engine.runtime.http``):
``Router`` maps ``METHOD /path/{param}`` patterns to handlers with each route's body cap, and
``dispatch`` runs the handler a request matches."""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

from engine.common.errors import log_internal_error
from engine.runtime.http_limits import DEFAULT_ROUTE_BODY_BYTES, MAX_BODY_BYTES

log = logging.getLogger("engine.runtime.http")

_RESOLVED_CACHE_SIZE = 1024


@dataclasses.dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: bytes
    headers: dict[str, str]
    params: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"

    @classmethod
    def json(cls, data: object, status: int = 200) -> Response:
        return cls(status, orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY))

    @classmethod
    def text(cls, text: str, status: int = 200, content_type: str = "text/plain") -> Response:
        return cls(status, text.encode(), f"{content_type}; charset=utf-8")

    @classmethod
    def error(cls, status: int, message: str) -> Response:
        return cls.json({"code": status, "error": message}, status)


Handler = Callable[[Request], Response]


class Router:
    """Routes ``METHOD /literal/{param}/...`` patterns to handlers; ``{name}`` matches one
    path segment, ``{name:path}`` the rest of the path."""

    def __init__(self) -> None:
        self._routes: list[tuple[str, re.Pattern, Handler]] = []
        self._body_caps: dict[tuple[str, str], int] = {}  # (method, pattern) -> bytes
        self._body_cap_of: dict[tuple[str, str], int] = {}  # (method, path) -> bytes
        # no route takes less: a body up to this size needs no lookup (nearly every request)
        self.smallest_body_cap = DEFAULT_ROUTE_BODY_BYTES
        # (method, path) -> resolve's answer: a query port sees one path over and over, and
        # matching it against every pattern again cost more than the rest of the dispatch
        self._resolved: dict[tuple[str, str], tuple[Handler | None, dict[str, str], bool]] = {}

    def add(self, method: str, pattern: str, handler: Handler, *,
            max_body_bytes: int = DEFAULT_ROUTE_BODY_BYTES) -> None:  # fmt: skip
        """Route ``method pattern`` to ``handler``; a request whose Content-Length is over
        ``max_body_bytes`` (at most MAX_BODY_BYTES) is refused with 413 unread."""
        regex = re.sub(r"\{(\w+):path\}", r"(?P<\1>.+)", pattern)
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", regex)
        compiled = re.compile(f"^{regex}/?$")
        self._routes.append((method.upper(), compiled, handler))
        cap = min(max_body_bytes, MAX_BODY_BYTES)
        self._body_caps[(method.upper(), compiled.pattern)] = cap
        self.smallest_body_cap = min(self.smallest_body_cap, cap)
        self._resolved, self._body_cap_of = {}, {}

    def body_cap(self, method: str, path: str) -> int:
        """The body cap of the route ``method path`` matches (the default for none)."""
        key = (method, path)
        cap = self._body_cap_of.get(key)
        if cap is None:
            cap = DEFAULT_ROUTE_BODY_BYTES
            for m, regex, _handler in self._routes:
                if m == method and regex.match(path):
                    cap = self._body_caps[(m, regex.pattern)]
                    break
            if len(self._body_cap_of) >= _RESOLVED_CACHE_SIZE:
                self._body_cap_of = {}
            self._body_cap_of[key] = cap
        return cap

    def resolve(self, method: str, path: str) -> tuple[Handler | None, dict[str, str], bool]:
        """(handler, path params, whether the path exists for another method)."""
        key = (method, path)
        hit = self._resolved.get(key)
        if hit is None:
            hit = self._match(method, path)
            if len(self._resolved) >= _RESOLVED_CACHE_SIZE:  # paths with ids: start over
                self._resolved = {}
            self._resolved[key] = hit
        handler, params, exists = hit
        return handler, dict(params) if params else {}, exists

    def _match(self, method: str, path: str) -> tuple[Handler | None, dict[str, str], bool]:
        other = False
        for m, regex, handler in self._routes:
            match = regex.match(path)
            if match:
                if m == method:
                    return handler, {k: unquote(v) for k, v in match.groupdict().items()}, True
                other = True
        return None, {}, other


def dispatch(router: Router, method: str, target: str, headers: dict, body: bytes) -> Response:
    """The answer of the route ``method target`` matches: 404 or 405 when none does, 500 when
    the handler raises."""
    if target[:1] == "/" and target[1:2] != "/" and "?" not in target and "#" not in target:
        path, query_string = target, ""  # a plain origin-form path: nothing to split
    else:
        parts = urlsplit(target)
        path, query_string = parts.path, parts.query
    handler, params, exists = router.resolve(method, path)
    if handler is None:
        if exists:
            return Response.error(405, f"{method} is not allowed on {path}")
        return Response.error(404, f"no such path: {path}")
    query = (
        {k: v[-1] for k, v in parse_qs(query_string, keep_blank_values=True).items()}
        if query_string
        else {}
    )
    request = Request(method, path, query, body, headers, params)
    try:
        return handler(request)
    except Exception as exc:  # a handler bug is a 500 for this request only
        error_id = log_internal_error(log, f"{method} {path}", exc)
        return Response.error(500, f"internal error serving {method} {path} (error id "
                                   f"{error_id} in this process's log)")  # fmt: skip

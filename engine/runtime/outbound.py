"""Which hosts a process may send a request to on a caller's behalf, and sending it there.

A URL from a request (a lag alert's webhook; a METADATA push's DOWNLOAD_URI, which servers
fetch) must not make the cluster reach what only it can reach: loopback, link-local (cloud
metadata at 169.254.169.254), private networks. A host is refused when any address it
resolves to is not a public one, unless the operator allowed it by name or network
(``allowed_hosts``: SPRIG_OUTBOUND_ALLOWED_HOSTS) or allowed every private address
(``allow_private``: SPRIG_OUTBOUND_ALLOW_PRIVATE).

``check_url`` resolves the name when it checks. ``target`` also keeps the address it checked,
and ``opened`` (``post_json``) connects to that address (with the name in ``Host`` and in
TLS), so a name that resolves elsewhere a moment later (DNS rebinding) cannot redirect the
request; it follows no redirect.

The cluster's own instances are reached at the addresses they registered in ZooKeeper
themselves; an address written through the REST API (``POST``/``PUT /instances``) is a URL
from a request like any other (``instance_target``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import os
import socket
from collections.abc import Callable, Iterator, Mapping
from urllib.parse import urlsplit

import orjson
import urllib3

from engine.common.errors import ConfigError

HOSTS_SETTING = "SPRIG_OUTBOUND_ALLOWED_HOSTS"
PRIVATE_SETTING = "SPRIG_OUTBOUND_ALLOW_PRIVATE"

_BOOLEANS = {"": False, "false": False, "0": False, "no": False, "off": False,
             "true": True, "1": True, "yes": True, "on": True}  # fmt: skip

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[Address]]


class OutboundRefused(ValueError):
    """A URL the cluster will not fetch; the message says why and which setting allows it."""


def _public(address: Address) -> bool:
    """Globally routable unicast; an IPv4-mapped IPv6 address is judged by its IPv4 one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


def resolve(host: str, port: int) -> list[Address]:
    """Every address of ``host`` (an address literal is its own); OSError when none."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(ipaddress.ip_address(i[4][0].split("%", 1)[0]) for i in infos))


@dataclasses.dataclass(frozen=True)
class Target:
    """A checked URL: the address to connect to and what to ask it for."""

    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]  # every one checked; tried in turn, as a resolver's answers are
    path: str  # with the query

    @property
    def address(self) -> str:
        return self.addresses[0]

    @property
    def host_header(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 literal
        default_port = 443 if self.scheme == "https" else 80
        return name if self.port == default_port else f"{name}:{self.port}"


@dataclasses.dataclass(frozen=True)
class OutboundPolicy:
    """``allowed_hosts``: host names (exact, case-insensitive) and networks (``10.0.0.0/8``,
    a single address) reachable even when not public."""

    allowed_hosts: tuple[str, ...] = ()
    allow_private: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OutboundPolicy:
        """From SPRIG_OUTBOUND_ALLOWED_HOSTS (comma-separated) and SPRIG_OUTBOUND_ALLOW_PRIVATE
        (true/false; unset: false), as an engine process reads them at start; ConfigError
        naming the variable for another value."""
        env = os.environ if environ is None else environ
        hosts = tuple(h.strip() for h in (env.get(HOSTS_SETTING) or "").split(",") if h.strip())
        raw = (env.get(PRIVATE_SETTING) or "").strip().lower()
        if raw not in _BOOLEANS:
            raise ConfigError(PRIVATE_SETTING, f"expected true or false, got {raw!r}")
        return cls(hosts, _BOOLEANS[raw])

    def check_host(self, host: str | None, port: int | None, what: str,
                   resolver: Resolver = resolve) -> list[Address]:  # fmt: skip
        """The addresses of ``host``; OutboundRefused unless every one may be reached."""
        if not host:
            raise OutboundRefused(f"{what} names no host")
        host = host.strip("[]").lower()
        allowed = self.allow_private or host in self._names()
        try:
            addresses = resolver(host, port or 80)
        except (OSError, UnicodeError, ValueError) as exc:
            if allowed:
                return []  # allowed by name: whoever fetches it may resolve it
            raise OutboundRefused(f"{what}: host {host!r} cannot be resolved ({exc})") from None
        if allowed:
            return addresses
        if not addresses:
            raise OutboundRefused(f"{what}: host {host!r} has no address")
        for address in addresses:
            if not _public(address) and not self._allowed_address(address):
                raise OutboundRefused(
                    f"{what} names host {host!r}, which resolves to a loopback, link-local or "
                    f"private address ({address}); to allow it, add it to {HOSTS_SETTING} "
                    f"(or set {PRIVATE_SETTING}=true)"
                )
        return addresses

    def check_url(self, url: str, what: str) -> None:
        self.target(url, what, schemes=None)

    def target(self, url: str, what: str, schemes: tuple[str, ...] | None = ("http", "https"),
               resolver: Resolver = resolve) -> Target:  # fmt: skip
        """Where to send a request for ``url``, its host checked; OutboundRefused saying why
        not (also for a scheme outside ``schemes``, or credentials in the URL)."""
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError as exc:  # a port that is not a number
            raise OutboundRefused(f"{what} has a bad port: {exc}") from None
        scheme = parts.scheme.lower()
        if schemes is not None and scheme not in schemes:
            raise OutboundRefused(f"{what} must be a {' or '.join(schemes)} URL, not {url!r}")
        if parts.username or parts.password:
            raise OutboundRefused(f"{what} must not hold credentials")
        port = port or (443 if scheme == "https" else 80)
        addresses = self.check_host(parts.hostname, port, what, resolver)
        if schemes is not None and not addresses:
            raise OutboundRefused(f"{what}: host {parts.hostname!r} cannot be resolved")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        # a host allowed by name but not resolved here is left to the connection to resolve
        checked = tuple(str(a) for a in addresses) or ((parts.hostname or "").lower(),)
        return Target(scheme, (parts.hostname or "").lower(), port, checked, path)

    def instance_target(self, host: str, port: int, path: str, *, self_registered: bool,
                        what: str) -> Target:  # fmt: skip
        """Where to reach ``port`` of a cluster instance at ``host``: as it is when the instance
        registered the address itself (``InstanceConfig.self_registered``), else checked as a
        URL from a request (OutboundRefused saying why not), its checked address kept."""
        if self_registered:
            return Target("http", host, port, (host,), path)
        name = f"[{host}]" if ":" in host else host
        return self.target(f"http://{name}:{port}{path}", what)

    def _names(self) -> set[str]:
        return {h.strip().lower() for h in self.allowed_hosts if h.strip()}

    def _networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        networks = []
        for entry in self._names():
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                continue  # a host name, matched by _names
        return networks

    def _allowed_address(self, address: Address) -> bool:
        return any(address in network for network in self._networks())


@contextlib.contextmanager
def opened(target: Target, method: str = "GET", *, timeout: urllib3.Timeout,
           body: bytes | None = None,
           headers: Mapping[str, str] | None = None) -> Iterator[urllib3.BaseHTTPResponse]:  # fmt: skip
    """Send ``method`` to a checked address of ``target`` (the next one when a connection
    cannot be made; its name in ``Host`` and, for https, in SNI and the certificate check);
    the response with its body unread, closed on leaving. No redirect is followed, no retry
    made once connected; urllib3 errors propagate."""
    headers = {"Host": target.host_header, **(headers or {})}
    failed: urllib3.exceptions.HTTPError | None = None
    for address in target.addresses:
        pool = _pool(target, address, timeout)
        try:
            response = pool.urlopen(method, target.path, body=body, headers=headers,
                                    redirect=False, preload_content=False,
                                    assert_same_host=False)  # fmt: skip
        except urllib3.exceptions.ConnectTimeoutError as exc:  # NewConnectionError too
            pool.close()
            failed = exc
            continue
        try:
            yield response
        finally:
            response.release_conn()
            pool.close()
        return
    raise failed


def _pool(target: Target, address: str, timeout: urllib3.Timeout) -> urllib3.HTTPConnectionPool:
    kwargs = {"timeout": timeout, "retries": False, "maxsize": 1}
    if target.scheme == "https":
        return urllib3.HTTPSConnectionPool(address, target.port, cert_reqs="CERT_REQUIRED",
                                           server_hostname=target.host,
                                           assert_hostname=target.host, **kwargs)  # fmt: skip
    return urllib3.HTTPConnectionPool(address, target.port, **kwargs)


def post_json(target: Target, payload: dict, timeout_s: float) -> int:
    """POST ``payload`` as JSON to the checked address of ``target``; the reply's status.
    urllib3 errors (refused, timed out, TLS) propagate."""
    with opened(target, "POST", timeout=urllib3.Timeout(total=timeout_s),
                body=orjson.dumps(payload),
                headers={"Content-Type": "application/json"}) as response:  # fmt: skip
        response.drain_conn()  # the body is nobody's business here
        return response.status


def sprig_error(body: bytes) -> tuple[int | None, str] | None:
    """(errorCode or None, message) of a Sprig error body (``{"errorCode", "message"}`` or
    ``{"error"}``); None for any other body."""
    try:
        error = orjson.loads(body)
        message = error.get("message") or error.get("error")
        code = error.get("errorCode")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    if not isinstance(message, str) or not message:
        return None
    return (code if isinstance(code, int) and not isinstance(code, bool) else None), message


def reply_error(status: int, body: bytes) -> str:
    """What may be relayed of another process's failed reply: its status, and the message of
    a Sprig error, never any other text of it."""
    error = sprig_error(body)
    return f"HTTP {status}: {error[1]}" if error else f"HTTP {status}"

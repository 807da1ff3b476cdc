"""Which hosts a process may send a request to on a caller's behalf, and sending it there.

A URL from a request (a lag alert's webhook; a METADATA push's DOWNLOAD_URI, which servers
fetch) must not make the cluster reach what only it can reach: loopback, link-local (cloud
metadata at 169.254.169.254), private networks. A host is refused when any address it
resolves to is not a public one, unless the operator allowed it by name or network
(``allowed_hosts``: SPRIG_OUTBOUND_ALLOWED_HOSTS) or allowed every private address
(``allow_private``: SPRIG_OUTBOUND_ALLOW_PRIVATE).

``check_url`` resolves the name when it checks. ``target`` also keeps the address it checked,
and ``post_json`` connects to that address (with the name in ``Host`` and in TLS), so a name
that resolves elsewhere a moment later (DNS rebinding) cannot redirect the request; it follows
no redirect and reads no reply body.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

import orjson
import urllib3

HOSTS_SETTING = "SPRIG_OUTBOUND_ALLOWED_HOSTS"
PRIVATE_SETTING = "SPRIG_OUTBOUND_ALLOW_PRIVATE"

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
    address: str
    path: str  # with the query


@dataclasses.dataclass(frozen=True)
class OutboundPolicy:
    """``allowed_hosts``: host names (exact, case-insensitive) and networks (``10.0.0.0/8``,
    a single address) reachable even when not public."""

    allowed_hosts: tuple[str, ...] = ()
    allow_private: bool = False

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
        address = str(addresses[0]) if addresses else ""
        return Target(scheme, (parts.hostname or "").lower(), port, address, path)

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


def post_json(target: Target, payload: dict, timeout_s: float) -> int:
    """POST ``payload`` as JSON to the checked address of ``target``; the reply's status.
    urllib3 errors (refused, timed out, TLS) propagate."""
    kwargs = {"timeout": urllib3.Timeout(total=timeout_s), "retries": False, "maxsize": 1}
    if target.scheme == "https":
        pool = urllib3.HTTPSConnectionPool(target.address, target.port, cert_reqs="CERT_REQUIRED",
                                           server_hostname=target.host,
                                           assert_hostname=target.host, **kwargs)  # fmt: skip
    else:
        pool = urllib3.HTTPConnectionPool(target.address, target.port, **kwargs)
    name = f"[{target.host}]" if ":" in target.host else target.host  # an IPv6 literal
    default_port = 443 if target.scheme == "https" else 80
    host_header = name if target.port == default_port else f"{name}:{target.port}"
    try:
        response = pool.urlopen(
            "POST", target.path, body=orjson.dumps(payload), redirect=False,
            headers={"Host": host_header, "Content-Type": "application/json"},
            preload_content=False, assert_same_host=False,
        )  # fmt: skip
        response.drain_conn()  # the body is nobody's business here
        return response.status
    finally:
        pool.close()

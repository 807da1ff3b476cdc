"""Requests this cluster sends to URLs a user gave it (a lag alert's webhook): only to
allowed schemes and hosts, and never to loopback, private, link-local or other non-public
addresses unless an operator listed their network.

The host is resolved once and every address it has is checked; the request then goes to a
checked address (with the name in ``Host`` and in TLS), so a name that resolves elsewhere a
moment later (DNS rebinding) cannot redirect it. Redirects are not followed, and the reply's
body is read by no one: callers learn its status only.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import ipaddress
import socket
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

import orjson
import urllib3

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]


class OutboundRefusedError(ValueError):
    """A URL this process will not send a request to; the message names the setting."""


def _resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def is_public(address: Address) -> bool:
    """Globally routable unicast: not loopback, private, link-local (cloud metadata at
    169.254.169.254), shared, reserved, unspecified or multicast; an IPv4-mapped IPv6
    address is judged by its IPv4 address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


@dataclasses.dataclass(frozen=True)
class Target:
    """A checked URL: where to connect (``address``) and what to ask for."""

    scheme: str
    host: str
    port: int
    address: str
    path: str  # with the query


@dataclasses.dataclass(frozen=True)
class OutboundPolicy:
    """``hosts``: glob patterns of allowed host names or addresses (``*`` allows any);
    ``networks``: non-public networks requests may still go to (CIDRs). ``setting`` prefixes
    the names of the settings that hold these, for refusals."""

    schemes: frozenset[str]
    hosts: tuple[str, ...]
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    setting: str

    @classmethod
    def of(cls, schemes: Iterable[str], hosts: Iterable[str], networks: Iterable[str],
           setting: str) -> OutboundPolicy:  # fmt: skip
        return cls(frozenset(s.strip().lower() for s in schemes if s.strip()),
                   tuple(h.strip().lower() for h in hosts if h.strip()),
                   tuple(ipaddress.ip_network(n.strip(), strict=False)
                         for n in networks if n.strip()), setting)  # fmt: skip

    def check(self, url: str, resolve: Resolver = _resolve) -> Target:
        """The target to connect to for ``url``; OutboundRefusedError saying why not."""
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise OutboundRefusedError(f"{url!r} is not a URL: {exc}") from None
        scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
        if scheme not in self.schemes:
            raise OutboundRefusedError(f"the scheme of {url!r} is not one of "
                                       f"{self.setting}_SCHEMES")  # fmt: skip
        if not host or parts.username or parts.password:
            raise OutboundRefusedError(f"{url!r} must name a host, without credentials")
        if not any(fnmatch.fnmatchcase(host, pattern) for pattern in self.hosts):
            raise OutboundRefusedError(f"the host of {url!r} is not in {self.setting}_HOSTS")
        try:
            addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in resolve(host, port)]
        except (OSError, UnicodeError, ValueError) as exc:
            raise OutboundRefusedError(f"the host of {url!r} cannot be resolved: {exc}") from None
        if not addresses:
            raise OutboundRefusedError(f"the host of {url!r} has no address")
        for address in addresses:
            if not is_public(address) and not any(address in n for n in self.networks):
                raise OutboundRefusedError(
                    f"the host of {url!r} resolves to {address}, a loopback, private or "
                    f"link-local address; list its network in {self.setting}_NETWORKS to "
                    "allow it"
                )
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return Target(scheme, host, port, str(addresses[0]), path)


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

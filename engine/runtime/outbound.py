"""Which hosts a process may send a request to on a caller's behalf.

A URL from a request (a METADATA push's DOWNLOAD_URI, which servers then fetch) must not make
the cluster reach what only it can reach: loopback, link-local (cloud metadata at
169.254.169.254), private networks. A host is refused when any address it resolves to is not
a public one, unless the operator allowed it by name or network (``allowed_hosts``) or
allowed every private address (``allow_private``).

The check resolves the name when it is made; a name that resolves elsewhere later (DNS
rebinding) is the fetcher's to guard, so fetchers keep to the hosts checked here.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
from urllib.parse import urlsplit

HOSTS_SETTING = "SPRIG_OUTBOUND_ALLOWED_HOSTS"
PRIVATE_SETTING = "SPRIG_OUTBOUND_ALLOW_PRIVATE"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class OutboundRefused(ValueError):
    """A URL the cluster will not fetch; the message says why and which setting allows it."""


def _public(address: Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


@dataclasses.dataclass(frozen=True)
class OutboundPolicy:
    """``allowed_hosts``: host names (exact, case-insensitive) and networks (``10.0.0.0/8``,
    a single address) reachable even when not public."""

    allowed_hosts: tuple[str, ...] = ()
    allow_private: bool = False

    def check_host(self, host: str | None, port: int | None, what: str) -> None:
        """OutboundRefused unless every address of ``host`` may be reached."""
        if not host:
            raise OutboundRefused(f"{what} names no host")
        host = host.strip("[]").lower()
        if self.allow_private or host in self._names():
            return
        for address in self._resolve(host, port, what):
            if not _public(address) and not self._allowed_address(address):
                raise OutboundRefused(
                    f"{what} names host {host!r}, which resolves to a loopback, link-local or "
                    f"private address ({address}); to allow it, add it to {HOSTS_SETTING} "
                    f"(or set {PRIVATE_SETTING}=true)"
                )

    def check_url(self, url: str, what: str) -> None:
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError as exc:  # a port that is not a number
            raise OutboundRefused(f"{what} has a bad port: {exc}") from None
        self.check_host(parts.hostname, port, what)

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

    @staticmethod
    def _resolve(host: str, port: int | None, what: str) -> list[Address]:
        try:
            return [ipaddress.ip_address(host)]
        except ValueError:
            pass
        try:
            infos = socket.getaddrinfo(host, port or 80, proto=socket.IPPROTO_TCP)
        except (socket.gaierror, UnicodeError) as exc:
            raise OutboundRefused(f"{what}: host {host!r} cannot be resolved ({exc})") from None
        return [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]

"""TLS listeners with Pinot's keys (``ListenerConfigUtil``, ``TlsUtils``).

Listeners of a component with prefix ``P`` (``controller``, ``pinot.broker.client``)::

    P.access.protocols=http,https           (absent: http alone, on the legacy port)
    P.access.protocols.https.port=8443      P.access.protocols.http.port=...
    P.access.protocols.<protocol>.host=0.0.0.0

Key and certificate under the component's TLS prefix ``T`` (``controller.tls``,
``pinot.broker.tls``)::

    T.keystore.path, T.keystore.password, T.keystore.type    PKCS12 (Java's default), or PEM
    T.truststore.path, T.truststore.password, T.truststore.type
    T.client.auth.enabled=true              clients must present a certificate the truststore trusts

A PEM keystore is one file holding the private key and the certificate chain. A JKS keystore
is refused with the ``keytool`` command that converts it to PKCS12.
"""

from __future__ import annotations

import dataclasses
import os
import ssl
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    pkcs12,
)

from engine.common.errors import ConfigError
from engine.runtime.properties import PinotProperties

HTTP, HTTPS = "http", "https"


@dataclasses.dataclass(frozen=True)
class Listener:
    protocol: str  # http | https
    host: str  # "": the process's own bind address
    port: int


def listeners(properties: PinotProperties, prefix: str, default_port: int) -> list[Listener]:
    """The listeners ``prefix.access.protocols`` asks for (http on ``default_port`` when it is
    absent). A protocol other than http or https, or an https listener without a port, is a
    ``ConfigError``."""
    key = f"{prefix}.access.protocols"
    protocols = [p.lower() for p in properties.list(key)] or [HTTP]
    out = []
    for protocol in protocols:
        if protocol not in (HTTP, HTTPS):
            raise ConfigError(key, f"unknown protocol {protocol!r}; use http, https or both")
        port_key = f"{key}.{protocol}.port"
        raw = properties.get(port_key, "")
        if not raw and protocol == HTTPS:
            raise ConfigError(port_key, "an https listener needs its port")
        try:
            port = int(raw) if raw else default_port
        except ValueError:
            raise ConfigError(port_key, f"not a port number: {raw!r}") from None
        out.append(Listener(protocol, properties.get(f"{key}.{protocol}.host", ""), port))
    return out


@dataclasses.dataclass(frozen=True)
class TlsConfig:
    prefix: str
    keystore: Path
    keystore_password: str
    keystore_type: str
    truststore: Path | None = None
    truststore_password: str = ""
    truststore_type: str = "PKCS12"
    client_auth: bool = False

    @classmethod
    def from_properties(cls, properties: PinotProperties, prefix: str) -> TlsConfig:
        path = properties.get(f"{prefix}.keystore.path", "")
        if not path:
            raise ConfigError(f"{prefix}.keystore.path", "an https listener needs a keystore")
        trust = properties.get(f"{prefix}.truststore.path", "")
        return cls(
            prefix,
            Path(path.removeprefix("file://")),
            properties.get(f"{prefix}.keystore.password", ""),
            _store_type(properties, f"{prefix}.keystore", path),
            Path(trust.removeprefix("file://")) if trust else None,
            properties.get(f"{prefix}.truststore.password", ""),
            _store_type(properties, f"{prefix}.truststore", trust) if trust else "PKCS12",
            properties.get_bool(f"{prefix}.client.auth.enabled"),
        )

    def pem_files(self, directory: Path) -> tuple[Path, Path]:
        """(certificate chain, private key) as PEM files (owner-only) in ``directory``:
        what ``ssl`` and gunicorn load."""
        if self.keystore_type == "PEM":
            return self.keystore, self.keystore
        key, cert, chain = self._load_pkcs12(self.keystore, self.keystore_password, "keystore")
        if key is None or cert is None:
            raise ConfigError(f"{self.prefix}.keystore.path",
                              f"{self.keystore} holds no private key and certificate")  # fmt: skip
        directory.mkdir(parents=True, exist_ok=True)
        cert_pem = b"".join(c.public_bytes(Encoding.PEM) for c in [cert, *chain])
        key_pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        return _private_file(directory, "cert.pem", cert_pem), _private_file(
            directory, "key.pem", key_pem
        )

    def ca_file(self, directory: Path) -> Path | None:
        """The truststore's certificates as one PEM file (None without a truststore)."""
        if self.truststore is None:
            return None
        if self.truststore_type == "PEM":
            return self.truststore
        _, cert, chain = self._load_pkcs12(self.truststore, self.truststore_password, "truststore")
        certs = [c for c in [cert, *chain] if c is not None]
        pem = b"".join(c.public_bytes(Encoding.PEM) for c in certs)
        return _private_file(directory, "ca.pem", pem)

    def server_context(self) -> ssl.SSLContext:
        """A server-side context: this keystore's certificate; with ``client.auth.enabled``,
        clients must present one the truststore signed. PKCS12 material passes through
        owner-only temporary PEM files, deleted once loaded."""
        with tempfile.TemporaryDirectory(prefix="sprig-tls-") as tmp:
            return self._server_context(Path(tmp))

    def _server_context(self, directory: Path) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert, key = self.pem_files(directory)
        try:
            context.load_cert_chain(cert, key)
            if self.client_auth:
                ca = self.ca_file(directory)
                if ca is None:
                    raise ConfigError(f"{self.prefix}.truststore.path",
                                      "client.auth.enabled needs a truststore")  # fmt: skip
                context.load_verify_locations(ca)
                context.verify_mode = ssl.CERT_REQUIRED
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(f"{self.prefix}.keystore.path",
                              f"cannot use {self.keystore}: {exc}") from exc  # fmt: skip
        return context

    def _load_pkcs12(self, path: Path, password: str, what: str):
        key = f"{self.prefix}.{what}.path"
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigError(key, f"cannot read {path}: {exc.strerror or exc}") from exc
        try:
            return pkcs12.load_key_and_certificates(data, password.encode() or None)
        except ValueError as exc:
            raise ConfigError(key, f"{path} is not a PKCS12 {what} that "
                              f"{self.prefix}.{what}.password opens: {exc}") from exc  # fmt: skip


def _store_type(properties: PinotProperties, prefix: str, path: str) -> str:
    kind = properties.get(f"{prefix}.type", "").upper()
    if not kind:
        kind = "PEM" if path.lower().endswith((".pem", ".crt")) else "PKCS12"
    if kind == "JKS":
        raise ConfigError(f"{prefix}.type", "JKS keystores are not supported: convert it with "
                          "`keytool -importkeystore -srckeystore K.jks -destkeystore K.p12 "
                          "-deststoretype PKCS12`")  # fmt: skip
    if kind not in ("PKCS12", "PEM"):
        raise ConfigError(f"{prefix}.type", f"unknown store type {kind!r}; use PKCS12 or PEM")
    return kind


def _private_file(directory: Path, name: str, data: bytes) -> Path:
    path = directory / name
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
    with os.fdopen(fd, "wb") as out:  # mkstemp: owner-only from the start
        out.write(data)
    os.replace(tmp, path)
    return path

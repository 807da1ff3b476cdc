"""Who may do what: Pinot's Basic-auth principals, read from Pinot's keys, and the one rule
that checks a request against them. The broker and the server call it directly; the controller
through its DRF authentication and permission classes (``cluster.api.access``).

Keys, per component (``COMPONENTS``), under its prefix ``P``::

    <factory key>=...BasicAuthAccessControlFactory     (else everything is allowed)
    P.principals=admin,user
    P.principals.<u>.password=secret | a bcrypt hash ($2b$...) | an argon2 hash ($argon2id$...)
    P.principals.<u>.tables=t1,t2          absent, blank or * : every table
    P.principals.<u>.excludeTables=t3
    P.principals.<u>.permissions=READ,UPDATE   absent, blank or * : every permission

A request carries ``Authorization: Basic base64(user:password)``. As in Pinot, a plain
password's token is compared whole (trimmed, ``=`` padding ignored); a hashed one is checked
once with bcrypt or argon2, then its token is remembered for ``VERIFIED_TTL_S`` so the
broker's hot path stays a dictionary lookup.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import re
import threading
from collections.abc import Iterable

import argon2
import bcrypt
from cachetools import TTLCache

from engine.common.errors import ConfigError
from engine.runtime.properties import PinotProperties
from engine.spi.table_name import split_table_name

VERIFIED_TTL_S = 24 * 3600.0  # Pinot's ZK mode caches a successful check as long
_BCRYPT = re.compile(r"^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$")
_ARGON2_PREFIXES = ("$argon2id$", "$argon2i$", "$argon2d$")
_ALL = "*"


class AccessType(enum.StrEnum):
    """Pinot's controller permissions; a request's type comes from its method unless the
    endpoint says otherwise (POST creates, PUT updates, DELETE deletes, the rest read)."""

    CREATE = "CREATE"
    READ = "READ"
    UPDATE = "UPDATE"
    DELETE = "DELETE"

    @classmethod
    def of_method(cls, method: str) -> AccessType:
        return _METHOD_ACCESS.get(method.upper(), cls.READ)


_METHOD_ACCESS = {"POST": AccessType.CREATE, "PUT": AccessType.UPDATE,
                  "PATCH": AccessType.UPDATE, "DELETE": AccessType.DELETE}  # fmt: skip
CRUD = frozenset(AccessType)
SERVER_ADMIN = "ADMIN"  # the server admin API's one permission (Pinot's "admin")


@dataclasses.dataclass(frozen=True)
class Component:
    """Where one kind of process reads its principals."""

    name: str
    factory_key: str
    prefix: str
    permissions: frozenset[str]  # the names a principal may hold here (empty: ignored)
    basic: tuple[str, ...]  # factory class names (simple names) that turn Basic auth on
    allow_all: tuple[str, ...]


COMPONENTS = {
    "controller": Component(
        "controller", "controller.admin.access.control.factory.class",
        "controller.admin.access.control", CRUD,
        ("BasicAuthAccessControlFactory",), ("AllowAllAccessFactory",),
    ),
    # the broker ignores permissions, as Pinot's does: only table membership counts
    "broker": Component(
        "broker", "pinot.broker.access.control.class", "pinot.broker.access.control",
        frozenset(), ("BasicAuthAccessControlFactory",), ("AllowAllAccessControlFactory",),
    ),
    "server": Component(
        "server", "pinot.server.admin.access.control.factory.class",
        "pinot.server.admin.access.control", CRUD | {SERVER_ADMIN},
        ("BasicAuthAccessFactory",), ("AllowAllAccessFactory",),
    ),
}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Principal:
    name: str
    tables: frozenset[str] | None = None  # raw table names; None: every table
    exclude_tables: frozenset[str] = frozenset()
    permissions: frozenset[str] = CRUD | {SERVER_ADMIN}

    @property
    def all_tables(self) -> bool:
        return self.tables is None and not self.exclude_tables

    def has_table(self, table: str) -> bool:
        """Whether ``table`` (raw or with its type) is one of this principal's."""
        raw = split_table_name(table)[0]
        return (self.tables is None or raw in self.tables) and raw not in self.exclude_tables

    def allows(self, access: str, table: str | None = None) -> bool:
        """Pinot's rule: with a table, it must be included, not excluded, and the permission
        held; without one, the permission alone."""
        return access in self.permissions and (table is None or self.has_table(table))


class BasicAuth:
    """The principals of one component and the check of an ``Authorization`` header."""

    def __init__(self, principals: Iterable[tuple[Principal, str]]) -> None:
        self.principals: dict[str, Principal] = {}
        self._by_token: dict[str, Principal] = {}  # plain passwords: the token, precomputed
        self._hashed: dict[str, tuple[Principal, str]] = {}
        for principal, password in principals:
            self.principals[principal.name] = principal
            if _is_hash(password):
                self._hashed[principal.name] = (principal, password)
            else:
                self._by_token[basic_token(principal.name, password).replace("=", "")] = principal
        self._verified: TTLCache = TTLCache(maxsize=4096, ttl=VERIFIED_TTL_S)
        self._lock = threading.Lock()

    def principal(self, authorization: str | None) -> Principal | None:
        """The principal the header names, or None (absent, malformed or wrong)."""
        if not authorization:
            return None
        token = authorization.strip().replace("=", "")
        found = self._by_token.get(token)
        if found is not None or not self._hashed:
            return found
        with self._lock:
            found = self._verified.get(token)
        return found if found is not None else self._check_hashed(token)

    def login(self, name: str, password: str) -> Principal | None:
        """The principal for a user name and password (the console's login form)."""
        return self.principal(basic_token(name, password))

    def _check_hashed(self, token: str) -> Principal | None:
        name, password = _decode(token)
        entry = self._hashed.get(name) if name is not None else None
        if entry is None or not _hash_matches(entry[1], password):
            return None
        with self._lock:
            self._verified[token] = entry[0]
        return entry[0]


def basic_token(name: str, password: str) -> str:
    """``Basic base64(name:password)``, what a client sends."""
    return "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode("ascii")


def access_control(properties: PinotProperties, component: str) -> BasicAuth | None:
    """The component's Basic auth, or None when its factory class allows everything. A
    factory Sprig does not have, or a principal without a password, stops the process with a
    ``ConfigError`` naming the key."""
    spec = COMPONENTS[component]
    factory = properties.get(spec.factory_key, "")
    simple = factory.rsplit(".", 1)[-1]
    if not factory or simple in spec.allow_all:
        return None
    if simple not in spec.basic:
        hint = "ZooKeeper-stored users are not supported; " if simple.startswith("Zk") else ""
        raise ConfigError(spec.factory_key, f"unknown access control factory {factory!r}: "
                          f"{hint}use {spec.basic[0]} with {spec.prefix}.principals")  # fmt: skip
    return BasicAuth(_principals(properties, spec))


def _principals(properties: PinotProperties, spec: Component) -> list[tuple[Principal, str]]:
    key = f"{spec.prefix}.principals"
    names = properties.list(key)
    if not names:
        raise ConfigError(key, "Basic auth needs at least one principal (user name)")
    out = []
    for name in names:
        if ":" in name:
            raise ConfigError(key, f"principal {name!r}: a user name cannot contain ':'")
        base = f"{key}.{name}"
        password = properties.get(f"{base}.password", "")
        if not password:
            raise ConfigError(f"{base}.password", f"principal {name!r} has no password")
        tables = _tables(properties, f"{base}.tables")
        permissions = _permissions(properties, f"{base}.permissions", spec)
        excluded = _tables(properties, f"{base}.excludeTables") or frozenset()
        out.append((Principal(name, tables, excluded, permissions), password))
    return out


def _items(properties: PinotProperties, key: str) -> list[str] | None:
    """The listed names; None for all (absent, blank or ``*``)."""
    items = properties.list(key)
    return None if not items or _ALL in items else items


def _tables(properties: PinotProperties, key: str) -> frozenset[str] | None:
    items = _items(properties, key)
    return None if items is None else frozenset(split_table_name(t)[0] for t in items)


def _permissions(properties: PinotProperties, key: str, spec: Component) -> frozenset[str]:
    items = _items(properties, key)
    if not spec.permissions or items is None:
        return spec.permissions or CRUD
    held = frozenset(i.upper() for i in items)
    unknown = sorted(held - spec.permissions)
    if unknown:
        raise ConfigError(key, f"unknown permission(s) {', '.join(unknown)}; "
                          f"use {', '.join(sorted(spec.permissions))}")  # fmt: skip
    return held


def _is_hash(password: str) -> bool:
    return bool(_BCRYPT.match(password)) or password.startswith(_ARGON2_PREFIXES)


def _hash_matches(stored: str, password: str) -> bool:
    if stored.startswith(_ARGON2_PREFIXES):
        try:
            return argon2.PasswordHasher().verify(stored, password)
        except (argon2.exceptions.VerificationError, argon2.exceptions.InvalidHashError):
            return False
    try:
        return bcrypt.checkpw(password.encode(), stored.encode())
    except ValueError:  # bcrypt refuses passwords over 72 bytes: such a one never matches
        return False


def _decode(token: str) -> tuple[str | None, str]:
    """(user, password) from ``Basic <base64>`` without padding; (None, "") if malformed.
    Split at the first ':', so a password may hold one."""
    scheme, _, encoded = token.partition(" ")
    if scheme != "Basic" or not encoded:
        return None, ""
    try:
        text = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None, ""
    name, sep, password = text.partition(":")
    return (name, password) if sep else (None, "")

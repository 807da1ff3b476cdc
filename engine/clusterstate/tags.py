"""Instance ids and tenant tags, named as Pinot names them."""

from __future__ import annotations

import enum


class InstanceType(enum.StrEnum):
    CONTROLLER = "CONTROLLER"
    BROKER = "BROKER"
    SERVER = "SERVER"
    MINION = "MINION"

    @property
    def prefix(self) -> str:
        return f"{self.value.capitalize()}_"

    @classmethod
    def parse(cls, text: str) -> InstanceType:
        """Accepts ``server``, ``SERVER``; raises ValueError naming the choices."""
        try:
            return cls(str(text).upper())
        except ValueError:
            choices = ", ".join(t.value for t in cls)
            raise ValueError(f"unknown instance type {text!r}; expected one of {choices}") from None

    @classmethod
    def of_instance(cls, instance_id: str) -> InstanceType | None:
        for kind in cls:
            if instance_id.startswith(kind.prefix):
                return kind
        return None


DEFAULT_TENANT = "DefaultTenant"
BROKER_UNTAGGED = "broker_untagged"
SERVER_UNTAGGED = "server_untagged"
MINION_UNTAGGED = "minion_untagged"
CONTROLLER_TAG = "controller"

UNTAGGED = {
    InstanceType.BROKER: BROKER_UNTAGGED,
    InstanceType.SERVER: SERVER_UNTAGGED,
    InstanceType.MINION: MINION_UNTAGGED,
}


def instance_id(kind: InstanceType, host: str, port: int | str) -> str:
    """``Server_<host>_<port>`` and so on."""
    return f"{kind.prefix}{host}_{port}"


def offline_tag(tenant: str) -> str:
    return f"{tenant}_OFFLINE"


def realtime_tag(tenant: str) -> str:
    return f"{tenant}_REALTIME"


def broker_tag(tenant: str) -> str:
    return f"{tenant}_BROKER"


def server_tag(tenant: str, table_type: str) -> str:
    """The tag of a tenant's servers for ``OFFLINE`` or ``REALTIME`` tables."""
    return f"{tenant}_{table_type.upper()}"


def tenant_of_tag(tag: str) -> tuple[str, str] | None:
    """``T_OFFLINE`` -> (``T``, ``OFFLINE``); untagged and other tags -> None."""
    for role in ("OFFLINE", "REALTIME", "BROKER"):
        suffix = f"_{role}"
        if tag.endswith(suffix) and len(tag) > len(suffix):
            return tag[: -len(suffix)], role
    return None


def default_tags(kind: InstanceType, tenant_isolation: bool) -> list[str]:
    """Tags for a newly registered instance: DefaultTenant when tenant isolation is on
    (Pinot's ``controller.tenant.isolation.enable``, default true), else untagged."""
    if kind is InstanceType.SERVER:
        if tenant_isolation:
            return [offline_tag(DEFAULT_TENANT), realtime_tag(DEFAULT_TENANT)]
        return [SERVER_UNTAGGED]
    if kind is InstanceType.BROKER:
        return [broker_tag(DEFAULT_TENANT)] if tenant_isolation else [BROKER_UNTAGGED]
    if kind is InstanceType.MINION:
        return [MINION_UNTAGGED]
    return [CONTROLLER_TAG]

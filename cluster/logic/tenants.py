"""Tenants are tag groups (``/tenants``): creating one retags untagged instances."""

from __future__ import annotations

from django.db import transaction

from cluster import models
from cluster.logic import audit
from cluster.logic.cluster_view import parsed
from cluster.logic.manage_instances import refresh_broker_resource
from controller.errors import BadRequest, Conflict, NotFound
from engine.clusterstate import ClusterStore, InstanceType
from engine.clusterstate.tags import (
    BROKER_UNTAGGED,
    SERVER_UNTAGGED,
    broker_tag,
    offline_tag,
    realtime_tag,
    tenant_of_tag,
)


def _spec(body: dict) -> tuple[str, str, int, int, int]:
    role = body["tenantRole"].upper()
    count = body["numberOfInstances"]
    default = count if role == "SERVER" else 0
    offline = body["offlineInstances"] if body.get("offlineInstances") is not None else default
    realtime = body["realtimeInstances"] if body.get("realtimeInstances") is not None else default
    if role == "SERVER" and (offline > count or realtime > count):
        raise BadRequest("offlineInstances and realtimeInstances cannot exceed numberOfInstances")
    return role, body["tenantName"], count, offline, realtime


def _free(store: ClusterStore, role: str) -> list:
    kind, untagged = (
        (InstanceType.SERVER, SERVER_UNTAGGED)
        if role == "SERVER"
        else (InstanceType.BROKER, BROKER_UNTAGGED)
    )
    return [
        c
        for _, c in sorted(store.instance_configs().items())
        if c.type is kind and untagged in c.tags
    ]


def _retag(store: ClusterStore, name: str, role: str, members: list, offline: int, realtime: int):
    count = len(members)
    for i, config in enumerate(members):
        if role == "BROKER":
            tags = [broker_tag(name)]
        else:
            # the first `offline` get the OFFLINE tag, the last `realtime` the REALTIME tag;
            # with offline + realtime > count some instances carry both
            tags = [offline_tag(name)] if i < offline else []
            if i >= count - realtime:
                tags.append(realtime_tag(name))
        others = [t for t in config.tags if not _belongs(t, name, role) and t not in _UNTAGGED]
        config.tags = others + tags
        store.put_instance_config(config)
    if role == "BROKER":
        refresh_broker_resource(store)


_UNTAGGED = (SERVER_UNTAGGED, BROKER_UNTAGGED)


def create_tenant(store: ClusterStore, body: dict) -> dict:
    """``body``: tenantRole SERVER|BROKER, tenantName, numberOfInstances and, for servers,
    offlineInstances/realtimeInstances (default: all of them carry both tags)."""
    role, name, count, offline, realtime = _spec(body)
    if models.Tenant.objects.filter(name=name, role=role).exists() or _tagged(store, name, role):
        raise Conflict(f"{role.lower()} tenant {name} already exists")
    free = _free(store, role)
    if len(free) < count:
        raise BadRequest(
            f"Failed to create {role.lower()} tenant {name}: it needs {count} untagged "
            f"instance(s) but only {len(free)} exist"
        )
    chosen = free[:count]
    with transaction.atomic():
        models.Tenant.objects.create(name=name, role=role, number_of_instances=count,
                                     offline_instances=offline, realtime_instances=realtime)  # fmt: skip
        audit.record("tenant.create", "tenant", name, role=role,
                     instances=[c.instance_id for c in chosen])  # fmt: skip
        _retag(store, name, role, chosen, offline, realtime)
    return {"status": "Successfully created tenant"}


def update_tenant(store: ClusterStore, body: dict) -> dict:
    """``PUT /tenants``: grow the tenant from untagged instances or shrink it (the last
    members go back to untagged), then retag its members."""
    role, name, count, offline, realtime = _spec(body)
    members = [store.instance_config(i) for i in _tagged(store, name, role)]
    if not members and not models.Tenant.objects.filter(name=name, role=role).exists():
        raise NotFound(f"{role.lower()} tenant {name} not found")
    if count > len(members):
        free = _free(store, role)
        if len(free) < count - len(members):
            raise BadRequest(
                f"Failed to update {role.lower()} tenant {name}: it needs "
                f"{count - len(members)} more untagged instance(s) but only {len(free)} exist"
            )
        members += free[: count - len(members)]
    released = members[count:]
    members = members[:count]
    untagged = BROKER_UNTAGGED if role == "BROKER" else SERVER_UNTAGGED
    with transaction.atomic():
        models.Tenant.objects.update_or_create(
            name=name, role=role,
            defaults={"number_of_instances": count, "offline_instances": offline,
                      "realtime_instances": realtime},
        )  # fmt: skip
        audit.record("tenant.update", "tenant", name, role=role, instances=len(members))
        for config in released:
            config.tags = [t for t in config.tags if not _belongs(t, name, role)] or [untagged]
            store.put_instance_config(config)
        _retag(store, name, role, members, offline, realtime)
    return {"status": "Successfully updated tenant"}


def _tagged(store: ClusterStore, name: str, role: str) -> list[str]:
    roles = ("BROKER",) if role == "BROKER" else ("OFFLINE", "REALTIME")
    return [
        c.instance_id
        for c in store.instance_configs().values()
        if any(tenant_of_tag(t) in [(name, r) for r in roles] for t in c.tags)
    ]


def list_tenants(store: ClusterStore, role: str | None = None) -> dict:
    servers, brokers = set(), set()
    for config in store.instance_configs().values():
        for tag in config.tags:
            parsed_tag = tenant_of_tag(tag)
            if parsed_tag is None:
                continue
            (brokers if parsed_tag[1] == "BROKER" else servers).add(parsed_tag[0])
    for tenant in models.Tenant.objects.all():
        (brokers if tenant.role == "BROKER" else servers).add(tenant.name)
    out = {"SERVER_TENANTS": sorted(servers), "BROKER_TENANTS": sorted(brokers)}
    if role:
        key = f"{role.upper()}_TENANTS"
        return {key: out[key]} if key in out else out
    return out


def tenant_instances(store: ClusterStore, name: str, role: str | None) -> dict:
    out: dict = {"tenantName": name}
    found = False
    if role in (None, "", "server", "SERVER"):
        out["ServerInstances"] = _tagged(store, name, "SERVER")
        found |= bool(out["ServerInstances"])
    if role in (None, "", "broker", "BROKER"):
        out["BrokerInstances"] = _tagged(store, name, "BROKER")
        found |= bool(out["BrokerInstances"])
    if not found and not models.Tenant.objects.filter(name=name).exists():
        raise NotFound(f"Tenant {name} not found")
    return out


def tenant_tables(name: str) -> dict:
    tables = []
    for row in models.TableConfig.objects.all():
        config = parsed(row)
        if name in (config.tenants.server, config.tenants.broker):
            tables.append(row.name_with_type)
    return {"tables": sorted(tables)}


def delete_tenant(store: ClusterStore, name: str, role: str) -> dict:
    role = role.upper()
    if role not in ("SERVER", "BROKER"):
        raise BadRequest(f"type must be SERVER or BROKER, got '{role}'")
    users = [
        row.name_with_type
        for row in models.TableConfig.objects.all()
        if name == (parsed(row).tenants.broker if role == "BROKER" else parsed(row).tenants.server)
    ]
    if users:
        raise Conflict(f"Cannot delete tenant {name}: used by table(s) {', '.join(users)}")
    instances = _tagged(store, name, role)
    row = models.Tenant.objects.filter(name=name, role=role).first()
    if row is None and not instances:
        raise NotFound(f"{role.lower()} tenant {name} not found")
    untagged = BROKER_UNTAGGED if role == "BROKER" else SERVER_UNTAGGED
    with transaction.atomic():
        if row is not None:
            row.delete()
        audit.record("tenant.delete", "tenant", name, role=role, instances=instances)
        for ident in instances:
            config = store.instance_config(ident)
            config.tags = [t for t in config.tags if not _belongs(t, name, role)] or [untagged]
            store.put_instance_config(config)
    return {"status": f"Successfully deleted tenant {name}"}


def _belongs(tag: str, name: str, role: str) -> bool:
    parsed_tag = tenant_of_tag(tag)
    if parsed_tag is None or parsed_tag[0] != name:
        return False
    return (parsed_tag[1] == "BROKER") == (role == "BROKER")

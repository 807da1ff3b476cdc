"""Register, retag, enable/disable and drop instances (``/instances``)."""

from __future__ import annotations

import ipaddress
import re

from django.conf import settings

from cluster import models
from cluster.logic import audit
from cluster.logic.cluster_view import parsed
from cluster.logic.publish import publish_broker_resource
from controller.errors import BadRequest, Conflict, NotFound
from engine.clusterstate import ClusterStore, InstanceConfig, InstanceType
from engine.clusterstate.tags import default_tags, instance_id


def register_instance(store: ClusterStore, body: dict, *, update: bool = False) -> dict:
    """``body``: host, port, type (SERVER|BROKER|MINION|CONTROLLER), optional tags and
    grpcPort/adminPort/queryServicePort. Without tags the instance joins DefaultTenant when
    tenant isolation is on, else it is untagged."""
    try:
        kind = InstanceType.parse(body["type"])
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc
    check_host(body["host"], kind)
    ident = instance_id(kind, body["host"], body["port"])
    existing = store.instance_config(ident)
    if existing is not None and not update:
        raise Conflict(f"Instance {ident} already exists; use PUT /instances/{ident} to update it")
    tags = body.get("tags") or default_tags(kind, settings.TENANT_ISOLATION_ENABLED)
    config = InstanceConfig(
        instance_id=ident,
        host=body["host"],
        port=int(body["port"]),
        tags=list(tags),
        enabled=existing.enabled if existing else True,
        admin_port=int(body.get("adminPort", -1)),
        grpc_port=int(body.get("grpcPort", -1)),
        query_service_port=int(body.get("queryServicePort", -1)),
    )
    store.put_instance_config(config)
    audit.record("instance.register", "instance", ident, tags=config.tags)
    if kind is InstanceType.BROKER:
        refresh_broker_resource(store)
    return {"status": f"Added instance: {ident}"}


# one DNS label (RFC 1123), plus '_', which container and compose service names use
_HOST_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\Z")


def check_host(host: str, kind: InstanceType) -> None:
    """Raise BadRequest (field ``host``) unless ``host`` is a host name (dot-separated labels of
    letters, digits, '-' and '_', at most 253 characters, a trailing dot allowed) or an IPv4/IPv6
    address. The host becomes part of the ZooKeeper node name ``<Type>_<host>_<port>``: a '/'
    there would create nested nodes, and control characters are refused by ZooKeeper."""
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    name = host[:-1] if host.endswith(".") else host
    if 0 < len(name) <= 253 and all(_HOST_LABEL.match(label) for label in name.split(".")):
        return
    err = BadRequest(
        f"host {host!r} is not a host name or IP address: it names the ZooKeeper node "
        f"{kind.prefix}<host>_<port>, so use letters, digits, '-', '_' and '.' (labels of at "
        "most 63 characters, not starting or ending with '-'), or an IPv4/IPv6 address"
    )
    err.field = "host"
    raise err


def get_instance(store: ClusterStore, ident: str) -> InstanceConfig:
    config = store.instance_config(ident)
    if config is None:
        raise NotFound(f"Instance {ident} not found")
    return config


def update_tags(store: ClusterStore, ident: str, tags: list[str]) -> dict:
    config = get_instance(store, ident)
    if not tags:
        raise BadRequest("tags must name at least one tag, e.g. tags=DefaultTenant_OFFLINE")
    config.tags = tags
    store.put_instance_config(config)
    audit.record("instance.tags", "instance", ident, tags=tags)
    if config.type is InstanceType.BROKER:
        refresh_broker_resource(store)
    return {"status": f"Updated tags: {tags} for instance: {ident}"}


def set_enabled(store: ClusterStore, ident: str, enabled: bool) -> dict:
    config = get_instance(store, ident)
    config.enabled = enabled
    store.put_instance_config(config)
    audit.record("instance.enable" if enabled else "instance.disable", "instance", ident)
    word = "enabled" if enabled else "disabled"
    return {"status": f"Request to {word[:-1]} instance {ident} is successful"}


def drop_instance(store: ClusterStore, ident: str) -> dict:
    """Refused while the instance is live or still holds segments in an ideal state."""
    get_instance(store, ident)
    if ident in store.live_instances():
        raise Conflict(f"Instance {ident} is live; stop it before dropping it")
    holding = []
    for resource in store.resources():
        ideal = store.ideal_state(resource)
        if ideal is not None and ident in ideal.instances():
            holding.append(resource)
    if holding:
        raise Conflict(
            f"Instance {ident} still appears in the ideal state of {', '.join(holding)}; "
            "rebalance those tables first"
        )
    store.delete_instance(ident)
    audit.record("instance.drop", "instance", ident)
    return {"status": f"Successfully dropped instance {ident}"}


def refresh_broker_resource(store: ClusterStore) -> None:
    for row in models.TableConfig.objects.all():
        publish_broker_resource(store, parsed(row))

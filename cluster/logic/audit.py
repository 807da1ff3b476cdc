"""The audit history: one row per successful change, written in the change's transaction."""

from __future__ import annotations

from cluster.models import AuditEvent


def record(action: str, resource_type: str, resource_name: str, **detail) -> None:
    AuditEvent.objects.create(
        action=action, resource_type=resource_type, resource_name=resource_name, detail=detail
    )
